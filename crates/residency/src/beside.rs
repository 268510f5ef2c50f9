//! Restoring a snapshot beside a running program (`prefetch run --restore`): advice only, all
//! or nothing within the memory free, paced so that the program's own reads are not starved.
//!
//! 1. **Fit** ([`fits`]). The snapshot's pages are compared with the memory the page cache can
//!    still take without reclaiming anything (`libprefetch::memory::available_without_reclaim`:
//!    the memory cgroup's limit minus its usage, capped by `MemAvailable`). If they do not fit,
//!    nothing is read: a restore that evicts to make room evicts pages of the program it runs
//!    beside, which then reads them again (docs/record.md, "Trials of `run --restore`").
//! 2. **Sweep.** Files in (device, inode) order (one C-LOOK sweep, as [`crate::restore`]), each
//!    opened only when its turn comes, its missing pages probed then, joined by infill.
//!    **Fragments are widened** ([`widen_fragments`]): a run shorter than the device's
//!    read-around (`libprefetch::device::read_around_bytes`: the kernel's read-ahead window,
//!    as far as a request costs more than reading it) and touching neither end of its file is
//!    what is left of a window the program's fault or read brought in, the rest evicted before
//!    the snapshot. Restored alone it costs a request of its own and splits the program's own
//!    read of that window in two; widened by the window on each side, the restore reads the
//!    whole window and the program none of it. A run of a whole window, or a file's whole
//!    start or end, is kept as it is (a snapshot of a warm run that kept everything holds no
//!    fragment: numpy's 456 runs, docs/record.md).
//! 3. **Pace.** Each run is advised with `posix_fadvise(WILLNEED)` in pieces of what one call
//!    loads on that device, with at most [`WINDOW_PIECES`] pieces in flight: before the next
//!    piece the oldest ones are checked with mincore (one small call), every piece of a full
//!    window then (`Window::settle_all`), and the sweep waits while it is still full, so the
//!    kernel's queue of asynchronous reads (256 requests on `prefetch emulate`) keeps room for
//!    the program's own. A shallower window only slowed the
//!    sweep (docs/record.md, "prefetch run --restore"). A piece not loaded within
//!    [`crate::restore::STALL`] is left to the kernel (advice only: nothing is advised twice,
//!    and nothing is waited for at the end but the last window).
//! 4. **Stop under pressure.** Before a piece (every [`LOOK_EVERY`] at most, the pieces advised
//!    between two looks counted against the memory free) the sweep stops for good (nothing
//!    more is advised, nothing is advised again) once a piece it restored is no longer cached
//!    (of the first [`WINDOW_PIECES`] restored, which the kernel's LRU evicts first: the oldest
//!    and one more in turn) or the page cache cannot take the next piece without reclaim.
//!    Either means the program is growing into the
//!    room the snapshot fitted in at the start: the rest would push out restored pages the
//!    program has not used yet, and the program would read them again (`import numpy, pandas`
//!    in a 48 MiB cgroup grows 41 MiB of its own memory, docs/record.md).
//!
//! 5. **Follow the opens where a memory cgroup bounds the cache** ([`restore_as_opened`]). A
//!    program that grows into its cgroup (`import numpy, pandas` in 48 MiB grows 41 MiB of its
//!    own) leaves no room for what the sweep restores ahead of it: the sweep's pages were evicted
//!    before it read them (it read 44 MiB from the disk against the 35 MiB of the import
//!    alone, docs/record.md), and the stop of 4 came after the whole sweep was advised (18 MiB of a 6.2 MiB snapshot once widened, advised within 0.15 s of a
//!    2 s import). Each file's pages are advised instead when the program opens it (the files
//!    it had touched when the restore started first): what is restored is read soon, within
//!    the room the program's own reads take. Nothing stops this restore under pressure (each
//!    file's pages are those the program is about to read), and files never opened are not read.
//!    Once every file has had its turn the restore ends: the program's later opens do not wake it.
//!
//! Nothing is written and nothing but the snapshot's missing pages and their infill is read.
//!
//! Follows libprefetch (ATC 2009) sections 3.3 (C-LOOK order, infill) and 4.6 (the memory
//! budget). Deviations: the paper prefetches in the application's order and within the cache;
//! a snapshot has no order, so the sweep runs ahead at a bounded depth instead (in a memory
//! cgroup, the order is the program's opens), and a snapshot larger than the free memory is not
//! restored at all.

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU64;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rustix::fs::{fadvise, Advice};

