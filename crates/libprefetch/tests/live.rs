//! The Rust API on real files and the real page cache: rounds, callbacks,
//! divergence, marks, ignore, bad input. Reads are reported with
//! `note_read` (this test binary does not link the interposers). The tests
//! run one at a time (`alone()`): clients of one process that hold lists at
//! the same time share its memory, and several tests check exact windows.

mod common;

use common::{alone, data_file, evict, PAGE};

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use libprefetch::residency::cachestat;
use libprefetch::{note_read, AccessEntry, CallbackInfo, Client, Config, Error, Mode, Schedule};

fn cached_pages(file: &File, page: u64, count: u64) -> u64 {
    cachestat(file.as_raw_fd(), page * PAGE, count * PAGE)
        .map(|c| c.nr_cache)
        .unwrap_or(0)
}

fn small_budget(bytes: u64) -> Config {
    Config {
        max_budget_bytes: Some(bytes * 10 / 9 + 1),
        infill_bytes: Some(0),
        ..Config::default()
    }
}

#[test]
fn done_prefetches_the_window_in_one_round() {
    let _alone = alone();
    let (_dir, file) = data_file(256);
    let fd = file.as_raw_fd();
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    client.register_region(fd, 0, 256 * PAGE).unwrap();
    let pages = [200, 3, 77, 150, 9];
    assert_eq!(
        client
            .request_prefetching(
                &common::unmarked_entries(fd, &pages),
                Mode::SET | Mode::DONE
            )
            .unwrap(),
        5
    );
    client.settle();
    for &p in &pages {
        assert_eq!(cached_pages(&file, p, 1), 1, "page {p} prefetched");
    }
    assert_eq!(cached_pages(&file, 100, 1), 0, "page 100 was not asked for");
    assert_eq!(client.stats().rounds, 1);
}

#[test]
fn only_pages_missing_from_the_cache_are_fetched() {
    let _alone = alone();
    let (_dir, file) = data_file(256);
    let fd = file.as_raw_fd();
    let pages: Vec<u64> = (0..16).map(|i| i * 9).collect();
    let fetched_by_a_new_client = || {
        let client = Client::register(small_budget(64 * PAGE), |_, _| {}).unwrap();
        client.register_region(fd, 0, 256 * PAGE).unwrap();
        client
            .request_prefetching(
                &common::unmarked_entries(fd, &pages),
                Mode::SET | Mode::DONE,
            )
            .unwrap();
        client.settle();
        assert_eq!(client.stats().rounds, 1);
        client.stats().pages_fetched
    };
    assert_eq!(fetched_by_a_new_client(), 16, "cold pages are fetched");
    assert_eq!(fetched_by_a_new_client(), 0, "cached pages are not");
}

#[test]
fn the_next_window_is_fetched_and_the_old_one_dropped_as_reads_advance() {
    let _alone = alone();
    let (_dir, file) = data_file(64);
    let fd = file.as_raw_fd();
    // The paper's window (a scattered list like this one is planned
    // `aggressive` by default).
    let window = Config {
        schedule: Schedule::Window,
        ..small_budget(4 * PAGE)
    };
    let client = Client::register(window, |_, _| {}).unwrap();
    client.register_region(fd, 0, 64 * PAGE).unwrap();
    let pages: Vec<u64> = (0..16).map(|i| i * 4).collect();
    client
        .request_prefetching(
            &common::unmarked_entries(fd, &pages),
            Mode::SET | Mode::DONE,
        )
        .unwrap();
    client.settle();
    assert_eq!(cached_pages(&file, 16, 1), 0, "beyond the first window");
    let mut buf = vec![0u8; PAGE as usize];
    for &p in &pages[..4] {
        note_read(fd, p * PAGE, PAGE);
        file.read_at(&mut buf, p * PAGE).unwrap();
    }
    client.settle();
    // The next round comes once the window is read, or halfway through it where the device's stored
    // profile says it has no seek cost (`plan::schedule::window`): two rounds or three.
    let rounds = client.stats().rounds;
    assert!(
        (2..=3).contains(&rounds),
        "window of 4 pages consumed: {rounds} rounds"
    );
    assert_eq!(cached_pages(&file, 16, 1), 1, "second window prefetched");
    assert_eq!(cached_pages(&file, 0, 1), 0, "first window's pages dropped");
}

