//! What this machine has room for: free disk space under a path and memory this process can
//! still allocate. Every size from the command line is checked against these before anything
//! is allocated or written, so a typo (`--file-size 1T`, `--pages 18446744073709551615`) is
//! one clear error instead of a full disk or an aborted process.

use std::path::Path;

use rustix::process::{getrlimit, Resource};

/// Bytes an unprivileged writer can still write to the file system holding `dir`
/// (`f_bavail` x `f_frsize` of statvfs).
pub fn free_disk(dir: &Path) -> std::io::Result<u64> {
    let stat = rustix::fs::statvfs(dir)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Bytes this process can still allocate: the smaller of the machine's `MemAvailable` and the
/// room left under the address-space limit (`RLIMIT_AS` minus `VmSize`); `u64::MAX` where
/// neither can be read.
pub fn memory_available() -> u64 {
    let machine = proc_kib("/proc/meminfo", "MemAvailable:").unwrap_or(u64::MAX);
    let address_space = match getrlimit(Resource::As).current {
        Some(limit) => limit.saturating_sub(proc_kib("/proc/self/status", "VmSize:").unwrap_or(0)),
        None => u64::MAX,
    };
    machine.min(address_space)
}

/// The `KEY:  1234 kB` field of a /proc file, in bytes.
fn proc_kib(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|line| line.starts_with(key))?;
    let kib: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_directory_has_some_free_space() {
        let free = free_disk(&std::env::temp_dir()).unwrap();
        assert!(free > 0 && free < u64::MAX);
        assert!(free_disk(Path::new("/no/such/dir")).is_err());
    }

    #[test]
    fn this_process_can_allocate_something() {
        let bytes = memory_available();
        assert!(bytes > 1 << 20 && bytes < u64::MAX, "{bytes}");
    }
}
