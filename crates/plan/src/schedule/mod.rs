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
mod types;
mod window;

pub use by_shape::{Schedule, SEEK_BOUND_GAP_BYTES};
pub use conservative::CONSERVATIVE_LIST_MEMORY_SHARE;
pub use types::LIST_MEMORY_SHARE;
pub(crate) use types::{Due, Rounds};

/// The catalog: the schedule that plans rounds as `schedule` says
/// (`by-shape` starts with the window).
pub(crate) fn rounds(schedule: Schedule) -> Box<dyn Rounds> {
    match schedule {
        Schedule::Window | Schedule::ByShape => Box::new(window::WindowRounds),
        Schedule::Aggressive => Box::new(aggressive::Aggressive),
        Schedule::Conservative => Box::<conservative::Conservative>::default(),
    }
}
