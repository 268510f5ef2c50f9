//! Live competitive prefetching (`prefetch run --competitive`, `LIBPREFETCH_COMPETITIVE=1`):
//! an unmodified program's sequential (or strided) reads of a file are followed per open
//! descriptor, and the pages ahead of each such stream are advised (`POSIX_FADV_WILLNEED`) by
//! the competitive depth of the file's device, `S_p = C_switch x R_tr`, with slow start and a
//! lower depth when prefetched pages are evicted before use. The decisions are
//! `plan::stream`'s (pure); this file performs them.
//!
//! How a read goes, in order (the caller, `observe.rs`, has the re-entrancy guard and the
//! file's `fstat`):
//!
//! 1. **Depth.** The device's profile (`profile.rs`: cost per request and transfer rate,
//!    measured once by `prefetch device measure`, or the model's while `prefetch emulate` is
//!    mounted) gives `S_p` in pages, looked up once per device per process. A device without a
//!    profile gets nothing from this mode: its files are left to the kernel's read-ahead.
//! 2. **Stream.** The descriptor's [`plan::stream::Stream`] (created on its first read, and
//!    anew when the number names another file, told the kernel's read-ahead window of the
//!    device, `read_ahead_kb`, whose depths it leaves to the kernel) says which pages to
//!    advise, and which pages of
//!    this read it advised earlier; those are probed (`cachestat`, else `mincore`) and the ones
//!    missing, evicted before use, lower the stream's depth. Only pages whose advice was
//!    already issued are probed, so advice still queued is never taken for an eviction. A
//!    `WILLNEED` that slept (the advice thread's voluntary context switches, `getrusage`, over
//!    the call alone), or advice handed over more than [`STALLED`] ago and not yet submitted,
//!    tells the stream that the device's queue is full, and it holds its second window back
//!    (`plan::stream`, "A full device queue") until the reader reaches the end of that advice,
//!    which the device has then served. Advice handed over just now is not: with many
//!    processes on two cores the advice thread often simply has not run yet.
//!    A window also stays within the stream's share of a quarter of the memory the process's
//!    page cache may hold (`memory.rs`'s probe, read at most every 10 ms) over the descriptors
//!    followed (`plan::stream_memory`, TR840 section 4.2's `P_mem / N_stream`).
//! 3. **Advice.** The pages to advise go to the library's advice thread (`registry.rs`), never
//!    issued from the reading thread: a `WILLNEED` submits its I/O in the caller and can wait
//!    for a full device queue (or, on FUSE, for a free background slot). The thread advises
//!    through the library's private read-only descriptor of the file on FUSE, one per file for
//!    its streams (whose read-ahead would drop advice given through a descriptor being read,
//!    see `descriptors.rs`), and through the program's descriptor elsewhere, after checking it
//!    still names the same file; ranges are split to what one call loads (`device.rs`), which
//!    through the private descriptor, opened `POSIX_FADV_SEQUENTIAL`, is two read-ahead
//!    windows, one request (256 KiB on FUSE, where the kernel's own read-ahead sends 128 KiB).
//! 4. **End.** A descriptor's stream ends at the program's `close` of it. The private
//!    descriptor is not closed then, nor ever by the library on its own: closing any descriptor
//!    of a file drops the process's POSIX locks on it, and a lock the program takes at any
//!    moment would be lost. It stays open until the program closes a descriptor of the same
//!    file, which drops those locks anyway, and is retired just before that close
//!    (`descriptors.rs`, "Never closed under a lock").
//!
//! Bytes, errno and file positions the program sees are the kernel's: the library only
//! advises and probes. A descriptor's stream ends at its `close` (or `dup2` over it); a forked
//! child starts with no streams. Reads through stdio are seen at their buffer refills (the
//! preload's stdio interposers); pages of `mmap`ped files are not (`observe.rs`).
//!
//! Follows TR840 (Li, Papathanasiou and Shen), sections 3 and 4, through `plan::stream`.
//! Deviations: user-level advice instead of the kernel's read-ahead; per-stream thrash
//! protection instead of a prefetch cache, and one window in flight instead of two while the
//! device's queue is full (see `plan::stream`).

use std::collections::HashMap;
use std::ops::Range;
use std::os::fd::RawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use plan::stream::{Probes, Stream};
use plan::stream_memory::MemoryShare;

