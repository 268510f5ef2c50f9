//! A from-scratch reference of the planner (libprefetch, ATC 2009, sections
//! 4.1-4.6), as `plan::Planner` was before its window slid from round to
//! round: every round walks the list from the position until the budget's
//! unique pages, sorts the window's entries and pages, and diffs the sorted
//! page sets of the previous and the new window. The property test in
//! `properties.rs` checks that the sliding planner decides exactly the same.

use std::collections::HashSet;

use plan::ranges::{clook_from, merge_with_infill, reverse_access_runs, split_long, stale_pages};
use plan::{
    AccessList, Aimd, Entry, Mode, PageKey, PlannerConfig, PlannerStats, ReadOutcome, RoundPlan,
    Verdict,
};

/// One round's window, selected from scratch.
#[derive(Clone, Debug, Default)]
pub struct FullWindow {
    /// Sequence number of the first entry of the round.
    pub start: u64,
    /// Sequence number one past the last entry of the round.
    pub end: u64,
    /// Every entry as (page, seq), sorted.
    by_page: Vec<(PageKey, u64)>,
    /// The unique pages, sorted.
    pub pages: Vec<PageKey>,
}

impl FullWindow {
    /// Walks `list` from its position until `budget_pages` unique pages.
    pub fn select(list: &AccessList, budget_pages: u64) -> FullWindow {
        let start = list.position();
        let mut seen = HashSet::new();
        let mut by_page = Vec::new();
        let mut end = start;
        for (seq, entry) in list.iter_from(start) {
            if !seen.contains(&entry.key) {
                if seen.len() as u64 >= budget_pages {
                    break;
                }
                seen.insert(entry.key);
            }
            by_page.push((entry.key, seq));
            end = seq + 1;
        }
        by_page.sort_unstable();
        let mut pages: Vec<PageKey> = seen.into_iter().collect();
        pages.sort_unstable();
        FullWindow {
            start,
            end,
            by_page,
            pages,
        }
    }

    fn contains(&self, key: PageKey) -> bool {
        self.pages.binary_search(&key).is_ok()
    }

    fn find_from(&self, key: PageKey, from: u64) -> Option<u64> {
        let at = self
            .by_page
            .partition_point(|&(k, seq)| (k, seq) < (key, from));
        match self.by_page.get(at) {
            Some(&(k, seq)) if k == key => Some(seq),
            _ => None,
        }
    }

    fn access_order(&self) -> Vec<PageKey> {
        let mut order: Vec<(u64, PageKey)> = self.by_page.iter().map(|&(k, s)| (s, k)).collect();
        order.sort_unstable();
        order.into_iter().map(|(_, k)| k).collect()
    }
}

/// The reference planner: same state machine, full selection every round.
#[derive(Debug)]
pub struct ReferencePlanner {
    config: PlannerConfig,
    /// The access list (public so that a test can pick reads from it).
    pub list: AccessList,
    /// The current window, if a round was planned.
    pub window: Option<FullWindow>,
    aimd: Aimd,
    evicted_this_round: bool,
    exhausted_at: Option<u64>,
    /// The counters `Planner::stats` reports.
    pub stats: PlannerStats,
}

impl ReferencePlanner {
    /// A reference planner with an empty list.
    pub fn new(config: PlannerConfig) -> ReferencePlanner {
        ReferencePlanner {
            list: AccessList::with_capacity(config.capacity),
            window: None,
            aimd: Aimd::new(config.available_bytes, config.floor_bytes),
            evicted_this_round: false,
            exhausted_at: None,
            stats: PlannerStats::default(),
            config,
        }
    }

    /// `Planner::request`.
    pub fn request(&mut self, entries: &[Entry], mode: Mode) -> usize {
        let end_before = self.list.end_seq();
        if mode.contains(Mode::SET) || mode.contains(Mode::SET_FROM_MARK) {
            self.end_window();
        }
        let accepted = self.list.request(entries, mode);
        if self.list.end_seq() != end_before || accepted > 0 {
            self.exhausted_at = None;
        }
        accepted
    }

    /// `Planner::on_read`.
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

    /// `Planner::on_read_continued`.
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

    fn window_consumed(&self) -> bool {
        self.window
            .as_ref()
            .is_some_and(|w| self.list.position() >= w.end)
    }

    fn finish_round(&mut self) {
        if !self.evicted_this_round {
            self.aimd.increase();
        }
        self.end_window();
    }

    fn end_window(&mut self) {
        if let Some(window) = &mut self.window {
            window.start = self.list.position();
            window.end = window.start;
        }
    }

    fn needs_more_list(&self) -> bool {
        self.list.remaining() < self.budget_pages()
            && self.exhausted_at != Some(self.list.position())
    }

    /// `Planner::callback_returned`.
    pub fn callback_returned(&mut self, list_end_before: u64) {
        if self.list.end_seq() == list_end_before {
            self.exhausted_at = Some(self.list.position());
        }
    }

    /// `Planner::budget_pages`.
    pub fn budget_pages(&self) -> u64 {
        (self.aimd.current() / self.config.page_size).max(1)
    }

    /// `Planner::budget_bytes`.
    pub fn budget_bytes(&self) -> u64 {
        self.aimd.current()
    }

    /// `Planner::set_available`.
    pub fn set_available(&mut self, bytes: u64) {
        self.aimd.set_available(bytes);
    }

    /// `Planner::plan_round`, with the reverse ranges only if the config
    /// asks for them.
    pub fn plan_round(&mut self) -> RoundPlan {
        let window = FullWindow::select(&self.list, self.budget_pages());
        let previous = self.window.take().map(|w| w.pages).unwrap_or_default();
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
        let wanted = if self.evicted_this_round {
            window.pages.clone()
        } else {
            stale_pages(&window.pages, &previous)
        };
        let fetch = split_long(
            clook_from(merge_with_infill(&wanted, infill_pages), head),
            max_pages,
        );
        let stale = stale_pages(&previous, &window.pages);
        let evict = if (window.pages.len() + stale.len()) as u64 > self.budget_pages() {
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
            window_pages: window.pages.len() as u64,
            evict,
            fetch,
        };
        self.stats.rounds += 1;
        self.stats.pages_prefetched += plan.fetch.iter().map(|r| r.len).sum::<u64>();
        self.stats.pages_dropped += plan.evict.iter().map(|r| r.len).sum::<u64>();
        self.evicted_this_round = false;
        self.window = Some(window);
        plan
    }
}
