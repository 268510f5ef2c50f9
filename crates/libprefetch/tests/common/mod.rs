//! Helpers shared by the live tests: one test at a time, cold data files, children inside a memory
//! cgroup, access lists.
#![allow(dead_code)]

use std::fs::{self, File};
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Bytes of a page of the test files.
pub const PAGE: u64 = 4096;

/// Held for the whole of a test, so that no two tests' clients share memory.
pub fn alone() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A file of `pages` pages of a known pattern, written back and evicted from the page cache; under
/// the build's target directory, on a disk (a memory file system keeps every page cached).
pub fn data_file(pages: u64) -> (tempfile::TempDir, File) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("data");
    let mut file = File::create(&path).unwrap();
    let page: Vec<u8> = (0..PAGE).map(|i| (i % 253) as u8).collect();
    for _ in 0..pages {
        file.write_all(&page).unwrap();
    }
    file.sync_all().unwrap();
    let file = File::open(&path).unwrap();
    evict(&file);
    (dir, file)
}

/// Drops `file`'s pages from the page cache.
pub fn evict(file: &File) {
    // SAFETY: fadvise on an open descriptor.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Where the cgroup v1 memory controller is mounted on this machine.
pub const MEMORY_CONTROLLER: &str = "/sys/fs/cgroup/memory";

/// True if the kernel has a cgroup v1 memory controller; otherwise prints why the test skips.
pub fn memory_controller_or_skip() -> bool {
    let present = Path::new(MEMORY_CONTROLLER)
        .join("memory.limit_in_bytes")
        .exists();
    if !present {
        eprintln!("SKIP: the kernel has no cgroup v1 memory controller (feature missing)");
    }
    present
}

/// A memory cgroup created for a test, removed when dropped.
pub struct Cgroup(pub PathBuf);

impl Cgroup {
    /// A fresh cgroup `NAME-PID` limited to `limit` bytes.
    pub fn create(name: &str, limit: u64) -> Cgroup {
        let dir = Path::new(MEMORY_CONTROLLER).join(format!("{name}-{}", std::process::id()));
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let cgroup = Cgroup(dir);
        fs::write(cgroup.0.join("memory.limit_in_bytes"), limit.to_string()).unwrap();
        cgroup
    }

    /// OOM kills in the cgroup so far (`oom_kill` of memory.oom_control).
    pub fn oom_kills(&self) -> u64 {
        let control = fs::read_to_string(self.0.join("memory.oom_control")).unwrap();
        control
            .lines()
            .find_map(|line| line.strip_prefix("oom_kill "))
            .map_or(0, |n| n.trim().parse().unwrap())
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}

/// Moves this process into `cgroup` (a directory of the memory controller).
pub fn join(cgroup: &Path) {
    fs::write(cgroup.join("cgroup.procs"), std::process::id().to_string()).unwrap();
}

/// Unmarked entries for the 4 KiB pages `pages` of descriptor `fd`, in that order.
pub fn unmarked_entries(fd: RawFd, pages: &[u64]) -> Vec<libprefetch::AccessEntry> {
    pages
        .iter()
        .map(|&p| libprefetch::AccessEntry {
            offset: p * 4096,
            fd,
            mark: false,
        })
        .collect()
}
