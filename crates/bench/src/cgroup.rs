//! A memory cgroup that `--memory-limit` creates for the measured runs and removes afterwards.
//!
//! The paper studies libprefetch when the data does not fit in memory (sections 3.5 and 5, Figures 9
//! and 10, run on a 512 MB machine); a memory cgroup gives the same squeeze on a big machine: the page
//! cache of the processes inside is reclaimed at the limit. cgroup v2 (`/sys/fs/cgroup/cgroup.controllers`
//! exists) uses `memory.max`; otherwise the v1 memory controller at `/sys/fs/cgroup/memory` uses
//! `memory.limit_in_bytes`. The group is made inside the caller's own memory cgroup (so the live library
//! in the child finds the limit on its cgroup path), falling back to the hierarchy's root. Groups left
//! behind by a benchmark that was killed (`libprefetch-bench-PID-N` whose PID is gone) are removed the
//! next time a group is created; by hand: `rmdir /sys/fs/cgroup/memory/.../libprefetch-bench-*`.
//! Deviations: the paper limited memory by booting with 512 MB of RAM; a cgroup limits only the
//! benchmark's own processes.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use thiserror::Error;

use crate::size::{format_bytes, parse_size, SizeError};

/// The smallest limit accepted: below it the benchmark process itself would not fit.
pub const MIN_LIMIT_BYTES: u64 = 8 << 20;

/// Where the memory controller's hierarchy is mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Why a memory cgroup could not be set up or used.
#[derive(Debug, Error)]
pub enum CgroupError {
    /// The limit was not a size.
    #[error("--memory-limit: {0}")]
    Size(#[from] SizeError),
    /// The limit was too small to run anything in.
    #[error("--memory-limit {0} is too small: the benchmark process needs a few MiB itself; use at least 8M")]
    TooSmall(String),
    /// Neither cgroup v2 nor the v1 memory controller is mounted.
    #[error("no memory cgroup controller: neither {CGROUP_ROOT}/cgroup.controllers (v2) nor {CGROUP_ROOT}/memory (v1) exists")]
    NoController,
    /// A cgroup file or directory operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The cgroup file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// Parses a `--memory-limit` value such as "512M" or "1G" and checks that it is usable.
pub fn parse_memory_limit(text: &str) -> Result<u64, CgroupError> {
    let bytes = parse_size(text)?;
    if bytes < MIN_LIMIT_BYTES {
        return Err(CgroupError::TooSmall(text.trim().to_string()));
    }
    Ok(bytes)
}

/// The two cgroup interfaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// Legacy hierarchy with a separate memory controller mount (`memory.limit_in_bytes`).
    V1,
    /// Unified hierarchy (`memory.max`).
    V2,
}

impl Version {
    /// The file that holds the memory limit.
    fn limit_file(self) -> &'static str {
        match self {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        }
    }

    /// The hierarchy's mount point and this process's path inside it, from /proc/self/cgroup.
    fn locate(self, proc_self_cgroup: &str) -> (PathBuf, String) {
        let mount = match self {
            Version::V1 => Path::new(CGROUP_ROOT).join("memory"),
            Version::V2 => PathBuf::from(CGROUP_ROOT),
        };
        let own = own_cgroup_path(self, proc_self_cgroup).unwrap_or_else(|| "/".to_string());
        (mount, own)
    }
}

/// This process's cgroup path for `version` from the text of /proc/self/cgroup
/// (v1: the line whose controllers include "memory"; v2: the "0::" line).
pub fn own_cgroup_path(version: Version, proc_self_cgroup: &str) -> Option<String> {
    proc_self_cgroup.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let wanted = match version {
            Version::V1 => controllers.split(',').any(|name| name == "memory"),
            Version::V2 => id == "0" && controllers.is_empty(),
        };
        wanted.then(|| path.to_string())
    })
}

/// The cgroup interface this machine offers for memory limits, if any.
pub fn detect_version() -> Result<Version, CgroupError> {
    if Path::new(CGROUP_ROOT).join("cgroup.controllers").exists() {
        Ok(Version::V2)
    } else if Path::new(CGROUP_ROOT)
        .join("memory")
        .join("memory.limit_in_bytes")
        .exists()
    {
        Ok(Version::V1)
    } else {
        Err(CgroupError::NoController)
    }
}