use crate::probe::{page_size, probe_file, Mapping, Probe};
use crate::restore::{infill, open_unchanged, STALL};
use crate::runs::PageRuns;
use crate::snapshot::{Snapshot, SnapshotFile};

/// Most advised pieces not yet loaded at once.
pub const WINDOW_PIECES: usize = 64;
/// Interval between two mincore checks while the window is full.
const POLL: Duration = Duration::from_millis(2);
/// Interval between two looks for pressure (module comment, 4): a look reads the memory
/// cgroup's files and `/proc/meminfo` (some 50 microseconds), too much for every piece.
pub const LOOK_EVERY: Duration = Duration::from_millis(2);

/// What a restore beside a program did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The snapshot's pages.
    pub snapshot_pages: u64,
    /// Pages the page cache could take without reclaim when it started.
    pub free_pages: u64,
    /// Whether the snapshot fitted (if not, nothing was opened or read).
    pub fitted: bool,
    /// Files opened.
    pub files_opened: usize,
    /// Pages advised (missing pages and infill).
    pub advised_pages: u64,
    /// Whether the sweep stopped under pressure (module comment, 4) before the end.
    pub stopped: bool,
}

/// Whether a snapshot of `snapshot_pages` fits in `free_pages`.
pub fn fits(snapshot_pages: u64, free_pages: u64) -> bool {
    snapshot_pages <= free_pages
}

impl Outcome {
    /// A restore's outcome before anything is read: the snapshot's pages, the free pages, and
    /// whether they fit.
    fn measured(snapshot: &Snapshot) -> Outcome {
        let snapshot_pages = snapshot.page_count();
        let free_pages = free_pages();
        Outcome {
            snapshot_pages,
            free_pages,
            fitted: fits(snapshot_pages, free_pages),
            ..Outcome::default()
        }
    }
}

/// How the sweep reads what is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reads {
    /// Largest gap, in bytes, read to join two runs (infill).
    pub infill_bytes: u64,
    /// The read-around fragments are widened by (module comment, 2), in bytes; `None`: each
    /// device's own (`libprefetch::device::read_around_bytes`).
    pub read_around_bytes: Option<u64>,
}

/// Restores `snapshot` beside a program (module comment); returns once everything is advised
/// and the last window loaded or left to the kernel, or once it stopped under pressure.
pub fn restore_beside(snapshot: &Snapshot, reads: Reads) -> Outcome {
    restore_beside_observed(snapshot, reads, &mut |_| {})
}

/// [`restore_beside`], calling `after_piece` with the outcome so far after each piece advised
/// (what the program beside does meanwhile, in tests).
pub fn restore_beside_observed(
    snapshot: &Snapshot,
    reads: Reads,
    after_piece: &mut dyn FnMut(&Outcome),
) -> Outcome {
    let mut outcome = Outcome::measured(snapshot);
    if !outcome.fitted {
        return outcome;
    }
    let mut order: Vec<&SnapshotFile> = snapshot.files.iter().collect();
    order.sort_by_key(|file| (file.identity.dev, file.identity.ino));
    let mut sweep = Sweep::new(reads, Some(Pressure::default()));
    for entry in order {
        if !sweep.restore_file(entry, &mut outcome, after_piece) {
            outcome.stopped = true;
            return outcome;
        }
    }
    sweep.window.drain();
    outcome
}

/// Restores `snapshot` beside a program in the order it opens the files (module comment, 5):
/// first the files of `touched` (in device and inode order), then each file `next_open`
/// returns, once, until it returns `None` or every file of the snapshot has had its turn (then
/// `next_open` is not called again: no wake-up for the program's later opens).
pub fn restore_as_opened(
    snapshot: &Snapshot,
    reads: Reads,
    touched: &[(u64, u64)],
    next_open: &mut dyn FnMut() -> Option<(u64, u64)>,
) -> Outcome {
    let mut outcome = Outcome::measured(snapshot);
    if !outcome.fitted {
        return outcome;
    }
    let mut first = touched.to_vec();
    first.sort_unstable();
    // The snapshot's entries by file (a file may be listed under two paths), each taken once.
    let mut by_file: HashMap<(u64, u64), Vec<&SnapshotFile>> = HashMap::new();
    for entry in &snapshot.files {
        let id = (entry.identity.dev, entry.identity.ino);
        by_file.entry(id).or_default().push(entry);
    }
    let mut sweep = Sweep::new(reads, None);
    let mut more = !by_file.is_empty();
    let mut restore = |id, sweep: &mut Sweep| {
        for entry in by_file.remove(&id).unwrap_or_default() {
            sweep.restore_file(entry, &mut outcome, &mut |_| {});
        }
        !by_file.is_empty()
    };
    for id in first {
        more = restore(id, &mut sweep);
    }
    while more {
        more = next_open().is_some_and(|id| restore(id, &mut sweep));
    }
    sweep.window.drain();
    outcome
}

