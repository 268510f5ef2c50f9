//! Opening a replay's files lazily, in the order its list reaches them
//! (`replay.rs`, docs/record.md): each open of a file on a slow or FUSE
//! file system waits in line with the program's own requests, so opening
//! all of a recording's files before the first advice (520 for `git grep`)
//! delayed it past most of a short run.
//!
//! While the recording is read, each file gets a descriptor number
//! reserved for it (a duplicate of an `O_PATH` descriptor of `/`, which no
//! read, advice or probe can reach a file's pages through), so the list
//! can be built whole. The files are then opened in the order of their
//! first entry in the list, a few before the replay starts and the rest on
//! the replay's thread while the program runs; each one still the recorded
//! file (device, inode, size, mtime) replaces its reserved number
//! (`dup3`) and gets its region, unless all its pages are cached already
//! (then no advice could fetch a page of it: it is neither registered
//! nor listed, and a read of it only places the program, [`Opening::
//! cached_place`]). The list handed to the client stops at
//! the first entry of a file not opened yet (the frontier) and leaves out
//! files found changed, so no advice ever names a reserved number or a
//! changed file.
//!
//! The opener follows the program: a read of a listed file not opened yet
//! ([`Opening::touch`]), from the second such read on, moves the next open to [`FIRST_FILES`] files past
//! it, the head start the replay began with, and the files before are
//! skipped (the program reads them before the opener could open them, so
//! advice for them would come too late); the program's first read of a
//! file opened then starts the list there. Without this, a program that
//! reads files faster than one thread opens them (`git grep`'s threads on
//! a FUSE mount) stays ahead of the opener from its first read to its last,
//! every touch lands on a file without a region, and the replay advises
//! nothing. Once every file has had its turn, the files leapt over that
//! the program has not reached are opened after all, and the list starts
//! again at the program's file ([`Opening::open_skipped_ahead`]): a program
//! that read ahead of the opener and then waited (polled a file, computed)
//! would otherwise never have the files it read next prefetched. A file
//! the program maps is not read through and left: its faults
//! ([`Opening::touch_mapped`]) make the opener open it next, and open it
//! even if it was skipped (a program that reads its script and
//! then maps its data file, faster than the opener, had the data file
//! skipped with the script's neighbours).
//!
//! The opener keeps at most [`AHEAD_FILES`] files open past the furthest
//! file the program has read or faulted in (files found cached or changed
//! do not count: the program's progress through them does not show) ([`Opening::wait_for_room`]): files
//! far ahead cost opens (on FUSE, round trips queued with the program's
//! requests) and descriptors long before the list reaches them, and a
//! program that stops early never needs them.
//!
//! Follows libprefetch (ATC 2009) section 4.2 (the access list, grown with
//! `PF_APPEND`).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use plan::recording::FileIdentity;
use rustix::fs::{openat, Mode as FileMode, OFlags, CWD};

use crate::filestat::FileStat;
use crate::replay_mapped::Entry;

/// Files opened before the replay starts following the program; the rest
/// are opened beside it.
pub(crate) const FIRST_FILES: usize = 8;

/// Most files the opener opens past the furthest one the program has
/// reached: 8 head starts, room for a window of small files (`git grep`'s
/// 3 MiB cgroup plans about 0.3 MiB at once, some 30 of its files).
pub(crate) const AHEAD_FILES: usize = 8 * FIRST_FILES;

/// Reads of files not opened yet before the opener skips ahead of them: one
/// may be a stray read of a file far on (a program that checks a file at
/// start, then waits), after which skipping would pass over the files it
/// reads next; more mean the program opens files faster than the opener.
const RACING_TOUCHES: usize = 2;

/// Longest wait for the program between two looks at it (a program that
/// stops reading leaves the opener waiting in these steps).
const WAIT_FOR_PROGRAM: Duration = Duration::from_millis(50);

/// Where a replay's private descriptors go, by the soft limit on
/// descriptors (read once).
pub(crate) struct Descriptors {
    /// Most files a replay opens (each costs a descriptor for the process's
    /// life): a quarter of the limit (256 under the usual 1024; `python3 -c
    /// "import numpy, pandas"` reads 548 files), at most 4096.
    pub(crate) max_files: usize,
    /// The lowest number a private descriptor is moved to ([`move_high`]).
    lowest: RawFd,
}

