//! The descriptors a client advises through: which file each registered
//! descriptor number named when its region was registered, and, for files
//! on FUSE, a private read-only descriptor the advice goes through instead.
//!
//! **Identity.** Regions belong to a descriptor number, and a number the
//! application closes can be handed out again for another file. Each number
//! is remembered with its file's device and inode; before a round's advice
//! is issued, [`AdviceDescriptors::route`] checks every descriptor the
//! advice names (one `fstat` per descriptor per round) and drops the advice
//! of a descriptor that now names another file, or none, so the library
//! never advises a file it was not told about. The caller retires the
//! client's regions on such descriptors (see `registry.rs`).
//!
//! **Private descriptors on FUSE.** The kernel's `fuse_readahead` skips the
//! rest of a readahead batch (a WILLNEED call's included) when the
//! connection is congested (by default 3/4 of max_background, that is 9
//! queued requests) and the descriptor's readahead state, `f_ra.async_size`,
//! covers what is left of the batch. Sequential reads through a descriptor
//! grow its `async_size` to the full read-ahead window (32 pages on FUSE, the
//! size of one WILLNEED batch), so advice through the application's own
//! descriptor is dropped whenever the connection is busy, which a prefetcher
//! makes it. A descriptor that nobody reads keeps `async_size` at 0, and its
//! advice is queued however full the connection is. Measured on `prefetch
//! emulate` (64 MiB file, 16 sequential reads first, then WILLNEED of 62 MiB
//! in 128 KiB calls): 55% of the pages advised through the read descriptor
//! were loaded, 100% through a fresh one; SQLite's index scan of a 256 MiB
//! database re-read the file ~30 times and did not finish in 240 s, and
//! finished in 5.9 s once advised through a descriptor of its own.
//!
//! A descriptor the library opened for itself and never reads (a
//! replay's) is private already and advised as it is.
//!
//! A private descriptor is opened through `/proc/self/fd` (the same file,
//! even if renamed or unlinked since), read-only and close-on-exec, once per
//! file (device and inode) and purpose (regions, or competitive streams,
//! whose descriptor is opened `POSIX_FADV_SEQUENTIAL`) in the process.
//!
//! **Never closed under a lock.** On Linux, closing any descriptor of a file
//! releases every POSIX lock the process holds on it, so the library never
//! closes a private descriptor on its own: it keeps it until the
//! application itself closes a descriptor of the same file (the `close`,
//! `dup2`, `dup3` and `fclose` interposers call [`PrivateDescriptors::before_close`]
//! first), which releases those locks anyway. Just before that close, each
//! private descriptor of the file is replaced in one step (`dup3`) by a
//! descriptor of a pipe of the library's own, which drops the locks the
//! application's close is about to drop, and nothing else; the pipe's
//! descriptor is closed later, by the advice thread. Checking for locks and
//! then closing, as this file once did with `/proc/locks`, cannot be made
//! atomic: a lock taken between the check and the close is lost. (SQLite's
//! unix VFS keeps its own descriptors the same way, until its last lock on
//! the file is gone.) Where the interposers are absent (the Python package,
//! the SQLite extension loaded without the preload library), a private
//! descriptor stays open until the process exits. At most [`MAX_PRIVATE`]
//! files per purpose get one; beyond that, advice goes through the
//! application's descriptor as if no private one could be opened. No
//! private descriptor is opened after the application's close is noted: the
//! close marks the descriptor's regions retired first, and advice still
//! planned for a retired descriptor (or for any of a dropped client's) is
//! dropped rather than routed, since a private descriptor opened then would
//! outlive the close and keep the file's FUSE filesystem busy.
//!
//! Side effects, for the record: one more open file per tracked FUSE file,
//! until the application closes it (or the process exits, without the
//! interposers), which keeps its FUSE filesystem from being unmounted and an
//! unlinked file's space from being freed meanwhile; a FUSE filesystem that
//! does not keep its cache across opens (no FOPEN_KEEP_CACHE) drops the
//! file's cached pages at that open, as it does at any open; a forked child
//! inherits the descriptors and leaves them open (it opens its own). Not
//! seen: `close_range`, and `exec`, whose close of a close-on-exec private
//! descriptor drops a POSIX lock the program holds on that file through a
//! descriptor it keeps across `exec`.
//!
//! Deviations: the paper advises through the application's descriptors (its
//! files were on ext3, whose readahead never drops advice).

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use plan::{PageRange, RoundPlan};