/// A memory cgroup owned by this process: created with a limit, removed on [`MemoryCgroup::remove`] or drop.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    version: Version,
    limit_bytes: u64,
    removed: bool,
}

/// Makes the child of `command` write "0" (itself) into the `cgroup.procs` of the cgroup at `dir` between
/// fork and exec, so that every read the measured process makes is charged to the group.
pub fn join_before_exec(command: &mut Command, dir: &Path) -> std::io::Result<()> {
    let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())?;
    // SAFETY: the closure calls only async-signal-safe functions (open, write, close) on data made
    // before the fork.
    unsafe {
        command.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let written = libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
            match written {
                1 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        })
    };
    Ok(())
}

impl MemoryCgroup {
    /// Creates `libprefetch-bench-PID-N` (N counts this process's groups) with a memory limit of `limit_bytes`.
    ///
    /// Needs root (or a delegated cgroup). Errors name the cgroup file that failed.
    pub fn create(limit_bytes: u64) -> Result<Self, CgroupError> {
        let version = detect_version()?;
        let proc_self = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let (mount, own) = version.locate(&proc_self);
        static CREATED: AtomicUsize = AtomicUsize::new(0);
        let serial = CREATED.fetch_add(1, Ordering::Relaxed);
        let name = format!("libprefetch-bench-{}-{serial}", std::process::id());
        let nested_parent = mount.join(own.trim_start_matches('/'));
        remove_abandoned_groups(&nested_parent);
        remove_abandoned_groups(&mount);
        Self::create_at(nested_parent.join(&name), version, limit_bytes)
            .or_else(|_| Self::create_at(mount.join(&name), version, limit_bytes))
    }

    /// Creates the group directory `dir` and writes its limit; removes the directory again on failure.
    fn create_at(dir: PathBuf, version: Version, limit_bytes: u64) -> Result<Self, CgroupError> {
        if version == Version::V2 {
            enable_memory_controller(dir.parent().unwrap_or(Path::new(CGROUP_ROOT)))?;
        }
        std::fs::create_dir(&dir).map_err(|source| CgroupError::Io {
            action: "creating cgroup",
            path: dir.clone(),
            source,
        })?;
        let group = MemoryCgroup {
            dir,
            version,
            limit_bytes,
            removed: false,
        };
        group.write(version.limit_file(), &limit_bytes.to_string())?;
        Ok(group)
    }

    /// Moves process `pid` (and its future children) into the group.
    pub fn add_process(&self, pid: u32) -> Result<(), CgroupError> {
        self.write("cgroup.procs", &pid.to_string())
    }

    /// The limit in bytes as the kernel reports it back (rounded to pages).
    pub fn effective_limit(&self) -> Result<u64, CgroupError> {
        let path = self.dir.join(self.version.limit_file());
        let text = std::fs::read_to_string(&path).map_err(|source| CgroupError::Io {
            action: "reading",
            path: path.clone(),
            source,
        })?;
        Ok(text.trim().parse().unwrap_or(u64::MAX))
    }

    /// The group's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// "memory cgroup of 100.0 MiB (cgroup v1)".
    pub fn describe(&self) -> String {
        let version = match self.version {
            Version::V1 => "v1 memory.limit_in_bytes",
            Version::V2 => "v2 memory.max",
        };
        format!(
            "memory cgroup of {} ({version})",
            format_bytes(self.limit_bytes)
        )
    }

    /// Removes the group. Its processes must have exited; retries briefly while the kernel releases them.
    pub fn remove(mut self) -> Result<(), CgroupError> {
        self.removed = true;
        remove_dir_retrying(&self.dir)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), CgroupError> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|source| CgroupError::Io {
            action: "writing",
            path,
            source,
        })
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        if !self.removed {
            let _ = remove_dir_retrying(&self.dir);
        }
    }
}

