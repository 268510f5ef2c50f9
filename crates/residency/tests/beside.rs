//! Restoring beside a program on real files: a snapshot that fits in the memory free comes back
//! exactly (no infill asked), only its missing pages are advised, one larger than the memory
//! free opens and reads nothing, and the sweep stops for good once a restored piece is evicted
//! or, in a memory cgroup, once the program beside grows into the room the snapshot fitted in.
//! A fragment of a read-around window is restored with the window around it, and a whole
//! window as it is. Following the program's opens, only the files it opens come back, each
//! once, a file touched before the restore started first.
//! The files live under the target directory (a disk file system: tmpfs pages cannot be
//! evicted).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;

use residency::beside::{
    restore_as_opened, restore_beside, restore_beside_observed, Outcome, Reads, LOOK_EVERY,
};
use residency::probe::{mincore_runs, page_size, probe_file, Probe};
use residency::{PageRuns, Snapshot};
use rustix::fs::{fadvise, Advice};

const FILE_PAGES: u64 = 1024;
/// Only the snapshot's pages: no infill, no fragment widened.
const EXACT: Reads = Reads {
    infill_bytes: 0,
    read_around_bytes: Some(0),
};

/// A fresh file of `FILE_PAGES` pages written to disk and evicted from the cache.
fn evicted_file(name: &str) -> PathBuf {
    evicted_file_of(name, FILE_PAGES)
}

/// The same with `pages` pages.
fn evicted_file_of(name: &str, pages: u64) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("residency-beside-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{}", std::process::id()));
    let mut file = File::create(&path).unwrap();
    file.write_all(&vec![5u8; (pages * page_size()) as usize])
        .unwrap();
    file.sync_all().unwrap();
    evict(&path);
    path
}

fn evict(path: &PathBuf) {
    fadvise(File::open(path).unwrap(), 0, None, Advice::DontNeed).unwrap();
    assert_eq!(resident(path).page_count(), 0, "DONTNEED left pages cached");
}

/// Reads `pages` through a descriptor advised RANDOM, so that no read-ahead adds others.
fn cache_pages(path: &PathBuf, pages: &PageRuns) {
    let file = File::open(path).unwrap();
    fadvise(&file, 0, None, Advice::Random).unwrap();
    for page in pages.pages() {
        file.read_exact_at(&mut [0u8], page * page_size()).unwrap();
    }
}

fn resident(path: &PathBuf) -> PageRuns {
    let file = File::open(path).unwrap();
    probe_file(&file, FILE_PAGES * page_size(), Probe::detect(&file))
        .unwrap()
        .resident
}

fn runs(list: &[std::ops::Range<u64>]) -> PageRuns {
    PageRuns::from_unsorted(list.to_vec())
}

fn one_run(pages: std::ops::Range<u64>) -> PageRuns {
    let mut out = PageRuns::new();
    out.push(pages);
    out
}

#[test]
fn a_snapshot_that_fits_comes_back_and_only_its_missing_pages_are_advised() {
    let path = evicted_file("fits");
    let wanted = runs(&[0..3, 8..40, 300..301, 700..900]);
    cache_pages(&path, &wanted);
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    evict(&path);
    let still_cached = one_run(8..20);
    cache_pages(&path, &still_cached);
    let outcome = restore_beside(&snapshot, EXACT);
    let after = resident(&path);
    std::fs::remove_file(&path).unwrap();
    assert!(outcome.fitted);
    assert_eq!(outcome.files_opened, 1);
    assert_eq!(outcome.snapshot_pages, wanted.page_count());
    assert_eq!(
        outcome.advised_pages,
        wanted.minus(&still_cached).page_count()
    );
    assert_eq!(after, wanted);
}

#[test]
fn a_fragment_of_a_window_comes_back_with_the_window_around_it() {
    let path = evicted_file("fragments");
    let wanted = runs(&[0..2, 100..104, 300..340, 600..601]);
    cache_pages(&path, &wanted);
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    evict(&path);
    let window = 32;
    let reads = Reads {
        infill_bytes: 0,
        read_around_bytes: Some(window * page_size()),
    };
    let outcome = restore_beside(&snapshot, reads);
    let after = resident(&path);
    std::fs::remove_file(&path).unwrap();
    let widened = runs(&[0..2, 68..136, 300..340, 568..633]);
    assert_eq!(
        after, widened,
        "the file's start and a whole window stay as they were"
    );
    assert_eq!(outcome.advised_pages, widened.page_count());
}

#[test]
fn a_snapshot_larger_than_the_memory_free_opens_and_reads_nothing() {
    let path = evicted_file("too-large");
    cache_pages(&path, &one_run(0..16));
    let mut snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    evict(&path);
    // More pages than any machine has free (the runs are never checked against the file: the
    // restore must not get as far as opening it).
    snapshot.files[0].pages = vec![[0, 1 << 40]];
    let outcome = restore_beside(&snapshot, EXACT);
    let after = resident(&path);
    std::fs::remove_file(&path).unwrap();
    assert!(!outcome.fitted);
    assert_eq!((outcome.files_opened, outcome.advised_pages), (0, 0));
    assert_eq!(after.page_count(), 0);
}

