//! Restoring beside a program in a memory cgroup (docs/record.md, "prefetch run --restore"): a
//! snapshot that fits when the restore starts is swept whole while the program stays small,
//! and the sweep stops for good once the program grows into the room the snapshot fitted in
//! (its own memory taking what the page cache could hold without reclaim), so the restore does
//! not push out pages to read more. Each case runs in a child process of this test binary moved
//! into a cgroup v1 memory group of its own; skipped, saying so, without the privilege to make
//! one (root and a mounted v1 memory controller).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use residency::beside::{restore_beside_observed, Outcome, Reads, LOOK_EVERY};
use residency::probe::page_size;
use residency::{PageRuns, Snapshot};
use rustix::fs::{fadvise, Advice};

/// The cgroup's limit.
const LIMIT: u64 = 64 << 20;
/// Only the snapshot's pages: no infill, no fragment widened.
const EXACT: Reads = Reads {
    infill_bytes: 0,
    read_around_bytes: Some(0),
};
/// The snapshot: 8 runs of 2 MiB, 4 MiB apart, in a 32 MiB file.
const RUNS: u64 = 8;
const RUN_PAGES: u64 = 512;
const FILE_PAGES: u64 = 2 * RUNS * RUN_PAGES;

/// Set in the child: the case to run and the cgroup to join.
const CASE: &str = "RESIDENCY_BESIDE_CGROUP_CASE";
const GROUP: &str = "RESIDENCY_BESIDE_CGROUP_DIR";

/// A fresh cgroup v1 memory group limited to [`LIMIT`], or `None` (saying why) where this
/// process may not make one.
fn memory_group(name: &str) -> Option<PathBuf> {
    let root = Path::new("/sys/fs/cgroup/memory");
    let dir = root.join(format!("residency-beside-{name}-{}", std::process::id()));
    if let Err(error) = std::fs::create_dir(&dir) {
        eprintln!(
            "skipped (kernel feature or privilege missing): cannot make a cgroup v1 memory group under {root:?}: {error}"
        );
        return None;
    }
    std::fs::write(dir.join("memory.limit_in_bytes"), LIMIT.to_string()).unwrap();
    Some(dir)
}

/// Runs `case` in a child of this test binary inside a fresh memory group; the child's
/// outcome as it printed it.
fn in_memory_group(case: &str) -> Option<String> {
    let group = memory_group(case)?;
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads", "1"])
        .env(CASE, case)
        .env(GROUP, &group)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir(&group);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed: {stdout}\n{stderr}");
    // The harness prints the test's name on the same line.
    let line = stdout
        .lines()
        .find_map(|line| Some(&line[line.find("outcome ")?..]));
    let line = line.unwrap_or_else(|| panic!("the child printed no outcome: {stdout}\n{stderr}"));
    Some(line.trim_end().to_string())
}

/// A program that stays small beside the restore: the snapshot comes back whole.
#[test]
fn a_snapshot_that_fits_is_restored_whole_beside_a_small_program() {
    let Some(outcome) = in_memory_group("small") else {
        return;
    };
    assert_eq!(outcome, "outcome fitted=true stopped=false whole=true");
}

/// A program that grows, once half the first run is advised, into all the memory the page
/// cache could take without reclaim: the sweep stops at the next piece, having advised
/// nothing after the growth.
#[test]
fn the_sweep_stops_once_the_program_grows_into_its_room() {
    let Some(outcome) = in_memory_group("growing") else {
        return;
    };
    let expected = "outcome fitted=true stopped=true advised_after_growth=0 whole=false";
    assert_eq!(outcome, expected);
}

/// The child's side (does nothing unless started by [`in_memory_group`]): takes the snapshot
/// outside the group, joins it, restores beside its "program" (this process's own memory
/// growing, or not) and prints the outcome.
#[test]
fn child() {
    let (Ok(case), Ok(group)) = (std::env::var(CASE), std::env::var(GROUP)) else {
        return;
    };
    let path = snapshotted_file(&case);
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    evict(&path);
    std::fs::write(Path::new(&group).join("cgroup.procs"), "0").unwrap();
    let mut grown: Vec<u8> = Vec::new();
    let mut advised_at_growth = None;
    let outcome = restore_beside_observed(&snapshot, EXACT, &mut |so_far: &Outcome| {
        let half_a_run = so_far.advised_pages >= RUN_PAGES / 2;
        if case == "growing" && half_a_run && advised_at_growth.is_none() {
            grow_into_the_room(&mut grown);
            advised_at_growth = Some(so_far.advised_pages);
        }
    });
    let resident = residency::probe::mincore_runs(&File::open(&path).unwrap(), 0..FILE_PAGES);
    let whole = snapshot.files[0]
        .page_runs()
        .minus(&resident.unwrap())
        .is_empty();
    std::fs::remove_file(&path).unwrap();
    let Outcome {
        fitted,
        stopped,
        advised_pages,
        ..
    } = outcome;
    let after_growth = advised_at_growth.map_or(String::new(), |at| {
        format!(" advised_after_growth={}", advised_pages - at)
    });
    println!("outcome fitted={fitted} stopped={stopped}{after_growth} whole={whole}");
}

/// Grows this process's anonymous memory by the memory the group can still take without
/// reclaim, and a little more (which the kernel takes back from the page cache).
fn grow_into_the_room(grown: &mut Vec<u8>) {
    let free = libprefetch::memory::available_without_reclaim();
    let more = usize::try_from(free + (256 << 10)).unwrap();
    grown.resize(more, 1);
    // The sweep looks again at its next piece.
    std::thread::sleep(LOOK_EVERY);
}

/// A [`FILE_PAGES`]-page file on disk with the snapshot's runs cached and nothing else.
fn snapshotted_file(case: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("residency-beside-cgroup-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{case}-{}", std::process::id()));
    let mut file = File::create(&path).unwrap();
    file.write_all(&vec![3u8; (FILE_PAGES * page_size()) as usize])
        .unwrap();
    file.sync_all().unwrap();
    evict(&path);
    let runs: Vec<_> = (0..RUNS)
        .map(|k| 2 * k * RUN_PAGES..(2 * k + 1) * RUN_PAGES)
        .collect();
    let file = File::open(&path).unwrap();
    fadvise(&file, 0, None, Advice::Random).unwrap();
    for page in PageRuns::from_unsorted(runs).pages() {
        rustix::io::pread(&file, &mut [0u8], page * page_size()).unwrap();
    }
    path
}

fn evict(path: &Path) {
    fadvise(File::open(path).unwrap(), 0, None, Advice::DontNeed).unwrap();
}
