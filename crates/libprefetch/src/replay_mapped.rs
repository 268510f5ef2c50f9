//! Following a replayed program that reads through `mmap`: a program whose
//! pages arrive by page faults (a file it maps, the shared libraries the
//! loader maps) never calls `read`, so nothing moves the replay's list and
//! the first window is all it ever prefetches; in a memory cgroup smaller
//! than the recording that is the first quarter of the run, then nothing.
//!
//! The replay's thread, once the first round is issued, watches the
//! program's mappings (between the opener's opens and while the opener
//! waits for the program, then alone) of the replayed files instead: the kernel marks a page
//! of a mapping present in the process's page table (`/proc/self/pagemap`,
//! bit 63; readable by the process itself, no privilege) when the program
//! faults it in. The recording's runs are walked in order from where the
//! last look stopped:
//!
//! ```text
//!   runs:   [r0 r1 r2 r3 r4 r5 r6 ...]      present: r0 r1 r3, then 8 absent
//!            ^ from                ^ the walk stops after GAP_RUNS absent runs
//!   r0..r3 are told to the planner as read (r2 too: a page the program
//!   touched may be gone from the page table already), and the next look
//!   starts at r4
//! ```
//!
//! Until the program first reaches a run, a walk looks past absent runs
//! among the first [`FIRST_RUNS`] and stops at the first run reached: the
//! program's first touch may be any of the recording's first runs (it may
//! have faulted in several before the replay was ready), and nothing was
//! prefetched that fault-around could map. The first page told starts the
//! replay's list (`replay.rs`: nothing is advised before). Where a read
//! restarts the list (the callback), the walk continues from that run.
//!
//! Runs of the map method (pages resident at unmap or exit: the order of
//! their touches is unknown) are passed over: a shared library mapped at
//! start-up is present all along and says nothing of the program's place.
//! So are runs wholly cached when the follower first sees a replayed file
//! mapped (one look each, then): the
//! replay has nothing to do for them, and whether the program touches them
//! this time (a page the kernel's fault-around maps instead) is chance.
//!
//! A run counts as reached if any of its pages is present (a fault brings
//! in a run of read-around pages, of which the program touches one) or was
//! read through the interposers (those reads moved the list already and are
//! not told again). The page table also shows the kernel's fault-around (up
//! to 16 cached pages mapped around a fault): a run reached that way only
//! moves the list a few runs early, and the walk stops at the first gap, so
//! a stray page far ahead is not followed. The pages told are marked read
//! (`Touches`), so a later `read` of them is not told twice.
//!
//! Costs: one read of `/proc/self/maps` per [`MAPS_EVERY`] (backing off to
//! [`MAPS_IDLE`] while no replayed file is mapped), and one `pread` of
//! the page map per run looked at, every [`LOOK_EVERY`]; it ends when the
//! walk reaches the end of the list.
//!
//! Follows libprefetch (ATC 2009) section 4.4 (the library follows the
//! application through its reads).
//! Deviations: the reads are faults seen after the fact in the page table.

use std::ops::Range;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::mapped::MapsLine;
use crate::registry::follow_regions;
use crate::registry::globals;
use crate::residency::Probe;

/// Absent runs in a row that end a walk.
const GAP_RUNS: usize = 8;
/// Runs looked at in one walk at most.
const WALK_RUNS: usize = 1024;
/// Runs looked at in a walk before the program reached any.
const FIRST_RUNS: usize = 64;
/// Between two looks at the page table.
pub(crate) const LOOK_EVERY: Duration = Duration::from_millis(2);
/// Between two reads of `/proc/self/maps` while replayed files are mapped.
const MAPS_EVERY: Duration = Duration::from_millis(20);
/// The longest wait between reads of `/proc/self/maps` while none is.
const MAPS_IDLE: Duration = Duration::from_millis(320);

/// One entry of the replay's list: a private descriptor and a page.
pub(crate) type Entry = (RawFd, u32);

/// The list and where each recorded run starts in it.
pub(crate) struct Runs {
    pub(crate) entries: Arc<Vec<Entry>>,
    /// Index in `entries` of each run's first entry, ascending.
    pub(crate) starts: Vec<usize>,
    /// Per run, whether it was recorded in the order it was touched (not
    /// by the map method, which sees a mapping's pages at unmap or exit).
    pub(crate) ordered: Vec<bool>,
    /// The entry the replay's callback last started the list at
    /// (`usize::MAX`: never).
    pub(crate) relisted: Arc<AtomicUsize>,
}

