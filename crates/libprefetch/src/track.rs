//! The read path: what the interposed `read` family (crate `preload`) and
//! code that reads behind the interposers' back (the SQLite VFS) call
//! before a read goes to the kernel.
//!
//! Follows libprefetch (ATC 2009) section 4.5: "Each time libprefetch
//! intercepts a read from the application, it first checks whether the read
//! corresponds to a registered region." If it does, the client's planner
//! follows the application along its access list and may call back and run
//! a prefetching round before the read proceeds.
//!
//! Contract: never changes what the read returns or the errno it sets (errno
//! is saved and restored here), never panics into the caller (a panic is
//! caught and the read proceeds untracked), never recurses (a re-entrancy
//! guard turns reads made by the library or by a callback into plain reads).

use std::os::fd::RawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::guard::{as_library, ErrnoGuard, Reentry};
use crate::observe;
use crate::registry::{follow_regions, globals_if_started, Globals};

/// Tells the library that `fd` is about to be read at byte `offset` for
/// `len` bytes. Cheap when `fd` has no registered region. May run the
/// owning client's callback and a prefetching round. Never fails.
pub fn note_read(fd: RawFd, offset: u64, len: u64) {
    track(fd, Some(offset), len);
}

/// Like [`note_read`] for reads at the descriptor's current file position
/// (`read`, `readv`, `preadv2` with offset -1): the position is looked up
/// only if `fd` has a registered region.
pub fn note_read_at_position(fd: RawFd, len: u64) {
    track(fd, None, len);
}

/// Tells the library that `fd` is being closed (or replaced, as by `dup2`):
/// its regions stop being followed, since the number may next name another
/// file (their handles stay valid for unregistering). Cheap when `fd` has
/// no registered region. The library's private descriptors of the file
/// are retired first (`descriptors.rs`, "Never closed under a lock"): the
/// interposers call this before the real close. Never fails, never touches
/// errno.
pub fn note_close(fd: RawFd) {
    crate::cache_budget_io::before_close(fd);
    crate::cache_budget_fds::forget();
    observe::on_close(fd);
    // Regions first: a round routed after their retirement opens no private
    // descriptor of the file, which would outlive the close.
    if let Some(globals) = globals_if_started().filter(|g| fd >= 0 && g.any_regions()) {
        globals.retire_regions(fd, None);
    }
    if let Some(globals) = globals_if_started() {
        retire_privates(globals, fd);
    }
}

/// The private descriptors of `fd`'s file are retired before `fd` closes;
/// skipped for the library's own closes (the re-entrancy guard).
fn retire_privates(globals: &'static Globals, fd: RawFd) {
    let Some(_inside) = Reentry::enter() else {
        return;
    };
    let _errno = ErrnoGuard::save();
    let _ = catch_unwind(AssertUnwindSafe(|| {
        globals
            .private_descriptors
            .before_close(fd, &globals.advice)
    }));
}

/// The program mapped `len` bytes of `fd` at file offset `offset` to
/// `address` (the interposed `mmap`, after it succeeded): remembered while
/// recording, so that its resident pages are recorded when it is unmapped
/// (`mapped.rs`). Costs one atomic load otherwise.
pub fn note_mmap(address: usize, len: usize, fd: RawFd, offset: u64) {
    if !observe::active() {
        return;
    }
    if let Some(_inside) = Reentry::enter() {
        crate::mapped::on_mmap(address, len, fd, offset);
    }
}

/// The program is about to unmap `[address, address + len)` (the
/// interposed `munmap`): while recording, the resident pages of the file
/// ranges it maps are recorded first. Costs one atomic load otherwise.
pub fn note_munmap(address: usize, len: usize) {
    if !observe::active() {
        return;
    }
    if let Some(_inside) = Reentry::enter() {
        crate::mapped::on_munmap(address, len);
    }
}

/// True if `fd` may have a registered region, or reads are being observed
/// (`observe.rs`): the interposers' one check before they do any work of
/// their own (such as summing an iovec).
pub fn may_track(fd: RawFd) -> bool {
    fd >= 0 && (observe::active() || globals_if_started().is_some_and(|g| g.any_regions()))
}

fn track(fd: RawFd, offset: Option<u64>, len: u64) {
    let observing = observe::active();
    let globals = globals_if_started().filter(|g| g.any_regions());
    if (!observing && globals.is_none()) || fd < 0 || len == 0 {
        return;
    }
    as_library(|| {
        if offset.is_none() && globals.is_none() && observe::budget_alone() {
            crate::cache_budget_io::note_read_at_position(fd, len);
            return;
        }
        let Some(offset) = offset.or_else(|| current_position(fd)) else {
            return;
        };
        if observing {
            observe::on_read(fd, offset, len);
        }
        if let Some(globals) = globals {
            follow_regions(globals, fd, offset, len);
        }
    });
}

/// The file position of `fd`, or `None` for unseekable descriptors.
fn current_position(fd: RawFd) -> Option<u64> {
    // SAFETY: lseek with SEEK_CUR and offset 0 only reads the position.
    let position = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    u64::try_from(position).ok()
}