impl Descriptors {
    pub(crate) fn from_limit() -> Descriptors {
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(1024);
        Descriptors {
            max_files: usize::try_from(soft / 4).unwrap_or(usize::MAX).min(4096),
            lowest: RawFd::try_from(soft / 2).unwrap_or(RawFd::MAX / 2),
        }
    }
}

const WAITING: u8 = 0;
const OPEN: u8 = 1;
/// Changed since recording: not listed.
const CHANGED: u8 = 2;
/// Passed over: the program read past it before it was opened.
const SKIPPED: u8 = 3;
/// Unchanged, and every page of it cached when reached: not listed, but a
/// read of it places the program in the list.
const CACHED: u8 = 4;

/// The reserved descriptors of a replay's files and how far opening them
/// has come.
pub(crate) struct Opening {
    /// Reserved descriptor to its file.
    slots: HashMap<RawFd, usize>,
    identities: Vec<FileIdentity>,
    reserved: Vec<RawFd>,
    state: Vec<AtomicU8>,
    /// Files in the order of their first entry in the list, with that entry.
    order: Vec<(usize, usize)>,
    /// Each file's place in `order` (`usize::MAX` if the list never
    /// reaches it).
    place: Vec<usize>,
    /// Files of `order` opened, found changed or skipped so far.
    done: AtomicUsize,
    /// Where the opener skips to: [`FIRST_FILES`] past the furthest place
    /// in `order` of a file the program read before it was opened.
    wanted: AtomicUsize,
    /// One past the furthest place in `order` of a file the program has
    /// read or faulted in.
    reached: AtomicUsize,
    /// Wakes the opener when `reached` moves.
    moved: (Mutex<()>, Condvar),
    /// Places in `order` of the files opened at or past `reached`, in
    /// order: the bound counts these, not files found cached or changed
    /// (nothing shows a program's progress through them).
    open_ahead: Mutex<std::collections::VecDeque<usize>>,
    /// Reads of files not opened yet so far ([`RACING_TOUCHES`]).
    early_touches: AtomicUsize,
    /// Files opened out of their turn ([`Opening::open_skipped_ahead`]).
    opened_late: AtomicUsize,
    /// Where [`Opening::open_skipped_ahead`] looks next: every place of
    /// `order` before it has been looked at (no file becomes skipped once
    /// every file has had its turn, so none is passed over).
    late_cursor: AtomicUsize,
    /// Places of `order` [`Opening::open_skipped_ahead`] looked at so far.
    #[cfg(test)]
    late_looks: AtomicUsize,
    /// Entries in the list.
    entries: usize,
    /// What the reserved numbers duplicate, until the order is set.
    placeholder: Option<OwnedFd>,
}

impl Opening {
    pub(crate) fn new() -> Opening {
        Opening {
            slots: HashMap::new(),
            identities: Vec::new(),
            reserved: Vec::new(),
            state: Vec::new(),
            order: Vec::new(),
            place: Vec::new(),
            done: AtomicUsize::new(0),
            wanted: AtomicUsize::new(0),
            reached: AtomicUsize::new(0),
            early_touches: AtomicUsize::new(0),
            moved: (Mutex::new(()), Condvar::new()),
            open_ahead: Mutex::new(std::collections::VecDeque::new()),
            opened_late: AtomicUsize::new(0),
            late_cursor: AtomicUsize::new(0),
            #[cfg(test)]
            late_looks: AtomicUsize::new(0),
            entries: 0,
            placeholder: None,
        }
    }

    /// A descriptor number reserved for the file `identity`, at `limit`'s
    /// lowest or above; `None` if none can be had.
    pub(crate) fn reserve(
        &mut self,
        identity: &FileIdentity,
        limit: &Descriptors,
    ) -> Option<RawFd> {
        if self.placeholder.is_none() {
            let flags = OFlags::PATH | OFlags::CLOEXEC | OFlags::DIRECTORY;
            self.placeholder = openat(CWD, "/", flags, FileMode::empty()).ok();
        }
        let placeholder = self.placeholder.as_ref()?;
        let fd = rustix::io::fcntl_dupfd_cloexec(placeholder, limit.lowest).ok()?;
        let fd = fd.into_raw_fd();
        self.slots.insert(fd, self.identities.len());
        self.identities.push(identity.clone());
        self.reserved.push(fd);
        self.state.push(AtomicU8::new(WAITING));
        Some(fd)
    }

