//! Restoring a snapshot: read back into the page cache only the pages of the snapshot that are
//! missing now, in one ascending sweep per file, with infill of small gaps, within a memory
//! budget, and wait until they are there.
//!
//! In reading order:
//!
//! 1. **Probe** ([`plan`]). Each file is opened read-only and its identity (device, inode, size,
//!    modification time) compared with the snapshot's; a file that changed or is gone is
//!    skipped with a reason. The pages cached now are probed; `missing = snapshot - cached`.
//! 2. **Budget.** The pages to read count against the memory budget: `--max-memory`, capped by
//!    what the system and the memory cgroup have room for (the live library's own reckoning,
//!    `libprefetch::memory`). Missing pages are taken file by file, lowest first, until it is
//!    spent; the rest are counted as over budget and not read.
//! 3. **Infill** ([`infill`]). Two runs to read whose gap is at most `infill_pages` join into
//!    one read when the gap's uncached pages still fit the budget (libprefetch section 3.3:
//!    reading a small gap costs less than a separate request). Gap pages that are already cached
//!    cost nothing; gap pages read are counted as infill. With infill 0 no page outside the
//!    snapshot is read.
//! 4. **Issue** ([`execute`]). Files in (device, inode) order, runs ascending: one C-LOOK sweep
//!    that starts at the lowest address (inode order follows placement on most file systems;
//!    the device's scheduler orders what is queued at once). Each run is advised with
//!    `posix_fadvise(WILLNEED)` in pieces of what one call loads on that device
//!    (`libprefetch::device`), all of them before any wait, so the device sees a deep queue.
//!    Advice goes through a descriptor nobody reads from: on FUSE, the kernel drops advice given
//!    through a descriptor with read-ahead state when the connection is busy.
//! 5. **Wait.** mincore (which, unlike cachestat, counts a page only once its read completed)
//!    through one mapping per file, settling the loaded runs at the front of the queue (reads
//!    complete roughly in the order advised), until all are there. When no run completed for
//!    [`STALL`], every queued run is checked and the missing pages are advised again: on
//!    `prefetch emulate` 1-2% of the pages of 256 MiB advised in 1 MiB runs were loaded and
//!    then reclaimed within seconds (cachestat counts them as evicted; the same advice on the
//!    backing file on disk lost none), and re-advising a page still in flight reads nothing.
//!    After [`READVISE_ROUNDS`] rounds in a row that load nothing the rest is counted as not
//!    loaded. A progress callback hears the pages loaded so far.
//!
//! Nothing is written to any file, and no page is read but the snapshot's missing pages and
//! their infill: WILLNEED reads exactly the range it is given.
//!
//! Follows libprefetch (ATC 2009) sections 3.3 (C-LOOK order, infill) and 4.6 (the memory
//! budget). Deviations: infill is decided per gap of runs (not page by page as
//! `plan::ranges::merge_within_room` does), so that a snapshot of a large file costs memory in
//! proportion to its runs, not its pages; the default gap is the live library's 32 KiB (the
//! paper's), while the break-even gap of a device is its per-request cost times its transfer
//! rate (`plan::competitive::break_even_gap_bytes`; about 0.5 MB on a 7200 RPM disk reading
//! forward: a short seek and half a turn, 5 ms, at 90 MB/s).

use std::collections::VecDeque;
use std::fs::File;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::fs::{fadvise, Advice};
use serde::Serialize;

use crate::probe::{page_size, probe_file, Mapping, Probe};
use crate::runs::PageRuns;
use crate::snapshot::{FileIdentity, Snapshot, SnapshotFile};
use crate::Error;

/// Time without a newly loaded page after which the missing ones are advised again. Advising
/// a page whose read is in flight costs one lookup and reads nothing, so this can be short.
pub const STALL: Duration = Duration::from_millis(200);
/// Advice rounds in a row that load nothing before the pages still missing are given up.
pub const READVISE_ROUNDS: u32 = 10;
/// Files advised and not yet waited for at once (each holds a descriptor).
pub const MAX_PENDING_FILES: usize = 256;
/// Interval between two mincore polls while waiting.
const POLL: Duration = Duration::from_millis(5);