use crate::descriptors::{FileId, Purpose};
use crate::filestat::FileStat;
use crate::guard::{ErrnoGuard, Reentry};
use crate::memory::{available_for_cache, page_size, CachedProbe};
use crate::registry::globals;
use crate::residency::Probe;

/// Advice handed to the advice thread this long ago and not yet submitted is waiting for room
/// in the device's queue: a `WILLNEED` that does not wait returns within tens of microseconds,
/// and on a busy machine the thread may wait a few milliseconds to be scheduled at all.
const STALLED: std::time::Duration = std::time::Duration::from_millis(10);

/// The streams of this process and the depth of each device seen.
#[derive(Default)]
struct Streams {
    by_fd: Mutex<HashMap<RawFd, Tracked>>,
    /// `S_p` in pages by device number; `None` for a device without a profile.
    depths: Mutex<HashMap<u64, Option<u64>>>,
    /// The memory the page cache may hold for this process, shared by its streams.
    memory: CachedProbe,
}

/// One descriptor's stream.
struct Tracked {
    file: FileId,
    stream: Stream,
    /// Where advice goes, chosen at the first advice: the file's private descriptor for
    /// streams (FUSE, chosen again once retired), or the program's.
    advise_fd: Option<AdviseFd>,
    probe: Probe,
    /// Most pages one WILLNEED call loads on this device.
    call_pages: u64,
    /// The kernel's read-ahead window on this device (`read_ahead_kb`), pages.
    kernel_window: u64,
    /// Pages below this one had their advice issued (set by the advice thread).
    issued_to: Arc<AtomicU64>,
    /// The advice thread had to wait while submitting this stream's last advice: the device's
    /// queue was full.
    waited: Arc<AtomicBool>,
    /// End (page) of the last advice handed to the advice thread, and when it was handed over.
    handed: Option<(u64, Instant)>,
}

/// The descriptor a stream's advice goes through.
#[derive(Clone, Copy)]
enum AdviseFd {
    /// The file's private read-only descriptor for streams (on FUSE).
    Private(RawFd),
    /// The program's descriptor.
    Program(RawFd),
}

static STREAMS: AtomicPtr<Streams> = AtomicPtr::new(std::ptr::null_mut());

/// Starts following streams in this process (before `main`, from `start_from_env`).
pub(crate) fn start() {
    STREAMS.store(Box::into_raw(Box::default()), Ordering::Release);
}

fn streams() -> Option<&'static Streams> {
    let pointer = STREAMS.load(Ordering::Acquire);
    // SAFETY: non-null values are leaked Boxes that are never freed.
    (!pointer.is_null()).then(|| unsafe { &*pointer })
}

/// In a forked child: the parent's streams (and their locks, which a parent thread may have
/// held at the fork) are left behind, leaked; the child follows its own.
pub(crate) fn after_fork_in_child() {
    if streams().is_some() {
        start();
    }
}

/// The program reads bytes `[offset, end)` of `file` through `fd`; the caller holds the
/// re-entrancy guard.
pub(crate) fn on_read(fd: RawFd, file: &FileStat, offset: u64, end: u64) {
    let Some(streams) = streams() else {
        return;
    };
    let page_size = page_size();
    let Some(target) = streams.depth_of(file.dev, page_size) else {
        return;
    };
    let job = {
        let mut by_fd = lock(&streams.by_fd);
        // The streams followed once this read's is (a new descriptor's is about to be).
        let open = by_fd.len() as u64 + u64::from(!by_fd.contains_key(&fd));
        let tracked = streams.tracked(&mut by_fd, fd, file, page_size);
        let mut probes = LiveProbes {
            memory: &streams.memory,
            streams: open,
            fd,
            probe: tracked.probe,
            issued_to: tracked.issued_to.load(Ordering::Acquire),
            waited: tracked.waited_for(end, page_size),
            stalled: tracked.stalled(),
            page_size,
        };
        let step = tracked
            .stream
            .on_read(offset, end - offset, file.size, target, &mut probes);
        (!step.advise.is_empty()).then(|| tracked.advice(fd, step.advise, page_size))
    };
    if let Some(job) = job {
        if let Err(job) = globals().run_in_background(job) {
            job();
        }
    }
}

