//! The libprefetch planner: one client's access list, current round and
//! AIMD state, and the decisions taken on each read. Pure: the caller
//! supplies residency answers and performs the advice calls it returns.
//! The live library and the simulator both drive this type.
//!
//! Follows libprefetch (ATC 2009) sections 4.1-4.6. A round selects a
//! window of unique pages up to the AIMD budget, evicts the stale pages of
//! the previous round, and prefetches the new ones in C-LOOK order with
//! infill. Each tracked read moves the position along the list:
//!
//! ```text
//!   read of page p     where p is on the list           verdict
//!   ---------------    -----------------------------    -------------------------------
//!   next entry         at the position                  Consumed
//!   later entry        in the window, after position    Consumed (small divergence, 4.1)
//!   earlier entry      in the window, already passed    Reread
//!   anything else      not in the window                Diverged: call back, new round
//! ```
//!
//! A read is placed by the page holding its first byte; its further pages
//! are consumed only if they are the next entries (`on_read_continued`),
//! since the paper matches "a file offset" against the list (4.2) and
//! Figure 7 lists one entry per multi-page tile.
//!
//! A new round is due when the window is used up, when a read diverges, or
//! when a page of the window is found missing (premature eviction, which
//! also halves the budget once per round). A round consumed with no
//! premature eviction grows the budget (section 4.6).
//!
//! A round's cost follows what changed, not the window's size: the window
//! slides from the previous round's (see [`crate::window`]), and the pages
//! that entered it are the ones to prefetch, the ones that left it the
//! stale set. Only three cases walk the whole window: a list replaced by
//! `PF_SET` / `PF_SET_FROM_MARK` (selected anew), a premature eviction (the
//! whole window is advised again), and the reverse-access-order ranges,
//! which are computed only when [`PlannerConfig::reverse_pass`] asks.
//!
//! Deviations: the previous round's pages that the new window does not
//! need are dropped only if keeping them would exceed the budget (the paper
//! always drops them; with a list that is a prefix of the real future,
//! which section 4.2 allows, that threw away pages needed right after it),
//! and pages of the previous window are not advised again unless an
//! eviction was seen (WILLNEED of cached pages is cheap but not free: a
//! scan with many short rounds advised its file 36 times over).
//! The paper starts a round on any buffer-cache miss; here a
//! round also starts as soon as the window is consumed, which saves the one
//! blocking miss the paper pays at the start of every round. A read past
//! the end of the window is a divergence only if its page is not the next
//! entry.

use crate::access_list::{AccessList, Entry, Mode, PageKey};
use crate::aimd::Aimd;
use crate::ranges::{clook_from, merge_with_infill, reverse_access_runs, split_long, PageRange};
use crate::window::Window;

/// Tunables of one planner. Sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannerConfig {
    /// Page size used to turn byte offsets into pages.
    pub page_size: u64,
    /// Largest gap merged into a prefetch range (section 3.3); 0 disables infill.
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
    /// memory, as the paper does; `Some(bytes)` starts there and doubles
    /// after each clean round up to that (slow start, [`Aimd::starting_at`]).
    pub start_bytes: Option<u64>,
    /// Compute the reverse-access-order ranges of each round
    /// ([`RoundPlan::reverse`]); they cost a walk of the whole window.
    pub reverse_pass: bool,
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
            reverse_pass: false,
        }
    }
}

/// Where a tracked read falls relative to the access list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The read is on the list at or after the position; the position moved past it.
    Consumed,
    /// The page was already read earlier in this window.
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
    /// Pages of the previous round no longer wanted, when keeping them would
    /// exceed the budget: DONTNEED them, in one batch.
    pub evict: Vec<PageRange>,
    /// WILLNEED ranges in C-LOOK order, with infill, split at the advice
    /// limit: the window's pages not advised by the previous round (all of
    /// them after a premature eviction).
    pub fetch: Vec<PageRange>,
    /// WILLNEED again in reverse access order, so that under memory pressure
    /// the pages needed last are evicted first (section 4.5); empty unless
    /// [`PlannerConfig::reverse_pass`] is set.
    pub reverse: Vec<PageRange>,
    /// Unique pages in the window.
    pub window_pages: u64,
}

/// Counters the planner keeps about its own decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlannerStats {
    /// Rounds planned.
    pub rounds: u64,
    /// Reads that were not in the window.
    pub divergences: u64,
    /// Window pages found missing before their use.
    pub premature_evictions: u64,
    /// Pages covered by WILLNEED ranges (infill included).
    pub pages_prefetched: u64,
    /// Pages covered by DONTNEED ranges.
    pub pages_dropped: u64,
}

