//! What every schedule shares: the [`Rounds`] trait the core calls, the
//! [`Due`] answer of a read and the list's default memory share. Apart
//! from the schedules and their catalog (`mod.rs`) so that the schedules
//! import it without importing the catalog that builds them.

use std::fmt;

use super::by_shape::Schedule;
use crate::access_list::PageKey;
use crate::core_state::Core;
use crate::window::Window;

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
    /// The schedule this is: MUST be the one whose line in [`super::rounds`]
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
