//! The window's growth from the application's consumption and the device's
//! costs (the planner's header, "Window growth"): the exact sequence of
//! windows for a consumer that keeps up, one that stops after 20 reads and
//! one that waits on I/O, on a seek-bound and a flash device profile.
//!
//! Every list is 5,000 distinct pages in a scattered order; the first
//! window is 32 pages (128 KiB) and memory allows 100,000. A profile is the
//! device's far-request cost in pages of transfer: 340 for the emulated
//! 7200 RPM disk (growth 340: the step takes the far cost itself), 1 for flash (growth
//! 2, doubling).

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, Schedule};

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

/// The budget of every round that changed it, as (entries read before the
/// round, budget in pages), up to memory's 100,000 pages.
fn windows(request_cost_pages: u64, consumer: Consumer, mode: Mode) -> Vec<(u64, u64)> {
    let mut planner = planner(request_cost_pages);
    let list: Vec<Entry> = (0..LISTED)
        .map(|i| Entry {
            key: key(i),
            mark: false,
        })
        .collect();
    planner.request(&list, mode | Mode::DONE);
    planner.plan_round();
    let mut rounds = vec![(0, planner.budget_pages())];
    for i in 0..consumer.reads {
        let (_, outcome) = planner.on_read(key(i), consumer.resident);
        if outcome.start_round {
            planner.plan_round();
            let budget = planner.budget_pages();
            if rounds.last().is_some_and(|&(_, last)| last != budget) {
                rounds.push((i + 1, budget));
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
    assert_eq!(
        windows(FLASH, KEEPS_UP, Mode::SET),
        vec![
            (0, 32),
            (16, 64),
            (48, 128),
            (112, 256),
            (240, 512),
            (496, 1024),
            (1008, 2048),
            (2032, 4096),
            (3516, 8192),
            (4258, 16384),
            (4629, 32768),
            (4815, 65536),
            (4908, 100_000),
        ]
    );
}

#[test]
fn a_seek_bound_disk_steps_by_its_far_cost_once_each_window_is_read() {
    assert_eq!(
        windows(SEEK_BOUND, KEEPS_UP, Mode::SET),
        vec![(0, 32), (32, 10_880), (4986, 100_000)]
    );
}

#[test]
fn a_list_abandoned_after_20_reads_costs_one_window_on_the_disk_two_on_flash() {
    assert_eq!(
        windows(FLASH, STOPS_AFTER_20, Mode::SET),
        vec![(0, 32), (16, 64)]
    );
    assert_eq!(
        windows(SEEK_BOUND, STOPS_AFTER_20, Mode::SET),
        vec![(0, 32)]
    );
}

#[test]
fn a_consumer_waiting_on_io_grows_the_window_at_each_wait() {
    assert_eq!(
        windows(FLASH, WAITS, Mode::SET),
        vec![
            (0, 32),
            (1, 64),
            (2, 128),
            (3, 256),
            (4, 512),
            (5, 1024),
            (6, 2048),
            (7, 4096),
            (8, 8192),
            (9, 16384),
            (10, 32768),
            (11, 65536),
            (12, 100_000),
        ]
    );
    assert_eq!(
        windows(SEEK_BOUND, WAITS, Mode::SET),
        vec![(0, 32), (1, 10_880), (2, 100_000)]
    );
}

#[test]
fn the_whole_list_flag_starts_at_the_papers_window() {
    for cost in [FLASH, SEEK_BOUND] {
        assert_eq!(
            windows(cost, STOPS_AFTER_20, Mode::SET | Mode::WHOLE_LIST),
            vec![(0, 100_000)]
        );
    }
}
