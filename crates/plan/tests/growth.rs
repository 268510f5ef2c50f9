//! The window's growth from the application's consumption and the device's
//! costs (the planner's header, "Window growth"): the exact sequence of
//! windows for a consumer that keeps up, one that stops after 20 reads and
//! one that waits on I/O, on a seek-bound and a flash device profile, with
//! the pages each round fetches.
//!
//! Every list is 5,000 distinct pages in a scattered order; the first
//! window is 32 pages (128 KiB) and memory allows 100,000. A profile is the
//! device's far-request cost in pages of transfer: 340 for the emulated
//! 7200 RPM disk (growth 340: the step takes the far cost itself; a sparse
//! first window is followed, not fetched), 1 for flash (growth 2,
//! doubling).

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, RoundPlan, Schedule, Verdict};

const PAGE: u64 = 4096;
const LISTED: u64 = 5_000;
const SEEK_BOUND: u64 = 340;
const FLASH: u64 = 1;

fn key(i: u64) -> PageKey {
    // A scattered order over 65,536 pages: every listed page is distinct.
    PageKey {
        fd: 1,
        page: i.wrapping_mul(40_503) % 65_536,
    }
}

fn planner(request_cost_pages: u64) -> Planner {
    Planner::new(PlannerConfig {
        page_size: PAGE,
        infill_bytes: 0,
        available_bytes: 100_000 * PAGE * 10 / 9 + 1,
        floor_bytes: PAGE,
        start_bytes: Some(32 * PAGE),
        request_cost_pages,
        schedule: Schedule::Window,
        ..PlannerConfig::default()
    })
}

/// How a consumer reads: how many entries, and whether each read finds
/// its page in memory (or in flight) or missing.
struct Consumer {
    reads: u64,
    resident: bool,
}

/// Every round that changed the budget or fetched pages, as (entries read
/// before the round, budget in pages, pages fetched), up to memory's
/// 100,000 pages.
fn windows(request_cost_pages: u64, consumer: Consumer, mode: Mode) -> Vec<(u64, u64, u64)> {
    windows_of(key, request_cost_pages, consumer, mode)
}

/// [`windows`] for the list whose entry `i` is `key(i)`.
fn windows_of(
    key: impl Fn(u64) -> PageKey,
    request_cost_pages: u64,
    consumer: Consumer,
    mode: Mode,
) -> Vec<(u64, u64, u64)> {
    let mut planner = planner(request_cost_pages);
    let list: Vec<Entry> = (0..LISTED)
        .map(|i| Entry {
            key: key(i),
            mark: false,
        })
        .collect();
    planner.request(&list, mode | Mode::DONE);
    let fetched = |plan: RoundPlan| plan.fetch.iter().map(|r| r.len).sum::<u64>();
    let first = fetched(planner.plan_round());
    let mut rounds = vec![(0, planner.budget_pages(), first)];
    for i in 0..consumer.reads {
        let (_, outcome) = planner.on_read(key(i), consumer.resident);
        if outcome.start_round {
            let pages = fetched(planner.plan_round());
            let budget = planner.budget_pages();
            if pages > 0 || rounds.last().is_some_and(|&(_, last, _)| last != budget) {
                rounds.push((i + 1, budget, pages));
            }
        }
        if planner.budget_pages() >= 100_000 {
            break;
        }
    }
    rounds
}

const KEEPS_UP: Consumer = Consumer {
    reads: LISTED,
    resident: true,
};
const STOPS_AFTER_20: Consumer = Consumer {
    reads: 20,
    resident: true,
};
const WAITS: Consumer = Consumer {
    reads: LISTED,
    resident: false,
};

#[test]
fn flash_doubles_at_half_of_each_window_until_memory_is_reached() {
    // (reads before the round, budget, pages fetched): each window fetches
    // what it adds to the previous one; from 8,192 pages on, the list is
    // all fetched.
    assert_eq!(
        windows(FLASH, KEEPS_UP, Mode::SET),
        vec![
            (0, 32, 32),
            (16, 64, 48),
            (48, 128, 96),
            (112, 256, 192),
            (240, 512, 384),
            (496, 1024, 768),
            (1008, 2048, 1536),
            (2032, 4096, 1944),
            (3516, 8192, 0),
            (4258, 16384, 0),
            (4629, 32768, 0),
            (4815, 65536, 0),
            (4908, 100_000, 0),
        ]
    );
}