/// `fd` is being closed (or replaced by `dup2`): its stream ends.
pub(crate) fn on_close(fd: RawFd) {
    let Some(streams) = streams() else {
        return;
    };
    let Some(_inside) = Reentry::enter() else {
        return;
    };
    let _errno = ErrnoGuard::save();
    let _ = catch_unwind(AssertUnwindSafe(|| lock(&streams.by_fd).remove(&fd)));
}

impl Streams {
    /// `S_p` of device `dev` in pages, from its profile (read once).
    fn depth_of(&self, dev: u64, page_size: u64) -> Option<u64> {
        *lock(&self.depths).entry(dev).or_insert_with(|| {
            let profile = crate::profile::load(libc::major(dev), libc::minor(dev))?;
            // The break-even gap is formula (5)'s S_p: the bytes one switch costs in transfer.
            Some(profile.break_even_gap_bytes().div_ceil(page_size).max(1))
        })
    }

    /// The stream of `fd`, started anew if `fd` names another file than it did.
    fn tracked<'a>(
        &self,
        by_fd: &'a mut HashMap<RawFd, Tracked>,
        fd: RawFd,
        file: &FileStat,
        page_size: u64,
    ) -> &'a mut Tracked {
        let id = FileId::from(file);
        if by_fd.get(&fd).is_some_and(|t| t.file != id) {
            by_fd.remove(&fd);
        }
        by_fd
            .entry(fd)
            .or_insert_with(|| Tracked::new(fd, id, page_size))
    }
}

impl Tracked {
    fn new(fd: RawFd, file: FileId, page_size: u64) -> Tracked {
        let kernel_window = crate::device::readahead_pages(fd, page_size);
        Tracked {
            file,
            stream: Stream::new(page_size).with_kernel_window(kernel_window),
            kernel_window,
            advise_fd: None,
            probe: Probe::choose(fd),
            call_pages: (crate::device::willneed_limit(fd) / page_size).max(1),
            issued_to: Arc::default(),
            waited: Arc::default(),
            handed: None,
        }
    }

    /// The descriptor the stream's advice goes through, chosen at its first advice (and again
    /// once its private one was retired): the file's private one on FUSE, opened with
    /// `POSIX_FADV_SEQUENTIAL`, whose read-ahead window (and so what one WILLNEED through it
    /// loads, in one request) is twice the device's; else the program's.
    fn advise_through(&mut self, fd: RawFd) -> RawFd {
        let privates = &globals().private_descriptors;
        match self.advise_fd {
            Some(AdviseFd::Program(chosen)) => return chosen,
            Some(AdviseFd::Private(chosen))
                if privates.is_current(chosen, self.file, Purpose::Streams) =>
            {
                return chosen
            }
            _ => {}
        }
        let (chosen, through) = match privates.for_file(fd, self.file, Purpose::Streams) {
            Some(private) => {
                self.call_pages = self.call_pages.max(2 * self.kernel_window);
                (AdviseFd::Private(private), private)
            }
            None => (AdviseFd::Program(fd), fd),
        };
        self.advise_fd = Some(chosen);
        through
    }

    /// The advice thread waited while submitting the stream's last advice, and a read ending
    /// at byte `end` has not reached that advice's end yet. Once the reader has, the device
    /// served the advice, and the wait says nothing about its queue now: the stream may try
    /// again (else one wait, perhaps for a moment's full queue, held its advice back for good,
    /// as no later advice came to clear it).
    fn waited_for(&self, end: u64, page_size: u64) -> bool {
        let handed_to = self.handed.map(|(to, _)| to);
        still_waiting(
            self.waited.load(Ordering::Acquire),
            handed_to,
            end,
            page_size,
        )
    }

    /// Advice handed over more than [`STALLED`] ago and not yet submitted.
    fn stalled(&self) -> bool {
        self.handed.is_some_and(|(end, at)| {
            self.issued_to.load(Ordering::Acquire) < end && at.elapsed() > STALLED
        })
    }

