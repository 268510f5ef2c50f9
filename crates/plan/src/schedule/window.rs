//! The `window` schedule: libprefetch's reorder buffer (ATC 2009, section
//! 4.5). A round takes the first `budget` unique pages of the list; the
//! next is planned once all but 1/g of them have been read (g, the
//! device's growth factor, `planner_growth.rs`).
//!
//! The problem: a list of scattered pages on a disk is read fastest as few
//! large sweeps, each in C-LOOK order; but the pages of a sweep must all
//! fit in memory until they are read, and the planner does not know how
//! far the application will read. While the application reads the last
//! pages of a window the device has nothing to do, unless the next round
//! is out already; and a round planned before its window is read fetches
//! only the pages the reads have made room for.
//!
//! The cost model (`planner_growth.rs`: a far request costs g pages of
//! transfer, a sweep of w pages spanning s costs min(w g, s)): planning the
//! next round when 1/e of the window is left overlaps the reading of that
//! 1/e with the next sweep, and leaves that sweep 1/e fewer pages; the
//! pages read in the window's first part that the shorter next window does
//! not reach are dropped for its room, and fetched again if read later.
//! On a seek-bound device (a far request of
//! [`super::SEEK_BOUND_GAP_BYTES`] or more) a window of scattered pages
//! costs its span (w g >= s), so the round is planned with 1/g left (e = g,
//! 339 on the emulated 7200 RPM disk): a few entries early, its sweep
//! whole. On a device without seek cost the round waits for the window's
//! end, as the paper's: planned at half the window (e = g = 2) it read 17-22%
//! more pages on this machine's disk with no gain in time resolved
//! (measurements: docs/repro.md, "The window's next round").
//!
//! The regimes:
//!
//! - **Slow start.** The window grows by the device's far-request cost
//!   (`planner_growth.rs`); the next window is planned once
//!   all but 1/g of this one has been read ([`Due::Early`]), so its sweep
//!   overlaps the reading of the rest.
//! - **Steady.** The next round is planned once the window has been read;
//!   on a seek-bound device at the same point as in slow start, all but 1/g
//!   of the window read, within the same budget: it fetches the pages the
//!   reads have made room for, and asks the application for more list if
//!   the list runs short ([`Due::Yes`]). AIMD grows after a round with no
//!   premature eviction.
//! - **Evicted.** A premature eviction in the round advises the whole
//!   window again at the next round (the kernel dropped some of it).
//!
//! ```text
//!   list     ... P ============= window: budget unique pages =====) ......
//!   round 1      [ fetch all, C-LOOK                               )
//!   reads        P ------------------------------------------>|  end
//!   round 2                                                   [ next window ...
//!                (planned at end - len/g in slow start, g times larger, and
//!                 on a seek-bound device; else at end)
//! ```
//!
//! The pages of the previous window that the new one does not need are
//! kept until their room is wanted, infill first ([`slide_round`], shared
//! with [`super::aggressive`]). Kept so that the paper's results can be
//! reproduced, and the schedule `by-shape` picks for runs of adjacent pages
//! and on seek-bound devices, where its large sorted rounds make large
//! requests (measurements: docs/repro.md, "Next-use planning").
//!
//! Deviations: the paper drops the previous round's pages that the new
//! window does not need; here they are dropped only when their room is
//! wanted (with a list that is a prefix of the real future, which section
//! 4.2 allows, that threw away pages needed right after it), infill first.
//! The paper starts a round on any buffer-cache miss; here a round also
//! starts as soon as the window is consumed, on a seek-bound device as soon
//! as all but 1/g of it is.

use super::by_shape::{Schedule, SEEK_BOUND_GAP_BYTES};
use super::types::{Due, Rounds, LIST_MEMORY_SHARE};
use crate::access_list::PageKey;
use crate::core_state::Core;
use crate::held::Role;
use crate::window::Window;

/// The paper's reorder buffer.
#[derive(Debug)]
pub(super) struct WindowRounds;

impl Rounds for WindowRounds {
    fn schedule(&self) -> Schedule {
        Schedule::Window
    }

    fn list_memory_share(&self) -> u64 {
        LIST_MEMORY_SHARE
    }

    fn round_due(&mut self, core: &mut Core) -> Due {
        if core.window_consumed() {
            finish_round(core);
            return Due::Yes;
        }
        if step_due(core) {
            // Slow start's larger window is planned without asking for
            // more list; a steady round may ask, the window being used up
            // but for its last 1/g.
            let due = if core.aimd.in_slow_start() {
                Due::Early
            } else {
                Due::Yes
            };
            grow_if_clean(core);
            return due;
        }
        Due::No
    }

