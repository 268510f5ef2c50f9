//! The planner's inputs and outputs: its tunables ([`PlannerConfig`]),
//! where a read falls ([`Verdict`], [`ReadOutcome`]), a round's advice
//! ([`RoundPlan`]) and its counters ([`PlannerStats`]). The planner
//! itself, and the paper sections it follows, are in [`crate::planner`].

use crate::ranges::PageRange;
use crate::schedule::by_shape::Schedule;

/// Tunables of one planner. Sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannerConfig {
    /// Page size used to turn byte offsets into pages.
    pub page_size: u64,
    /// Largest gap filled between two pages to fetch (section 3.3): the
    /// device's break-even gap, per-request cost times transfer rate
    /// ([`crate::competitive::break_even_gap_bytes`]); 0 disables infill.
    /// Gap pages count against the budget and are filled only where it
    /// has room.
    pub infill_bytes: u64,
    /// Longest single WILLNEED range; one fadvise call loads at most
    /// max(read_ahead_kb, max_sectors_kb), so longer ranges are split.
    pub max_advice_bytes: u64,
    /// Maximum number of access-list entries.
    pub capacity: usize,
    /// Memory available for caching (AIMD's reference).
    pub available_bytes: u64,
    /// Lowest reorder-buffer size AIMD may reach.
    pub floor_bytes: u64,
    /// First reorder-buffer size: `None` starts at 90% of the available
    /// memory, as the paper does; `Some(bytes)` starts there and grows as
    /// the application consumes the list (slow start, [`crate::planner`]'s
    /// "Window growth"; [`crate::Aimd::starting_at`]).
    pub start_bytes: Option<u64>,
    /// The device's cost of a far request (a seek and rotation on a disk,
    /// a command on flash) in pages of transfer: far-request seconds times
    /// the transfer rate over the page size; 0 when unknown. Sets how fast
    /// slow start grows ([`crate::planner::growth_factor`]) and, at
    /// [`crate::planner::SEEK_BOUND_GAP_BYTES`] or more, marks the device seek-bound.
    pub request_cost_pages: u64,
    /// Compute the reverse-access-order ranges of each round
    /// ([`RoundPlan::reverse`]); they cost a walk of the whole window.
    pub reverse_pass: bool,
    /// When rounds fetch and what they drop.
    pub schedule: Schedule,
    /// Aggressive and conservative: reads between two rounds; 0 means
    /// 1/64 of the budget.
    pub batch_pages: u64,
    /// Conservative: the part of the budget kept for pages fetched ahead of
    /// MIN's replacements (see [`crate::min_ahead`]); `None` means 1/8 of
    /// the budget, `Some(0)` Cao's conservative exactly (MIN's fetches,
    /// each just in time).
    pub reserve_pages: Option<u64>,
}

impl Default for PlannerConfig {
    fn default() -> PlannerConfig {
        PlannerConfig {
            page_size: 4096,
            infill_bytes: 32 << 10,
            max_advice_bytes: 4 << 20,
            capacity: 1 << 20,
            available_bytes: 1 << 30,
            floor_bytes: 1 << 20,
            start_bytes: None,
            request_cost_pages: 0,
            reverse_pass: false,
            schedule: Schedule::default(),
            batch_pages: 0,
            reserve_pages: None,
        }
    }
}

/// Where a tracked read falls relative to the access list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The read is on the list at or after the position; the position moved past it.
    Consumed,
    /// The page was already read earlier in this window (or, under
    /// aggressive and conservative, the plan keeps it).
    Reread,
    /// The page is not in the current window: the application changed its plan.
    Diverged,
}

/// What the caller should do after a read (beyond letting it proceed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOutcome {
    /// Ask the application for a new access list before the next round.
    pub call_back: bool,
    /// Run a prefetching round now (`Planner::plan_round`).
    pub start_round: bool,
}

/// The advice of one round, in the order it should be issued.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundPlan {
    /// Pages the plan stops keeping (infill, pages no longer needed, or the
    /// victims of the round's replacements): DONTNEED them, in one batch,
    /// before the fetches.
    pub evict: Vec<PageRange>,
    /// WILLNEED ranges in C-LOOK order, with infill, split at the advice
    /// limit: the pages the plan now keeps and did not before (under
    /// `window`, the whole window again after a premature eviction).
    pub fetch: Vec<PageRange>,
    /// WILLNEED again in reverse access order, so that under memory pressure
    /// the pages needed last are evicted first (section 4.5); empty unless
    /// [`PlannerConfig::reverse_pass`] is set.
    pub reverse: Vec<PageRange>,
    /// Unique pages in the window.
    pub window_pages: u64,
    /// Pages the plan keeps after this round: listed, infill and not yet
    /// dropped (never above the budget once the round's drops are issued).
    pub held_pages: u64,
}

/// Counters the planner keeps about its own decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlannerStats {
    /// Rounds planned.
    pub rounds: u64,
    /// Reads that were not in the window.
    pub divergences: u64,
    /// Held pages seen in memory and later found missing before their use.
    pub premature_evictions: u64,
    /// Pages covered by WILLNEED ranges (infill included).
    pub pages_prefetched: u64,
    /// Pages covered by DONTNEED ranges.
    pub pages_dropped: u64,
    /// Prefetched pages later read while the plan kept them.
    pub prefetched_used: u64,
    /// Prefetched pages dropped before any read.
    pub prefetched_unused_dropped: u64,
    /// Gap pages advised as infill.
    pub infill_pages: u64,
}