/// The advice of one restore: its reads, window of pieces in flight and looks for pressure
/// (none when it follows the program's opens).
struct Sweep {
    reads: Reads,
    window: Window,
    pressure: Option<Pressure>,
}

impl Sweep {
    fn new(reads: Reads, pressure: Option<Pressure>) -> Sweep {
        Sweep {
            reads,
            window: Window::default(),
            pressure,
        }
    }

    /// Advises the missing pages of `entry` (module comment, 2 and 3); false if it stopped
    /// under pressure (module comment, 4).
    fn restore_file(
        &mut self,
        entry: &SnapshotFile,
        outcome: &mut Outcome,
        after_piece: &mut dyn FnMut(&Outcome),
    ) -> bool {
        let page = page_size();
        let Ok(file) = open_unchanged(entry) else {
            return true;
        };
        outcome.files_opened += 1;
        let Ok(residency) = probe_file(&file, entry.identity.size, Probe::detect(&file)) else {
            return true;
        };
        let around = self
            .reads
            .read_around_bytes
            .unwrap_or_else(|| libprefetch::device::read_around_bytes(file.as_raw_fd()));
        let file_pages = entry.identity.size.div_ceil(page);
        let wanted = widen_fragments(&entry.page_runs(), around / page, file_pages);
        let missing = wanted.minus(&residency.resident);
        if missing.is_empty() {
            return true;
        }
        let mut room = u64::MAX;
        let (joined, _) = infill(
            &missing,
            &residency.resident,
            self.reads.infill_bytes / page,
            &mut room,
        );
        let Ok(mapping) = Mapping::new(&file, joined.end()) else {
            return true;
        };
        let mapping = Rc::new(mapping);
        let piece = (libprefetch::device::willneed_limit(file.as_raw_fd()) / page).max(1);
        for run in joined.runs() {
            let mut start = run.start;
            while start < run.end {
                let len = piece.min(run.end - start);
                self.window.make_room();
                if let Some(pressure) = self.pressure.as_mut() {
                    if pressure.stops(&mut self.window, len) {
                        return false;
                    }
                }
                if fadvise(
                    &file,
                    start * page,
                    NonZeroU64::new(len * page),
                    Advice::WillNeed,
                )
                .is_ok()
                {
                    outcome.advised_pages += len;
                    self.window.push(Rc::clone(&mapping), start..start + len);
                    after_piece(outcome);
                }
                start += len;
            }
        }
        true
    }
}

/// `runs` of a file of `file_pages` pages with every fragment of a read-around window of
/// `window` pages widened by `window` on each side (module comment, 2): a run shorter than
/// `window` that touches neither end of the file.
pub fn widen_fragments(runs: &PageRuns, window: u64, file_pages: u64) -> PageRuns {
    PageRuns::from_unsorted(
        runs.runs()
            .iter()
            .map(|run| {
                let fragment =
                    run.end - run.start < window && run.start > 0 && run.end < file_pages;
                match fragment {
                    true => run.start.saturating_sub(window)..(run.end + window).min(file_pages),
                    false => run.clone(),
                }
            })
            .collect(),
    )
}

/// Pages the page cache can take without reclaim now.
fn free_pages() -> u64 {
    libprefetch::memory::available_without_reclaim() / page_size()
}

/// The sweep's looks for pressure (module comment, 4).
#[derive(Default)]
struct Pressure {
    /// When it last looked, if it has.
    looked: Option<Instant>,
    /// The pages free at the last look, less those advised since.
    free: u64,
}

impl Pressure {
    /// True if the sweep stops before advising `pages` more: a restored piece is evicted, or
    /// they do not fit in the memory free (looked at again every [`LOOK_EVERY`]).
    fn stops(&mut self, window: &mut Window, pages: u64) -> bool {
        if self.looked.is_none_or(|at| at.elapsed() >= LOOK_EVERY) {
            if window.evicted() {
                return true;
            }
            self.free = free_pages();
            self.looked = Some(Instant::now());
        }
        if !fits(pages, self.free) {
            return true;
        }
        self.free -= pages;
        false
    }
}