    fn quiet_until(&self, core: &Core) -> u64 {
        let Some(window) = &core.window else {
            return u64::MAX;
        };
        // `step_due`'s step, else the window's end.
        if steps_early(core) {
            step_at(window, core.aimd.growth())
        } else {
            window.end
        }
    }

    fn reach(&self, _core: &Core, window: &Window) -> u64 {
        window.end
    }

    fn is_reread(&self, core: &Core, window: &Window, key: PageKey) -> bool {
        window.contains(&core.list, key)
    }

    fn round(&mut self, core: &mut Core, budget: u64) -> (Vec<PageKey>, Vec<PageKey>) {
        slide_round(core, budget, true)
    }

    fn after_round(&mut self, core: &mut Core) {
        core.evicted_this_round = false;
    }

    fn pages_in_use(&self, core: &Core) -> usize {
        core.held.len()
    }

    fn forbids_infill(&self, _core: &Core, _key: PageKey) -> bool {
        false
    }

    fn took_infill(&mut self, _core: &Core, _key: PageKey) {}
}

/// The position at which the next round of `window` is planned: all but
/// 1/growth of its entries read (half of them when the window doubles).
fn step_at(window: &Window, growth: u64) -> u64 {
    window.end - (window.end - window.start) / growth
}

/// All but 1/growth of the window has been read, during slow start or on
/// a seek-bound device: the next window (during slow start `growth` times
/// larger) is planned now, so its reads overlap the reading of the rest of
/// this one; during slow start the bet that the application reads on is
/// covered by that rest (`planner_growth.rs`).
fn step_due(core: &Core) -> bool {
    steps_early(core)
        && core.window.as_ref().is_some_and(|w| {
            w.end > w.start && core.list.position() >= step_at(w, core.aimd.growth())
        })
}

/// Whether the next round comes before the window is read: during slow
/// start, and on a seek-bound device (the module's header).
fn steps_early(core: &Core) -> bool {
    let config = &core.config;
    core.aimd.in_slow_start()
        || config.request_cost_pages.saturating_mul(config.page_size) >= SEEK_BOUND_GAP_BYTES
}

/// Ends a consumed round: AIMD grows if nothing was evicted early.
fn finish_round(core: &mut Core) {
    grow_if_clean(core);
    core.end_window();
}

/// AIMD grows after a round with no premature eviction.
fn grow_if_clean(core: &mut Core) {
    if !core.evicted_this_round {
        core.aimd.increase();
    }
}

/// Window and aggressive: slides the window; the pages that entered
/// are fetched, those that left are kept until their room is wanted.
/// With `refetch_on_eviction`, a premature eviction in the round advises
/// the whole window again. Returns the pages to fetch and to drop.
pub(super) fn slide_round(
    core: &mut Core,
    budget: u64,
    refetch_on_eviction: bool,
) -> (Vec<PageKey>, Vec<PageKey>) {
    // The window starts at the slowest of the list's readers: the pages a
    // thread behind the position has yet to read stay in it.
    let start = core.readers.floor(core.list.position(), budget / 2);
    let window = core.window.get_or_insert_with(Window::default);
    // The runs left to the kernel are indexed as ranges, not page by
    // page: they enter the window without entering the round's pages.
    let (list, readahead) = (&core.list, &mut core.readahead);
    readahead.restart(list.position(), core.list_replaced);
    let slide = window.slide_skipping(list, start, budget, core.list_replaced, &mut |seq| {
        readahead.left_from(list, seq)
    });
    core.list.keep_from(window.first_indexed());
    core.list_replaced = false;
    let (held, readahead) = (&mut core.held, &core.readahead);
    let mut wanted: Vec<PageKey> = slide
        .entered
        .into_iter()
        .filter(|&key| !readahead.is_left(key) && held.fetch(key, Role::Listed))
        .collect();
    for key in slide.left {
        core.held.set_role(key, Role::Stale);
    }
    // Pages of the previous window were advised already; they need it
    // again only if some were found evicted (the kernel's read-ahead
    // reads its own again).
    if core.evicted_this_round && refetch_on_eviction {
        wanted = window.pages(&core.list);
        wanted.retain(|&key| !core.readahead.is_left(key));
    }
    if std::mem::take(&mut core.take_back) {
        let ahead = window.pages(&core.list);
        let held = &mut core.held;
        wanted.extend(
            core.readahead
                .take_back(ahead)
                .into_iter()
                .filter(|&key| held.fetch(key, Role::Listed)),
        );
    }
    let mut drops = Vec::new();
    let keep = (core.aimd.keep_limit() / core.config.page_size).max(budget);
    while core.held.len() as u64 > keep {
        match core.held.drop_first_unneeded() {
            Some(key) => drops.push(key),
            None => break,
        }
    }
    (wanted, drops)
}
