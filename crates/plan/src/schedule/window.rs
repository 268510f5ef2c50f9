//! The `window` schedule: libprefetch's reorder buffer (ATC 2009, section
//! 4.5). A round takes the first `budget` unique pages of the list; the
//! next round starts when they have all been read.
//!
//! The problem: a list of scattered pages on a disk is read fastest as few
//! large sweeps, each in C-LOOK order; but the pages of a sweep must all
//! fit in memory until they are read, and the planner does not know how
//! far the application will read.
//!
//! The regimes:
//!
//! - **Slow start.** The window grows by the device's far-request cost
//!   (`planner_growth.rs`); the next window is planned once
//!   all but 1/g of this one has been read ([`Due::Early`]), so its sweep
//!   overlaps the reading of the rest.
//! - **Steady.** A round once the whole window has been read; AIMD grows
//!   after a round with no premature eviction. On a device whose profile
//!   says it has no seek cost, the next round is planned once all but 1/g
//!   of the window has been read, as in slow start, and the list is asked
//!   for more if it runs short, as at the window's end: a round there costs
//!   its pages, not a sweep of its span, so planning it early fetches only
//!   the pages the reads have made room for and overlaps the device's work
//!   with the application's (a 104 MiB table's index scan in a 24 MiB
//!   cgroup on this machine's disk: 2.33-2.40 s against 2.63-2.73 s, about
//!   the same pages; docs/repro.md "The window's next round"). On a
//!   seek-bound device, or one without a profile, the round still waits for
//!   the window's end.
//! - **Evicted.** A premature eviction in the round advises the whole
//!   window again at the next round (the kernel dropped some of it).
//!
//! ```text
//!   list     ... P ============= window: budget unique pages =====) ......
//!   round 1      [ fetch all, C-LOOK                               )
//!   reads        P --------------------------------------------->  end
//!   round 2                                                        [ next window ...
//!                (slow start: planned at  end - len/g)
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
//! starts as soon as the window is consumed.

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
        if slow_start_step_due(core) {
            grow_if_clean(core);
            return Due::Early;
        }
        if steady_step_due(core) {
            // As at the window's end, the list is asked for more if it runs short: the reads never
            // reach the window's end now.
            return Due::Yes;
        }
        Due::No
    }

    fn quiet_until(&self, core: &Core) -> u64 {
        let Some(window) = &core.window else {
            return u64::MAX;
        };
        // The step of `slow_start_step_due` or `steady_step_due`, else the
        // window's end.
        if core.aimd.in_slow_start() || without_seek_cost(core) {
            window.end - (window.end - window.start) / core.aimd.growth()
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

/// Window, during slow start: all but 1/growth of the window has been
/// read (half of it when the window doubles). The next, `growth` times
/// larger window is planned now, so its reads overlap the reading of
/// the rest of this one; the bet that the application reads on is
/// covered by that rest (`planner_growth.rs`).
fn slow_start_step_due(core: &Core) -> bool {
    let growth = core.aimd.growth();
    core.aimd.in_slow_start()
        && core.window.as_ref().is_some_and(|w| {
            let len = w.end - w.start;
            let step = w.end - len / growth;
            len > 0 && core.list.position() >= step
        })
}

/// Window, once slow start is over, on a device without seek cost: all but
/// 1/growth of the window has been read, and the next round is planned
/// now (see the module's header).
fn steady_step_due(core: &Core) -> bool {
    !core.aimd.in_slow_start()
        && without_seek_cost(core)
        && core.window.as_ref().is_some_and(|w| {
            let len = w.end - w.start;
            len > 0 && core.list.position() >= w.end - len / core.aimd.growth()
        })
}

/// Whether the device is known to have no seek cost: its profile puts a
/// far request below [`SEEK_BOUND_GAP_BYTES`] of transfer (a device without
/// a profile is not known to).
fn without_seek_cost(core: &Core) -> bool {
    let config = &core.config;
    let far_request_bytes = config.request_cost_pages.saturating_mul(config.page_size);
    config.request_cost_pages > 0 && far_request_bytes < SEEK_BOUND_GAP_BYTES
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
