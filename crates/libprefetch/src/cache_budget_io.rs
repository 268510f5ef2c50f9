//! What the write and copy interposers (crate `preload`, `write.rs`) tell the page-cache budget
//! (`cache_budget.rs`): the pages a program wrote (`write`, `pwrite`, `writev` and their kin)
//! and the pages the kernel moved for it (`copy_file_range`, `sendfile`, `splice`, which `cp`
//! and `cat` use): a copy's source pages count as read, its destination's as written. Told after
//! the call, with what it returned, so that a failed or short call counts only what it moved;
//! only regular files count (not pipes, sockets or terminals). Without a budget each costs one
//! atomic load. Reads at the file position come here too (from `track.rs`, before the call)
//! while the budget is the only observer of reads, to be told a batch at a time.
//!
//! The file a descriptor names is remembered between calls (`cache_budget_fds.rs`): one `fstat`
//! per descriptor until the program closes one, not one per call. Writes at the file position
//! are told a batch at a time (`cache_budget_pending.rs`): one `lseek` per batch, not one per
//! call; the rest of a batch is told before the descriptor is closed, replaced or seeked
//! (`note_seek`, and `note_close` through `before_close`) and as the process exits.
//!
//! Same contract as the read path (`track.rs`): errno is saved and restored, a panic is caught,
//! and the library's own writes pass untold (the re-entrancy guard).
//!
//! Follows DULO (FAST'05) sections 3-4 through `cache_budget.rs`: a written page is a page in
//! the cache like a read one, and leaves in the policy's order, once clean.

use std::os::fd::RawFd;

use crate::cache_budget::count_held;
use crate::cache_budget_pending::{self as pending, Due, Kind};
use crate::descriptors::FileId;
use crate::filestat::FileStat;
use crate::guard::as_library;
use crate::{cache_budget, cache_budget_fds};

/// True if a page-cache budget runs in this process (the interposers' first check).
pub fn budget_running() -> bool {
    cache_budget::running()
}

/// The most bytes one piece of a copy made by the kernel should move while a budget runs (one
/// batch of the budget: a whole-file `copy_file_range` otherwise brings in the whole file
/// before the budget hears of it), or `None` without a budget.
pub fn budget_copy_piece() -> Option<u64> {
    cache_budget::batch_bytes()
}

/// `fd` had `len` bytes written at `offset`, or, with `None`, ending at its file position now
/// (`write`, `writev`, a copy's destination without an offset).
pub fn note_written(fd: RawFd, offset: Option<u64>, len: u64) {
    if offset.is_some() {
        tell(fd, offset, len, cache_budget::on_write);
        return;
    }
    let Some(batch) = cache_budget::batch_bytes().filter(|_| fd >= 0 && len > 0) else {
        return;
    };
    as_library(|| {
        let Some(file) = cache_budget_fds::regular_file(fd) else {
            return;
        };
        if let Due::Count(due) = pending::add(fd, file, len, batch, Kind::Written, || None) {
            due.into_iter().for_each(count_held);
        }
    });
}

/// `fd` is about to have `len` bytes read at its file position (the read interposers, while
/// the budget is the only observer of reads): held back with the reads before it, counted a
/// batch at a time (`cache_budget_pending.rs`): an `lseek` as a batch starts and as it is
/// counted, no system call per read. A read of a batch or
/// more, or one that finds the table busy, is counted at once (one `lseek`, one `fstat`).
/// The caller holds the re-entrancy guard.
pub(crate) fn note_read_at_position(fd: RawFd, len: u64) {
    let Some(batch) = cache_budget::batch_bytes().filter(|_| fd >= 0 && len > 0) else {
        return;
    };
    let Some(file) = cache_budget_fds::regular_file(fd) else {
        return;
    };
    let due = if len < batch {
        pending::add(fd, file, len, batch, Kind::Read, || {
            cache_budget::position(fd)
        })
    } else {
        pending::take(fd).into_iter().for_each(count_held);
        Due::Busy
    };
    match due {
        Due::Nothing => {}
        Due::Count(due) => due.into_iter().for_each(count_held),
        Due::Busy => {
            let stat = FileStat::of(fd);
            if let (Some(stat), Some(start)) = (stat, cache_budget::position(fd)) {
                let end = start.saturating_add(len).min(stat.size);
                if end > start {
                    cache_budget::on_read(fd, &stat, start, end);
                }
            }
        }
    }
}

/// The program is about to move the file position of `fd` (the interposed `lseek`): the bytes
/// written at it and held back are counted first, while the position still ends them. One
/// atomic load when none are held.
pub fn note_seek(fd: RawFd) {
    if pending::any() {
        // Not when the library itself seeks (its `lseek` is the interposed one too).
        as_library(|| pending::take(fd).into_iter().for_each(count_held));
    }
}

/// `fd` is about to be closed or replaced: the bytes held back for it are counted first.
pub(crate) fn before_close(fd: RawFd) {
    note_seek(fd);
}

/// The kernel read `len` bytes of `fd` for the program (a copy's source) at `offset`, or, with
/// `None`, ending at its file position now.
pub fn note_copied_from(fd: RawFd, offset: Option<u64>, len: u64) {
    tell(fd, offset, len, cache_budget::on_pages_read);
}

fn tell(fd: RawFd, offset: Option<u64>, len: u64, count: fn(RawFd, FileId, u64, u64)) {
    if fd < 0 || len == 0 || !cache_budget::running() {
        return;
    }
    as_library(|| {
        let Some(file) = cache_budget_fds::regular_file(fd) else {
            return;
        };
        let Some(start) = offset.or_else(|| cache_budget::position(fd)?.checked_sub(len)) else {
            return;
        };
        count(fd, file, start, start.saturating_add(len));
    });
}