    /// Sets the opening order: each file at its first entry in `entries`
    /// (files the list never reaches are not opened).
    pub(crate) fn order_by(&mut self, entries: &[Entry]) {
        self.place = vec![usize::MAX; self.reserved.len()];
        for (at, &(fd, _)) in entries.iter().enumerate() {
            if let Some(&slot) = self.slots.get(&fd) {
                if self.place[slot] == usize::MAX {
                    self.place[slot] = self.order.len();
                    self.order.push((slot, at));
                }
            }
        }
        self.entries = entries.len();
        self.placeholder = None;
    }

    /// The first entry of the list whose file is not opened yet (the
    /// list's length once all are).
    pub(crate) fn frontier(&self) -> usize {
        let done = self.done.load(Ordering::Acquire);
        self.order.get(done).map_or(self.entries, |&(_, at)| at)
    }

    /// The list's first entry of the furthest file the program has read or
    /// faulted in, if it has reached one.
    pub(crate) fn program_entry(&self) -> Option<usize> {
        let reached = self.reached.load(Ordering::Acquire);
        let &(_, at) = self.order.get(reached.checked_sub(1)?)?;
        Some(at)
    }

    /// Whether the file of reserved descriptor `fd` is open (unchanged).
    pub(crate) fn is_open(&self, fd: RawFd) -> bool {
        self.slots
            .get(&fd)
            .is_some_and(|&slot| self.state[slot].load(Ordering::Acquire) == OPEN)
    }

    /// The program reads the file of reserved descriptor `fd`: if it is
    /// not opened yet, the opener skips to [`FIRST_FILES`] past it (never
    /// back).
    /// Also moves the program's furthest place, waking the opener
    /// ([`Opening::wait_for_room`]).
    pub(crate) fn touch(&self, fd: RawFd) {
        self.touched(fd, |place| {
            let early = self.early_touches.fetch_add(1, Ordering::AcqRel) + 1;
            (early >= RACING_TOUCHES).then(|| place.saturating_add(FIRST_FILES))
        });
    }

    /// The program faulted in pages of a mapping of the file of reserved
    /// descriptor `fd` (`replay_mapped.rs`): if it is not opened yet, the
    /// opener opens it next (the files before it are skipped). A mapped
    /// file is not read through and left, as a file `read` is: the program
    /// comes back to it, run after run, and each one is told as a touch
    /// (counted as racing reads, two runs of one file made the opener skip
    /// the very file the program was faulting in, and the replay of a
    /// program reading one file through `mmap` advised nothing).
    pub(crate) fn touch_mapped(&self, fd: RawFd) {
        self.touched(fd, Some);
    }

    /// Moves the program's furthest place to the file of `fd`, waking the
    /// opener; if that file is still waiting to be opened, the opener skips
    /// to the place `skip_to` gives for it (if any).
    fn touched(&self, fd: RawFd, skip_to: impl FnOnce(usize) -> Option<usize>) {
        let Some(&slot) = self.slots.get(&fd) else {
            return;
        };
        let place = self.place[slot];
        if place == usize::MAX {
            return;
        }
        if self.state[slot].load(Ordering::Acquire) == WAITING {
            if let Some(to) = skip_to(place) {
                self.wanted.fetch_max(to, Ordering::AcqRel);
            }
        }
        if self.reached.fetch_max(place + 1, Ordering::AcqRel) <= place {
            let _lock = self.moved.0.lock().unwrap_or_else(|e| e.into_inner());
            self.moved.1.notify_all();
        }
    }

    /// True if the opener may open the next file: fewer than
    /// [`AHEAD_FILES`] are open past the program's furthest place.
    pub(crate) fn has_room(&self) -> bool {
        let reached = self.reached.load(Ordering::Acquire);
        let mut ahead = self.open_ahead.lock().unwrap_or_else(|e| e.into_inner());
        while ahead.front().is_some_and(|&place| place < reached) {
            ahead.pop_front();
        }
        ahead.len() < AHEAD_FILES
    }

    /// Waits until [`Opening::has_room`], at most `longest` (and at most
    /// [`WAIT_FOR_PROGRAM`]); returns whether there is room.
    pub(crate) fn wait_for_room(&self, longest: Duration) -> bool {
        let lock = self.moved.0.lock().unwrap_or_else(|e| e.into_inner());
        let longest = longest.min(WAIT_FOR_PROGRAM);
        let waited = self
            .moved
            .1
            .wait_timeout_while(lock, longest, |_| !self.has_room());
        drop(waited);
        self.has_room()
    }

