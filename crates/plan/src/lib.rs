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
//! - [`min_ahead`]: Belady's MIN run ahead on the list, for Cao et al.'s
//!   conservative schedule (SIGMETRICS 1995, section 2.4).
//! - [`competitive`]: competitive prefetching's depth and break-even gap.
//! - [`planner`]: the state machine that ties them together per client.
//! - [`recording`]: the text format of `prefetch record`'s recordings.
//! - [`stream`]: sequential and strided streams of unmodified readers, and the windows
//!   competitive prefetching advises ahead of them (TR840 sections 3 and 4).

pub mod access_list;
pub mod aimd;
pub mod competitive;
pub mod held;
pub mod min_ahead;
pub mod planner;
pub mod ranges;
pub mod recording;
pub mod stream;
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

/// Most heap bytes the planner holds per access-list entry at its peak (a
/// round), window and bookkeeping included, under every schedule; measured
/// by `tests/memory.rs` with a counting allocator over list lengths across
/// an octave (every table grows by doubling, so the cost an entry depends
/// on where the length falls).
///
/// - `window` and `aggressive`: at most 187.6 when every entry is a
///   distinct page and the window holds them all (16 for the list and 16
///   for the window's entry, both grown no further than the list's
///   capacity, then the window's page and the held page in hash tables 7/16
///   to 7/8 full, and the round's page lists), 51.9 with 16 entries a page.
/// - `conservative` (and `by-shape`, which may pick it): MIN's cache (16
///   bytes a page in its hash table), heap (32 bytes a key, at most two
///   keys a cached page) and replacement queue (40 bytes a replacement)
///   bring the worst case to 188.6 at the list length the library allows
///   at this cost (1/8 of the memory in entries, against a budget of 90% of
///   it in pages: about 2.8 budgets of list), all entries distinct; 164.4
///   with 2 entries a page, 57.9 with 16. More with a longer budget than
///   list, which that length rules out.
///
/// The live library divides the memory it lets a list use by this figure.
pub const ENTRY_COST_BYTES: usize = 200;
