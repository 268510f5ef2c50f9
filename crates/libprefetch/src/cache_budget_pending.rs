//! Reads and writes at the file position (`read`, `write`, `writev`, stdio's refills, a copy's
//! destination without an offset), told to the page-cache budget in batches
//! (`cache_budget_io.rs`): the bytes moved through a descriptor are added up, and only once
//! they reach one batch of the budget, or the program closes, replaces or seeks the
//! descriptor, or the process exits, is its file position asked (one `lseek`) and the pages
//! ending there counted. A program that reads and writes a file in records (`tar`: 10 KiB at a
//! time) would otherwise pay one `lseek` and one `fstat` per record, and count the page two
//! records share twice.
//!
//! Writes are told after the call, reads before it (the read interposers tell before the
//! kernel reads): a read is held back with the reads before it, and those are counted at the
//! start of the read that would take them past one batch, when the position still ends them;
//! they start where the position was at the first of them (one more `lseek` per batch: a
//! short read, at the end of the file, reads fewer bytes than it asked for).
//! So the pages of at most one batch of reads go uncounted at any time, and the budget holds
//! the program within its size and one batch. A read of a batch or more is counted at once.
//!
//! The pages are a guess: the bytes added up are taken to be contiguous and to end at the
//! position. That holds for a program that moves through its file in order between seeks,
//! which the interposers see (`lseek` told through `note_seek`, before it moves the position).
//! A seek they do not see (glibc's internal one in
//! `fseek`, another process sharing the position) only makes the budget count other pages of
//! the same file: every drop checks again that the descriptor names the file and that the
//! pages are clean (`cache_budget.rs`), so bytes, errno and file positions the program sees
//! never depend on it.
//!
//! Each table is behind a mutex taken with `try_lock`; a busy table (another thread inside, or
//! a forked child of a process whose thread held it) means the call is told at once, with its
//! own `lseek`, as without batching: never a wait.
//!
//! Follows DULO (FAST'05) sections 3-4 through `cache_budget.rs` (bookkeeping only).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::descriptors::FileId;

/// Descriptors with bytes held back at once: a program writes a few files at a time.
const HELD: usize = 8;

/// The writes held back in this process.
static WRITES: Pending = Pending::new();

/// The reads held back in this process.
static READS: Pending = Pending::new();

/// One table and its flag.
struct Pending {
    /// True while any bytes are held back (the close and seek interposers' first check).
    any: AtomicBool,
    table: Mutex<Table>,
}

impl Pending {
    const fn new() -> Pending {
        Pending {
            any: AtomicBool::new(false),
            table: Mutex::new(Table::new()),
        }
    }

    fn of(kind: Kind) -> &'static Pending {
        match kind {
            Kind::Read => &READS,
            Kind::Written => &WRITES,
        }
    }
}

/// Bytes read or written at a descriptor's position and not yet counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) fd: RawFd,
    pub(crate) id: FileId,
    pub(crate) bytes: u64,
    pub(crate) kind: Kind,
    /// For reads, the position the first of them started at (a short read, at the end of the
    /// file, reads fewer bytes than it asked for; the pages are those from here to the
    /// position when counted).
    pub(crate) from: Option<u64>,
}

impl Held {
    /// `new` as the first bytes held for its descriptor: a read with the position it starts at.
    fn starting(new: Held, position: impl FnOnce() -> Option<u64>) -> Held {
        match new.kind {
            Kind::Read => Held {
                from: position(),
                ..new
            },
            Kind::Written => new,
        }
    }
}

/// Bytes the program read (told before the call) or wrote (told after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Written,
}

/// What to count after `len` bytes were moved at the position of `fd` (the file `id`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// Nothing yet: held back.
    Nothing,
    /// A read not held back (the table busy): the caller counts it.
    Busy,
    /// These, each ending at its descriptor's position now (the write's own with its bytes
    /// reaching the batch, or with the table busy; one displaced from a full table; one held
    /// for another file the descriptor named before).
    Count(Vec<Held>),
}

/// Adds `len` bytes of `kind` at the position of `fd`, the file `id`, with batches of `batch`
/// bytes; `position` gives the position a read that starts a batch starts at. With the table
/// busy, the bytes are due at once.
pub(crate) fn add(
    fd: RawFd,
    id: FileId,
    len: u64,
    batch: u64,
    kind: Kind,
    position: impl FnOnce() -> Option<u64>,
) -> Due {
    let new = Held {
        fd,
        id,
        bytes: len,
        kind,
        from: None,
    };
    let pending = Pending::of(kind);
    let Ok(mut table) = pending.table.try_lock() else {
        return match kind {
            Kind::Written => Due::Count(vec![new]),
            Kind::Read => Due::Busy,
        };
    };
    let due = table.add(new, batch, position);
    pending.any.store(table.any(), Ordering::Release);
    due
}

/// True if any bytes are held back (two atomic loads).
pub(crate) fn any() -> bool {
    READS.any.load(Ordering::Acquire) || WRITES.any.load(Ordering::Acquire)
}