/// Removes empty `libprefetch-bench-PID-N` groups in `parent` whose process is gone (a benchmark that was
/// killed before it could clean up). rmdir refuses groups that still hold processes, so this is safe.
fn remove_abandoned_groups(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let owner = name
            .to_str()
            .and_then(|name| name.strip_prefix("libprefetch-bench-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        if owner.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// v2 only: makes the memory controller available to children of `parent`.
fn enable_memory_controller(parent: &Path) -> Result<(), CgroupError> {
    let control = parent.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&control).unwrap_or_default();
    if enabled.split_whitespace().any(|name| name == "memory") {
        return Ok(());
    }
    std::fs::write(&control, "+memory").map_err(|source| CgroupError::Io {
        action: "enabling the memory controller in",
        path: control,
        source,
    })
}

/// rmdir with retries: a just-reaped process can keep a cgroup busy for a few milliseconds.
fn remove_dir_retrying(dir: &Path) -> Result<(), CgroupError> {
    const ATTEMPTS: u32 = 50;
    let mut attempt = 0;
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) if attempt + 1 >= ATTEMPTS => {
                return Err(CgroupError::Io {
                    action: "removing cgroup",
                    path: dir.to_path_buf(),
                    source,
                })
            }
            Err(_) => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_limits_and_explains_bad_ones() {
        assert_eq!(parse_memory_limit("512M").unwrap(), 512 << 20);
        assert_eq!(parse_memory_limit("1G").unwrap(), 1 << 30);
        let too_small = parse_memory_limit("1M").unwrap_err().to_string();
        assert!(
            too_small.contains("too small") && too_small.contains("8M"),
            "{too_small}"
        );
        let bad = parse_memory_limit("lots").unwrap_err().to_string();
        assert!(
            bad.starts_with("--memory-limit:") && bad.contains("\"lots\""),
            "{bad}"
        );
        // The workspace's one size grammar takes fractions that make whole bytes.
        assert_eq!(parse_memory_limit("1.5G").unwrap(), 3 << 29);
        assert!(parse_memory_limit("1.5").is_err());
    }

    #[test]
    fn finds_the_own_cgroup_path_in_both_formats() {
        let v1 = "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n";
        assert_eq!(
            own_cgroup_path(Version::V1, v1).as_deref(),
            Some("/process_api/abc")
        );
        let joined = "5:cpu,memory:/jobs/7\n";
        assert_eq!(
            own_cgroup_path(Version::V1, joined).as_deref(),
            Some("/jobs/7")
        );
        let v2 = "0::/user.slice/session-1.scope\n";
        assert_eq!(
            own_cgroup_path(Version::V2, v2).as_deref(),
            Some("/user.slice/session-1.scope")
        );
        assert_eq!(own_cgroup_path(Version::V1, v2), None);
    }

    /// Creates a real group, moves a `sleep` into it and removes it (skips without root or a controller).
    #[test]
    fn creates_limits_populates_and_removes_a_real_group() {
        if !rustix::process::geteuid().is_root() || detect_version().is_err() {
            eprintln!(
                "skipped (kernel feature missing): needs root and the cgroup memory controller"
            );
            return;
        }
        let group = MemoryCgroup::create(64 << 20).expect("create cgroup");
        assert_eq!(group.effective_limit().unwrap(), 64 << 20);
        assert!(group.describe().starts_with("memory cgroup of 64.0 MiB"));
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        group.add_process(sleeper.id()).expect("add process");
        let procs = std::fs::read_to_string(group.dir().join("cgroup.procs")).unwrap();
        assert!(procs.lines().any(|line| line == sleeper.id().to_string()));
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        let dir = group.dir().to_path_buf();
        group.remove().expect("remove cgroup");
        assert!(!dir.exists());
    }

    /// An empty group whose owner process is gone is removed when the next group is created.
    #[test]
    fn a_group_abandoned_by_a_killed_benchmark_is_cleaned_up() {
        if !rustix::process::geteuid().is_root() || detect_version().is_err() {
            eprintln!(
                "skipped (kernel feature missing): needs root and the cgroup memory controller"
            );
            return;
        }
        let group = MemoryCgroup::create(64 << 20).expect("create cgroup");
        let parent = group.dir().parent().unwrap().to_path_buf();
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        let abandoned = parent.join(format!("libprefetch-bench-{dead_pid}-0"));
        std::fs::create_dir(&abandoned).unwrap();
        let next = MemoryCgroup::create(64 << 20).expect("create second cgroup");
        assert!(
            !abandoned.exists(),
            "{} was left behind",
            abandoned.display()
        );
        assert!(group.dir().exists(), "a live process's group must stay");
        next.remove().unwrap();
        group.remove().unwrap();
    }
}
