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
//! A private descriptor is opened through `/proc/self/fd` (the same file,
//! even if renamed or unlinked since), read-only and close-on-exec, once per
//! file (device and inode) in the process, and shared by every region on
//! that file. It is closed when the file's last region goes, **unless the
//! process holds a POSIX lock on the file** (`/proc/locks`): on Linux,
//! closing any descriptor of a file releases every POSIX lock the process
//! holds on it, so closing one under a database's lock would silently drop
//! that lock. Such a close is deferred, and retried whenever a region is
//! unregistered, until the locks are gone. (Keeping descriptors open for
//! good is no answer: an open file keeps its FUSE filesystem from being
//! unmounted.) The check and the close are not atomic: a lock the
//! application takes on the file from another thread in the microseconds
//! between them would be dropped; applications that lock a FUSE file should
//! unregister its regions while they hold no lock on it, or use OFD locks
//! (`F_OFD_SETLK`), which a close of another descriptor never releases.
//! At most [`MAX_PRIVATE`] files get one; beyond that, advice goes through
//! the application's descriptor as if no private one could be opened. Side
//! effects, for the record: one more open file per tracked FUSE file; an
//! unlinked file's space is freed only when its private descriptor is
//! closed; a FUSE filesystem that does not keep its cache across opens (no
//! FOPEN_KEEP_CACHE) drops the file's cached pages at that open, as it does
//! at any open; a forked child inherits the descriptors (and opens its own
//! if it registers regions).
//!
//! Deviations: the paper advises through the application's descriptors (its
//! files were on ext3, whose readahead never drops advice).

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::RawFd;
use std::sync::{Mutex, MutexGuard};

use plan::{PageRange, RoundPlan};

use crate::rawio;
use crate::registry::globals;

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

impl From<&crate::observe::FileStat> for FileId {
    fn from(stat: &crate::observe::FileStat) -> FileId {
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
    /// The private descriptor advice goes through (FUSE files only).
    private: Option<RawFd>,
}

/// A client's descriptors, keyed by the application's descriptor number.
#[derive(Default)]
pub(crate) struct AdviceDescriptors {
    registered: Mutex<HashMap<RawFd, Registered>>,
}

/// The process's private descriptors, by file, with the number of regions
/// using each; closed with their last region unless the process holds a
/// POSIX lock on the file (see the module comment). Lives in the
/// per-process globals, so a forked child starts with an empty table.
#[derive(Default)]
pub(crate) struct PrivateDescriptors {
    open: Mutex<HashMap<FileId, Private>>,
}

/// One private descriptor and the regions using it (0: its close is
/// deferred until the process holds no POSIX lock on the file).
struct Private {
    fd: RawFd,
    users: usize,
}

impl PrivateDescriptors {
    /// The private descriptor of `fd`'s file `file`, opened if needed;
    /// `None` off FUSE, past [`MAX_PRIVATE`] files, or if the open fails.
    pub(crate) fn for_file(&self, fd: RawFd, file: FileId) -> Option<RawFd> {
        if !is_fuse(fd) {
            return None;
        }
        let mut open = self.lock();
        if let Some(private) = open.get_mut(&file) {
            private.users += 1;
            return Some(private.fd);
        }
        if open.len() >= MAX_PRIVATE {
            return None;
        }
        let fd = reopen_read_only(fd).filter(|&p| FileId::of(p) == Some(file))?;
        open.insert(file, Private { fd, users: 1 });
        Some(fd)
    }

