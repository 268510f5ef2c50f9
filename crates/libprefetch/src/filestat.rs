//! What `fstat` says of a file being read: the identity (device, inode), size and modification
//! time by which the observers of reads (`observe.rs`: recording, replay, competitive prefetching,
//! the page-cache budget) know a file, however it was opened.

use std::os::fd::RawFd;

/// What `fstat` says of a file being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileStat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
}

impl FileStat {
    /// The regular file `fd` names, or `None` (not open, not a regular file).
    pub(crate) fn of(fd: RawFd) -> Option<FileStat> {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat writes a struct stat into the buffer on success.
        if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: fstat succeeded, so the struct is initialised.
        Some(unsafe { stat.assume_init() })
            .filter(|s| s.st_mode & libc::S_IFMT == libc::S_IFREG)
            .map(|s| FileStat::from_stat(&s))
    }

    /// The fields of a `struct stat` this module uses.
    pub(crate) fn from_stat(stat: &libc::stat) -> FileStat {
        FileStat {
            dev: stat.st_dev,
            ino: stat.st_ino,
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime_ns: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
        }
    }
}