use crate::advice_thread::{AdviceJob, AdviceThread};

/// The statfs magic number of FUSE filesystems.
const FUSE_SUPER_MAGIC: libc::__fsword_t = 0x6573_5546;

/// Most files given a private descriptor in one process.
pub const MAX_PRIVATE: usize = 64;

/// A file, by device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The file `fd` names now, or `None` if `fd` is not open.
    pub(crate) fn of(fd: RawFd) -> Option<FileId> {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat writes a struct stat into the buffer on success.
        if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: fstat succeeded, so the struct is initialised.
        let stat = unsafe { stat.assume_init() };
        Some(FileId {
            dev: stat.st_dev,
            ino: stat.st_ino,
        })
    }
}

impl From<&crate::filestat::FileStat> for FileId {
    fn from(stat: &crate::filestat::FileStat) -> FileId {
        FileId {
            dev: stat.dev,
            ino: stat.ino,
        }
    }
}

/// One descriptor number with regions of this client.
struct Registered {
    file: FileId,
    regions: usize,
    /// On FUSE: advice goes through the file's private descriptor.
    fuse: bool,
    /// The application is closing the number (its regions are retired):
    /// advice still planned for it is dropped.
    closing: bool,
}

/// A client's descriptors, keyed by the application's descriptor number.
#[derive(Default)]
pub(crate) struct AdviceDescriptors {
    registered: Mutex<HashMap<RawFd, Registered>>,
}

/// Who a private descriptor serves: its file's regions, or competitive
/// streams (opened `POSIX_FADV_SEQUENTIAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Purpose {
    Regions,
    Streams,
}

/// The process's private descriptors, by file and purpose, kept until the
/// application closes a descriptor of their file (see the module comment).
/// Lives in the per-process globals, so a forked child starts with an
/// empty table (and leaves the inherited descriptors open).
#[derive(Default)]
pub(crate) struct PrivateDescriptors {
    table: Mutex<Table>,
    /// Set at the first open: until then a close costs one atomic load.
    any: AtomicBool,
    /// Descriptors the library opened for itself that nothing reads (a
    /// replay's, `replay_open.rs`): private already, so their advice needs
    /// no second one (on FUSE, one open and one round trip a file).
    unread: Mutex<HashSet<RawFd>>,
}

#[derive(Default)]
struct Table {
    open: HashMap<(FileId, Purpose), RawFd>,
    /// Numbers whose file was replaced by the placeholder pipe, waiting for
    /// the advice thread to close them (after the advice queued before).
    retired: HashSet<RawFd>,
}

impl PrivateDescriptors {
    /// The private descriptor of `fd`'s file `file` for `purpose`, opened
    /// if needed; `None` off FUSE, past [`MAX_PRIVATE`] files, or if the
    /// open fails.
    pub(crate) fn for_file(&self, fd: RawFd, file: FileId, purpose: Purpose) -> Option<RawFd> {
        let mut table = self.lock();
        if let Some(&private) = table.open.get(&(file, purpose)) {
            return Some(private);
        }
        let count = table.open.keys().filter(|(_, p)| *p == purpose).count();
        if count >= MAX_PRIVATE || !is_fuse(fd) {
            return None;
        }
        placeholder()?;
        let private = reopen_read_only(fd, file)?;
        if purpose == Purpose::Streams {
            // SAFETY: posix_fadvise takes plain integers on a descriptor opened just above.
            unsafe { libc::posix_fadvise(private, 0, 0, libc::POSIX_FADV_SEQUENTIAL) };
        }
        table.open.insert((file, purpose), private);
        self.any.store(true, Ordering::Release);
        Some(private)
    }

    /// `fd` is a descriptor of the library's own that nothing reads, kept
    /// for the process's life: advice goes through it as it is.
    pub(crate) fn adopt_unread(&self, fd: RawFd) {
        let mut unread = self.unread.lock().unwrap_or_else(|e| e.into_inner());
        unread.insert(fd);
    }

    pub(crate) fn is_unread(&self, fd: RawFd) -> bool {
        let unread = self.unread.lock().unwrap_or_else(|e| e.into_inner());
        unread.contains(&fd)
    }