    /// A region using `file`'s private descriptor went: close it with its
    /// last user, and every deferred one, where no POSIX lock of this
    /// process on the file forbids it.
    pub(crate) fn release(&self, file: FileId) {
        let mut open = self.lock();
        if let Some(private) = open.get_mut(&file) {
            private.users = private.users.saturating_sub(1);
        }
        if !open.values().any(|private| private.users == 0) {
            return;
        }
        let locked = posix_locked_files();
        open.retain(|file, private| {
            let keep = private.users > 0 || locked.contains(file);
            if !keep {
                // SAFETY: the descriptor was opened by reopen_read_only and
                // is closed once, here, as it leaves the table.
                unsafe { libc::close(private.fd) };
            }
            keep
        });
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<FileId, Private>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The files on which this process holds POSIX (`fcntl`) locks, from
/// `/proc/locks` (raw reads: `rawio.rs`). Lines read
/// `1: POSIX  ADVISORY  WRITE 4242 fd:01:1234 0 EOF` (`->` before `POSIX`
/// on a waiter's line); device numbers are hexadecimal major:minor.
fn posix_locked_files() -> Vec<FileId> {
    let pid = std::process::id().to_string();
    let Some(text) = rawio::read_to_string("/proc/locks") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().filter(|f| *f != "->").collect();
            let (&kind, &owner, &file) = (fields.get(1)?, fields.get(4)?, fields.get(5)?);
            (kind == "POSIX" && owner == pid).then(|| parse_lock_file(file))?
        })
        .collect()
}

/// `fd:01:1234` (hex major, hex minor, decimal inode) as a [`FileId`].
fn parse_lock_file(text: &str) -> Option<FileId> {
    let mut parts = text.split(':');
    let major = u32::from_str_radix(parts.next()?, 16).ok()?;
    let minor = u32::from_str_radix(parts.next()?, 16).ok()?;
    let ino = parts.next()?.parse().ok()?;
    Some(FileId {
        dev: libc::makedev(major, minor),
        ino,
    })
}

impl AdviceDescriptors {
    /// A region on `fd` was registered: remember the file `fd` names and,
    /// on FUSE, the private descriptor to advise it through. A number that
    /// now names another file than its earlier regions did starts afresh.
    pub(crate) fn region_added(&self, fd: RawFd) {
        let Some(file) = FileId::of(fd) else {
            return;
        };
        let replaced = {
            let mut registered = self.lock();
            match registered.get_mut(&fd) {
                Some(known) if known.file == file => {
                    known.regions += 1;
                    return;
                }
                _ => {
                    // One use of the private descriptor per registered number.
                    let private = globals().private_descriptors.for_file(fd, file);
                    let entry = Registered {
                        file,
                        regions: 1,
                        private,
                    };
                    registered.insert(fd, entry)
                }
            }
        };
        if let Some(old) = replaced.filter(|old| old.private.is_some()) {
            globals().private_descriptors.release(old.file);
        }
    }

    /// A region on `fd` was unregistered: forget `fd` with its last region,
    /// and release its private descriptor, if any.
    pub(crate) fn region_removed(&self, fd: RawFd) {
        let released = {
            let mut registered = self.lock();
            let Some(known) = registered.get_mut(&fd) else {
                return;
            };
            known.regions = known.regions.saturating_sub(1);
            if known.regions > 0 {
                return;
            }
            registered.remove(&fd).filter(|gone| gone.private.is_some())
        };
        if let Some(gone) = released {
            globals().private_descriptors.release(gone.file);
        }
    }

