//! A client whose rounds find their windows cached rests within its first rounds and advises
//! nothing, and resting leaves no cold part of a list unprefetched (`src/client_warm.rs`,
//! "A round is found clean where it is planned"), on a real file and the real page cache. The
//! reads go through `note_read`, every one probed (the paper's `fincore` before each read, ATC
//! 2009 section 4.5); the counters say what was advised: `pages_fetched` counts the pages a
//! WILLNEED asked of the device, `pages_dropped` the pages released with DONTNEED. The tests run
//! one at a time (`alone()`), as in `live.rs`.

mod common;

use common::{alone, PAGE};

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;

use libprefetch::residency::cachestat;
use libprefetch::{note_read, Client, Config, Mode, Stats};

const FILE_PAGES: u64 = 2048;
const LISTED: u64 = 1024;

fn data_file(dir: &std::path::Path) -> File {
    let path = dir.join("data");
    let mut file = File::create(&path).unwrap();
    file.write_all(&vec![7u8; (FILE_PAGES * PAGE) as usize])
        .unwrap();
    file.sync_all().unwrap();
    File::open(&path).unwrap()
}

fn fadvise(fd: RawFd, advice: libc::c_int) {
    // SAFETY: plain integers on an open descriptor.
    assert_eq!(unsafe { libc::posix_fadvise(fd, 0, 0, advice) }, 0);
}

/// Every other page of the file: the planner's aggressive schedule plans a round at nearly every
/// read of such a list.
fn every_other() -> Vec<u64> {
    (0..LISTED).map(|i| i * 2).collect()
}

fn cached(fd: RawFd, page: u64) -> bool {
    cachestat(fd, page * PAGE, PAGE).is_ok_and(|c| c.nr_cache == 1)
}

/// A client of the whole file given `pages` as its list, its advice issued by the advice thread
/// or (not `background`) by the reading thread, which then reads the list through; its counters
/// once the advice is out.
fn read_listed(file: &File, pages: &[u64], background: bool) -> Stats {
    let fd = file.as_raw_fd();
    let config = Config {
        background_advice: background,
        ..Config::default()
    };
    let client = Client::register(config, |_, _| {}).unwrap();
    client.register_region(fd, 0, FILE_PAGES * PAGE).unwrap();
    client
        .request_prefetching(&common::unmarked_entries(fd, pages), Mode::SET | Mode::DONE)
        .unwrap();
    let mut buf = vec![0u8; PAGE as usize];
    for &page in pages {
        note_read(fd, page * PAGE, PAGE);
        file.read_at(&mut buf, page * PAGE).unwrap();
    }
    client.settle();
    client.stats()
}

#[test]
fn a_client_over_a_cached_list_rests_after_its_first_rounds_and_advises_nothing() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path());
    let pages = every_other();
    assert!(pages.iter().all(|&page| cached(file.as_raw_fd(), page)));
    // Advice left to the advice thread: the rounds are found clean where they are planned all the
    // same, not once the thread has caught up with the reads.
    let stats = read_listed(&file, &pages, true);
    assert_eq!(stats.tracked_reads, LISTED);
    assert_eq!((stats.misses, stats.pages_fetched), (0, 0), "{stats:?}");
    assert_eq!(stats.pages_dropped, 0, "{stats:?}");
    // Two rounds find their windows cached and the client rests: no round after them.
    assert_eq!(stats.rounds, 2, "{stats:?}");
}

#[test]
fn a_list_whose_second_half_is_cold_has_that_half_prefetched_after_resting_on_the_first() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path());
    let fd = file.as_raw_fd();
    let pages = every_other();
    let (warm, cold) = pages.split_at(pages.len() / 2);
    // The whole file dropped (a large folio cannot be dropped in part), the first half of the list
    // read back page by page without the kernel's read-ahead.
    fadvise(fd, libc::POSIX_FADV_DONTNEED);
    fadvise(fd, libc::POSIX_FADV_RANDOM);
    let mut buf = vec![0u8; PAGE as usize];
    for &page in warm {
        file.read_at(&mut buf, page * PAGE).unwrap();
    }
    let uncached = cold.iter().filter(|&&page| !cached(fd, page)).count() as u64;
    assert_eq!(uncached, cold.len() as u64, "the second half is cold");
    // The advice issued by the reading thread, so that each read finds what its rounds advised.
    let stats = read_listed(&file, &pages, false);
    assert_eq!(stats.tracked_reads, LISTED);
    // The first read of the cold half wakes the client; every cold page after it is advised
    // before it is read, none found missing.
    assert_eq!(stats.misses, 1, "{stats:?}");
    assert!(stats.pages_fetched >= uncached - 1, "{stats:?}");
    assert!(cold.iter().all(|&page| cached(fd, page)));
}
