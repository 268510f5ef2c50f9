//! The default schedule, `by-shape`: a list of runs of adjacent pages is
//! planned with the paper's window (libprefetch, ATC 2009, section 4.5),
//! whose large sorted rounds make large requests; a list of scattered pages
//! with Cao et al.'s aggressive (SIGMETRICS 1995, section 2.5) while it is
//! no longer than memory, else with their conservative (section 2.4),
//! which reads fewer pages when pages come back after memory has filled. And the callback cadence every schedule keeps: the
//! application is asked for more list at most once per budget's worth of
//! reads, as the paper's window asks once per window (section 4.2).

use plan::{AccessList, Entry, Mode, PageKey, Planner, PlannerConfig, RoundPlan, Schedule};

const PAGE: u64 = 4096;

/// The break-even gap of a device without seek cost (this project's test
/// machine's virtio disk measures 9 KB).
const NO_SEEK: u64 = 8 << 10;

fn entries(pages: &[u64]) -> Vec<Entry> {
    pages
        .iter()
        .map(|&page| Entry {
            key: PageKey { fd: 3, page },
            mark: false,
        })
        .collect()
}

fn list_of(pages: &[u64]) -> AccessList {
    let mut list = AccessList::with_capacity(pages.len());
    list.request(&entries(pages), Mode::SET);
    list
}

/// Pages of tiles of `tile` pages, `count` tiles `stride` pages apart.
fn tiles(count: u64, tile: u64, stride: u64) -> Vec<u64> {
    (0..count)
        .flat_map(|t| (t * stride..t * stride + tile).collect::<Vec<_>>())
        .collect()
}

/// A scattered list: pages 0..n in a fixed pseudo-random order.
fn scattered(n: u64) -> Vec<u64> {
    (0..n).map(|i| (i * 7919) % n).collect()
}

fn config(schedule: Schedule, budget_pages: u64) -> PlannerConfig {
    PlannerConfig {
        page_size: PAGE,
        infill_bytes: 0,
        // AIMD's cap is 90% of this: `budget_pages` pages.
        available_bytes: budget_pages * PAGE * 10 / 9 + 1,
        floor_bytes: PAGE,
        schedule,
        ..PlannerConfig::default()
    }
}

/// Reads `pages` in order, all resident, planning every round asked for;
/// returns every round's advice.
fn rounds(schedule: Schedule, pages: &[u64], budget_pages: u64) -> Vec<RoundPlan> {
    let mut planner = Planner::new(config(schedule, budget_pages));
    planner.request(&entries(pages), Mode::SET | Mode::DONE);
    let mut plans = vec![planner.plan_round()];
    for entry in entries(pages) {
        let (_, outcome) = planner.on_read(entry.key, true);
        if outcome.start_round {
            plans.push(planner.plan_round());
        }
    }
    plans
}

#[test]
fn runs_get_the_window_and_scattered_pages_aggressive_or_conservative_by_length() {
    let roomy = 1 << 20;
    let sequential: Vec<u64> = (0..10_000).collect();
    assert_eq!(
        Schedule::for_list(&list_of(&sequential), 0, 100, NO_SEEK),
        Schedule::Window
    );
    let column_of_tiles = tiles(500, 4, 64);
    assert_eq!(
        Schedule::for_list(&list_of(&column_of_tiles), 0, 100, NO_SEEK),
        Schedule::Window
    );
    let one_page_strides = tiles(500, 1, 64);
    assert_eq!(
        Schedule::for_list(&list_of(&one_page_strides), 0, roomy, NO_SEEK),
        Schedule::Aggressive
    );
    let spread = list_of(&scattered(10_000));
    assert_eq!(
        Schedule::for_list(&spread, 0, roomy, NO_SEEK),
        Schedule::Aggressive
    );
    assert_eq!(
        Schedule::for_list(&spread, 0, 10_000, NO_SEEK),
        Schedule::Aggressive
    );
    assert_eq!(
        Schedule::for_list(&spread, 0, 9_999, NO_SEEK),
        Schedule::Conservative
    );
}

#[test]
fn a_seek_bound_device_gets_the_window_whatever_the_shape() {
    let spread = list_of(&scattered(10_000));
    let rotating = plan::planner::SEEK_BOUND_GAP_BYTES;
    assert_eq!(
        Schedule::for_list(&spread, 0, 1 << 20, rotating),
        Schedule::Window
    );
    assert_eq!(
        Schedule::for_list(&spread, 0, 100, rotating),
        Schedule::Window
    );
    assert_eq!(
        Schedule::for_list(&spread, 0, 100, rotating - 1),
        Schedule::Conservative
    );
}

