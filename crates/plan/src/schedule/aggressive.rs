//! The `aggressive` schedule: Cao, Felten, Karlin and Li's aggressive
//! (SIGMETRICS 1995, section 2.5) on libprefetch's window (ATC 2009,
//! section 4.5).
//!
//! The problem: the window schedule fetches a whole window, then waits
//! until the application has read all of it; with memory full of pages
//! needed later, each round's pages evict each other. Cao's rules: fetch
//! the page needed soonest (rule 1), replace the page needed last (rule
//! 2), never replace a page needed before the one fetched (rule 3).
//!
//! The window slides every `batch` reads ([`crate::PlannerConfig::batch_pages`],
//! 1/64 of the budget by default): the pages that entered it, needed
//! soonest, are fetched; the pages that left it, needed after all of the
//! window's, make room. Since every page entering is needed before every
//! page leaving, no fetch does harm.
//!
//! ```text
//!   list      ... P ======== window (budget unique pages) =========) ...
//!   batch later      P' ========================================)===)
//!                 [P, P') read          left: make room    entered: fetch
//! ```
//!
//! The regimes:
//!
//! - **Steady.** A round every batch, or when the window has been read.
//! - **Epoch.** AIMD grows after a window's worth of reads with no
//!   premature eviction, halves (once an epoch) on one.
//! - **Memory fits the list.** `by-shape` picks aggressive for a scattered
//!   list no longer than memory has pages; a longer one gets
//!   [`super::conservative`], which reads fewer pages once pages come back
//!   after memory has filled (docs/repro.md, "Next-use planning").
//!
//! A read of a page the plan keeps is a reread, not a divergence.
//!
//! Deviations: Cao's rule 4 asks for a fetch at every opportunity; `batch`
//! gathers fetches into fewer advice calls.

use super::by_shape::Schedule;
use super::types::{Due, Rounds, LIST_MEMORY_SHARE};
use super::window::slide_round;
use crate::access_list::PageKey;
use crate::core_state::Core;
use crate::window::Window;

/// Cao's aggressive on the sliding window.
#[derive(Debug)]
pub(super) struct Aggressive;

impl Rounds for Aggressive {
    fn schedule(&self) -> Schedule {
        Schedule::Aggressive
    }

    fn list_memory_share(&self) -> u64 {
        LIST_MEMORY_SHARE
    }

    fn round_due(&mut self, core: &mut Core) -> Due {
        core.check_epoch();
        let due = core.list.position() >= core.last_round_at + core.batch_pages();
        if due || core.window_consumed() {
            Due::Yes
        } else {
            Due::No
        }
    }

    fn quiet_until(&self, _core: &Core) -> u64 {
        // Every answer may end an epoch (`Core::check_epoch`).
        0
    }

    fn reach(&self, _core: &Core, window: &Window) -> u64 {
        window.end
    }

    fn is_reread(&self, core: &Core, window: &Window, key: PageKey) -> bool {
        core.held.contains(key) || window.contains(&core.list, key)
    }

    fn round(&mut self, core: &mut Core, budget: u64) -> (Vec<PageKey>, Vec<PageKey>) {
        slide_round(core, budget, false)
    }

    fn after_round(&mut self, core: &mut Core) {
        // An epoch is a window's worth of reads.
        let entries = core.window_entries();
        core.start_epoch(entries);
    }

    fn pages_in_use(&self, core: &Core) -> usize {
        core.held.len()
    }

    fn forbids_infill(&self, _core: &Core, _key: PageKey) -> bool {
        false
    }

    fn took_infill(&mut self, _core: &Core, _key: PageKey) {}
}