/// How to restore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Most bytes the restore may bring into the cache; capped by the room the system and the
    /// memory cgroup have. `None`: that room.
    pub max_memory: Option<u64>,
    /// Largest gap, in bytes, read to join two runs (0: read only the snapshot's pages).
    pub infill_bytes: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_memory: None,
            infill_bytes: 32 << 10,
        }
    }
}

/// A file the restore leaves alone, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The path in the snapshot.
    pub path: PathBuf,
    /// Why, in words.
    pub reason: String,
}

/// What one file needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePlan {
    /// The path in the snapshot.
    pub path: PathBuf,
    /// Its identity in the snapshot (checked again before issuing).
    pub identity: FileIdentity,
    /// The runs to advise: missing pages within the budget, joined by infill.
    pub reads: PageRuns,
    /// Snapshot pages cached already.
    pub resident: u64,
    /// Missing pages to read.
    pub missing: u64,
    /// Gap pages read to join runs.
    pub infill: u64,
    /// Missing pages left out for want of memory.
    pub over_budget: u64,
}

/// What a restore will do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Files with something to read, in issue order.
    pub files: Vec<FilePlan>,
    /// Files left alone.
    pub skipped: Vec<Skipped>,
    /// Pages of the snapshot over the files not skipped.
    pub snapshot_pages: u64,
    /// Of those, cached already.
    pub resident_pages: u64,
    /// The memory budget, pages.
    pub budget_pages: u64,
    /// Where the budget came from.
    pub budget_from: BudgetFrom,
}

/// What set the memory budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetFrom {
    /// The room the system and the memory cgroup have (no `max_memory`, or a larger one).
    #[default]
    Room,
    /// `max_memory`, below that room.
    MaxMemory,
}

/// What a restore did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Files the snapshot lists.
    pub files: usize,
    /// Files left alone, with the reason.
    pub skipped: Vec<Skipped>,
    /// Pages of the snapshot over the files not skipped.
    pub snapshot_pages: u64,
    /// Of those, cached before the restore.
    pub resident_pages: u64,
    /// Missing snapshot pages read.
    pub missing_pages_read: u64,
    /// Pages outside the snapshot read as infill.
    pub infill_pages: u64,
    /// Missing pages not read: the memory budget was spent.
    pub over_budget_pages: u64,
    /// Advised pages still not cached at the end (dropped or evicted).
    pub not_loaded_pages: u64,
    /// The memory budget, pages.
    pub budget_pages: u64,
    /// Where the budget came from.
    pub budget_from: BudgetFrom,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// Joins runs of `wanted` whose gap is at most `max_gap` pages and whose uncached gap pages
/// (not in `resident`) fit in `room`, which shrinks by what is used. Returns the joined runs
/// and the uncached gap pages read.
///
/// ```text
///   wanted  [0,2) [4,5) [9,10)     resident {3}     max_gap 3, room 1
///   gap 2-3: 2 pages, 1 cached -> costs 1, fits      [0,5)
///   gap 5-8: 4 pages > max_gap                        [9,10)      infill 1
/// ```
pub fn infill(
    wanted: &PageRuns,
    resident: &PageRuns,
    max_gap: u64,
    room: &mut u64,
) -> (PageRuns, u64) {
    let mut joined = PageRuns::new();
    let mut added = 0;
    let mut previous_end: Option<u64> = None;
    for run in wanted.runs() {
        if let Some(end) = previous_end {
            let gap = end..run.start;
            let cost = (gap.end - gap.start) - resident.count_within(gap.clone());
            if gap.end - gap.start <= max_gap && cost <= *room {
                *room -= cost;
                added += cost;
                joined.push(gap);
            }
        }
        joined.push(run.clone());
        previous_end = Some(run.end);
    }
    (joined, added)
}