#[test]
fn the_shape_is_judged_from_the_position_on() {
    let mut pages = scattered(5_000);
    pages.extend(10_000..20_000);
    let list = list_of(&pages);
    assert_eq!(
        Schedule::for_list(&list, 0, 1 << 20, NO_SEEK),
        Schedule::Aggressive
    );
    assert_eq!(
        Schedule::for_list(&list, 5_000, 1 << 20, NO_SEEK),
        Schedule::Window
    );
    assert_eq!(
        Schedule::for_list(&list, 5_000, 1_000, NO_SEEK),
        Schedule::Window
    );
}

#[test]
fn by_shape_advises_exactly_what_the_schedule_it_picks_advises() {
    let runs = tiles(300, 4, 9);
    assert_eq!(
        rounds(Schedule::ByShape, &runs, 64),
        rounds(Schedule::Window, &runs, 64)
    );
    assert_ne!(
        rounds(Schedule::Window, &runs, 64),
        rounds(Schedule::Aggressive, &runs, 64),
        "the two schedules differ on this list, so the comparison can fail"
    );
    // Scattered and longer than memory (64 pages): conservative.
    let spread = scattered(1_200);
    assert_eq!(
        rounds(Schedule::ByShape, &spread, 64),
        rounds(Schedule::Conservative, &spread, 64)
    );
    assert_ne!(
        rounds(Schedule::Conservative, &spread, 64),
        rounds(Schedule::Aggressive, &spread, 64)
    );
    // Scattered, with repeats, and no longer than memory (2,000 pages):
    // aggressive.
    let repeated: Vec<u64> = scattered(1_500).iter().map(|p| p % 700).collect();
    assert_eq!(
        rounds(Schedule::ByShape, &repeated, 2_000),
        rounds(Schedule::Aggressive, &repeated, 2_000)
    );
    assert_ne!(
        rounds(Schedule::Aggressive, &repeated, 2_000),
        rounds(Schedule::Conservative, &repeated, 2_000)
    );
}

/// Reads a list of `listed` scattered pages under a budget of `budget`
/// pages, with a callback that adds nothing; returns the positions at
/// which the application was asked for more list.
fn callbacks_on_a_short_list(schedule: Schedule, listed: u64, budget: u64) -> Vec<u64> {
    let pages = scattered(listed);
    let mut planner = Planner::new(config(schedule, budget));
    planner.request(&entries(&pages), Mode::SET);
    planner.plan_round();
    let mut asked = Vec::new();
    for (position, entry) in entries(&pages).into_iter().enumerate() {
        let (_, outcome) = planner.on_read(entry.key, true);
        if outcome.call_back {
            asked.push(position as u64);
            planner.callback_returned(planner.list_end());
        }
        if outcome.start_round {
            planner.plan_round();
        }
    }
    asked
}

#[test]
fn a_list_shorter_than_the_budget_is_asked_for_once_per_budget_of_reads() {
    // The list (300 entries) is shorter than the budget (1000 pages): the
    // window asks once it is read; aggressive, whose rounds come every 15
    // reads, asks at its first round and then not before the list's end.
    let asked = |schedule| callbacks_on_a_short_list(schedule, 300, 1000);
    assert_eq!(asked(Schedule::Window), vec![299]);
    assert_eq!(asked(Schedule::Aggressive), vec![14, 299]);
    assert_eq!(asked(Schedule::ByShape), asked(Schedule::Aggressive));
}

/// Each list set is judged anew (conservative, window, conservative, window
/// here): the plan stays within the budget and every read is on the list.
#[test]
fn lists_of_alternating_shapes_are_followed_within_the_budget() {
    let budget = 64;
    let mut planner = Planner::new(config(Schedule::ByShape, budget));
    let lists = [
        scattered(500),
        (1_000..1_400).collect::<Vec<u64>>(),
        scattered(300).iter().map(|p| p + 2_000).collect(),
        tiles(100, 4, 16),
    ];
    for pages in &lists {
        planner.request(&entries(pages), Mode::SET | Mode::DONE);
        let plan = planner.plan_round();
        assert!(plan.held_pages <= budget);
        for entry in entries(pages).into_iter().take(200) {
            let (verdict, outcome) = planner.on_read(entry.key, true);
            assert_ne!(verdict, plan::Verdict::Diverged, "{:?}", entry.key);
            if outcome.start_round {
                assert!(planner.plan_round().held_pages <= budget);
            }
        }
    }
}