impl Runs {
    /// The entries of run `run`.
    fn entries_of(&self, run: usize) -> &[Entry] {
        let first = self.starts[run];
        let last = self
            .starts
            .get(run + 1)
            .copied()
            .unwrap_or(self.entries.len());
        &self.entries[first..last]
    }

    /// The run holding entry `at`.
    fn run_of(&self, at: usize) -> usize {
        self.starts
            .partition_point(|&start| start <= at)
            .saturating_sub(1)
    }
}

/// A mapping of a replayed file in this process.
struct Mapped {
    private: RawFd,
    addresses: Range<usize>,
    /// File page of `addresses.start`.
    first_page: u64,
}

/// The page map of this process and the page size.
struct PageMap {
    file: OwnedFd,
    page_size: u64,
}

/// The private descriptor of a replayed file by (device, inode).
type PrivateOf<'a> = dyn Fn(u64, u64) -> Option<RawFd> + 'a;
/// Whether the program read any of the entries through `read`.
type ReadBefore<'a> = dyn Fn(&[Entry]) -> bool + 'a;
/// Marks entries read.
type MarkRead<'a> = dyn Fn(&[Entry]) + 'a;

/// Follows the program through its mapped pages, one look at a time
/// ([`Follower::look`]), until the walk reaches the end of the list. Runs
/// on the replay's thread, between the opener's opens and while it waits
/// for the program (`replay.rs`).
pub(crate) struct Follower<'a> {
    runs: &'a Runs,
    /// The private descriptor of a replayed file by (device, inode).
    private_of: Box<PrivateOf<'a>>,
    /// Whether the program read any of the entries through `read`.
    read_before: Box<ReadBefore<'a>>,
    /// Marks entries read (told to the planner by [`tell`]).
    mark_read: Box<MarkRead<'a>>,
    /// `None` where the page map cannot be read: nothing to follow.
    pagemap: Option<PageMap>,
    /// Per run, whether it marks the program's place ([`marks`]): probed
    /// when a replayed file is first seen mapped, so a program that maps
    /// none costs no probe (one per run, some 800 for `grep -rn`, taken
    /// before the opener's first open beside the program when the follower
    /// was made).
    marks: Option<Vec<bool>>,
    /// Files with a run recorded in touch order: only their mappings are
    /// followed. The map method records a program's executable and shared
    /// libraries (`grep -rn`'s), mapped all along; a follower watching them
    /// walked the list every 2 ms from the program's start, each run a
    /// take of the lock the program's reads take (`Touches`), and `grep
    /// -rn` ran at 1.07x stock against main's 1.62x in a cgroup of a
    /// quarter (11 rounds).
    ordered_files: std::collections::HashSet<RawFd>,
    next: usize,
    mapped: Vec<Mapped>,
    maps_read: Option<Instant>,
    idle: Duration,
    started: bool,
    looked: Option<Instant>,
}

impl<'a> Follower<'a> {
    pub(crate) fn new(
        runs: &'a Runs,
        private_of: impl Fn(u64, u64) -> Option<RawFd> + 'a,
        read_before: impl Fn(&[Entry]) -> bool + 'a,
        mark_read: impl Fn(&[Entry]) + 'a,
    ) -> Self {
        let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC;
        let file = rustix::fs::open("/proc/self/pagemap", flags, rustix::fs::Mode::empty());
        let pagemap = file.ok().map(|file| PageMap {
            file,
            page_size: crate::memory::page_size(),
        });
        Follower {
            runs,
            private_of: Box::new(private_of),
            read_before: Box::new(read_before),
            mark_read: Box::new(mark_read),
            pagemap,
            marks: None,
            ordered_files: (0..runs.starts.len())
                .filter(|&run| runs.ordered[run])
                .filter_map(|run| runs.entries_of(run).first().map(|&(fd, _)| fd))
                .collect(),
            next: 0,
            mapped: Vec::new(),
            maps_read: None,
            idle: MAPS_EVERY,
            started: false,
            looked: None,
        }
    }

    /// Whether the walk has reached the end of the list (or cannot start).
    pub(crate) fn done(&self) -> bool {
        self.pagemap.is_none() || self.next >= self.runs.starts.len()
    }

    /// Whether a look could tell the planner something now: the walk has
    /// not reached the end and the program maps a replayed file (the
    /// opener waits in short steps only then, `replay.rs`).
    pub(crate) fn watching(&self) -> bool {
        !self.done() && !self.mapped.is_empty()
    }