/// `count` runs of `len` pages, `stride` pages apart: each run at least one piece (with no
/// infill, runs are never joined).
fn spaced_runs(count: u64, len: u64, stride: u64) -> PageRuns {
    runs(
        &(0..count)
            .map(|k| k * stride..k * stride + len)
            .collect::<Vec<_>>(),
    )
}

/// Waits until every page of `pages` of `path` is cached and read (mincore: cachestat counts
/// pages still being read).
fn wait_cached(path: &PathBuf, pages: &PageRuns) {
    let file = File::open(path).unwrap();
    for _ in 0..10_000 {
        if mincore_runs(&file, 0..pages.end())
            .unwrap()
            .intersect(pages)
            == *pages
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("the advised pages were never read");
}

/// A piece the sweep restored and saw loaded, evicted while the sweep goes on (here by the
/// test, as the kernel would under the program's growth), stops the sweep: nothing after it is
/// advised, and the evicted piece is not advised again.
#[test]
fn a_restored_piece_evicted_stops_the_sweep() {
    let path = evicted_file("evicted");
    let wanted = spaced_runs(8, 8, 100);
    cache_pages(&path, &wanted);
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    evict(&path);
    let first = one_run(0..8);
    let outcome = restore_beside_observed(&snapshot, EXACT, &mut |so_far: &Outcome| {
        match so_far.advised_pages {
            8 => wait_cached(&path, &first),
            16 => {
                let file = File::open(&path).unwrap();
                let first_bytes = std::num::NonZeroU64::new(8 * page_size());
                fadvise(file, 0, first_bytes, Advice::DontNeed).unwrap();
                // The sweep looks again at its next piece.
                std::thread::sleep(LOOK_EVERY);
            }
            _ => {}
        }
    });
    let after = resident(&path);
    std::fs::remove_file(&path).unwrap();
    assert!(outcome.fitted && outcome.stopped, "{outcome:?}");
    assert_eq!(outcome.advised_pages, 16, "advised past the eviction");
    assert_eq!(
        after.intersect(&first).page_count(),
        0,
        "the evicted piece came back"
    );
    let never: Vec<_> = (2..8).map(|k| k * 100..k * 100 + 8).collect();
    assert_eq!(
        after.intersect(&runs(&never)).page_count(),
        0,
        "advised after the stop"
    );
}

/// `paths` snapshotted with `wanted` cached, then evicted, and restored as a program that touched the
/// first file opens the second, the first and the second again; the files are removed after. Returns
/// how many opens the restore waited for, its outcome and each file's resident pages then.
fn follow_first_then_second_twice(
    paths: &[PathBuf],
    wanted: &PageRuns,
) -> (usize, Outcome, Vec<PageRuns>) {
    for path in paths {
        cache_pages(path, wanted);
    }
    let snapshot = Snapshot::take(paths).unwrap();
    for path in paths {
        evict(path);
    }
    let id = |i: usize| {
        let meta = std::fs::metadata(&paths[i]).unwrap();
        (meta.dev(), meta.ino())
    };
    let mut opens = vec![id(1), id(0), id(1)].into_iter();
    let mut asked = 0;
    let outcome = restore_as_opened(&snapshot, EXACT, &[id(0)], &mut || {
        asked += 1;
        opens.next()
    });
    let after: Vec<PageRuns> = paths.iter().map(resident).collect();
    for path in paths {
        std::fs::remove_file(path).unwrap();
    }
    (asked, outcome, after)
}

/// Once every file of the snapshot has had its turn, the program's later opens are not waited
/// for (each would wake the restorer for nothing until the program ends).
#[test]
fn following_the_opens_ends_once_every_file_had_its_turn() {
    let paths = [evicted_file("turn-first"), evicted_file("turn-second")];
    let wanted = runs(&[4..40, 100..120]);
    let (asked, outcome, after) = follow_first_then_second_twice(&paths, &wanted);
    assert_eq!(asked, 1, "an open waited for after the last file's turn");
    assert_eq!(outcome.files_opened, 2);
    assert_eq!(after[0], wanted);
    assert_eq!(after[1], wanted);
}

#[test]
fn following_the_opens_restores_only_the_files_opened_each_once() {
    let paths = [
        evicted_file("opened-early"),
        evicted_file("opened-later"),
        evicted_file("never-opened"),
    ];
    let wanted = runs(&[4..40, 500..520]);
    let (asked, outcome, after) = follow_first_then_second_twice(&paths, &wanted);
    assert_eq!(
        asked, 4,
        "every open is waited for, until there are no more"
    );
    assert_eq!(
        outcome.files_opened, 2,
        "a file opened again is not restored again"
    );
    assert_eq!(outcome.advised_pages, 2 * wanted.page_count());
    assert_eq!(after[0], wanted, "the file touched before the start");
    assert_eq!(after[1], wanted, "the file opened after it");
    assert_eq!(after[2].page_count(), 0, "a file never opened is not read");
}
