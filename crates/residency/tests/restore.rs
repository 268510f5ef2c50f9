//! Snapshot and restore on real files: after evicting a file (posix_fadvise DONTNEED, which
//! leaves other users' caches alone), restoring its snapshot brings back exactly the pages the
//! snapshot holds (plus the infill it reports), never a changed file's, within the budget.
//! The files live under the target directory (a disk file system: tmpfs pages cannot be evicted).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use residency::probe::{page_size, probe_file, Probe};
use residency::restore::{restore, Options};
use residency::{PageRuns, Snapshot};
use rustix::fs::{fadvise, Advice};

const FILE_PAGES: u64 = 2048;

/// A fresh file of `FILE_PAGES` pages written to disk and evicted from the cache.
fn evicted_file(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("residency-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{}", std::process::id()));
    let mut file = File::create(&path).unwrap();
    let page: Vec<u8> = (0..page_size()).map(|i| (i * 7 % 251) as u8).collect();
    for _ in 0..FILE_PAGES {
        file.write_all(&page).unwrap();
    }
    file.sync_all().unwrap();
    evict(&path);
    path
}

fn evict(path: &PathBuf) {
    let file = File::open(path).unwrap();
    fadvise(&file, 0, None, Advice::DontNeed).unwrap();
    assert_eq!(resident(path).page_count(), 0, "DONTNEED left pages cached");
}

/// Reads `pages` through a descriptor advised RANDOM, so that no read-ahead adds others.
fn cache_pages(path: &PathBuf, pages: &PageRuns) {
    let file = File::open(path).unwrap();
    fadvise(&file, 0, None, Advice::Random).unwrap();
    let mut byte = [0u8];
    for page in pages.pages() {
        file.read_exact_at(&mut byte, page * page_size()).unwrap();
    }
}

fn resident(path: &PathBuf) -> PageRuns {
    let file = File::open(path).unwrap();
    let size = file.metadata().unwrap().len();
    probe_file(&file, size, Probe::detect(&file))
        .unwrap()
        .resident
}

/// Scattered runs and single pages, with gaps of 1 to 40 pages.
fn scattered() -> PageRuns {
    PageRuns::from_unsorted(vec![
        0..3,
        5..6,
        8..40,
        41..42,
        100..101,
        140..160,
        1000..1001,
        1002..1010,
        2040..2048,
    ])
}

fn no_infill() -> Options {
    Options {
        max_memory: None,
        infill_bytes: 0,
    }
}

#[test]
fn cachestat_and_mincore_see_the_same_pages() {
    let path = evicted_file("probes");
    cache_pages(&path, &scattered());
    let file = File::open(&path).unwrap();
    let size = FILE_PAGES * page_size();
    let by_cachestat = probe_file(&file, size, Probe::Cachestat);
    let by_mincore = probe_file(&file, size, Probe::Mincore).unwrap();
    std::fs::remove_file(&path).unwrap();
    match by_cachestat {
        Err(error) if error.raw_os_error() == Some(libc::ENOSYS) => {
            eprintln!(
                "skip the cachestat half (kernel feature missing): this kernel has no cachestat(2)"
            );
        }
        result => assert_eq!(result.unwrap().resident, scattered()),
    }
    assert_eq!(by_mincore.resident, scattered());
    assert_eq!(by_mincore.counters, None);
}

#[test]
fn restore_without_infill_brings_back_exactly_the_snapshot() {
    let path = evicted_file("exact");
    cache_pages(&path, &scattered());
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    assert_eq!(snapshot.files[0].page_runs(), scattered());
    evict(&path);
    let summary = restore(&snapshot, &no_infill(), &mut |_, _| {}).unwrap();
    let after = resident(&path);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(after, scattered());
    assert_eq!(summary.missing_pages_read, scattered().page_count());
    assert_eq!(summary.infill_pages, 0);
    assert_eq!(summary.not_loaded_pages, 0);
    assert!(summary.skipped.is_empty());
}