    /// The first entry of the list of the file of reserved descriptor `fd`
    /// if it was left out as wholly cached: a read of it places the program
    /// there (`replay.rs`).
    pub(crate) fn cached_place(&self, fd: RawFd) -> Option<usize> {
        let &slot = self.slots.get(&fd)?;
        let cached = self.state[slot].load(Ordering::Acquire) == CACHED;
        let &(_, at) = self.order.get(*self.place.get(slot)?)?;
        cached.then_some(at)
    }

    /// Files opened, found changed or skipped so far.
    pub(crate) fn done(&self) -> usize {
        self.done.load(Ordering::Acquire)
    }

    /// Files opened out of their turn so far ([`Opening::open_skipped_ahead`]).
    pub(crate) fn opened_late(&self) -> usize {
        self.opened_late.load(Ordering::Acquire)
    }

    /// The same, and the files in all.
    #[cfg(test)]
    pub(crate) fn opened(&self) -> (usize, usize) {
        (self.done(), self.order.len())
    }

    /// Opens the next file in order (skipping ahead of the program,
    /// [`Opening::touch`]) onto its reserved number if
    /// it is still the recorded file and not wholly cached; returns its
    /// descriptor and size if so, `None` for a file changed or cached, or
    /// `Err(())` once all are done (skipped files the program has not
    /// reached included, [`Opening::open_skipped_ahead`]). Called by one thread at a time (the
    /// replay's).
    pub(crate) fn open_next(&self) -> Result<Option<(RawFd, u64)>, ()> {
        let mut done = self.done.load(Ordering::Acquire);
        let wanted = self.wanted.load(Ordering::Acquire).min(self.order.len());
        if wanted > done {
            for &(skipped, _) in &self.order[done..wanted] {
                self.state[skipped].store(SKIPPED, Ordering::Release);
            }
            done = wanted;
            self.done.store(done, Ordering::Release);
        }
        let Some(&(slot, _)) = self.order.get(done) else {
            return self.open_skipped_ahead().ok_or(());
        };
        let opened = self.open_slot(slot);
        if opened.is_some() {
            let mut ahead = self.open_ahead.lock().unwrap_or_else(|e| e.into_inner());
            ahead.push_back(done);
        }
        self.done.store(done + 1, Ordering::Release);
        Ok(opened)
    }

