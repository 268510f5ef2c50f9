//! The identity of the files the write and copy interposers tell the page-cache budget of
//! (`cache_budget_io.rs`), remembered per descriptor: a program that writes a file in records
//! (`tar` writes 10 KiB at a time) would otherwise pay one `fstat` per `write` to learn the
//! file it already named in the last one.
//!
//! A descriptor's number names another file only after a close (or a `dup2`/`dup3` onto it),
//! which the interposers tell (`track::note_close`) by counting it here: a remembered identity
//! is used only if no close was told since it was looked up, so any close costs each
//! descriptor written after it one `fstat` again (one per file `tar` archives, not one per
//! record). A close the interposers do not see (`close_range`, a raw system call, glibc's
//! internal closes in `closedir`) can leave an identity stale: the written pages are then
//! counted under the old file, and never dropped through the descriptor, since every drop
//! checks the descriptor's identity again (`cache_budget.rs`). Bytes, errno and file positions
//! the program sees do not depend on it.
//!
//! The table is behind a mutex taken with `try_lock` (a busy table means one `fstat`, never a
//! wait), and telling a close is one atomic add, safe in a signal handler.
//!
//! Follows DULO (FAST'05) sections 3-4 through `cache_budget.rs` (bookkeeping only).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::descriptors::FileId;

/// Descriptors remembered at once: a program writes to a few files at a time.
const REMEMBERED: usize = 8;

/// Closes told so far: an identity looked up before the last one is not used.
static CLOSES: AtomicU64 = AtomicU64::new(0);

/// The identities remembered in this process.
static TABLE: Mutex<Identities> = Mutex::new(Identities::new());

/// A descriptor was closed or replaced: every identity remembered before is stale.
pub(crate) fn forget() {
    CLOSES.fetch_add(1, Ordering::AcqRel);
}

/// The regular file `fd` names, or `None` (not open, not a regular file): remembered from an
/// earlier call if no close was told since, else looked up with `fstat`.
pub(crate) fn regular_file(fd: RawFd) -> Option<FileId> {
    let closes = CLOSES.load(Ordering::Acquire);
    match TABLE.try_lock() {
        Ok(mut table) => table.get(fd, closes, regular_file_now),
        Err(_) => regular_file_now(fd),
    }
}

/// The regular file `fd` names now (one `fstat`).
fn regular_file_now(fd: RawFd) -> Option<FileId> {
    crate::filestat::FileStat::of(fd).map(|file| FileId::from(&file))
}

/// Identities by descriptor, each with the count of closes told when it was looked up.
struct Identities {
    entries: [Option<(RawFd, u64, Option<FileId>)>; REMEMBERED],
    /// The slot the next new descriptor takes (round robin).
    next: usize,
}

impl Identities {
    const fn new() -> Identities {
        Identities {
            entries: [None; REMEMBERED],
            next: 0,
        }
    }

    /// The identity of `fd`: the one remembered if it was looked up after the `closes`-th
    /// close, else `look_up(fd)`, remembered with `closes` (counted before the look-up, so
    /// that a close told during it makes it stale).
    fn get(
        &mut self,
        fd: RawFd,
        closes: u64,
        look_up: impl FnOnce(RawFd) -> Option<FileId>,
    ) -> Option<FileId> {
        let slot = self
            .entries
            .iter()
            .position(|e| e.is_some_and(|e| e.0 == fd));
        if let Some((_, seen, id)) = slot.and_then(|i| self.entries[i]) {
            if seen == closes {
                return id;
            }
        }
        let id = look_up(fd);
        let slot = slot.unwrap_or_else(|| {
            let taken = self.next;
            self.next = (taken + 1) % REMEMBERED;
            taken
        });
        self.entries[slot] = Some((fd, closes, id));
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::os::fd::AsRawFd;

    /// Writes to one descriptor look its file up once; a close told makes the next write look
    /// it up again, and a new file behind the same number is seen as such.
    #[test]
    fn a_descriptor_is_looked_up_once_until_a_close_is_told() {
        let first = tempfile::tempfile().expect("temporary file");
        let other = tempfile::tempfile().expect("temporary file");
        let fd = first.as_raw_fd();
        let lookups = Cell::new(0);
        let mut table = Identities::new();
        let get = |table: &mut Identities, fd, closes| {
            table.get(fd, closes, |fd| {
                lookups.set(lookups.get() + 1);
                regular_file_now(fd)
            })
        };
        let id = FileId::of(fd);
        for _ in 0..100 {
            assert_eq!(get(&mut table, fd, 0), id);
        }
        assert_eq!(lookups.get(), 1, "one fstat for 100 writes");
        // The number now names another file (as after a close and an open), and a close was
        // told: the new file is looked up.
        // SAFETY: dup2 onto a descriptor this test owns.
        assert_eq!(unsafe { libc::dup2(other.as_raw_fd(), fd) }, fd);
        assert_eq!(get(&mut table, fd, 1), FileId::of(other.as_raw_fd()));
        assert_ne!(get(&mut table, fd, 1), id);
        assert_eq!(lookups.get(), 2);
        // Other descriptors are remembered beside it, and the oldest make room past the limit.
        for n in 0..REMEMBERED as RawFd {
            get(&mut table, 1000 + n, 1);
        }
        assert_eq!(lookups.get(), 2 + REMEMBERED);
        get(&mut table, 1000 + REMEMBERED as RawFd - 1, 1);
        assert_eq!(lookups.get(), 2 + REMEMBERED, "still remembered");
    }

    /// Not a regular file (a pipe) and not open: `None`, remembered as such until a close.
    #[test]
    fn pipes_and_closed_descriptors_are_not_files() {
        let mut ends = [0; 2];
        // SAFETY: pipe writes two descriptors into the array.
        assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
        let mut table = Identities::new();
        assert_eq!(table.get(ends[1], 0, regular_file_now), None);
        // SAFETY: closes the pipe this test made.
        unsafe { libc::close(ends[0]) };
        unsafe { libc::close(ends[1]) };
        assert_eq!(table.get(ends[1], 1, regular_file_now), None);
    }
}