/// One client's planning state.
#[derive(Debug)]
pub struct Planner {
    config: PlannerConfig,
    list: AccessList,
    window: Option<Window>,
    /// The list was replaced since the window was last selected, so the
    /// window's entries no longer match it.
    list_replaced: bool,
    aimd: Aimd,
    /// A premature eviction was seen in the current round.
    evicted_this_round: bool,
    /// The callback was last asked at this position and added nothing:
    /// do not ask again until the position moves.
    exhausted_at: Option<u64>,
    stats: PlannerStats,
}

impl Planner {
    /// A planner with an empty access list.
    pub fn new(config: PlannerConfig) -> Planner {
        Planner {
            list: AccessList::with_capacity(config.capacity),
            window: None,
            list_replaced: false,
            aimd: match config.start_bytes {
                None => Aimd::new(config.available_bytes, config.floor_bytes),
                Some(start) => Aimd::starting_at(config.available_bytes, config.floor_bytes, start),
            },
            evicted_this_round: false,
            exhausted_at: None,
            stats: PlannerStats::default(),
            config,
        }
    }

    /// Lowers the longest single advice range (e.g. for a device whose
    /// WILLNEED calls load less); never raises it.
    pub fn limit_advice_bytes(&mut self, bytes: u64) {
        let floor = self.config.page_size;
        self.config.max_advice_bytes = self.config.max_advice_bytes.min(bytes.max(floor));
    }