    /// True if `private` is still `file`'s private descriptor for `purpose`.
    pub(crate) fn is_current(&self, private: RawFd, file: FileId, purpose: Purpose) -> bool {
        self.lock().open.get(&(file, purpose)) == Some(&private)
    }

    /// The application is about to close `fd` (or replace it, `dup2`): the
    /// private descriptors of its file are replaced by the placeholder
    /// pipe now, dropping only the POSIX locks that close drops, and closed
    /// by the advice thread later. A number of the library's own that the
    /// application closes is forgotten, never closed twice. The caller
    /// holds the re-entrancy guard; `advice` is the process's advice thread.
    pub(crate) fn before_close(&'static self, fd: RawFd, advice: &'static AdviceThread) {
        if fd < 0 || !self.any.load(Ordering::Acquire) {
            return;
        }
        let mut table = self.lock();
        if table.retired.remove(&fd) {
            return;
        }
        table.open.retain(|_, private| *private != fd);
        let Some(file) = FileId::of(fd) else {
            return;
        };
        let Some(placeholder) = placeholder() else {
            return;
        };
        let mut retired = Vec::new();
        table.open.retain(|(of, _), private| {
            // SAFETY: dup3 onto a number of the library's own, from its placeholder pipe.
            let replaced = *of == file
                && unsafe { libc::syscall(libc::SYS_dup3, placeholder, *private, libc::O_CLOEXEC) }
                    >= 0;
            if replaced {
                retired.push(*private);
            }
            !replaced
        });
        if retired.is_empty() {
            return;
        }
        table.retired.extend(&retired);
        drop(table);
        let job: AdviceJob = Box::new(move || self.close_retired(&retired));
        if let Err(job) = advice.run_in_background(job) {
            job();
        }
    }

