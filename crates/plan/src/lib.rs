//! Pure prefetch planning: every decision libprefetch takes, with no I/O and
//! no clock, so that the live library and the simulator run the same code.
//!
//! - [`access_list`]: the application's future reads with marks and the
//!   `PF_SET` / `PF_APPEND` / `PF_SET_FROM_MARK` / `PF_DONE` requests
//!   (libprefetch, ATC 2009, section 4.2).
//! - [`window`]: the reorder buffer of one round (section 4.5).
//! - [`ranges`]: C-LOOK order, infill, advice splitting, the stale set and
//!   the reverse-access-order pass (sections 3.3, 3.5, 4.5).
//! - [`aimd`]: the contention controller (section 4.6).
//! - [`held`]: the pages a plan keeps, counted against its budget.
//! - [`loader`]: the data loaders' schedules, a sweep of an epoch's union and phases of one
//!   reader's list, each in offset order (sections 3.3, 4.5).
//! - [`min_ahead`]: Belady's MIN run ahead on the list, for Cao et al.'s
//!   conservative schedule (SIGMETRICS 1995, section 2.4).
//! - [`competitive`]: competitive prefetching's depth and break-even gap.
//! - [`evict`]: replacement orders (DULO, FAST 2005, sections 3-4; CLOCK; LRU;
//!   drop-behind) and the page-cache budget that keeps a program's pages in one.
//! - [`readahead`]: the listed pages the kernel's read-ahead serves itself,
//!   which the planner leaves to it.
//! - [`readers`]: where each thread reading one list has got to; the window
//!   starts at the slowest.
//! - [`planner`]: the state machine that ties them together per client.
//! - `schedule`: the planner's schedules (when a round fetches and what it
//!   drops), one file each behind one trait.
//! - [`recording`]: the text format of `prefetch record`'s recordings.
//! - [`stream`]: sequential and strided streams of unmodified readers, and the windows
//!   competitive prefetching advises ahead of them (TR840 sections 3 and 4).
//! - [`stream_memory`]: each stream's share of the prefetch memory (TR840 section 4.2).

pub mod access_list;
pub mod aimd;
pub mod competitive;
mod core_state;
pub mod evict;
pub mod held;
pub mod loader;
pub mod min_ahead;
pub mod planner;
mod planner_types;
pub mod ranges;
pub mod readahead;
pub mod readers;
pub mod recording;
mod schedule;
pub mod stream;
pub mod stream_memory;
pub mod window;

pub use access_list::{AccessList, Entry, Mode, PageKey};
pub use aimd::Aimd;
pub use competitive::{CompetitiveDepth, DiskCurves, PaperDisk, SeekEstimate, SlowStart};
pub use planner::{
    Planner, PlannerConfig, PlannerStats, ReadOutcome, RoundPlan, Schedule, Verdict,
    CONSERVATIVE_LIST_MEMORY_SHARE, LIST_MEMORY_SHARE,
};
pub use ranges::PageRange;
pub use window::Window;

/// Heap bytes the planner holds at its peak (a round) are at most
/// `ENTRY_COST_BYTES` per access-list entry plus [`BUDGET_PAGE_COST_BYTES`]
/// per page of the budget, under every schedule, for a list of six budgets
/// or more under conservative (what the library allows; a shorter one
/// stays within the same share of memory); measured by `tests/memory.rs`
/// with a counting allocator over list lengths across an octave (every
/// table grows by doubling, so the cost depends on where the length falls).
///
/// Per entry: the list's 12 bytes, the window's link (4) and page index
/// (12 bytes a distinct page in a hash table 7/16 to 7/8 full),
/// conservative's mark (4; its window indexes eight budgets ahead), and
/// the page lists and ranges of a round after many reads (a replacement
/// for each entry read). Measured worst case over 256 lengths in an
/// octave, every entry a distinct page, conservative: 92.8 bytes an entry
/// at six budgets of list, 90.4 at seven, 83.6 at eight, 60.0 at twelve
/// (0.986 of the stated costs at most, at seven); window and aggressive
/// 39.4 with a budget of 1/8 of the list, 130.6 with a budget of the whole
/// list.
pub const ENTRY_COST_BYTES: usize = 74;

/// Heap bytes per page of the budget (see [`ENTRY_COST_BYTES`]): the held
/// pages' table (16 bytes a page), MIN's idle pages (a hash table of 24
/// bytes a page and their order, 16), its heap of next uses (8 bytes a
/// cached page with a use ahead) and its queue of replacements (36 bytes
/// each), and a round's page lists and ranges.
pub const BUDGET_PAGE_COST_BYTES: usize = 124;

/// The most entries a list may hold for the planner's heap to stay within
/// `share_bytes` with a budget of up to `budget_pages` pages; never fewer
/// than a list whose every entry brings a budget page with it.
pub fn entries_within(share_bytes: u64, budget_pages: u64) -> u64 {
    let entry = ENTRY_COST_BYTES as u64;
    let page = BUDGET_PAGE_COST_BYTES as u64;
    let floor = share_bytes / (entry + page);
    let budget_bytes = budget_pages.saturating_mul(page);
    (share_bytes.saturating_sub(budget_bytes) / entry).max(floor)
}