/// The reads of one file: its missing pages within `room` (which shrinks), with infill.
pub fn plan_reads(
    snapshot: &PageRuns,
    resident: &PageRuns,
    infill_pages: u64,
    room: &mut u64,
) -> (PageRuns, u64, u64, u64) {
    let missing = snapshot.minus(resident);
    let wanted = missing.first_pages(*room);
    *room -= wanted.page_count();
    let over_budget = missing.page_count() - wanted.page_count();
    let (reads, infilled) = infill(&wanted, resident, infill_pages, room);
    (reads, wanted.page_count(), infilled, over_budget)
}

/// The memory budget in pages, `max_memory` capped by the room the system and cgroup have,
/// and which of the two set it.
pub fn budget_pages(max_memory: Option<u64>) -> (u64, BudgetFrom) {
    let room = libprefetch::memory::available_for_cache();
    match max_memory {
        Some(cap) if cap < room => (cap / page_size(), BudgetFrom::MaxMemory),
        _ => (room / page_size(), BudgetFrom::Room),
    }
}

/// Probes every file of `snapshot` and plans the restore (no I/O but the probes).
pub fn plan(snapshot: &Snapshot, options: &Options) -> Plan {
    let (budget_pages, budget_from) = budget_pages(options.max_memory);
    let mut out = Plan {
        budget_pages,
        budget_from,
        ..Plan::default()
    };
    let mut room = out.budget_pages;
    let infill_pages = options.infill_bytes / page_size();
    let mut order: Vec<&SnapshotFile> = snapshot.files.iter().collect();
    order.sort_by_key(|file| (file.identity.dev, file.identity.ino));
    for entry in order {
        let resident = match open_unchanged(entry).and_then(|file| {
            probe_file(&file, entry.identity.size, Probe::detect(&file))
                .map_err(|error| error.to_string())
        }) {
            Ok(residency) => residency.resident,
            Err(reason) => {
                out.skipped.push(Skipped {
                    path: entry.path.clone(),
                    reason,
                });
                continue;
            }
        };
        let wanted = entry.page_runs();
        let (reads, missing, infill, over_budget) =
            plan_reads(&wanted, &resident, infill_pages, &mut room);
        let cached = wanted.page_count() - wanted.minus(&resident).page_count();
        out.snapshot_pages += wanted.page_count();
        out.resident_pages += cached;
        out.files.push(FilePlan {
            path: entry.path.clone(),
            identity: entry.identity,
            reads,
            resident: cached,
            missing,
            infill,
            over_budget,
        });
    }
    out
}

/// Opens a snapshot's file read-only if it is still the same file; the reason if not.
pub(crate) fn open_unchanged(entry: &SnapshotFile) -> Result<File, String> {
    let file = File::open(&entry.path).map_err(|error| format!("cannot open: {error}"))?;
    let now = FileIdentity::of(&file).map_err(|error| format!("cannot stat: {error}"))?;
    let changed = entry.identity.differences(&now);
    if !changed.is_empty() {
        return Err(format!(
            "changed since the snapshot ({} not the same)",
            changed.join(", ")
        ));
    }
    Ok(file)
}

