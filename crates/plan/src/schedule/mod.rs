//! The planner's schedules: when a round fetches and what it drops. Each
//! is one file implementing [`Rounds`]; [`Schedule`] names them, and
//! `by-shape` picks one per list. Adding one takes its file, its `mod`
//! line, its variant of [`Schedule`] (with its name) and its line in
//! [`rounds`]; a hook left out does not compile.
//!
//! The core ([`crate::planner`], its state in [`crate::core_state`]) owns
//! the list, the position, the window, the held pages and AIMD; a schedule
//! decides, on that state:
//!
//! ```text
//!   read  -> core: locate on the list --------> Rounds::reach, Rounds::is_reread
//!         -> core: premature eviction?, miss?
//!         -> Rounds::round_due -----------------> No / Yes / Early (slow-start step)
//!   round -> Rounds::round: pages to fetch and to drop, counted in Held
//!         -> core: infill within the budget ---> Rounds::pages_in_use,
//!                                                 Rounds::forbids_infill, Rounds::took_infill
//!         -> core: C-LOOK order, split, stats
//!         -> Rounds::after_round: the AIMD period (round or epoch) that follows
//! ```
//!
//! The schedules (Cao, Felten, Karlin and Li, SIGMETRICS 1995, section 2;
//! libprefetch, ATC 2009, section 4.5):
//!
//! - [`window`]: the paper's reorder buffer, whole windows in C-LOOK order.
//! - [`aggressive`]: Cao's aggressive, the window sliding every batch.
//! - [`conservative`]: Cao's conservative, Belady's MIN run ahead.
//! - `by-shape`, the live library's default, picks one of them for each
//!   list set ([`Schedule::for_list`]). How it was chosen, with the
//!   measurements: docs/repro.md, "Next-use planning".
//!
//! Under `by-shape`, a page deeper into a run of adjacent pages than the
//! kernel's read-ahead window is left to the kernel, which reads such runs
//! ahead in large requests by itself ([`crate::readahead`],
//! [`crate::Planner::raise_readahead_pages`]).

mod aggressive;
pub(crate) mod by_shape;
mod conservative;
mod window;

use std::fmt;

use crate::access_list::PageKey;
use crate::core_state::Core;
use crate::window::Window;

pub use by_shape::{Schedule, SEEK_BOUND_GAP_BYTES};
pub use conservative::CONSERVATIVE_LIST_MEMORY_SHARE;

/// The access list may take 1/LIST_MEMORY_SHARE of the memory available
/// for caching: the list is anonymous memory, so in a memory cgroup it
/// takes room from the cache it plans. Window and aggressive look at most
/// a budget or so ahead, so for them a longer list is only memory taken
/// from the cache.
pub const LIST_MEMORY_SHARE: u64 = 8;

/// Whether a read makes a round due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// Not yet.
    No,
    /// Now, asking the application for more list if it runs short.
    Yes,
    /// The window's next round, planned at half its reads during slow
    /// start; the list is not asked for more (the window is not used up).
    Early,
}

/// One schedule's decisions on the core's state. The core calls every
/// method; none has a default, so a schedule that leaves one out does not
/// compile.
pub(crate) trait Rounds: fmt::Debug + Send + Sync {
    /// The schedule this is: MUST be the one whose line in [`rounds`]
    /// built it.
    fn schedule(&self) -> Schedule;

    /// The access list may take 1/this of the memory available for caching.
    fn list_memory_share(&self) -> u64;

    /// Called after a tracked read while no round is pending (at most once
    /// per round, so it MAY end the window or grow AIMD): whether the read
    /// makes a round due.
    fn round_due(&mut self, core: &mut Core) -> Due;

    /// A position before which [`Rounds::round_due`] MUST answer
    /// [`Due::No`] with no effect, as long as nothing but the position
    /// changes (0: no such promise). Lets the further pages of a read skip
    /// the question.
    fn quiet_until(&self, core: &Core) -> u64;

    /// The list position a read may not skip ahead to (exclusive): a read
    /// of a page first listed in `window` before it is consumed.
    fn reach(&self, core: &Core, window: &Window) -> u64;

    /// A read of `key`, not listed ahead within reach, is a reread rather
    /// than a divergence.
    fn is_reread(&self, core: &Core, window: &Window, key: PageKey) -> bool;

    /// Plans a round with a budget of `budget` pages: returns the pages to
    /// fetch and those to drop. MUST count the fetches in `core.held` and
    /// remove the drops from it; MUST leave `core.window` set and
    /// `core.list_replaced` false.
    fn round(&mut self, core: &mut Core, budget: u64) -> (Vec<PageKey>, Vec<PageKey>);

    /// Called once the round is planned (`core.last_round_at` is its
    /// position): starts the AIMD period that follows (a round or an epoch).
    fn after_round(&mut self, core: &mut Core);

    /// Pages counted against the budget when the round places infill (the
    /// held pages at least).
    fn pages_in_use(&self, core: &Core) -> usize;

    /// Whether infill must not take `key`, a gap page the plan does not hold.
    fn forbids_infill(&self, core: &Core, key: PageKey) -> bool;

    /// The round fetched `key` as infill (already counted in `core.held`).
    fn took_infill(&mut self, core: &Core, key: PageKey);
}

/// The catalog: the schedule that plans rounds as `schedule` says
/// (`by-shape` starts with the window).
pub(crate) fn rounds(schedule: Schedule) -> Box<dyn Rounds> {
    match schedule {
        Schedule::Window | Schedule::ByShape => Box::new(window::WindowRounds),
        Schedule::Aggressive => Box::new(aggressive::Aggressive),
        Schedule::Conservative => Box::<conservative::Conservative>::default(),
    }
}
