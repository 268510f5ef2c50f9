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
//! file (device and inode) in the process, shared by every client, and
//! **never closed**: on Linux, closing any descriptor of a file releases
//! every POSIX lock the process holds on that file, so closing one while the
//! application holds a lock (a database's, for instance) would silently
//! drop it. At most [`MAX_PRIVATE`] files get one; beyond that, advice goes
//! through the application's descriptor as if no private one could be
//! opened. Side effects, for the record: up to [`MAX_PRIVATE`] more open
//! files; an unlinked file's space is freed only when the process exits; a
//! FUSE filesystem that does not keep its cache across opens
//! (no FOPEN_KEEP_CACHE) drops the file's cached pages at that open, as it
//! does at any open; a forked child inherits the descriptors (and opens its
//! own if it registers regions).
//!
//! Deviations: the paper advises through the application's descriptors (its
//! files were on ext3, whose readahead never drops advice).

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::RawFd;
use std::sync::{Mutex, MutexGuard};

use plan::{PageRange, RoundPlan};

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

/// The process's private descriptors, by file; opened on first need, never
/// closed (see the module comment). Lives in the per-process globals, so a
/// forked child starts with an empty table.
#[derive(Default)]
pub(crate) struct PrivateDescriptors {
    open: Mutex<HashMap<FileId, RawFd>>,
}

impl PrivateDescriptors {
    /// The private descriptor of `fd`'s file `file`, opened if needed;
    /// `None` off FUSE, past [`MAX_PRIVATE`] files, or if the open fails.
    fn for_file(&self, fd: RawFd, file: FileId) -> Option<RawFd> {
        if !is_fuse(fd) {
            return None;
        }
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&private) = open.get(&file) {
            return Some(private);
        }
        if open.len() >= MAX_PRIVATE {
            return None;
        }
        let private = reopen_read_only(fd).filter(|&p| FileId::of(p) == Some(file))?;
        open.insert(file, private);
        Some(private)
    }
}

impl AdviceDescriptors {
    /// A region on `fd` was registered: remember the file `fd` names and,
    /// on FUSE, the private descriptor to advise it through. A number that
    /// now names another file than its earlier regions did starts afresh.
    pub(crate) fn region_added(&self, fd: RawFd) {
        let Some(file) = FileId::of(fd) else {
            return;
        };
        let mut registered = self.lock();
        match registered.get_mut(&fd) {
            Some(known) if known.file == file => known.regions += 1,
            _ => {
                let private = globals().private_descriptors.for_file(fd, file);
                registered.insert(
                    fd,
                    Registered {
                        file,
                        regions: 1,
                        private,
                    },
                );
            }
        }
    }

    /// A region on `fd` was unregistered: forget `fd` with its last region
    /// (its private descriptor, if any, stays open for the process).
    pub(crate) fn region_removed(&self, fd: RawFd) {
        let mut registered = self.lock();
        if let Some(known) = registered.get_mut(&fd) {
            known.regions = known.regions.saturating_sub(1);
            if known.regions == 0 {
                registered.remove(&fd);
            }
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