    /// Prepares `plan` for issuing: drops the advice of every registered
    /// descriptor that no longer names the file it named at registration
    /// (returned, so the caller can retire its regions), and rewrites the
    /// descriptors of FUSE files to their private ones. Descriptors listed
    /// without a region are advised as they are.
    pub(crate) fn route(&self, plan: &mut RoundPlan) -> Vec<RawFd> {
        let registered = self.lock();
        let mut checked: HashMap<RawFd, Option<RawFd>> = HashMap::new();
        let mut target = |fd: RawFd| -> Option<RawFd> {
            *checked
                .entry(fd)
                .or_insert_with(|| match registered.get(&fd) {
                    Some(known) => {
                        (FileId::of(fd) == Some(known.file)).then_some(known.private.unwrap_or(fd))
                    }
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

    /// The private descriptor used for `fd`, if any.
    #[cfg(test)]
    fn private_of(&self, fd: RawFd) -> Option<RawFd> {
        self.lock().get(&fd).and_then(|known| known.private)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<RawFd, Registered>> {
        self.registered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for AdviceDescriptors {
    /// The client is gone: its remaining registered numbers release their
    /// private descriptors.
    fn drop(&mut self) {
        let registered = std::mem::take(&mut *self.lock());
        for known in registered.into_values().filter(|k| k.private.is_some()) {
            globals().private_descriptors.release(known.file);
        }
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

/// A new read-only, close-on-exec descriptor of `fd`'s file; the caller
/// keeps it open for the life of the process.
fn reopen_read_only(fd: RawFd) -> Option<RawFd> {
    let path = CString::new(format!("/proc/self/fd/{fd}")).ok()?;
    // SAFETY: open with a valid NUL-terminated path; the result is checked.
    let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    (raw >= 0).then_some(raw)
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

    #[test]
    fn files_off_fuse_get_no_private_descriptor() {
        let file = tempfile::tempfile().unwrap();
        let descriptors = AdviceDescriptors::default();
        descriptors.region_added(file.as_raw_fd());
        assert_eq!(descriptors.private_of(file.as_raw_fd()), None);
    }

    #[test]
    fn lock_lines_name_device_and_inode() {
        let file = parse_lock_file("fd:01:1234").unwrap();
        assert_eq!(
            file,
            FileId {
                dev: libc::makedev(0xfd, 1),
                ino: 1234
            }
        );
        assert_eq!(parse_lock_file("00:2f:77").map(|f| f.ino), Some(77));
        assert_eq!(parse_lock_file("junk"), None);
    }

    #[test]
    fn a_posix_lock_of_this_process_is_found() {
        let file = tempfile::tempfile().unwrap();
        let id = FileId::of(file.as_raw_fd()).unwrap();
        assert!(!posix_locked_files().contains(&id));
        let lock = libc::flock {
            l_type: libc::F_WRLCK as libc::c_short,
            l_whence: libc::SEEK_SET as libc::c_short,
            l_start: 0,
            l_len: 0,
            l_pid: 0,
        };
        // SAFETY: F_SETLK with a valid struct flock on an open descriptor.
        assert_eq!(
            unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) },
            0
        );
        assert!(posix_locked_files().contains(&id));
    }

    #[test]
    fn bad_descriptors_are_not_fuse() {
        assert!(!is_fuse(-1));
    }

    #[test]
    fn advice_for_a_registered_descriptor_is_kept() {
        let file = tempfile::tempfile().unwrap();
        let descriptors = AdviceDescriptors::default();
        descriptors.region_added(file.as_raw_fd());
        let mut plan = plan_on(&[file.as_raw_fd()]);
        assert!(descriptors.route(&mut plan).is_empty());
        assert_eq!(plan.fetch.len(), 1);
    }

    #[test]
    fn a_descriptor_naming_another_file_is_not_advised() {
        let first = tempfile::tempfile().unwrap();
        let descriptors = AdviceDescriptors::default();
        descriptors.region_added(first.as_raw_fd());
        let second = tempfile::tempfile().unwrap();
        // SAFETY: both descriptors are open; dup2 makes first's number name second's file, as a close and a
        // reuse of the number would (atomically, so no other test thread can take the number meanwhile).
        assert!(unsafe { libc::dup2(second.as_raw_fd(), first.as_raw_fd()) } >= 0);
        let mut plan = plan_on(&[first.as_raw_fd(), second.as_raw_fd()]);
        assert_eq!(descriptors.route(&mut plan), vec![first.as_raw_fd()]);
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
        descriptors.region_added(fd);
        drop(file);
        let mut plan = plan_on(&[fd]);
        assert_eq!(descriptors.route(&mut plan), vec![fd]);
        assert!(plan.fetch.is_empty());
    }
}
