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

use std::os::fd::RawFd;

/// The kernel's default read-ahead (VM_READAHEAD_PAGES).
const DEFAULT_BYTES: u64 = 128 << 10;

/// Bytes one WILLNEED call loads for files on `fd`'s device.
pub fn willneed_limit(fd: RawFd) -> u64 {
    let Some((major, minor)) = device_of(fd) else {
        return DEFAULT_BYTES;
    };
    let dev = format!("{major}:{minor}");
    let read_ahead = read_kib(&format!("/sys/class/bdi/{dev}/read_ahead_kb"));
    let max_sectors = read_kib(&format!("/sys/dev/block/{dev}/queue/max_sectors_kb"))
        .or_else(|| read_kib(&format!("/sys/dev/block/{dev}/../queue/max_sectors_kb")));
    match (read_ahead, max_sectors) {
        (None, None) => DEFAULT_BYTES,
        (a, b) => a.unwrap_or(0).max(b.unwrap_or(0)).max(4096),
    }
}

/// The kernel's read-ahead window on `fd`'s device (`read_ahead_kb`), in
/// pages of `page_size` bytes; 0 if sysfs does not say.
pub(crate) fn readahead_pages(fd: RawFd, page_size: u64) -> u64 {
    let Some((major, minor)) = device_of(fd) else {
        return 0;
    };
    read_kib(&format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb"))
        .map_or(0, |bytes| bytes / page_size.max(1))
}

/// The usable profile of the device holding `fd`'s file: stored and not
/// stale for the file's mount (`profile.rs`).
pub fn profile(fd: RawFd) -> Option<crate::profile::DeviceProfile> {
    let (major, minor) = device_of(fd)?;
    crate::profile::usable(major, minor, crate::profile::mount_id_of(fd))
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