/// The bytes held back for `fd`, taken out of the tables (before it closes or seeks).
pub(crate) fn take(fd: RawFd) -> Vec<Held> {
    [&READS, &WRITES]
        .into_iter()
        .filter_map(|pending| {
            let mut table = pending.table.try_lock().ok()?;
            let held = table.take(fd);
            pending.any.store(table.any(), Ordering::Release);
            held
        })
        .collect()
}

/// Every descriptor's bytes held back, taken out of the tables (as the process exits).
pub(crate) fn take_all() -> Vec<Held> {
    let mut all = Vec::new();
    for pending in [&READS, &WRITES] {
        if let Ok(mut table) = pending.table.try_lock() {
            all.extend(table.entries.iter_mut().filter_map(Option::take));
            pending.any.store(false, Ordering::Release);
        }
    }
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

    fn add(&mut self, new: Held, batch: u64, position: impl FnOnce() -> Option<u64>) -> Due {
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
            // A read is told before the call: the reads before it, which would take the held
            // bytes past one batch with it, are due now, while the position ends them.
            Some(old)
                if old.fd == new.fd
                    && old.id == new.id
                    && (new.kind == Kind::Written || old.bytes + new.bytes <= batch) =>
            {
                Held {
                    bytes: old.bytes.saturating_add(new.bytes),
                    ..old
                }
            }
            Some(old) => {
                due.push(old);
                Held::starting(new, position)
            }
            None => Held::starting(new, position),
        };
        if held.kind == Kind::Written && held.bytes >= batch {
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
            kind: Kind::Written,
            from: None,
        }
    }

    fn read(fd: RawFd, n: u64, bytes: u64, from: u64) -> Held {
        Held {
            kind: Kind::Read,
            from: Some(from),
            ..held(fd, n, bytes)
        }
    }

    /// Positions as a reader of 10 KiB records (`at` the position of each read to come).
    fn at(position: u64) -> impl FnOnce() -> Option<u64> {
        move || Some(position)
    }

    /// 10 KiB records held back until they reach a batch of 1 MiB, then counted as one range;
    /// a descriptor naming another file gives up the first file's bytes.
    #[test]
    fn records_are_held_back_until_a_batch() {
        let mut table = Table::new();
        let mut counted = Vec::new();
        for _ in 0..300 {
            if let Due::Count(due) = table.add(held(3, 1, 10 << 10), 1 << 20, || None) {
                counted.extend(due);
            }
        }
        // 103 records of 10 KiB reach 1 MiB: two batches, 94 records held.
        assert_eq!(counted, vec![held(3, 1, 103 * 10240); 2]);
        assert_eq!(table.take(3), Some(held(3, 1, 94 * 10240)));
        assert_eq!(table.take(3), None);
        table.add(held(3, 1, 100), 1 << 20, || None);
        assert_eq!(
            table.add(held(3, 2, 200), 1 << 20, || None),
            Due::Count(vec![held(3, 1, 100)])
        );
        assert_eq!(table.take(3), Some(held(3, 2, 200)));
    }

    /// A full table gives up its oldest descriptor's bytes to a new one.
    #[test]
    fn a_full_table_gives_up_the_oldest() {
        let mut table = Table::new();
        for fd in 0..HELD as RawFd {
            assert_eq!(table.add(held(fd, 1, 1), 100, || None), Due::Nothing);
        }
        assert_eq!(
            table.add(held(100, 2, 1), 100, || None),
            Due::Count(vec![held(0, 1, 1)])
        );
        assert_eq!(table.take(0), None);
        assert_eq!(table.take(100), Some(held(100, 2, 1)));
    }

    /// Reads are told before the call: 10 KiB records are held back while they fit one batch
    /// of 1 MiB, and are due at the start of the record that would take them past it (the
    /// position then ends them), that record held back alone from its own position; another
    /// file's read gives up the first file's bytes.
    #[test]
    fn reads_are_due_at_the_record_past_a_batch() {
        let mut table = Table::new();
        let mut counted = Vec::new();
        for record in 0..300 {
            let due = table.add(read(3, 1, 10 << 10, 0), 1 << 20, at(record * 10240));
            if let Due::Count(due) = due {
                counted.extend(due);
            }
        }
        // 102 records of 10 KiB fit in 1 MiB: two batches of 102 due, 96 records held.
        let batches = [0, 102 * 10240].map(|from| read(3, 1, 102 * 10240, from));
        assert_eq!(counted, batches);
        assert_eq!(table.take(3), Some(read(3, 1, 96 * 10240, 204 * 10240)));
        table.add(read(3, 1, 100, 0), 1 << 20, at(7));
        assert_eq!(
            table.add(read(3, 2, 200, 0), 1 << 20, at(0)),
            Due::Count(vec![read(3, 1, 100, 7)])
        );
        assert_eq!(table.take(3), Some(read(3, 2, 200, 0)));
    }
}