#[test]
fn infill_reads_the_small_gaps_and_counts_them() {
    let path = evicted_file("infill");
    cache_pages(&path, &scattered());
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    evict(&path);
    let options = Options {
        max_memory: None,
        infill_bytes: 2 * page_size(),
    };
    let summary = restore(&snapshot, &options, &mut |_, _| {}).unwrap();
    let after = resident(&path);
    std::fs::remove_file(&path).unwrap();
    // Gaps of at most 2 pages: 3-5, 6-8, 40-41, 1001-1002.
    let gaps = PageRuns::from_unsorted(vec![3..5, 6..8, 40..41, 1001..1002]);
    assert_eq!(after.minus(&scattered()), gaps);
    assert_eq!(summary.infill_pages, gaps.page_count());
    assert_eq!(after.intersect(&scattered()), scattered());
}

#[test]
fn only_the_missing_pages_are_read() {
    let path = evicted_file("missing");
    cache_pages(&path, &scattered());
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    evict(&path);
    let half = PageRuns::from_unsorted(vec![8..40, 140..160]);
    cache_pages(&path, &half);
    let summary = restore(&snapshot, &no_infill(), &mut |_, _| {}).unwrap();
    let after = resident(&path);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(after, scattered());
    assert_eq!(summary.resident_pages, half.page_count());
    assert_eq!(
        summary.missing_pages_read,
        scattered().page_count() - half.page_count()
    );
}

#[test]
fn the_memory_limit_caps_what_is_read() {
    let path = evicted_file("budget");
    cache_pages(&path, &scattered());
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    evict(&path);
    let options = Options {
        max_memory: Some(10 * page_size()),
        infill_bytes: 0,
    };
    let summary = restore(&snapshot, &options, &mut |_, _| {}).unwrap();
    let after = resident(&path);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(after, PageRuns::from_unsorted(vec![0..3, 5..6, 8..14]));
    assert_eq!(summary.missing_pages_read, 10);
    assert_eq!(summary.over_budget_pages, scattered().page_count() - 10);
}

#[test]
fn a_changed_file_is_skipped_and_left_alone() {
    let path = evicted_file("changed");
    cache_pages(&path, &scattered());
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    evict(&path);
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    file.set_modified(later).unwrap();
    drop(file);
    let summary = restore(&snapshot, &Options::default(), &mut |_, _| {}).unwrap();
    let after = resident(&path);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(after.page_count(), 0);
    assert_eq!(summary.skipped.len(), 1);
    assert_eq!(summary.skipped[0].path, path);
    assert!(
        summary.skipped[0].reason.contains("modification time"),
        "{}",
        summary.skipped[0].reason
    );
    assert_eq!(summary.missing_pages_read, 0);
}

#[test]
fn a_malformed_snapshot_is_refused_in_one_line() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("malformed-{}.json", std::process::id()));
    let cases = [
        ("{\"format\": ", "EOF while parsing"),
        ("{\"format\":\"other\",\"version\":1,\"page_size\":4096,\"files\":[]}", "format is \"other\""),
        (
            &*format!(
                "{{\"format\":\"prefetch-residency-snapshot\",\"version\":1,\"page_size\":{},\"files\":[{{\"path\":\"/x\",\"dev\":1,\"ino\":2,\"size\":8192,\"mtime_sec\":0,\"mtime_nsec\":0,\"pages\":[[1,3]]}}]}}",
                page_size()
            ),
            "page run [1, 3) lies past the end of the file",
        ),
    ];
    for (text, expected) in cases {
        std::fs::write(&path, text).unwrap();
        let message = Snapshot::load(&path).unwrap_err().to_string();
        assert!(message.contains(expected), "{message}");
        assert!(
            message.contains("is not a valid residency snapshot"),
            "{message}"
        );
        assert!(!message.contains('\n'), "{message}");
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn restore_never_writes_the_file() {
    let path = evicted_file("readonly");
    cache_pages(&path, &scattered());
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    let before = std::fs::read(&path).unwrap();
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    evict(&path);
    restore(&snapshot, &Options::default(), &mut |_, _| {}).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
    std::fs::remove_file(&path).unwrap();
}