/// Restores `snapshot`: plans, issues, waits. `progress` hears (pages loaded, pages to load)
/// now and then (the pages of the advised runs, cached gap pages included). Blocks until the
/// pages are cached or given up.
pub fn restore(
    snapshot: &Snapshot,
    options: &Options,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Summary, Error> {
    let started = Instant::now();
    let plan = plan(snapshot, options);
    let mut summary = execute(plan, progress)?;
    summary.files = snapshot.files.len();
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// A file advised and not yet fully loaded.
struct Pending {
    file: File,
    path: PathBuf,
    advised: PageRuns,
}

/// Issues the plan's advice and waits for it (steps 4 and 5 of the module comment).
pub fn execute(plan: Plan, progress: &mut dyn FnMut(u64, u64)) -> Result<Summary, Error> {
    let mut summary = Summary {
        skipped: plan.skipped,
        snapshot_pages: plan.snapshot_pages,
        resident_pages: plan.resident_pages,
        budget_pages: plan.budget_pages,
        budget_from: plan.budget_from,
        ..Summary::default()
    };
    let total: u64 = plan.files.iter().map(|f| f.reads.page_count()).sum();
    let mut tally = Tally {
        total,
        done: 0,
        progress,
    };
    let mut pending: VecDeque<Pending> = VecDeque::new();
    for file_plan in plan.files {
        summary.over_budget_pages += file_plan.over_budget;
        if file_plan.reads.is_empty() {
            continue;
        }
        let file = match open_unchanged_since_plan(&file_plan) {
            Ok(file) => file,
            Err(reason) => {
                summary.skipped.push(Skipped {
                    path: file_plan.path,
                    reason,
                });
                continue;
            }
        };
        advise(&file, &file_plan.reads).map_err(|source| Error::Advise {
            path: file_plan.path.clone(),
            source,
        })?;
        summary.missing_pages_read += file_plan.missing;
        summary.infill_pages += file_plan.infill;
        pending.push_back(Pending {
            file,
            path: file_plan.path,
            advised: file_plan.reads,
        });
        if pending.len() > MAX_PENDING_FILES {
            let oldest = pending.pop_front().expect("more than the limit pending");
            summary.not_loaded_pages += wait(oldest, &mut tally)?;
        }
    }
    while let Some(next) = pending.pop_front() {
        summary.not_loaded_pages += wait(next, &mut tally)?;
    }
    Ok(summary)
}

/// The progress so far and who hears of it.
struct Tally<'a> {
    total: u64,
    done: u64,
    progress: &'a mut dyn FnMut(u64, u64),
}

impl Tally<'_> {
    /// Counts `pages` more as loaded and tells the listener.
    fn advance(&mut self, pages: u64) {
        self.done += pages;
        (self.progress)(self.done, self.total);
    }
}

/// Opens a planned file again, checking it did not change since it was probed.
fn open_unchanged_since_plan(file_plan: &FilePlan) -> Result<File, String> {
    let entry = SnapshotFile {
        path: file_plan.path.clone(),
        identity: file_plan.identity,
        pages: Vec::new(),
    };
    open_unchanged(&entry)
}

/// WILLNEED of every run of `reads`, in pieces of what one call loads on the file's device.
fn advise(file: &File, reads: &PageRuns) -> std::io::Result<()> {
    let page = page_size();
    let piece = (libprefetch::device::willneed_limit(file.as_raw_fd()) / page).max(1);
    for run in reads.runs() {
        let mut start = run.start;
        while start < run.end {
            let len = piece.min(run.end - start);
            let bytes = std::num::NonZeroU64::new(len * page);
            fadvise(file, start * page, bytes, Advice::WillNeed)?;
            start += len;
        }
    }
    Ok(())
}

/// Waits until the advised pages of one file are loaded; returns how many were given up.
///
/// Reads complete roughly in the ascending order they were advised in, so each poll settles the
/// loaded runs at the front of the queue (one mincore each) and stops at the first that is not
/// complete. On a stall every queued run is checked, the queue keeps only what is missing, and
/// that is advised again.
fn wait(pending: Pending, tally: &mut Tally) -> Result<u64, Error> {
    let probing = |source| Error::Probe {
        path: pending.path.clone(),
        source,
    };
    let mapping = Mapping::new(&pending.file, pending.advised.end()).map_err(probing)?;
    let mut queue: VecDeque<Range<u64>> = pending.advised.runs().iter().cloned().collect();
    let mut fruitless = 0;
    let mut last_progress = Instant::now();
    loop {
        while let Some(run) = queue.front().cloned() {
            if mapping.resident(run.clone()).map_err(probing)?.page_count() < run.end - run.start {
                break;
            }
            queue.pop_front();
            tally.advance(run.end - run.start);
            last_progress = Instant::now();
            fruitless = 0;
        }
        if queue.is_empty() {
            return Ok(0);
        }
        if last_progress.elapsed() >= STALL {
            let before: u64 = queue.iter().map(|run| run.end - run.start).sum();
            let missing = still_missing(&mapping, &queue).map_err(probing)?;
            let after = missing.page_count();
            if after < before {
                tally.advance(before - after);
                fruitless = 0;
            } else if fruitless == READVISE_ROUNDS {
                return Ok(after);
            } else {
                fruitless += 1;
            }
            advise(&pending.file, &missing).map_err(|source| Error::Advise {
                path: pending.path.clone(),
                source,
            })?;
            queue = missing.runs().iter().cloned().collect();
            last_progress = Instant::now();
        }
        std::thread::sleep(POLL);
    }
}

