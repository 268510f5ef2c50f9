//! How much one WILLNEED call reads on the device holding a file, and the
//! device's measured profile (`profile.rs`).
//!
//! The kernel's `force_page_cache_ra` loads at most
//! max(bdi io_pages, file read-ahead pages) per posix_fadvise(WILLNEED)
//! call, that is max(max_sectors_kb, read_ahead_kb) of the backing device:
//! 8 MiB on this machine's disk, but 128 KiB on a FUSE mount (such as
//! `prefetch emulate`). Ranges longer than that must be split or their tail
//! is silently not prefetched.
//!
//! The default when sysfs says nothing is the kernel's default read-ahead,
//! 128 KiB.
//!
//! What sysfs and the stored profile say of a device is read once per
//! [`FRESH`] per device and mount, not per call: a replay registers one
//! region per file, and reading them afresh for each cost five opens and
//! reads per file (2,600 for `git grep`'s 520 files).

use std::os::fd::RawFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The kernel's default read-ahead (VM_READAHEAD_PAGES).
const DEFAULT_BYTES: u64 = 128 << 10;

/// How long what was read of a device is used before it is read again
/// (a user may change `read_ahead_kb` or store a profile while a program
/// runs).
const FRESH: Duration = Duration::from_secs(1);

/// What sysfs says of a device, and its usable profile for one mount.
#[derive(Clone, Copy, Default)]
pub(crate) struct Facts {
    read_ahead: Option<u64>,
    max_sectors: Option<u64>,
    /// The device's stored profile, if usable for the file's mount.
    pub(crate) profile: Option<crate::profile::DeviceProfile>,
}

/// Device, mount, when read, and what was read, one entry per device and
/// mount seen lately.
type Memo = Vec<((u32, u32, Option<u64>), Instant, Facts)>;

static MEMO: Mutex<Memo> = Mutex::new(Vec::new());

impl Facts {
    /// What is known of `fd`'s device (and mount), read within [`FRESH`]
    /// (nothing if `fd` cannot be looked at). Read afresh, without the
    /// memo, if another thread holds it (a forked child whose parent held
    /// it).
    pub(crate) fn of(fd: RawFd) -> Facts {
        let Some((major, minor)) = device_of(fd) else {
            return Facts::default();
        };
        let key = (major, minor, crate::profile::mount_id_of(fd));
        let Ok(mut memo) = MEMO.try_lock() else {
            return Facts::read(key);
        };
        let now = Instant::now();
        memo.retain(|(_, read_at, _)| now.duration_since(*read_at) < FRESH);
        if let Some((_, _, facts)) = memo.iter().find(|(k, _, _)| *k == key) {
            return *facts;
        }
        let facts = Facts::read(key);
        memo.push((key, now, facts));
        facts
    }

    /// Reads sysfs and the stored profile of device `major:minor` for a
    /// file on mount `mount_id`.
    fn read((major, minor, mount_id): (u32, u32, Option<u64>)) -> Facts {
        let dev = format!("{major}:{minor}");
        Facts {
            read_ahead: read_kib(&format!("/sys/class/bdi/{dev}/read_ahead_kb")),
            max_sectors: read_kib(&format!("/sys/dev/block/{dev}/queue/max_sectors_kb"))
                .or_else(|| read_kib(&format!("/sys/dev/block/{dev}/../queue/max_sectors_kb"))),
            profile: crate::profile::usable(major, minor, mount_id),
        }
    }

    /// Bytes one WILLNEED call loads on the device.
    pub(crate) fn willneed_limit(&self) -> u64 {
        match (self.read_ahead, self.max_sectors) {
            (None, None) => DEFAULT_BYTES,
            (a, b) => a.unwrap_or(0).max(b.unwrap_or(0)).max(4096),
        }
    }

    /// The kernel's read-ahead window on the device (`read_ahead_kb`), in
    /// pages of `page_size` bytes; 0 if sysfs does not say.
    pub(crate) fn readahead_pages(&self, page_size: u64) -> u64 {
        self.read_ahead.map_or(0, |bytes| bytes / page_size.max(1))
    }
}

/// Bytes one WILLNEED call loads for files on `fd`'s device.
pub fn willneed_limit(fd: RawFd) -> u64 {
    Facts::of(fd).willneed_limit()
}

/// Bytes around a page of `fd`'s file that one request reads in as cheaply
/// as the page alone: the kernel's read-around window (`read_ahead_kb`,
/// what a fault or a read brings in with the page), as far as reading them
/// costs less than a separate request (the device's break-even gap, from
/// its measured profile). 0 without a profile or a read-ahead window.
pub fn read_around_bytes(fd: RawFd) -> u64 {
    let facts = Facts::of(fd);
    facts.profile.map_or(0, |profile| {
        facts
            .read_ahead
            .unwrap_or(0)
            .min(profile.break_even_gap_bytes())
    })
}

/// The kernel's read-ahead window on `fd`'s device (`read_ahead_kb`), in
/// pages of `page_size` bytes; 0 if sysfs does not say.
pub(crate) fn readahead_pages(fd: RawFd, page_size: u64) -> u64 {
    Facts::of(fd).readahead_pages(page_size)
}

/// Major and minor number of the device holding `fd`'s file.
pub(crate) fn device_of(fd: RawFd) -> Option<(u32, u32)> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a struct stat into the buffer on success.
    if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded, so the struct is initialised.
    let dev = unsafe { stat.assume_init() }.st_dev;
    Some((libc::major(dev), libc::minor(dev)))
}

/// A sysfs value in KiB, as bytes.
fn read_kib(path: &str) -> Option<u64> {
    crate::rawio::read_to_string(path)?
        .trim()
        .parse::<u64>()
        .ok()
        .map(|kib| kib << 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn limit_of_a_real_file_is_at_least_the_default() {
        let file = tempfile::tempfile().unwrap();
        assert!(willneed_limit(file.as_raw_fd()) >= DEFAULT_BYTES.min(4096));
    }

    #[test]
    fn bad_descriptor_gets_the_default() {
        assert_eq!(willneed_limit(-1), DEFAULT_BYTES);
    }
}
