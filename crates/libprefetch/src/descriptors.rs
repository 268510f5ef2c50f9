//! Private read-only descriptors through which a client advises files on
//! FUSE, so that the kernel does not drop the advice.
//!
//! The kernel's `fuse_readahead` skips the rest of a readahead batch (a
//! WILLNEED call's included) when the connection is congested (by default
//! 3/4 of max_background, that is 9 queued requests) and the descriptor's
//! readahead state, `f_ra.async_size`, covers what is left of the batch.
//! Sequential reads through a descriptor grow its `async_size` to the full
//! read-ahead window (32 pages on FUSE, the size of one WILLNEED batch), so
//! advice through the application's own descriptor is dropped whenever the
//! connection is busy, which a prefetcher makes it. A descriptor that nobody
//! reads keeps `async_size` at 0, and its advice is queued however full the
//! connection is. Measured on `prefetch emulate` (64 MiB file, 16
//! sequential reads first, then WILLNEED of 62 MiB in 128 KiB calls): 55% of
//! the pages advised through the read descriptor were loaded, 100% through a
//! fresh one; SQLite's index scan of a 256 MiB database re-read the file ~30
//! times and did not finish in 240 s, and finished in 5.9 s once advised
//! through a descriptor of its own.
//!
//! A private descriptor is opened through `/proc/self/fd` (the same file,
//! even if renamed or unlinked since), read-only and close-on-exec, when a
//! client registers its first region on a FUSE file descriptor, and closed
//! with that client's last region on it. Side effects, for the record: one
//! more open file per tracked FUSE file; a FUSE filesystem that does not keep
//! its cache across opens (no FOPEN_KEEP_CACHE) drops the file's cached pages
//! at that open, as it does at any open; an unlinked file's space is freed
//! only when the region is unregistered; a forked child inherits the
//! descriptor. If the open fails, advice goes through the application's
//! descriptor as before.
//!
//! Deviations: the paper advises through the application's descriptors (its
//! files were on ext3, whose readahead never drops advice).

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

use plan::RoundPlan;

/// The statfs magic number of FUSE filesystems.
const FUSE_SUPER_MAGIC: libc::__fsword_t = 0x6573_5546;

/// One private descriptor and how many of the client's regions use it.
struct Private {
    file: Arc<OwnedFd>,
    regions: usize,
}

/// A client's private advice descriptors, keyed by the application's descriptor.
#[derive(Default)]
pub(crate) struct AdviceDescriptors {
    open: Mutex<HashMap<RawFd, Private>>,
}

/// Keeps the private descriptors a plan was routed through open until the
/// advice has been issued (a concurrent unregister cannot close them).
pub(crate) struct Routed {
    _open: Vec<Arc<OwnedFd>>,
}

impl AdviceDescriptors {
    /// A region on `fd` was registered: on FUSE, make sure a private
    /// descriptor exists for it.
    pub(crate) fn region_added(&self, fd: RawFd) {
        if !is_fuse(fd) {
            return;
        }
        let mut open = self.lock();
        if let Some(private) = open.get_mut(&fd) {
            private.regions += 1;
        } else if let Some(file) = reopen_read_only(fd) {
            open.insert(
                fd,
                Private {
                    file: Arc::new(file),
                    regions: 1,
                },
            );
        }
    }

    /// A region on `fd` was unregistered: close the private descriptor with
    /// its last region.
    pub(crate) fn region_removed(&self, fd: RawFd) {
        let mut open = self.lock();
        if let Some(private) = open.get_mut(&fd) {
            private.regions -= 1;
            if private.regions == 0 {
                open.remove(&fd);
            }
        }
    }

    /// Rewrites the descriptors of `plan` to their private ones, if any;
    /// the returned guard keeps those open while the advice is issued.
    pub(crate) fn route(&self, plan: &mut RoundPlan) -> Routed {
        let open = self.lock();
        let mut kept = Vec::new();
        if open.is_empty() {
            return Routed { _open: kept };
        }
        let ranges = plan
            .evict
            .iter_mut()
            .chain(plan.fetch.iter_mut())
            .chain(plan.reverse.iter_mut());
        for range in ranges {
            if let Some(private) = open.get(&range.fd) {
                range.fd = private.file.as_raw_fd();
                if !kept.iter().any(|f| Arc::ptr_eq(f, &private.file)) {
                    kept.push(Arc::clone(&private.file));
                }
            }
        }
        Routed { _open: kept }
    }

    /// The private descriptor used for `fd`, if any.
    #[cfg(test)]
    fn private_of(&self, fd: RawFd) -> Option<RawFd> {
        self.lock().get(&fd).map(|p| p.file.as_raw_fd())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RawFd, Private>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
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

/// A new read-only, close-on-exec descriptor of `fd`'s file.
fn reopen_read_only(fd: RawFd) -> Option<OwnedFd> {
    let path = CString::new(format!("/proc/self/fd/{fd}")).ok()?;
    // SAFETY: open with a valid NUL-terminated path; the result is checked.
    let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    // SAFETY: a non-negative result is a descriptor we now own.
    (raw >= 0).then(|| unsafe { OwnedFd::from_raw_fd(raw) })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