#[test]
fn a_seek_bound_disk_follows_its_sparse_first_window_then_steps_by_its_far_cost() {
    assert_eq!(
        windows(SEEK_BOUND, KEEPS_UP, Mode::SET),
        vec![(0, 32, 0), (32, 10_880, 4_968), (4986, 100_000, 0)]
    );
}

#[test]
fn a_dense_first_window_on_the_disk_is_fetched() {
    // Every third page: the first window spans 94 pages, its sweep a
    // fraction of 32 far requests.
    let every_third = |i: u64| PageKey { fd: 1, page: 3 * i };
    assert_eq!(
        windows_of(every_third, SEEK_BOUND, KEEPS_UP, Mode::SET),
        vec![(0, 32, 32), (32, 10_880, 4_968), (4986, 100_000, 0)]
    );
}

#[test]
fn a_list_abandoned_after_20_reads_fetches_nothing_on_the_disk_two_windows_on_flash() {
    assert_eq!(
        windows(FLASH, STOPS_AFTER_20, Mode::SET),
        vec![(0, 32, 32), (16, 64, 48)]
    );
    assert_eq!(
        windows(SEEK_BOUND, STOPS_AFTER_20, Mode::SET),
        vec![(0, 32, 0)]
    );
}

#[test]
fn a_consumer_waiting_on_io_grows_the_window_at_each_wait() {
    assert_eq!(
        windows(FLASH, WAITS, Mode::SET),
        vec![
            (0, 32, 32),
            (1, 64, 33),
            (2, 128, 65),
            (3, 256, 129),
            (4, 512, 257),
            (5, 1024, 513),
            (6, 2048, 1025),
            (7, 4096, 2049),
            (8, 8192, 897),
            (9, 16384, 0),
            (10, 32768, 0),
            (11, 65536, 0),
            (12, 100_000, 0),
        ]
    );
    // On the disk the followed window's reads are expected misses: the
    // first wait that grows the window is in the second.
    assert_eq!(
        windows(SEEK_BOUND, WAITS, Mode::SET),
        vec![(0, 32, 0), (32, 10_880, 4_968), (33, 100_000, 0)]
    );
}

#[test]
fn the_whole_list_flag_starts_at_the_papers_window_and_fetches_it() {
    for cost in [FLASH, SEEK_BOUND] {
        assert_eq!(
            windows(cost, STOPS_AFTER_20, Mode::SET | Mode::WHOLE_LIST),
            vec![(0, 100_000, 5_000)]
        );
    }
}

/// The application reads on past listed entries its own cache served (an
/// index scan whose table pages SQLite's page cache holds): a read of an
/// entry past the followed first window, within what the next window would
/// reach, moves the list there and plans that window, where it used to
/// diverge from the 32-entry window and leave the list where it was; a
/// read of a page not listed still diverges.
#[test]
fn a_read_past_entries_the_application_skipped_moves_the_list_there() {
    let mut planner = planner(SEEK_BOUND);
    let list: Vec<Entry> = (0..LISTED)
        .map(|i| Entry {
            key: key(i),
            mark: false,
        })
        .collect();
    planner.request(&list, Mode::SET | Mode::DONE);
    planner.plan_round();
    planner.on_read(key(0), false);
    let (verdict, outcome) = planner.on_read(key(500), false);
    assert_eq!(verdict, Verdict::Consumed);
    assert!(outcome.start_round);
    let fetched: u64 = planner.plan_round().fetch.iter().map(|r| r.len).sum();
    assert_eq!(planner.budget_pages(), 32 * SEEK_BOUND);
    assert_eq!(
        fetched,
        LISTED - 501,
        "the rest of the list, from past the read"
    );
    let off_list = PageKey { fd: 2, page: 7 };
    assert_eq!(planner.on_read(off_list, false).0, Verdict::Diverged);
}