    /// Changes the access list's capacity (`PlannerConfig::capacity`), for
    /// example to what memory allows now; entries already on the list stay.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.config.capacity = capacity;
        self.list.set_capacity(capacity);
    }

    /// The configuration in force.
    pub fn config(&self) -> &PlannerConfig {
        &self.config
    }

    /// The page holding byte `offset` of `fd`.
    pub fn page_of(&self, fd: i32, offset: u64) -> PageKey {
        PageKey {
            fd,
            page: offset / self.config.page_size,
        }
    }

    /// Applies a `request_prefetching` call; returns the entries accepted.
    /// Replacing the list ends the current window (its entries are gone).
    pub fn request(&mut self, entries: &[Entry], mode: Mode) -> usize {
        let end_before = self.list.end_seq();
        if mode.contains(Mode::SET) || mode.contains(Mode::SET_FROM_MARK) {
            self.end_window();
            self.list_replaced = true;
        }
        let accepted = self.list.request(entries, mode);
        if self.list.end_seq() != end_before || accepted > 0 {
            self.exhausted_at = None;
        }
        accepted
    }

    /// Accounts a tracked read of `key`; `resident` says whether the page
    /// was in memory when the read arrived.
    pub fn on_read(&mut self, key: PageKey, resident: bool) -> (Verdict, ReadOutcome) {
        let verdict = self.locate(key);
        let mut outcome = ReadOutcome::default();
        match verdict {
            Verdict::Diverged => {
                self.stats.divergences += 1;
                outcome.call_back = true;
                outcome.start_round = true;
            }
            Verdict::Consumed | Verdict::Reread if !resident => {
                if self.window.as_ref().is_some_and(|w| w.contains(key)) {
                    self.note_premature_eviction();
                }
                outcome.start_round = true;
            }
            _ => {}
        }
        if self.window_consumed() {
            self.finish_round();
            outcome.start_round = true;
        }
        if outcome.start_round && self.needs_more_list() {
            outcome.call_back = true;
        }
        (verdict, outcome)
    }

    /// Accounts a further page of a read whose first page went through
    /// [`Planner::on_read`]: it is consumed if it is the next entry and
    /// otherwise ignored, so a read of a multi-page record listed once (one
    /// entry per 16 KiB tile, as in Figure 7) is not a divergence.
    pub fn on_read_continued(&mut self, key: PageKey) -> ReadOutcome {
        let position = self.list.position();
        if self.list.get(position).is_none_or(|e| e.key != key) {
            return ReadOutcome::default();
        }
        self.list.consume_through(position);
        let mut outcome = ReadOutcome::default();
        if self.window_consumed() {
            self.finish_round();
            outcome.start_round = true;
            outcome.call_back = self.needs_more_list();
        }
        outcome
    }

    /// Finds `key` on the list and moves the position past it.
    fn locate(&mut self, key: PageKey) -> Verdict {
        let position = self.list.position();
        if self.list.get(position).is_some_and(|e| e.key == key) {
            self.list.consume_through(position);
            return Verdict::Consumed;
        }
        let Some(window) = &self.window else {
            return Verdict::Diverged;
        };
        // A window ended by PF_SET keeps its pages (for the stale set) but
        // its sequence numbers now name the new list's entries.
        let in_window = window
            .find_from(key, position)
            .filter(|&seq| seq < window.end);
        if let Some(seq) = in_window {
            self.list.consume_through(seq);
            Verdict::Consumed
        } else if window.contains(key) {
            Verdict::Reread
        } else {
            Verdict::Diverged
        }
    }

    fn note_premature_eviction(&mut self) {
        self.stats.premature_evictions += 1;
        if !self.evicted_this_round {
            self.evicted_this_round = true;
            self.aimd.decrease();
        }
    }

    /// The whole window has been read.
    fn window_consumed(&self) -> bool {
        self.window
            .as_ref()
            .is_some_and(|w| self.list.position() >= w.end)
    }

    /// Ends a consumed round: AIMD grows if nothing was evicted early.
    fn finish_round(&mut self) {
        if !self.evicted_this_round {
            self.aimd.increase();
        }
        self.end_window();
    }

    /// Forgets the window's entries but keeps its pages for the stale set.
    fn end_window(&mut self) {
        if let Some(window) = &mut self.window {
            window.start = self.list.position();
            window.end = window.start;
        }
    }

    /// True if the list ahead is shorter than a full window and the
    /// application has not already said it has nothing more from here.
    fn needs_more_list(&self) -> bool {
        let budget = self.budget_pages();
        self.list.remaining() < budget && self.exhausted_at != Some(self.list.position())
    }

    /// Records that a callback ran at the current position; if it added
    /// nothing, further callbacks wait until the position moves.
    pub fn callback_returned(&mut self, list_end_before: u64) {
        if self.list.end_seq() == list_end_before {
            self.exhausted_at = Some(self.list.position());
        }
    }

    /// Sequence number one past the last entry (to compare around a callback).
    pub fn list_end(&self) -> u64 {
        self.list.end_seq()
    }

    /// Pages the current budget allows in one window.
    pub fn budget_pages(&self) -> u64 {
        (self.aimd.current() / self.config.page_size).max(1)
    }

    /// Starts a round: slides the window to the position, and returns the
    /// stale pages to evict and the ranges to prefetch. Costs O(entries
    /// entering or leaving the window) when the window overlaps the previous
    /// one on an unreplaced list; O(window) after a premature eviction, when
    /// the reverse pass is on, or when the window is selected from scratch.
    pub fn plan_round(&mut self) -> RoundPlan {
        let budget = self.budget_pages();
        let window = self.window.get_or_insert_with(Window::default);
        let slide = window.slide(&self.list, budget, self.list_replaced);
        self.list_replaced = false;
        let head = self
            .list
            .get(self.list.position())
            .map(|e| e.key)
            .unwrap_or(PageKey {
                fd: i32::MIN,
                page: 0,
            });
        let infill_pages = self.config.infill_bytes / self.config.page_size;
        let max_pages = self.config.max_advice_bytes / self.config.page_size;
        // Pages of the previous window were advised already; they need it
        // again only if some were found evicted.
        let wanted = if self.evicted_this_round {
            window.pages()
        } else {
            slide.entered
        };
        let fetch = split_long(
            clook_from(merge_with_infill(&wanted, infill_pages), head),
            max_pages,
        );
        let stale = slide.left;
        let evict = if (window.page_count() + stale.len()) as u64 > budget {
            merge_with_infill(&stale, 0)
        } else {
            Vec::new()
        };
        let reverse = if self.config.reverse_pass {
            reverse_access_runs(window.access_order())
        } else {
            Vec::new()
        };
        let plan = RoundPlan {
            reverse,
            window_pages: window.page_count() as u64,
            evict,
            fetch,
        };
        self.stats.rounds += 1;
        self.stats.pages_prefetched += plan.fetch.iter().map(|r| r.len).sum::<u64>();
        self.stats.pages_dropped += plan.evict.iter().map(|r| r.len).sum::<u64>();
        self.evicted_this_round = false;
        plan
    }

    /// The last marked entry the application has passed.
    pub fn last_mark(&self) -> Option<PageKey> {
        self.list.last_mark()
    }

    /// Entries stored on the list.
    pub fn list_len(&self) -> usize {
        self.list.len()
    }

    /// Current reorder-buffer size in bytes.
    pub fn budget_bytes(&self) -> u64 {
        self.aimd.current()
    }

    /// Updates the memory available for caching (AIMD's reference).
    pub fn set_available(&mut self, bytes: u64) {
        self.aimd.set_available(bytes);
    }

    /// The planner's counters.
    pub fn stats(&self) -> PlannerStats {
        self.stats
    }

    /// The current window, if a round is in progress.
    pub fn window(&self) -> Option<&Window> {
        self.window.as_ref()
    }
}