/// The pages of the queued runs that mincore does not yet see (loaded and up to date).
fn still_missing(mapping: &Mapping, queue: &VecDeque<Range<u64>>) -> std::io::Result<PageRuns> {
    let mut missing = PageRuns::new();
    for run in queue {
        let wanted = PageRuns::from_unsorted(vec![run.clone()]);
        for gap in wanted.minus(&mapping.resident(run.clone())?).runs() {
            missing.push(gap.clone());
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(runs: &[(u64, u64)]) -> PageRuns {
        PageRuns::from_unsorted(runs.iter().map(|&(s, e)| s..e).collect())
    }

    fn any_runs() -> impl proptest::strategy::Strategy<Value = PageRuns> {
        use proptest::prelude::*;
        proptest::collection::vec((0u64..300, 1u64..10), 0..20).prop_map(|pairs| {
            PageRuns::from_unsorted(pairs.into_iter().map(|(s, l)| s..s + l).collect())
        })
    }

    proptest::proptest! {
        #[test]
        fn reads_are_the_missing_pages_within_the_room_plus_counted_infill(
            snapshot in any_runs(),
            resident in any_runs(),
            gap in 0u64..8,
            room in 0u64..400,
        ) {
            let mut left = room;
            let (reads, missing, infill, over) = plan_reads(&snapshot, &resident, gap, &mut left);
            let all_missing = snapshot.minus(&resident);
            let uncached_reads = reads.minus(&resident);
            proptest::prop_assert_eq!(missing + over, all_missing.page_count());
            proptest::prop_assert_eq!(uncached_reads.intersect(&snapshot).page_count(), missing);
            proptest::prop_assert_eq!(uncached_reads.minus(&snapshot).page_count(), infill);
            proptest::prop_assert_eq!(missing + infill + left, room);
            if gap == 0 {
                proptest::prop_assert_eq!(reads.minus(&snapshot).page_count(), 0);
            }
        }
    }

    #[test]
    fn infill_doc_example() {
        let mut room = 1;
        let (joined, added) = infill(
            &set(&[(0, 2), (4, 5), (9, 10)]),
            &set(&[(3, 4)]),
            3,
            &mut room,
        );
        assert_eq!(joined, set(&[(0, 5), (9, 10)]));
        assert_eq!((added, room), (1, 0));
    }

    #[test]
    fn infill_stops_where_the_room_ends() {
        let mut room = 3;
        let wanted = set(&[(0, 1), (3, 4), (6, 7), (9, 10)]);
        let (joined, added) = infill(&wanted, &PageRuns::new(), 2, &mut room);
        assert_eq!(joined, set(&[(0, 4), (6, 7), (9, 10)]));
        assert_eq!((added, room), (2, 1));
    }

    #[test]
    fn zero_infill_reads_exactly_the_missing_pages() {
        let mut room = 100;
        let snapshot = set(&[(0, 4), (5, 6), (8, 12)]);
        let resident = set(&[(2, 3), (8, 12), (20, 30)]);
        let (reads, missing, infill, over) = plan_reads(&snapshot, &resident, 0, &mut room);
        assert_eq!(reads, set(&[(0, 2), (3, 4), (5, 6)]));
        assert_eq!((missing, infill, over, room), (4, 0, 0, 96));
    }

    #[test]
    fn the_budget_takes_the_lowest_missing_pages_first() {
        let mut room = 3;
        let (reads, missing, infill, over) =
            plan_reads(&set(&[(0, 2), (10, 14)]), &PageRuns::new(), 8, &mut room);
        assert_eq!(reads, set(&[(0, 2), (10, 11)]));
        assert_eq!((missing, infill, over, room), (3, 0, 3, 0));
    }
}
