//! Which reads of a tracked file libprefetch sees (section 5.4's callback is asked only about those):
//! the [`Gate`], closed over a cached file but for one read in [`SAMPLE_EVERY`] probed for residency,
//! and open while a list is set or for a while after probes find pages missing; and the residency probe
//! of the whole file when it is opened.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use libprefetch::residency::Probe;

use crate::btree::{PageSource, Unowned};

/// Following reads pays only where at least one page in this many is missing from the page cache: a
/// followed read costs 1.5-2 us (the probe, the planner's accounting, the interior-page check), a read
/// that waits for this machine's disk 50-100 us. Below it, the list is dropped (`Warmth`, `feed.rs`) and the
/// gate stays closed.
pub(crate) const WORTHWHILE_MISS_RATIO: u64 = 32;

/// The system's page size in bytes.
pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

/// While no list is set, one read in this many is probed for residency; the others go straight on.
/// One in 8 took 5% of a cached 1 GiB scan's time (200,000 cachestat calls); one in 32, none measurable.
const SAMPLE_EVERY: u32 = 32;

/// Sampled probes, of the last 32, that must have found their page missing to open the gate: one miss
/// in 32 probes (1,024 reads) is a page reclaimed here and there in a cached file, not a cold scan.
const MISSES_TO_FOLLOW: u32 = 2;

/// Reads that libprefetch follows after a probe found a page missing from the page cache: enough for
/// the callback to see two consecutive index leaves (a few hundred table reads apart) and set a list.
const FOLLOW_READS: u32 = 1024;

/// First reads of a file not mostly cached that are each probed (cachestat, about 1 us): the first
/// found missing opens the gate for [`FOLLOW_READS`] reads; if all are cached, the gate samples as
/// over a cached file. A cold file misses at its first read and is followed from there, as when the
/// gate opened at once; a query whose pages are cached in a partly cached file (the kernel reclaims
/// an idle file's pages here and there) pays these probes instead of the following of its first
/// reads: registering the client and planning at each index page took 40-55 us of CPU inside a
/// 0.25 ms `LIMIT 20`, against about 8 us for the probes.
const START_PROBES: u32 = 8;

/// Decides which reads libprefetch sees, so that a warm cache and a writing connection cost (almost)
/// nothing: none while the connection holds a write lock, RESERVED or WAL's (what it reads, it is about to change, and
/// each re-plan would read the whole index again); all while a list is set, and for [`FOLLOW_READS`]
/// reads after a probe found a page missing; otherwise none, with one read in [`SAMPLE_EVERY`] probed
/// (cachestat, about 0.3 us) to notice when the data stops being cached.
pub(crate) struct Gate {
    probe: Probe,
    page_size: u64,
    /// The connection holds RESERVED or above on the file (rollback journal).
    pub(crate) writing: AtomicBool,
    /// The connection holds the WAL write lock.
    pub(crate) wal_writing: AtomicBool,
    pub(crate) following: AtomicU32,
    /// First reads still to be probed one by one ([`START_PROBES`]).
    probing: AtomicU32,
    sampled: AtomicU32,
    /// The last 32 sampled probes, one bit each (1: the page was missing), newest lowest.
    recent_probes: AtomicU32,
}

impl Gate {
    /// A gate that probes each of the first [`START_PROBES`] reads if more than one page in
    /// [`WORTHWHILE_MISS_RATIO`] of the file is missing from the page cache (probed in stretches spread
    /// over the file, [`file_residency`]), so that a cold scan's first index leaf is seen even if the
    /// sampled probes would miss it. A file cached but for a few pages starts closed, as the sampled
    /// probes would leave it.
    pub(crate) fn new(fd: RawFd, page_size: u64) -> Gate {
        let probing = if mostly_cached(fd, page_size) {
            0
        } else {
            START_PROBES
        };
        Gate {
            probe: Probe::choose(fd),
            page_size,
            writing: AtomicBool::new(false),
            wal_writing: AtomicBool::new(false),
            following: AtomicU32::new(0),
            probing: AtomicU32::new(probing),
            sampled: AtomicU32::new(0),
            recent_probes: AtomicU32::new(0),
        }
    }

    /// Whether the gate starts by probing each read ([`Gate::new`]: the file is not mostly cached), so
    /// that one of the first reads may reach libprefetch.
    pub(crate) fn starts_open(&self) -> bool {
        self.probing.load(Ordering::Relaxed) > 0
    }