    /// Looks at the page table once if [`LOOK_EVERY`] has passed since the
    /// last look, telling the planner of the runs the program reached.
    pub(crate) fn look(&mut self) {
        if self.done() || self.looked.is_some_and(|at| at.elapsed() < LOOK_EVERY) {
            return;
        }
        self.looked = Some(Instant::now());
        let Some(pagemap) = self.pagemap.as_ref() else {
            return;
        };
        let runs = self.runs;
        let relisted = runs.relisted.load(Ordering::Acquire);
        if relisted != usize::MAX && runs.run_of(relisted) > self.next {
            (self.next, self.started) = (runs.run_of(relisted), true);
        }
        if self.maps_read.is_none_or(|at| at.elapsed() >= self.idle) {
            self.mapped = mapped_files(&*self.private_of, pagemap.page_size);
            self.mapped
                .retain(|mapping| self.ordered_files.contains(&mapping.private));
            self.maps_read = Some(Instant::now());
            self.idle = match self.mapped.is_empty() {
                true => (self.idle * 2).min(MAPS_IDLE),
                false => MAPS_EVERY,
            };
        }
        if self.mapped.is_empty() {
            return;
        }
        let marks = self
            .marks
            .get_or_insert_with(|| marks(runs, pagemap.page_size));
        let walked = Walk {
            runs,
            marks,
            mapped: &self.mapped,
            pagemap,
            started: self.started,
        };
        let reached = walked.from(self.next, &*self.read_before, &*self.mark_read);
        if reached > self.next {
            self.next = reached;
            self.started = true;
        }
    }

    /// Looks until the walk reaches the end of the list.
    pub(crate) fn follow(&mut self) {
        while !self.done() {
            self.look();
            std::thread::sleep(LOOK_EVERY);
        }
    }
}

/// Per run, whether reaching it marks the program's place: it was recorded
/// in touch order and some of its pages are not cached as the replay
/// starts (a run cached already, such as the executable's pages another
/// process keeps, needs nothing and may or may not be touched this time).
fn marks(runs: &Runs, page_size: u64) -> Vec<bool> {
    let mut probes = std::collections::HashMap::new();
    (0..runs.starts.len())
        .map(|run| {
            let entries = runs.entries_of(run);
            let (Some(&(fd, first)), Some(&(_, last))) = (entries.first(), entries.last()) else {
                return false;
            };
            let probe = *probes.entry(fd).or_insert_with(|| Probe::choose(fd));
            let span = (u64::from(last) + 1 - u64::from(first)) * page_size;
            let cached = probe.resident_pages(fd, u64::from(first) * page_size, span, page_size);
            runs.ordered[run] && cached.is_none_or(|(cached, pages)| cached < pages)
        })
        .collect()
}

/// The mappings of replayed files (`/proc/self/maps`).
fn mapped_files(private_of: &dyn Fn(u64, u64) -> Option<RawFd>, page_size: u64) -> Vec<Mapped> {
    let Some(maps) = crate::rawio::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    maps.lines()
        .filter_map(MapsLine::parse)
        .filter_map(|line| {
            Some(Mapped {
                private: private_of(line.dev, line.ino)?,
                first_page: line.offset / page_size,
                addresses: line.addresses,
            })
        })
        .collect()
}

/// One look at the page table.
struct Walk<'a> {
    runs: &'a Runs,
    /// Per run, whether it marks the program's place ([`marks`]).
    marks: &'a [bool],
    mapped: &'a [Mapped],
    pagemap: &'a PageMap,
    /// Whether a run was reached before: a walk stops after [`GAP_RUNS`]
    /// absent runs, else at the first run reached.
    started: bool,
}

impl Walk<'_> {
    /// Walks from run `from` to the furthest run reached before a gap and
    /// tells the planner of the runs up to it as read (all their pages: the
    /// prefetch took the place of the faults' read-around, and the planner
    /// drops the pages of a list it passes over unread); runs the program
    /// read through the interposers were told already and are left out.
    /// Returns the run to start the next walk at (`from` if none was
    /// reached).
    fn from(
        &self,
        from: usize,
        read_before: &dyn Fn(&[Entry]) -> bool,
        mark_read: &dyn Fn(&[Entry]),
    ) -> usize {
        let runs = self.runs;
        let mut next = from;
        let mut gap = 0;
        let mut untold = Vec::new();
        let walk = match self.started {
            true => WALK_RUNS,
            false => FIRST_RUNS,
        };
        let end = runs.starts.len().min(from + walk);
        for run in from..end {
            if !self.marks[run] {
                continue;
            }
            let entries = runs.entries_of(run);
            if read_before(entries) {
                (gap, next) = (0, run + 1);
                continue;
            }
            untold.push(run);
            if present_entries(entries, self.mapped, self.pagemap).is_empty() {
                gap += 1;
                if self.started && gap == GAP_RUNS {
                    break;
                }
                continue;
            }
            (gap, next) = (0, run + 1);
            if !self.started {
                untold = vec![run];
                break;
            }
        }
        for &run in untold.iter().filter(|&&run| run < next) {
            let entries = runs.entries_of(run);
            mark_read(entries);
            tell(entries, self.pagemap.page_size);
        }
        next
    }
}