#[test]
fn a_read_off_the_list_calls_back_with_the_position() {
    let _alone = alone();
    let (_dir, file) = data_file(64);
    let fd = file.as_raw_fd();
    let seen: Arc<Mutex<Vec<CallbackInfo>>> = Arc::default();
    let log = Arc::clone(&seen);
    let client = Client::register(Config::default(), move |c, info| {
        log.lock().unwrap().push(info);
        c.request_prefetching(
            &common::unmarked_entries(info.requested.0, &[40, 41]),
            Mode::SET | Mode::DONE,
        )
        .unwrap();
    })
    .unwrap();
    client.register_region(fd, 0, 64 * PAGE).unwrap();
    let list = vec![
        AccessEntry {
            offset: 0,
            fd,
            mark: true,
        },
        AccessEntry {
            offset: PAGE,
            fd,
            mark: false,
        },
        AccessEntry {
            offset: 2 * PAGE,
            fd,
            mark: false,
        },
    ];
    client
        .request_prefetching(&list, Mode::SET | Mode::DONE)
        .unwrap();
    note_read(fd, 0, PAGE);
    note_read(fd, PAGE, PAGE);
    note_read(fd, 39 * PAGE + 100, 10);
    client.settle();
    let infos = seen.lock().unwrap().clone();
    assert_eq!(infos.last().unwrap().requested, (fd, 39 * PAGE + 100));
    assert_eq!(infos.last().unwrap().last_marked, Some((fd, 0)));
    assert!(client.stats().divergences >= 1);
    assert_eq!(
        cached_pages(&file, 40, 2),
        2,
        "the callback's new list was prefetched"
    );
}

#[test]
fn ignored_reads_do_not_move_the_position() {
    let _alone = alone();
    let (_dir, file) = data_file(16);
    let fd = file.as_raw_fd();
    let calls = Arc::new(Mutex::new(0));
    let counter = Arc::clone(&calls);
    let client =
        Client::register(Config::default(), move |_, _| *counter.lock().unwrap() += 1).unwrap();
    client.register_region(fd, 0, 16 * PAGE).unwrap();
    client
        .request_prefetching(
            &common::unmarked_entries(fd, &[1, 2, 3]),
            Mode::SET | Mode::DONE,
        )
        .unwrap();
    {
        let _quiet = client.ignore_accesses();
        note_read(fd, 10 * PAGE, PAGE);
    }
    assert_eq!(client.stats().tracked_reads, 0);
    assert_eq!(*calls.lock().unwrap(), 0);
    note_read(fd, 10 * PAGE, PAGE);
    assert_eq!(client.stats().divergences, 1);
}

#[test]
fn a_full_list_gives_short_counts_and_bounded_memory() {
    let _alone = alone();
    let client = Client::register(
        Config {
            capacity: 1000,
            ..Config::default()
        },
        |_, _| {},
    )
    .unwrap();
    let batch = common::unmarked_entries(3, &(0..600).collect::<Vec<_>>());
    assert_eq!(client.request_prefetching(&batch, Mode::SET).unwrap(), 600);
    assert_eq!(
        client.request_prefetching(&batch, Mode::APPEND).unwrap(),
        400
    );
    assert_eq!(client.request_prefetching(&batch, Mode::APPEND).unwrap(), 0);
    assert_eq!(client.stats().list_length, 1000);
}

#[test]
fn reads_outside_regions_are_not_tracked() {
    let _alone = alone();
    let (_dir, file) = data_file(16);
    let fd = file.as_raw_fd();
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    client.register_region(fd, 4 * PAGE, 8 * PAGE).unwrap();
    note_read(fd, 0, PAGE);
    note_read(fd, 8 * PAGE, PAGE);
    assert_eq!(client.stats().tracked_reads, 0);
    note_read(fd, 7 * PAGE, 2 * PAGE);
    assert_eq!(client.stats().tracked_reads, 1);
}