    /// Whether libprefetch should see a read of `[offset, offset + amount)` of `fd`.
    pub(crate) fn follows(&self, fd: RawFd, offset: u64, amount: u64, listed: bool) -> bool {
        if self.writing.load(Ordering::Relaxed) || self.wal_writing.load(Ordering::Relaxed) {
            return false;
        }
        if listed {
            return true;
        }
        let following = self.following.load(Ordering::Relaxed);
        if following > 0 {
            self.following.store(following - 1, Ordering::Relaxed);
            return true;
        }
        let probing = self.probing.load(Ordering::Relaxed);
        if probing > 0 {
            self.probing.store(probing - 1, Ordering::Relaxed);
            if self.missing(fd, offset, amount) {
                self.probing.store(0, Ordering::Relaxed);
                self.following.store(FOLLOW_READS - 1, Ordering::Relaxed);
                return true;
            }
            return false;
        }
        if !self
            .sampled
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SAMPLE_EVERY)
        {
            return false;
        }
        self.note_probe(self.missing(fd, offset, amount))
    }

    /// Whether a page of `[offset, offset + amount)` of `fd` is missing from the page cache (or the
    /// kernel will not say).
    fn missing(&self, fd: RawFd, offset: u64, amount: u64) -> bool {
        self.probe
            .resident_pages(fd, offset, amount, self.page_size)
            .is_none_or(|(cached, pages)| cached != pages)
    }

    /// Records a sampled probe; opens the gate for [`FOLLOW_READS`] reads (and returns true) once
    /// [`MISSES_TO_FOLLOW`] of the last 32 probes found their page missing.
    fn note_probe(&self, missing: bool) -> bool {
        let recent = (self.recent_probes.load(Ordering::Relaxed) << 1) | u32::from(missing);
        let open = missing && recent.count_ones() >= MISSES_TO_FOLLOW;
        self.recent_probes
            .store(if open { 0 } else { recent }, Ordering::Relaxed);
        if open {
            self.following.store(FOLLOW_READS, Ordering::Relaxed);
        }
        open
    }
}

/// Whether all but at most one page in [`WORTHWHILE_MISS_RATIO`] of the file open as `fd` is in the
/// page cache (false if the kernel will not say).
fn mostly_cached(fd: RawFd, page_size: u64) -> bool {
    file_residency(fd, page_size).is_some_and(|(cached, pages)| {
        pages.saturating_sub(cached) * WORTHWHILE_MISS_RATIO <= pages
    })
}

/// Stretches of the file probed at open ([`file_residency`]).
const OPEN_PROBES: u64 = 32;

/// Pages in each stretch probed at open.
const OPEN_PROBE_PAGES: u64 = 16;

