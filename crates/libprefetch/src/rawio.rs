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
    // Read by the page into what the file holds: a zeroed 64 KiB buffer
    // cost more than the read of a 2 KB `/proc` file (the memory probe
    // reads one every 10 ms of a round).
    let mut chunk = [0u8; 4096];
    let mut bytes = Vec::new();
    while bytes.len() < MAX_BYTES {
        let want = chunk.len().min(MAX_BYTES - bytes.len());
        match read(&fd, &mut chunk[..want]) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
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
    fn a_file_of_several_pages_is_read_whole_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long");
        let contents: Vec<u8> = (0..MAX_BYTES + 5000).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &contents).unwrap();
        assert_eq!(read_bytes(&path).unwrap(), contents[..MAX_BYTES]);
        std::fs::write(&path, &contents[..9000]).unwrap();
        assert_eq!(read_bytes(&path).unwrap(), contents[..9000]);
    }

    #[test]
    fn missing_files_read_as_none() {
        assert_eq!(read_to_string("/proc/self/no-such-file"), None);
    }
}
