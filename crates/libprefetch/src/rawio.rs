//! The library's own reads of small kernel files (`/proc/meminfo`, cgroup
//! and sysfs attributes), made as raw system calls through rustix.
//!
//! The library runs inside the application's process, next to its own read
//! interposers (crate `preload`): a `read` through libc would be interposed,
//! and if the descriptor number the kernel hands out is one the application
//! registered and then closed, tracked as the application's read, under
//! whatever lock the library holds at that moment. rustix issues the system
//! calls itself, so these reads never reach the interposers, whatever
//! descriptor number they get and whichever thread makes them.

use rustix::fs::{openat, Mode, OFlags, CWD};
use rustix::io::read;

/// Largest file read (the files read here are a few KiB at most).
const MAX_BYTES: usize = 64 << 10;

/// The contents of `path` as text, or `None` if it cannot be read.
pub(crate) fn read_to_string(path: impl rustix::path::Arg) -> Option<String> {
    String::from_utf8(read_bytes(path)?).ok()
}

/// The first 64 KiB of `path`, or `None` if it cannot be read.
pub(crate) fn read_bytes(path: impl rustix::path::Arg) -> Option<Vec<u8>> {
    let fd = openat(CWD, path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let mut bytes = vec![0u8; MAX_BYTES];
    let mut filled = 0;
    while filled < bytes.len() {
        match read(&fd, &mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
    bytes.truncate(filled);
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_proc_file_whole() {
        let text = read_to_string("/proc/self/status").expect("/proc/self/status");
        assert!(text.starts_with("Name:"), "{text}");
        assert!(text.contains("\nPid:"), "{text}");
    }

    #[test]
    fn missing_files_read_as_none() {
        assert_eq!(read_to_string("/proc/self/no-such-file"), None);
    }
}
