//! Writes at the file position (`write`, `writev`, a copy's destination without an offset),
//! told to the page-cache budget in batches (`cache_budget_io.rs`): the bytes written through
//! a descriptor are added up, and only once they reach one batch of the budget, or the
//! program closes, replaces or seeks the descriptor, or the process exits, is its file
//! position asked (one `lseek`) and the pages ending there counted. A program that writes a
//! file in records (`tar`: 10 KiB at a time) would otherwise pay one `lseek` per record, and
//! count the page two records share twice.
//!
//! The pages are a guess: the bytes added up are taken to be contiguous and to end at the
//! position. That holds for a program that writes its file in order between seeks, which the
//! interposers see (`lseek` told through `note_seek`, before it moves the position). A seek
//! they do not see (glibc's internal one in `fseek`, another process sharing the position)
//! only makes the budget count other pages of the same file: every drop checks again that the
//! descriptor names the file and that the pages are clean (`cache_budget.rs`), so bytes,
//! errno and file positions the program sees never depend on it. A batch held back delays the
//! budget by at most one batch of pages.
//!
//! The table is behind a mutex taken with `try_lock`; a busy table (another thread inside, or
//! a forked child of a process whose thread held it) means the write is told at once, with
//! its own `lseek`, as without batching: never a wait.
//!
//! Follows DULO (FAST'05) sections 3-4 through `cache_budget.rs` (bookkeeping only).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::descriptors::FileId;

/// Descriptors with bytes held back at once: a program writes a few files at a time.
const HELD: usize = 8;

/// True while any bytes are held back (the close and seek interposers' first check).
static ANY: AtomicBool = AtomicBool::new(false);

/// The bytes held back in this process.
static TABLE: Mutex<Table> = Mutex::new(Table::new());

/// Bytes written at a descriptor's position and not yet counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) fd: RawFd,
    pub(crate) id: FileId,
    pub(crate) bytes: u64,
}

/// What to count after `len` bytes were written at the position of `fd` (the file `id`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// Nothing yet: held back.
    Nothing,
    /// These, each ending at its descriptor's position now (the write's own with its bytes
    /// reaching the batch, or with the table busy; one displaced from a full table; one held
    /// for another file the descriptor named before).
    Count(Vec<Held>),
}

/// Adds `len` bytes written at the position of `fd`, the file `id`, with batches of `batch`
/// bytes.
pub(crate) fn add(fd: RawFd, id: FileId, len: u64, batch: u64) -> Due {
    let Ok(mut table) = TABLE.try_lock() else {
        return Due::Count(vec![Held { fd, id, bytes: len }]);
    };
    let due = table.add(Held { fd, id, bytes: len }, batch);
    ANY.store(table.any(), Ordering::Release);
    due
}

/// True if any bytes are held back (one atomic load).
pub(crate) fn any() -> bool {
    ANY.load(Ordering::Acquire)
}

/// The bytes held back for `fd`, taken out of the table (before it closes or seeks), or
/// `None`.
pub(crate) fn take(fd: RawFd) -> Option<Held> {
    let mut table = TABLE.try_lock().ok()?;
    let held = table.take(fd);
    ANY.store(table.any(), Ordering::Release);
    held
}

/// Every descriptor's bytes held back, taken out of the table (as the process exits).
pub(crate) fn take_all() -> Vec<Held> {
    let Ok(mut table) = TABLE.try_lock() else {
        return Vec::new();
    };
    let all = table.entries.iter_mut().filter_map(Option::take).collect();
    ANY.store(false, Ordering::Release);
    all
}

/// Bytes held back by descriptor.
struct Table {
    entries: [Option<Held>; HELD],
    /// The slot a new descriptor takes when all are used (round robin).
    next: usize,
}

impl Table {
    const fn new() -> Table {
        Table {
            entries: [None; HELD],
            next: 0,
        }
    }

    fn any(&self) -> bool {
        self.entries.iter().any(Option::is_some)
    }

    fn take(&mut self, fd: RawFd) -> Option<Held> {
        self.entries
            .iter_mut()
            .find(|e| e.is_some_and(|e| e.fd == fd))?
            .take()
    }

    fn add(&mut self, new: Held, batch: u64) -> Due {
        let mut due = Vec::new();
        let slot = match self
            .entries
            .iter()
            .position(|e| e.is_some_and(|e| e.fd == new.fd))
        {
            Some(slot) => slot,
            None => match self.entries.iter().position(Option::is_none) {
                Some(free) => free,
                None => {
                    let taken = self.next;
                    self.next = (taken + 1) % HELD;
                    taken
                }
            },
        };
        let held = match self.entries[slot].take() {
            Some(old) if old.fd == new.fd && old.id == new.id => Held {
                bytes: old.bytes.saturating_add(new.bytes),
                ..new
            },
            Some(old) => {
                due.push(old);
                new
            }
            None => new,
        };
        if held.bytes >= batch {
            due.push(held);
        } else {
            self.entries[slot] = Some(held);
        }
        if due.is_empty() {
            Due::Nothing
        } else {
            Due::Count(due)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::sync::OnceLock;

    /// The identity of one of two temporary files (`n` 1 or 2), kept open so that they stay
    /// distinct.
    fn id(n: u64) -> FileId {
        static FILES: OnceLock<[std::fs::File; 2]> = OnceLock::new();
        let files =
            FILES.get_or_init(|| [(); 2].map(|()| tempfile::tempfile().expect("temporary file")));
        FileId::of(files[n as usize - 1].as_raw_fd()).expect("its identity")
    }

    fn held(fd: RawFd, n: u64, bytes: u64) -> Held {
        Held {
            fd,
            id: id(n),
            bytes,
        }
    }

    /// 10 KiB records held back until they reach a batch of 1 MiB, then counted as one range;
    /// a descriptor naming another file gives up the first file's bytes.
    #[test]
    fn records_are_held_back_until_a_batch() {
        let mut table = Table::new();
        let mut counted = Vec::new();
        for _ in 0..300 {
            if let Due::Count(due) = table.add(held(3, 1, 10 << 10), 1 << 20) {
                counted.extend(due);
            }
        }
        // 103 records of 10 KiB reach 1 MiB: two batches, 94 records held.
        assert_eq!(counted, vec![held(3, 1, 103 * 10240); 2]);
        assert_eq!(table.take(3), Some(held(3, 1, 94 * 10240)));
        assert_eq!(table.take(3), None);
        table.add(held(3, 1, 100), 1 << 20);
        assert_eq!(
            table.add(held(3, 2, 200), 1 << 20),
            Due::Count(vec![held(3, 1, 100)])
        );
        assert_eq!(table.take(3), Some(held(3, 2, 200)));
    }

    /// A full table gives up its oldest descriptor's bytes to a new one.
    #[test]
    fn a_full_table_gives_up_the_oldest() {
        let mut table = Table::new();
        for fd in 0..HELD as RawFd {
            assert_eq!(table.add(held(fd, 1, 1), 100), Due::Nothing);
        }
        assert_eq!(
            table.add(held(100, 2, 1), 100),
            Due::Count(vec![held(0, 1, 1)])
        );
        assert_eq!(table.take(0), None);
        assert_eq!(table.take(100), Some(held(100, 2, 1)));
    }
}