    /// Closes the retired numbers the application has not closed itself.
    fn close_retired(&self, retired: &[RawFd]) {
        let mut table = self.lock();
        for fd in retired {
            if table.retired.remove(fd) {
                close_raw(*fd);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The read end of a pipe of the library's own, which retired private
/// descriptors are made to name until they are closed: closing it releases
/// no lock the application could hold. `None` if no pipe could be made
/// (then no private descriptor is opened).
fn placeholder() -> Option<RawFd> {
    static PLACEHOLDER: OnceLock<Option<RawFd>> = OnceLock::new();
    *PLACEHOLDER.get_or_init(|| {
        let mut ends = [-1; 2];
        // SAFETY: pipe2 writes two descriptors into the array it is given.
        if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        close_raw(ends[1]);
        Some(ends[0])
    })
}

/// `close(2)` of a descriptor of the library's own, past the interposers.
fn close_raw(fd: RawFd) {
    // SAFETY: closes a descriptor the library opened, once.
    unsafe { libc::syscall(libc::SYS_close, fd) };
}

impl AdviceDescriptors {
    /// A region on `fd` was registered: remember the file `fd` names and
    /// whether it is on FUSE. A number that now names another file than its
    /// earlier regions did starts afresh; `privates` are the process's
    /// private descriptors (one still unread is not asked whether it is on
    /// FUSE).
    pub(crate) fn region_added(&self, fd: RawFd, privates: &PrivateDescriptors) {
        let Some(file) = FileId::of(fd) else {
            return;
        };
        let mut registered = self.lock();
        match registered.get_mut(&fd) {
            Some(known) if known.file == file => {
                known.regions += 1;
                known.closing = false;
            }
            _ => {
                let unread = privates.is_unread(fd);
                let fuse = !unread && is_fuse(fd);
                registered.insert(
                    fd,
                    Registered {
                        file,
                        regions: 1,
                        fuse,
                        closing: false,
                    },
                );
            }
        }
    }

    /// A region on `fd` was unregistered: forget `fd` with its last region
    /// (a private descriptor of its file stays, see the module comment).
    pub(crate) fn region_removed(&self, fd: RawFd) {
        let mut registered = self.lock();
        let Some(known) = registered.get_mut(&fd) else {
            return;
        };
        known.regions = known.regions.saturating_sub(1);
        if known.regions == 0 {
            registered.remove(&fd);
        }
    }

    /// The application is closing `fd`, or `fd` no longer names the file
    /// of its regions (which are retired): advice still planned for it is
    /// dropped from now on. Called before the process's private
    /// descriptors of the file are retired (`track::note_close`): a round
    /// routed between that retirement and the real close would otherwise
    /// open a new private descriptor of the file, which nothing would
    /// close (it would keep a FUSE filesystem busy until the process
    /// exits). A round being routed now finishes first (the lock), so a
    /// private descriptor it opens is retired with the others.
    pub(crate) fn closing(&self, fd: RawFd) {
        if let Some(known) = self.lock().get_mut(&fd) {
            known.closing = true;
        }
    }

    /// The client is gone: advice still planned for any of its descriptors
    /// is dropped, for the same reason as in [`AdviceDescriptors::closing`]
    /// (the application may close its files next).
    pub(crate) fn closing_all(&self) {
        for known in self.lock().values_mut() {
            known.closing = true;
        }
    }

    /// Prepares `plan` for issuing: drops the advice of every registered
    /// descriptor that no longer names the file it named at registration,
    /// or is being closed (returned, so the caller can retire its regions), and rewrites the
    /// descriptors of FUSE files to their private ones. Descriptors listed
    /// without a region are advised as they are; `privates` are the
    /// process's private descriptors.
    pub(crate) fn route(&self, plan: &mut RoundPlan, privates: &PrivateDescriptors) -> Vec<RawFd> {
        let registered = self.lock();
        let mut checked: HashMap<RawFd, Option<RawFd>> = HashMap::new();
        let mut target = |fd: RawFd| -> Option<RawFd> {
            *checked
                .entry(fd)
                .or_insert_with(|| match registered.get(&fd) {
                    Some(known) if !known.closing && FileId::of(fd) == Some(known.file) => Some(
                        known
                            .fuse
                            .then(|| privates.for_file(fd, known.file, Purpose::Regions))
                            .flatten()
                            .unwrap_or(fd),
                    ),
                    Some(_) => None,
                    None => Some(fd),
                })
        };
        for ranges in [&mut plan.evict, &mut plan.fetch, &mut plan.reverse] {
            route_ranges(ranges, &mut target);
        }
        checked
            .into_iter()
            .filter_map(|(fd, target)| target.is_none().then_some(fd))
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<RawFd, Registered>> {
        self.registered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Keeps the ranges whose descriptor has a target, rewritten to it.
fn route_ranges(ranges: &mut Vec<PageRange>, target: &mut impl FnMut(RawFd) -> Option<RawFd>) {
    ranges.retain_mut(|range| match target(range.fd) {
        Some(fd) => {
            range.fd = fd;
            true
        }
        None => false,
    });
}

/// True if `fd`'s file lives on a FUSE filesystem.
fn is_fuse(fd: RawFd) -> bool {
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: fstatfs writes a struct statfs into the buffer on success.
    if unsafe { libc::fstatfs(fd, stat.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: fstatfs succeeded, so the struct is initialised.
    unsafe { stat.assume_init() }.f_type == FUSE_SUPER_MAGIC
}

/// A new read-only, close-on-exec descriptor of `fd`'s file, if that is
/// still `file`. The file is first pinned with an `O_PATH` descriptor and
/// checked through it: closing an `O_PATH` descriptor releases no lock,
/// while closing a read-only one of another file (the application may have
/// reused the number meanwhile) would release the process's locks on it.
fn reopen_read_only(fd: RawFd, file: FileId) -> Option<RawFd> {
    let open = |path: String, flags: libc::c_int| {
        let path = CString::new(path).ok()?;
        // SAFETY: open with a valid NUL-terminated path; the result is checked.
        let raw = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
        (raw >= 0).then_some(raw)
    };
    let pinned = open(format!("/proc/self/fd/{fd}"), libc::O_PATH)?;
    let private = (FileId::of(pinned) == Some(file))
        .then(|| open(format!("/proc/self/fd/{pinned}"), libc::O_RDONLY))
        .flatten();
    close_raw(pinned);
    private
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn plan_on(fds: &[RawFd]) -> RoundPlan {
        RoundPlan {
            fetch: fds
                .iter()
                .map(|&fd| PageRange {
                    fd,
                    start: 0,
                    len: 1,
                })
                .collect(),
            ..RoundPlan::default()
        }
    }

    /// A table holding a private descriptor of `file` (opened as on FUSE, off it).
    fn table_with_private_of(file: &std::fs::File) -> (&'static PrivateDescriptors, RawFd) {
        let id = FileId::of(file.as_raw_fd()).unwrap();
        let privates: &'static PrivateDescriptors = Box::leak(Box::default());
        placeholder().expect("a pipe");
        let private = reopen_read_only(file.as_raw_fd(), id).unwrap();
        privates.lock().open.insert((id, Purpose::Streams), private);
        privates.any.store(true, Ordering::Release);
        (privates, private)
    }

    fn names_a_pipe(fd: RawFd) -> bool {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat writes a struct stat into the buffer on success.
        unsafe {
            libc::fstat(fd, stat.as_mut_ptr()) == 0
                && (stat.assume_init().st_mode & libc::S_IFMT) == libc::S_IFIFO
        }
    }

    #[test]
    fn a_private_descriptor_is_retired_only_by_a_close_of_its_file() {
        let (file, other) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
        let (privates, private) = table_with_private_of(&file);
        privates.before_close(other.as_raw_fd(), Box::leak(Box::default()));
        assert!(!names_a_pipe(private), "retired by another file's close");
        privates.before_close(file.as_raw_fd(), Box::leak(Box::default()));
        assert!(names_a_pipe(private) || FileId::of(private).is_none());
        let id = FileId::of(file.as_raw_fd()).unwrap();
        assert!(!privates.is_current(private, id, Purpose::Streams));
    }

    #[test]
    fn a_private_number_the_application_closes_is_forgotten_not_closed_again() {
        let file = tempfile::tempfile().unwrap();
        let (privates, private) = table_with_private_of(&file);
        // The application closes every descriptor (a daemon's loop), ours included.
        privates.before_close(private, Box::leak(Box::default()));
        let id = FileId::of(file.as_raw_fd()).unwrap();
        assert!(!privates.is_current(private, id, Purpose::Streams));
        assert!(
            !names_a_pipe(private),
            "replaced instead of left to the application"
        );
        assert!(privates.lock().retired.is_empty());
        close_raw(private);
    }

    #[test]
    fn bad_descriptors_are_not_fuse() {
        assert!(!is_fuse(-1));
    }

    #[test]
    fn advice_for_a_registered_descriptor_is_kept() {
        let file = tempfile::tempfile().unwrap();
        let descriptors = AdviceDescriptors::default();
        descriptors.region_added(file.as_raw_fd(), &PrivateDescriptors::default());
        let mut plan = plan_on(&[file.as_raw_fd()]);
        assert!(descriptors
            .route(&mut plan, &PrivateDescriptors::default())
            .is_empty());
        assert_eq!(plan.fetch.len(), 1);
    }

    #[test]
    fn a_descriptor_naming_another_file_is_not_advised() {
        let first = tempfile::tempfile().unwrap();
        let descriptors = AdviceDescriptors::default();
        descriptors.region_added(first.as_raw_fd(), &PrivateDescriptors::default());
        let second = tempfile::tempfile().unwrap();
        // SAFETY: both descriptors are open; dup2 makes first's number name second's file, as a close and a
        // reuse of the number would (atomically, so no other test thread can take the number meanwhile).
        assert!(unsafe { libc::dup2(second.as_raw_fd(), first.as_raw_fd()) } >= 0);
        let mut plan = plan_on(&[first.as_raw_fd(), second.as_raw_fd()]);
        assert_eq!(
            descriptors.route(&mut plan, &PrivateDescriptors::default()),
            vec![first.as_raw_fd()]
        );
        assert_eq!(
            plan.fetch,
            plan_on(&[second.as_raw_fd()]).fetch,
            "advised another file"
        );
    }

    #[test]
    fn a_closed_descriptor_is_not_advised() {
        let file = tempfile::tempfile().unwrap();
        let fd = file.as_raw_fd();
        let descriptors = AdviceDescriptors::default();
        descriptors.region_added(fd, &PrivateDescriptors::default());
        drop(file);
        let mut plan = plan_on(&[fd]);
        assert_eq!(
            descriptors.route(&mut plan, &PrivateDescriptors::default()),
            vec![fd]
        );
        assert!(plan.fetch.is_empty());
    }
}
