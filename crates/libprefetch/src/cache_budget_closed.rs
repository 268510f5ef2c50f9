//! Dropping the budget's victims in files the program has closed (`cache_budget.rs`): such a
//! file is opened again by the path its descriptor had at the file's first read, checked to be
//! the same file (device and inode), its runs dropped through that descriptor, and closed.
//!
//! **Never a lock lost.** On Linux, closing any descriptor of a file releases every POSIX lock
//! the process holds on it, through whichever descriptor it was taken. So the descriptor is
//! opened, used and closed on a short thread of the library's own that first gives itself a
//! file table of its own (`close_range(0, ~0, CLOSE_RANGE_UNSHARE)`, Linux 5.9, which copies
//! none of the program's descriptors): a lock belongs to the table it was taken in, and closing
//! a descriptor in another table releases none of the program's. The reading thread waits for
//! it (a few system calls, once per batch that has victims in closed files), so the drops are
//! done before the read goes on, as for open files. Nothing stays open: no FUSE mount is kept
//! busy and no unlinked file's space is held.
//!
//! Not dropped: a file renamed or unlinked since its first read (an unlinked one's pages go
//! with it once nobody holds it open), one the process cannot open again (permissions dropped
//! since), and everything where the kernel refuses the thread's table of its own. Each reopen
//! is an open and a close of the file that others can see (inotify `IN_OPEN`, a FUSE `OPEN`).
//!
//! Follows DULO (FAST'05) sections 3-4 through `cache_budget.rs`: the policy's victims leave
//! wherever they are.

use std::ffi::CString;
use std::os::fd::{AsRawFd, RawFd};

use crate::descriptors::FileId;

/// Stack of the dropping thread: it only makes system calls.
const STACK_BYTES: usize = 64 << 10;

/// A run of pages to drop, in bytes, of a file the program closed.
pub(crate) struct ClosedRun {
    pub(crate) id: FileId,
    pub(crate) path: CString,
    pub(crate) offset: u64,
    pub(crate) len: u64,
}

/// The path `fd` names now (its `/proc/self/fd` link), or `None` if it has none a later open
/// could find (deleted, or not a path).
pub(crate) fn path_of(fd: RawFd) -> Option<CString> {
    let link =
        rustix::fs::readlinkat(rustix::fs::CWD, format!("/proc/self/fd/{fd}"), Vec::new()).ok()?;
    let bytes = link.as_bytes();
    (bytes.starts_with(b"/") && !bytes.ends_with(b" (deleted)")).then_some(link)
}

/// How a run is dropped: given a descriptor of the run's file, its identity, the offset and
/// the length; true if the run was left (dirty).
pub(crate) type DropRun<'a> = &'a (dyn Fn(RawFd, FileId, u64, u64) -> bool + Sync);

/// Drops `runs` with `drop`, each file opened again by path on a thread with a file table of
/// its own; waits for it. Returns the indices of the runs `drop` left.
pub(crate) fn drop_runs(runs: &[ClosedRun], drop: DropRun) -> Vec<usize> {
    if runs.is_empty() {
        return Vec::new();
    }
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || {
                let _inside = crate::guard::Reentry::enter();
                if own_file_table() {
                    drop_each(runs, drop)
                } else {
                    Vec::new()
                }
            });
        spawned
            .ok()
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default()
    })
}

/// Gives this thread a file table of its own holding no descriptor; false if the kernel
/// refuses (before Linux 5.9).
fn own_file_table() -> bool {
    // SAFETY: close_range on this thread's own table; with CLOSE_RANGE_UNSHARE the kernel first
    // gives the thread a table of its own, so no descriptor of the program is closed.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            0u32,
            u32::MAX,
            libc::CLOSE_RANGE_UNSHARE,
        ) == 0
    }
}

/// Opens each run's file (once for adjacent runs of one file) and drops the run if it is
/// still the same file; returns the indices of the runs `drop` left.
fn drop_each(runs: &[ClosedRun], drop: DropRun) -> Vec<usize> {
    let mut open: Option<(FileId, std::os::fd::OwnedFd)> = None;
    let mut left = Vec::new();
    for (index, run) in runs.iter().enumerate() {
        if open.as_ref().map(|(id, _)| *id) != Some(run.id) {
            // rustix makes the system calls itself: the open and the close pass no interposer.
            open = rustix::fs::open(
                run.path.as_c_str(),
                rustix::fs::OFlags::RDONLY
                    | rustix::fs::OFlags::CLOEXEC
                    | rustix::fs::OFlags::NONBLOCK,
                rustix::fs::Mode::empty(),
            )
            .ok()
            .map(|fd| (run.id, fd));
        }
        if let Some((_, fd)) = &open {
            if drop(fd.as_raw_fd(), run.id, run.offset, run.len) {
                left.push(index);
            }
        }
    }
    left
}