/// (cached pages, pages probed) of the file open as `fd`, if the kernel says: the whole file if it
/// has at most [`OPEN_PROBES`] * [`OPEN_PROBE_PAGES`] pages, else that many stretches of
/// [`OPEN_PROBE_PAGES`] spread evenly over it. A cachestat walks the page cache's index page by page:
/// over the whole of a cached 90 MiB file it took 0.4-0.5 ms, paid by every connection at open.
fn file_residency(fd: RawFd, page_size: u64) -> Option<(u64, u64)> {
    let len = Unowned(fd).byte_len().ok()?;
    let probe = Probe::choose(fd);
    let pages = len.div_ceil(page_size);
    if pages <= OPEN_PROBES * OPEN_PROBE_PAGES {
        return probe.resident_pages(fd, 0, len.max(1), page_size);
    }
    let stretch = OPEN_PROBE_PAGES * page_size;
    let step = pages / OPEN_PROBES * page_size;
    (0..OPEN_PROBES).try_fold((0, 0), |(cached, probed), i| {
        let (c, p) = probe.resident_pages(fd, i * step, stretch, page_size)?;
        Some((cached + c, probed + p))
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    /// A file of `pages` pages, in the page cache (the feed's tests use it too).
    pub(crate) fn cached_file(pages: usize) -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![1u8; pages * 4096]).unwrap();
        file.sync_all().unwrap();
        file
    }

    fn evict(file: &std::fs::File) {
        // SAFETY: posix_fadvise takes plain integers.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
    }

    /// A large file is probed at open in stretches spread over it, not page by page: a cached one is
    /// mostly cached, one whose second half was never read is not.
    #[test]
    fn a_large_file_is_probed_at_open_in_spread_stretches() {
        let probed = OPEN_PROBES * OPEN_PROBE_PAGES;
        let file = cached_file(4 * probed as usize);
        let fd = file.as_raw_fd();
        assert_eq!(file_residency(fd, 4096), Some((probed, probed)));
        assert!(mostly_cached(fd, 4096));
        file.set_len(8 * probed * 4096).unwrap();
        assert_eq!(file_residency(fd, 4096), Some((probed / 2, probed)));
        assert!(!mostly_cached(fd, 4096));
        let small = cached_file(100);
        assert_eq!(
            file_residency(small.as_raw_fd(), 4096),
            Some((100, 100)),
            "probed whole"
        );
    }

    #[test]
    fn a_cached_file_is_not_followed_and_a_miss_opens_the_gate_for_a_while() {
        let file = cached_file(64);
        let fd = file.as_raw_fd();
        let gate = Gate::new(fd, page_size());
        let followed = |gate: &Gate, n: u64| {
            (0..n)
                .filter(|i| gate.follows(fd, i % 64 * 4096, 4096, false))
                .count()
        };
        assert_eq!(followed(&gate, 1000), 0, "warm reads stay with SQLite");
        evict(&file);
        // The first probe misses (one miss in 32 probes is not enough), the second opens the gate.
        let n = u64::from(2 * SAMPLE_EVERY + FOLLOW_READS);
        assert_eq!(followed(&gate, n), FOLLOW_READS as usize + 1);
        assert!(gate.follows(fd, 0, 4096, true), "a set list is followed");
        gate.writing.store(true, Ordering::Relaxed);
        assert!(
            !gate.follows(fd, 0, 4096, true),
            "a writer is never followed"
        );
    }

    /// A file a quarter of which was reclaimed starts by probing: a query whose reads find their pages
    /// cached is not followed (no client, no planning inside it), and after [`START_PROBES`] such reads
    /// the gate samples as over a cached file; a cold file is followed from its first read.
    #[test]
    fn a_partly_cached_file_is_followed_only_from_a_read_that_misses() {
        let pages = 4 * OPEN_PROBES * OPEN_PROBE_PAGES;
        let file = cached_file(pages as usize);
        let fd = file.as_raw_fd();
        // SAFETY: posix_fadvise takes plain integers.
        let rc = unsafe {
            libc::posix_fadvise(
                fd,
                (pages * 3 / 4 * 4096) as i64,
                0,
                libc::POSIX_FADV_DONTNEED,
            )
        };
        assert_eq!(rc, 0);
        let gate = Gate::new(fd, 4096);
        assert!(gate.starts_open(), "not mostly cached");
        let cached_reads = (0..u64::from(START_PROBES))
            .filter(|i| gate.follows(fd, i * 4096, 4096, false))
            .count();
        assert_eq!(cached_reads, 0, "cached reads are not followed");
        assert_eq!(gate.following.load(Ordering::Relaxed), 0);
        let again = Gate::new(fd, 4096);
        assert!(
            again.follows(fd, pages * 7 / 8 * 4096, 4096, false),
            "a miss is followed"
        );
        let next = (0..u64::from(FOLLOW_READS))
            .filter(|i| again.follows(fd, i % 64 * 4096, 4096, false))
            .count();
        assert_eq!(next, FOLLOW_READS as usize - 1, "and opens the gate");
        evict(&file);
        let cold = Gate::new(fd, 4096);
        assert!(cold.follows(fd, 0, 4096, false), "a cold file's first read");
    }

    #[test]
    fn a_page_missing_here_and_there_does_not_open_the_gate() {
        let file = cached_file(256);
        let fd = file.as_raw_fd();
        // SAFETY: posix_fadvise takes plain integers.
        let rc = unsafe { libc::posix_fadvise(fd, 0, 4096, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
        let gate = Gate::new(fd, page_size());
        gate.following.store(0, Ordering::Relaxed);
        // Ten passes over the file: one sampled probe in 32 finds page 0 missing.
        let followed = (0..10 * 256u64)
            .filter(|i| gate.follows(fd, i % 256 * 4096, 4096, false))
            .count();
        assert_eq!(followed, 0);
    }
}
