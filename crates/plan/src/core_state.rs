//! The state every schedule plans on ([`Core`]): one client's access
//! list and position, the window over it, the pages the plan keeps, AIMD,
//! the pages left to the kernel's read-ahead, and where each of the
//! list's readers has got to. [`crate::planner`] owns
//! it and drives the schedule in force (`crate::schedule`) over it.

use crate::access_list::AccessList;
use crate::aimd::Aimd;
use crate::held::Held;
use crate::planner_types::PlannerConfig;
use crate::readahead::ReadAhead;
use crate::readers::Readers;
use crate::window::Window;

/// The state every schedule plans on ([`crate::schedule::Rounds`]).
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) config: PlannerConfig,
    pub(crate) list: AccessList,
    pub(crate) window: Option<Window>,
    /// The list was replaced since the window was last selected, so the
    /// window's entries no longer match it.
    pub(crate) list_replaced: bool,
    pub(crate) aimd: Aimd,
    /// A premature eviction was seen in the current round (window) or
    /// epoch (aggressive, conservative).
    pub(crate) evicted_this_round: bool,
    /// The pages the plan keeps.
    pub(crate) held: Held,
    /// Where each thread reading the list has got to: the window starts
    /// at the slowest (window, aggressive).
    pub(crate) readers: Readers,
    /// The run pages left to the kernel's read-ahead (window, aggressive).
    pub(crate) readahead: ReadAhead,
    /// A read showed that the kernel does not read ahead: the next round
    /// advises the pages left to it.
    pub(crate) take_back: bool,
    /// Position at the last round (aggressive: the next is due a batch later).
    pub(crate) last_round_at: u64,
    /// Aggressive and conservative: AIMD grows once the position passes
    /// this with no premature eviction (a window's worth of reads).
    pub(crate) epoch_end: Option<u64>,
}

impl Core {
    /// Pages the current budget allows in one window.
    pub(crate) fn budget_pages(&self) -> u64 {
        (self.aimd.current() / self.config.page_size).max(1)
    }

    /// Fetches a round gathers (aggressive, conservative).
    pub(crate) fn batch_pages(&self) -> u64 {
        match self.config.batch_pages {
            0 => (self.budget_pages() / 64).max(1),
            pages => pages,
        }
    }

    /// The whole window has been read.
    pub(crate) fn window_consumed(&self) -> bool {
        self.window
            .as_ref()
            .is_some_and(|w| self.list.position() >= w.end)
    }

    /// Entries in the window (none before the first round).
    pub(crate) fn window_entries(&self) -> u64 {
        self.window.as_ref().map_or(0, |w| w.end - w.start)
    }

    /// Forgets the window's entries but keeps its pages for the stale set.
    pub(crate) fn end_window(&mut self) {
        if let Some(window) = &mut self.window {
            window.start = self.list.position();
            window.end = window.start;
        }
    }

    /// Aggressive and conservative: AIMD grows after an epoch with no
    /// premature eviction.
    pub(crate) fn check_epoch(&mut self) {
        if self
            .epoch_end
            .is_some_and(|end| self.list.position() >= end)
        {
            if !self.evicted_this_round {
                self.aimd.increase();
            }
            self.evicted_this_round = false;
            self.epoch_end = None;
        }
    }

    /// Aggressive and conservative: unless one is under way, an epoch of
    /// `reads` reads (at least one) starts at the last round.
    pub(crate) fn start_epoch(&mut self, reads: u64) {
        if self.epoch_end.is_none() {
            self.epoch_end = Some(self.last_round_at + reads.max(1));
        }
    }
}