/// Tells the planner of `entries` (one file, ascending pages) as read, one
/// read per stretch of adjacent pages.
fn tell(entries: &[Entry], page_size: u64) {
    let mut at = 0;
    while at < entries.len() {
        let (fd, first) = entries[at];
        let mut count = 1;
        while entries.get(at + count) == Some(&(fd, first + count as u32)) {
            count += 1;
        }
        let offset = u64::from(first) * page_size;
        follow_regions(globals(), fd, offset, count as u64 * page_size);
        at += count;
    }
}

/// The entries of one run (one file, ascending pages) whose pages are
/// present in one of the program's mappings of the file.
fn present_entries(entries: &[Entry], mapped: &[Mapped], pagemap: &PageMap) -> Vec<Entry> {
    let Some(&(fd, first)) = entries.first() else {
        return Vec::new();
    };
    let last = entries.last().map_or(first, |e| e.1);
    let mut present = Vec::new();
    for mapping in mapped.iter().filter(|m| m.private == fd) {
        let pages = (mapping.addresses.len() as u64).div_ceil(pagemap.page_size);
        let covered = mapping.first_page..mapping.first_page + pages;
        let from = u64::from(first).max(covered.start);
        let to = (u64::from(last) + 1).min(covered.end);
        if from >= to {
            continue;
        }
        let address = mapping.addresses.start as u64 + (from - covered.start) * pagemap.page_size;
        let bits = pagemap.present(address, to - from);
        present.extend(entries.iter().copied().filter(|&(_, page)| {
            let page = u64::from(page);
            (from..to).contains(&page) && bits.get((page - from) as usize) == Some(&true)
        }));
    }
    present.sort_unstable();
    present.dedup();
    present
}

impl PageMap {
    /// Whether each of `count` pages from virtual `address` is present.
    fn present(&self, address: u64, count: u64) -> Vec<bool> {
        let mut bytes = vec![0u8; count as usize * 8];
        let offset = address / self.page_size * 8;
        match rustix::io::pread(self.file.as_fd(), &mut bytes, offset) {
            Ok(n) => bytes[..n]
                .chunks_exact(8)
                .map(|word| word[7] & 0x80 != 0)
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mapping of a file, touched at one page, shows exactly that page
    /// (and no page it did not touch) present to the page map.
    #[test]
    fn the_page_map_shows_a_touched_page_of_a_mapping() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        std::fs::write(&path, vec![7u8; 1024 << 12]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let length = 1024 << 12;
        // SAFETY: a fresh private read-only mapping of a file we hold open.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                length,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let page_size = crate::memory::page_size();
        // SAFETY: page 700 lies inside the mapping.
        let byte = unsafe { std::ptr::read_volatile((base as *const u8).add(700 << 12)) };
        assert_eq!(byte, 7);
        let flags = rustix::fs::OFlags::RDONLY;
        let pagemap = PageMap {
            file: rustix::fs::open("/proc/self/pagemap", flags, rustix::fs::Mode::empty()).unwrap(),
            page_size,
        };
        let mapped = [Mapped {
            private: 99,
            addresses: base as usize..base as usize + length,
            first_page: 0,
        }];
        // Fault-around, or a fault that maps its whole folio (up to 2 MiB), may map cached
        // neighbours of page 700; pages 2 and 3 lie in another 2 MiB of the file.
        let far: Vec<Entry> = vec![(99, 2), (99, 3)];
        assert!(present_entries(&far, &mapped, &pagemap).is_empty());
        let near: Vec<Entry> = vec![(99, 700)];
        assert_eq!(present_entries(&near, &mapped, &pagemap), vec![(99, 700)]);
        // SAFETY: unmapping the mapping made above.
        unsafe { libc::munmap(base, length) };
    }
}