/// The advised pieces not yet seen loaded, oldest first, and those seen loaded.
#[derive(Default)]
struct Window {
    pieces: VecDeque<(Rc<Mapping>, Range<u64>, Instant)>,
    /// The first [`WINDOW_PIECES`] pieces seen loaded, oldest first: the first the kernel's
    /// LRU evicts (kept mapped for mincore; a mapping of every file restored would cost one
    /// map area each).
    loaded: Vec<(Rc<Mapping>, Range<u64>)>,
    /// The next of `loaded` [`Window::evicted`] looks at in turn.
    turn: usize,
}

impl Window {
    fn push(&mut self, mapping: Rc<Mapping>, pages: Range<u64>) {
        self.pieces.push_back((mapping, pages, Instant::now()));
    }

    /// Waits until fewer than [`WINDOW_PIECES`] pieces are in flight.
    fn make_room(&mut self) {
        self.settle();
        while self.pieces.len() >= WINDOW_PIECES {
            self.settle_all();
            if self.pieces.len() < WINDOW_PIECES {
                return;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Drops every piece loaded or older than [`STALL`], wherever it is in the window (the
    /// first loaded kept in `loaded`): the device serves what is queued in its own order, and
    /// a piece served late at the front held a full window while the disk idled (`grep -rn`'s
    /// restore swept its 794 files no faster than grep read them, docs/record.md).
    fn settle_all(&mut self) {
        for (mapping, pages, since) in std::mem::take(&mut self.pieces) {
            let loaded = whole(&mapping, &pages);
            if !loaded && since.elapsed() < STALL {
                self.pieces.push_back((mapping, pages, since));
            } else if loaded && self.loaded.len() < WINDOW_PIECES {
                self.loaded.push((mapping, pages));
            }
        }
    }

    /// Waits until every piece is loaded or stalled.
    fn drain(&mut self) {
        self.settle();
        while !self.pieces.is_empty() {
            std::thread::sleep(POLL);
            self.settle();
        }
    }

    /// Drops the pieces at the front that are loaded (reads complete roughly in the order
    /// advised; the first ones kept in `loaded`) or older than [`STALL`].
    fn settle(&mut self) {
        while let Some((mapping, pages, since)) = self.pieces.front() {
            let loaded = whole(mapping, pages);
            if !loaded && since.elapsed() < STALL {
                return;
            }
            if let Some((mapping, pages, _)) = self.pieces.pop_front() {
                if loaded && self.loaded.len() < WINDOW_PIECES {
                    self.loaded.push((mapping, pages));
                }
            }
        }
    }

    /// True if a piece of `loaded` is no longer all cached: the oldest (the first the
    /// kernel's LRU evicts, unless the program maps and touches it) or the next in turn.
    fn evicted(&mut self) -> bool {
        let Some(oldest) = self.loaded.first() else {
            return false;
        };
        self.turn = (self.turn + 1) % self.loaded.len();
        let next = &self.loaded[self.turn];
        !whole(&oldest.0, &oldest.1) || !whole(&next.0, &next.1)
    }
}

/// True if every page of `pages` is cached (or mincore cannot tell).
fn whole(mapping: &Mapping, pages: &Range<u64>) -> bool {
    mapping
        .resident(pages.clone())
        .map_or(true, |runs| runs.page_count() == pages.end - pages.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(runs: &[Range<u64>]) -> PageRuns {
        PageRuns::from_unsorted(runs.to_vec())
    }

    #[test]
    fn only_fragments_of_a_window_are_widened_within_the_file() {
        let runs = set(&[0..2, 40..44, 100..140, 200..210, 295..300]);
        assert_eq!(
            widen_fragments(&runs, 32, 300),
            set(&[0..2, 8..76, 100..140, 168..242, 295..300]),
            "the file's start and end, and a whole window, stay"
        );
        let small = set(&[2..4, 6..8]);
        assert_eq!(widen_fragments(&small, 32, 20), set(&[0..10, 10..20]));
        assert_eq!(
            widen_fragments(&runs, 0, 300),
            runs,
            "no window, no widening"
        );
    }

    #[test]
    fn a_snapshot_fits_up_to_the_free_pages() {
        assert!(fits(10, 10));
        assert!(fits(0, 0));
        assert!(!fits(11, 10));
    }
}