    /// The advice thread's job for `ranges` (pages) of the program's descriptor `fd`: WILLNEED
    /// of each, split to what one call loads, if the descriptor advised still names this
    /// stream's file.
    fn advice(
        &mut self,
        fd: RawFd,
        ranges: Vec<Range<u64>>,
        page_size: u64,
    ) -> crate::advice_thread::AdviceJob {
        let file = self.file;
        let fd = self.advise_through(fd);
        let call_pages = self.call_pages;
        let (issued_to, waited) = (Arc::clone(&self.issued_to), Arc::clone(&self.waited));
        if let Some(last) = ranges.last() {
            self.handed = Some((last.end, Instant::now()));
        }
        Box::new(move || {
            if FileId::of(fd) != Some(file) {
                return;
            }
            let mut slept = false;
            for range in &ranges {
                for start in (range.start..range.end).step_by(call_pages as usize) {
                    let len = call_pages.min(range.end - start);
                    slept |= willneed_slept(fd, start * page_size, len * page_size);
                }
                issued_to.fetch_max(range.end, Ordering::AcqRel);
            }
            waited.store(slept, Ordering::Release);
        })
    }
}

/// A wait while submitting the advice that ends at page `handed_to` still counts for a read
/// ending at byte `end`: the reader has not reached that advice's end.
fn still_waiting(waited: bool, handed_to: Option<u64>, end: u64, page_size: u64) -> bool {
    waited && handed_to.is_some_and(|to| end < to.saturating_mul(page_size))
}

/// What a stream's read asks about its file, device and memory.
struct LiveProbes<'a> {
    /// The process's reading of the memory available.
    memory: &'a CachedProbe,
    /// Descriptors whose streams are followed: the paper's open files, `N_stream`.
    streams: u64,
    fd: RawFd,
    probe: Probe,
    /// Pages below this one had their advice submitted by the advice thread.
    issued_to: u64,
    /// The advice thread waited while submitting the stream's last advice.
    waited: bool,
    /// Advice handed over more than [`STALLED`] ago is not submitted yet.
    stalled: bool,
    page_size: u64,
}

impl Probes for LiveProbes<'_> {
    /// Pages of `pages` whose advice was submitted and that are not in the page cache now (0
    /// if the kernel will not say); advice still queued is not counted.
    fn missing(&mut self, pages: Range<u64>) -> u64 {
        let pages = pages.start..pages.end.min(self.issued_to);
        if pages.is_empty() {
            return 0;
        }
        let page_size = self.page_size;
        let (offset, len) = (
            pages.start * page_size,
            (pages.end - pages.start) * page_size,
        );
        self.probe
            .resident_pages(self.fd, offset, len, page_size)
            .map_or(0, |(cached, span)| span - cached)
    }

    /// Neither the stream's last advice nor the call in progress waited: a `WILLNEED` sleeps
    /// only when the device's queue (or FUSE's background queue) is full.
    fn queue_has_room(&mut self) -> bool {
        !self.waited && !self.stalled
    }

    /// The memory the process's page cache may hold now (read at most every 10 ms), shared by
    /// the descriptors followed.
    fn memory(&mut self) -> Option<MemoryShare> {
        let bytes = self.memory.read(Instant::now(), available_for_cache);
        Some(MemoryShare::of_memory(bytes / self.page_size, self.streams))
    }
}

/// Times this thread has slept so far (`ru_nvcsw`): a `WILLNEED` that sleeps is waiting for
/// room in the device's queue.
fn voluntary_switches() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a valid value anyway.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr());
        usage.assume_init()
    };
    usage.ru_nvcsw
}

/// `WILLNEED` of `len` bytes at `offset`; true if the call slept (waited for room in the
/// device's queue). Only the call itself is watched: the job's other sleeps (a lock taken to
/// free its memory, contended with the reading thread) say nothing about the device.
fn willneed_slept(fd: RawFd, offset: u64, len: u64) -> bool {
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return false;
    };
    let before = voluntary_switches();
    // SAFETY: posix_fadvise takes plain integers; a bad descriptor only yields EBADF.
    unsafe { libc::posix_fadvise(fd, offset, len, libc::POSIX_FADV_WILLNEED) };
    voluntary_switches() > before
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::still_waiting;

    /// A wait holds the advice back only until the reader reaches the end of the advice that
    /// waited; with no wait, or no advice, nothing is held back.
    #[test]
    fn a_wait_counts_until_the_reader_reaches_the_advice_that_waited() {
        assert!(still_waiting(true, Some(96), 64 * 4096, 4096));
        assert!(still_waiting(true, Some(96), 96 * 4096 - 1, 4096));
        assert!(!still_waiting(true, Some(96), 96 * 4096, 4096));
        assert!(!still_waiting(false, Some(96), 64 * 4096, 4096));
        assert!(!still_waiting(true, None, 64 * 4096, 4096));
    }
}