    /// Once every file has had its turn: opens the first file the opener
    /// skipped that the program has not reached yet. Skipping ahead leaps
    /// over the [`FIRST_FILES`] files after the one the program reads, to
    /// open ahead of a program faster than the opener; a program that then
    /// waits (it polls a file, or computes) had the file it read next never
    /// opened, and its replay advised nothing of it. `None` once there is
    /// none. It looks on from where it last stopped (or the program's
    /// place, if further), so all its calls look at each file at most once.
    fn open_skipped_ahead(&self) -> Option<Option<(RawFd, u64)>> {
        let reached = self.reached.load(Ordering::Acquire);
        let from = self
            .late_cursor
            .load(Ordering::Acquire)
            .max(reached)
            .min(self.order.len());
        let found = self.order[from..].iter().position(|&(slot, _)| {
            self.state[slot]
                .compare_exchange(SKIPPED, WAITING, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        });
        let looked = found.map_or(self.order.len() - from, |at| at + 1);
        self.late_cursor.store(from + looked, Ordering::Release);
        #[cfg(test)]
        self.late_looks.fetch_add(looked, Ordering::AcqRel);
        let (slot, _) = self.order[from + found?];
        self.opened_late.fetch_add(1, Ordering::AcqRel);
        Some(self.open_slot(slot))
    }

    /// Opens the file of reserved descriptor `fd` if the opener skipped it
    /// and the program faults in pages of it (`replay_mapped.rs`): a file
    /// the program maps is not done with as a file it reads is (the opener
    /// skips past files read before it reached them), it comes back to it.
    /// The private descriptor and size, if it opened.
    pub(crate) fn open_skipped(&self, fd: RawFd) -> Option<(RawFd, u64)> {
        let &slot = self.slots.get(&fd)?;
        self.state[slot]
            .compare_exchange(SKIPPED, WAITING, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        self.open_slot(slot)
    }

    /// Opens file `slot` at its reserved number if it is unchanged and not
    /// wholly cached, and sets its state.
    fn open_slot(&self, slot: usize) -> Option<(RawFd, u64)> {
        let reserved = self.reserved[slot];
        let identity = &self.identities[slot];
        let unchanged = open_unchanged(identity);
        let cached = unchanged
            .as_ref()
            .is_some_and(|real| wholly_cached(real, identity.size));
        let opened = unchanged.filter(|_| !cached).and_then(|real| {
            // SAFETY: `reserved` is a descriptor this module holds open
            // and never hands out; `dup3` replaces it atomically.
            let moved = unsafe { libc::dup3(real.as_raw_fd(), reserved, libc::O_CLOEXEC) };
            (moved == reserved).then_some((reserved, identity.size))
        });
        let state = match (opened.is_some(), cached) {
            (true, _) => OPEN,
            (false, true) => CACHED,
            (false, false) => CHANGED,
        };
        self.state[slot].store(state, Ordering::Release);
        opened
    }
}

/// A private read-only descriptor of the file at `identity.path` if it is
/// still the recorded file, unchanged (device, inode, size, mtime).
fn open_unchanged(identity: &FileIdentity) -> Option<OwnedFd> {
    let path = OsStr::from_bytes(&identity.path);
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = openat(CWD, path, flags, FileMode::empty()).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    let now = FileStat {
        dev: stat.st_dev,
        ino: stat.st_ino,
        size: u64::try_from(stat.st_size).unwrap_or(0),
        mtime_ns: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
    };
    let recorded = FileStat {
        dev: identity.dev,
        ino: identity.ino,
        size: identity.size,
        mtime_ns: identity.mtime_ns,
    };
    let regular = stat.st_mode & libc::S_IFMT == libc::S_IFREG;
    (regular && now == recorded).then_some(fd)
}

/// True if every page of `file`, `size` bytes, is in the page cache (one
/// `cachestat`; false where the kernel has none): advice for it could not
/// fetch a page, so the replay neither registers nor lists it, and the
/// program's reads of it cost no following (a warm run, a file another
/// program read since).
fn wholly_cached(file: &OwnedFd, size: u64) -> bool {
    let pages = size.div_ceil(crate::memory::page_size());
    let cached = crate::residency::cachestat(file.as_raw_fd(), 0, size);
    size > 0 && cached.is_ok_and(|counts| counts.nr_cache >= pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` files that do not exist (each found changed when opened),
    /// reserved and ordered one entry each.
    fn absent_files(count: usize) -> Opening {
        let limit = Descriptors::from_limit();
        let mut opening = Opening::new();
        let entries: Vec<Entry> = (0..count)
            .map(|file| {
                let identity = FileIdentity {
                    path: format!("/nonexistent/libprefetch-test/{file}").into_bytes(),
                    dev: 1,
                    ino: file as u64,
                    size: 4096,
                    mtime_ns: 0,
                };
                (opening.reserve(&identity, &limit).expect("a descriptor"), 0)
            })
            .collect();
        opening.order_by(&entries);
        opening
    }

    /// The late opener looks at each file once over all its calls, not once
    /// per call from the program's place: with every file skipped ahead of
    /// the program (set here directly: the opener marks them so), opening
    /// them all looks at `count` places, where looking from the program's
    /// place each time looked at `count * (count + 1) / 2`.
    #[test]
    fn the_late_opener_looks_at_each_file_once() {
        let count = 200;
        let opening = absent_files(count);
        opening.done.store(count, Ordering::Release);
        for state in &opening.state {
            state.store(SKIPPED, Ordering::Release);
        }
        let mut calls = 0;
        while opening.open_next().is_ok() {
            calls += 1;
        }
        assert_eq!((calls, opening.opened_late()), (count, count));
        assert_eq!(opening.late_looks.load(Ordering::Acquire), count);
    }

    /// Files the program has reached are not opened late, and the look
    /// starts at the program's place once it is past the cursor.
    #[test]
    fn the_late_opener_starts_at_the_program() {
        let count = 40;
        let opening = absent_files(count);
        opening.done.store(count, Ordering::Release);
        for state in &opening.state {
            state.store(SKIPPED, Ordering::Release);
        }
        assert!(opening.open_next().is_ok());
        opening.reached.store(30, Ordering::Release);
        let mut calls = 1;
        while opening.open_next().is_ok() {
            calls += 1;
        }
        assert_eq!(calls, 1 + (count - 30));
        assert_eq!(opening.late_looks.load(Ordering::Acquire), 1 + (count - 30));
    }
}