#[test]
fn bad_arguments_are_refused() {
    let _alone = alone();
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    assert_eq!(client.register_region(-1, 0, 10), Err(Error::BadFd));
    assert_eq!(client.register_region(9999, 0, 10), Err(Error::BadFd));
    let (_dir, file) = data_file(1);
    assert!(matches!(
        client.register_region(file.as_raw_fd(), 10, 10),
        Err(Error::InvalidArgument(_))
    ));
    assert!(Client::register(
        Config {
            capacity: 0,
            ..Config::default()
        },
        |_, _| {}
    )
    .is_err());
}

#[test]
fn dropping_the_client_unregisters_its_regions() {
    let _alone = alone();
    let (_dir, file) = data_file(4);
    let fd = file.as_raw_fd();
    let called = Arc::new(Mutex::new(false));
    let flag = Arc::clone(&called);
    let client =
        Client::register(Config::default(), move |_, _| *flag.lock().unwrap() = true).unwrap();
    client.register_region(fd, 0, 4 * PAGE).unwrap();
    drop(client);
    note_read(fd, 0, PAGE);
    assert!(
        !*called.lock().unwrap(),
        "callback ran after the client was dropped"
    );
}

#[test]
fn a_callback_that_lists_from_the_requested_read_is_followed_by_that_read() {
    let _alone = alone();
    // Figure 7's callback lists from the read that called it back; with slow start the first window
    // is 32 pages, exactly one 128 KiB read: the read must count as read on the new list, or every
    // later read would diverge and call back.
    let (_dir, file) = data_file(1024);
    let fd = file.as_raw_fd();
    let client = Client::register(Config::default(), move |client: &Client, info| {
        let from = info.requested.1 / PAGE;
        let pages: Vec<u64> = (from..1024).collect();
        client
            .request_prefetching(
                &common::unmarked_entries(fd, &pages),
                Mode::SET | Mode::DONE,
            )
            .unwrap();
    })
    .unwrap();
    client.register_region(fd, 0, 1024 * PAGE).unwrap();
    let mut buffer = vec![0u8; 32 * PAGE as usize];
    for read in 0..32 {
        let offset = read * 32 * PAGE;
        note_read(fd, offset, 32 * PAGE);
        file.read_exact_at(&mut buffer, offset).unwrap();
    }
    let stats = client.stats();
    assert!(
        stats.callbacks <= 2,
        "one to list, one at the list's end: {stats:?}"
    );
    assert_eq!(
        stats.divergences, 1,
        "only the first read, before any list: {stats:?}"
    );
}

#[test]
fn a_client_rests_while_its_reads_are_cached_and_plans_again_at_the_first_miss() {
    let _alone = alone();
    let (_dir, file) = data_file(2048);
    let fd = file.as_raw_fd();
    let mut buf = vec![0u8; PAGE as usize];
    for page in 0..2048 {
        file.read_at(&mut buf, page * PAGE).unwrap();
    }
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    client.register_region(fd, 0, 2048 * PAGE).unwrap();
    let pages: Vec<u64> = (0..1024).map(|i| i * 2).collect();
    client
        .request_prefetching(
            &common::unmarked_entries(fd, &pages),
            Mode::SET | Mode::DONE,
        )
        .unwrap();
    let mut read = |page: u64| {
        note_read(fd, page * PAGE, PAGE);
        file.read_at(&mut buf, page * PAGE).unwrap();
        client.settle();
    };
    pages[..512].iter().for_each(|&p| read(p));
    let resting = client.stats();
    pages[512..768].iter().for_each(|&p| read(p));
    let stats = client.stats();
    assert_eq!(
        stats.rounds, resting.rounds,
        "no round while every read is cached"
    );
    assert_eq!(stats.tracked_reads, 768, "the reads are still counted");
    assert_eq!((stats.pages_fetched, stats.misses), (0, 0));
    evict(&file);
    read(pages[768]);
    let woken = client.stats();
    assert_eq!(woken.misses, 1);
    assert!(woken.rounds > stats.rounds, "the first miss starts a round");
    assert!(
        woken.pages_fetched > 0,
        "which fetches what the reads ahead need"
    );
    assert_eq!(
        cached_pages(&file, pages[770], 1),
        1,
        "a page not read yet is prefetched"
    );
}
