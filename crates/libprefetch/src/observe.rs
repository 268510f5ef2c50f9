//! Observing an unmodified program's reads: every read of a regular file
//! that the interposers see goes to the recorder (`record.rs`, `prefetch
//! record`), the replayer (`replay.rs`, `prefetch run --replay`) and the
//! competitive prefetcher (`competitive.rs`, `prefetch run --competitive`)
//! and the page-cache budget (`cache_budget.rs`, `prefetch run --cache-budget`)
//! when one was started by [`start_from_env`], which `libprefetch.so` calls
//! as it is loaded. Without them a read costs one more atomic load, and so
//! does a replay that found nothing of this program in its recording.
//!
//! A read is known by its file's identity, not its descriptor number: each
//! observed read costs one `fstat` (about half a microsecond), which stays
//! right however the program opened, duplicated or closed its descriptors
//! (glibc's `fopen` and `fclose` call the system directly, past any
//! interposer). Reads made through stdio (`fread`, `getline`) go through
//! glibc's internal read: the preload's stdio interposers tell of them
//! instead, before each buffer refill. Pages of `mmap`ped files are
//! recorded apart, from the mappings' residency (`mapped.rs`).
//!
//! Follows libprefetch (ATC 2009), section 4: the library follows the
//! application through its reads.
//! Deviations: the paper tracks only registered regions; here, while
//! recording, replaying or prefetching competitively, every read of a
//! regular file is looked at.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::filestat::FileStat;
use crate::{cache_budget, competitive, mapped, record, replay, variables};

/// Set once recording, replaying or competitive prefetching started in this process.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Set if anything but the replay observes reads (recording, competitive
/// prefetching, the cache budget).
static BESIDES_REPLAY: AtomicBool = AtomicBool::new(false);

/// Set if the cache budget is the only observer: reads at the file position
/// then go to it alone, a batch at a time (`cache_budget_io.rs`), without an
/// `lseek` and an `fstat` each.
static BUDGET_ALONE: AtomicBool = AtomicBool::new(false);

/// Starts recording (`LIBPREFETCH_RECORD=FILE`), replaying
/// (`LIBPREFETCH_REPLAY=FILE`) and competitive prefetching
/// (`LIBPREFETCH_COMPETITIVE=1`) in this process, as the variables say; does
/// nothing without them. Called once, as `libprefetch.so` is loaded, before
/// the program's `main` (a recording that cannot be read prints one line on
/// stderr and the program runs without it). Forked children record their
/// own reads and follow their own streams; they do not replay.
pub fn start_from_env() {
    let recording = variables::RECORD.value().filter(|v| !v.is_empty());
    let replaying = variables::REPLAY.value().filter(|v| !v.is_empty());
    let competing = variables::COMPETITIVE.value().is_some_and(|v| v == "1");
    let budgeting = cache_budget::start_from_env();
    if recording.is_none() && replaying.is_none() && !competing && !budgeting {
        return;
    }
    // SAFETY: the handler is a plain extern "C" fn without arguments.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    let besides = recording.is_some() || competing || budgeting;
    BESIDES_REPLAY.store(besides, Ordering::Release);
    let alone = budgeting && recording.is_none() && replaying.is_none() && !competing;
    BUDGET_ALONE.store(alone, Ordering::Release);
    // Before the replay's thread starts, which may call `replay_has_nothing`.
    ACTIVE.store(true, Ordering::Release);
    if let Some(path) = recording {
        record::start(path, mapped::at_exit);
    }
    if let Some(path) = replaying {
        replay::start(path, replay_has_nothing);
    }
    if competing {
        competitive::start();
    }
}

/// The replay found nothing to replay (another program's recording, files
/// all changed): unless something else observes reads, the interposers
/// stop looking at them (an `lseek` and an `fstat` per read, 1.5 ms of
/// `git grep`'s 15 ms warm).
pub(crate) fn replay_has_nothing() {
    if !BESIDES_REPLAY.load(Ordering::Acquire) {
        ACTIVE.store(false, Ordering::Release);
    }
}

/// True if reads are being observed (the interposers' first check).
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// True if the cache budget is the only observer of reads.
pub(crate) fn budget_alone() -> bool {
    BUDGET_ALONE.load(Ordering::Acquire)
}

/// A read of `[offset, offset + len)` of `fd` is about to go to the kernel.
/// The caller holds the re-entrancy guard.
pub(crate) fn on_read(fd: RawFd, offset: u64, len: u64) {
    let Some(file) = FileStat::of(fd) else {
        return;
    };
    let end = offset.saturating_add(len).min(file.size);
    if end <= offset {
        return;
    }
    record::on_read(&file, fd, offset, end);
    replay::on_read(&file, offset, end);
    competitive::on_read(fd, &file, offset, end);
    cache_budget::on_read(fd, &file, offset, end);
}

/// `fd` is being closed or replaced (the `close` and `dup2` interposers).
pub(crate) fn on_close(fd: RawFd) {
    if active() {
        competitive::on_close(fd);
    }
}

extern "C" fn after_fork_in_child() {
    record::after_fork_in_child();
    replay::after_fork_in_child();
    competitive::after_fork_in_child();
}
