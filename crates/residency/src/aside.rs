//! The restorer beside a program (`prefetch run --restore`) waits outside the program's memory
//! cgroup and joins it only to restore: the pages it advises are charged to the program's group,
//! as the user's limit says, and nothing it holds while it waits is.
//!
//! `prefetch run` runs in the group the user put it in (`cgexec`, `systemd-run`, a write to
//! `cgroup.procs`) and its restorer is born there. A restorer that only waited beside `import
//! numpy, pandas` in a 48 MiB group cost the import 30-40 more requests of the emulated disk
//! than stock's 766-779 (docs/record.md, "prefetch run --restore"). On a cgroup v1 memory
//! hierarchy, [`step_aside`] moves it into the group's parent (within every limit above the
//! program's: v1 charges a child's pages to its ancestors too, and the hierarchy holds the memory
//! controller alone, so no other controller's limit is left); what it touches afterwards is
//! charged there. On cgroup v2 it stays where it is: one hierarchy holds every controller, a
//! parent holding processes is in practice only the root, and moving there would escape the
//! user's CPU, I/O and process limits and the group's freeze and kill, not only its memory limit.
//! What was charged before the move stays where it is (v1 moves no charge unless the group asks
//! it to): moved out alone, the restorer cost as much, so `prefetch run` executes it afresh once
//! it is out, and its old image's charges go with that image. [`Aside::rejoin`] moves it back
//! into the program's group before it measures the room there and advises anything; if that
//! fails, or the program has ended, nothing is restored (the restore must not escape the user's
//! limit).
//!
//! Where the restorer may not write the parent's `cgroup.procs` (no privilege), it stays in the
//! program's group, as before.
//!
//! Follows libprefetch (ATC 2009) section 4.6 (the memory budget is the program's: what the
//! prefetching reads counts against it).

use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};

/// A restorer moved out of the memory cgroup it was born in.
#[derive(Debug)]
pub struct Aside {
    home: PathBuf,
}

/// Moves this process (all its threads) out of its cgroup v1 memory cgroup into the group's
/// parent; `None` where it stays: in the hierarchy's root already, no v1 memory hierarchy
/// (cgroup v2, module comment), or the parent refused it.
pub fn step_aside() -> Option<Aside> {
    let (root, home) = memory_cgroup_of("self")?;
    if home == root {
        return None;
    }
    join(home.parent()?).ok()?;
    Some(Aside { home })
}

impl Aside {
    /// A restorer that left the memory cgroup at `home` (passed on across an `exec`).
    pub fn from_home(home: PathBuf) -> Aside {
        Aside { home }
    }

    /// The memory cgroup this process left.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Moves this process back into the memory cgroup of process `pid` (`program`, a pidfd of
    /// it; the group it is in now, or the one this process left if that cannot be read); false
    /// if that failed or the program has ended (its process id may name another process by
    /// then), and then nothing may be restored.
    pub fn rejoin(self, pid: u32, program: BorrowedFd) -> bool {
        let group = memory_cgroup_of(&pid.to_string()).map_or(self.home, |(_, dir)| dir);
        !has_ended(program) && join(&group).is_ok()
    }
}

/// The cgroup v1 memory cgroup of process `pid` (a number or "self"): its hierarchy's root and
/// its directory; `None` on cgroup v2.
fn memory_cgroup_of(pid: &str) -> Option<(PathBuf, PathBuf)> {
    let membership = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    v1_memory_cgroup_dir(&membership)
}

/// The memory cgroup named in `membership` (`/proc/PID/cgroup` text) where a cgroup v1 hierarchy
/// holds the memory controller (a line names `memory`); `None` on cgroup v2.
fn v1_memory_cgroup_dir(membership: &str) -> Option<(PathBuf, PathBuf)> {
    let v1 = membership.lines().any(|line| {
        line.split(':')
            .nth(1)
            .is_some_and(|controllers| controllers.split(',').any(|c| c == "memory"))
    });
    v1.then(|| libprefetch::memory::memory_cgroup_dir(membership))
        .flatten()
}

/// Whether the process of the pidfd `program` has ended (its pidfd reads as ready).
fn has_ended(program: BorrowedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: program.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no waiting.
    unsafe { libc::poll(&mut poll, 1, 0) != 0 }
}

/// Moves this process into the cgroup at `dir`.
fn join(dir: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))?
        .write_all(b"0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsFd, FromRawFd};

    #[test]
    fn only_a_v1_memory_hierarchy_is_stepped_out_of() {
        let v1 = "4:memory:/user/job\n3:cpu:/\n0::/\n";
        assert_eq!(
            v1_memory_cgroup_dir(v1),
            Some((
                PathBuf::from("/sys/fs/cgroup/memory"),
                PathBuf::from("/sys/fs/cgroup/memory/user/job")
            ))
        );
        assert_eq!(v1_memory_cgroup_dir("0::/user.slice/job.scope\n"), None);
    }

    #[test]
    fn a_pidfd_reads_as_ended_once_its_program_has_ended() {
        let mut child = std::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // SAFETY: pidfd_open of a child this test has not reaped yet.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id(), 0) };
        assert!(fd >= 0, "pidfd_open: {}", std::io::Error::last_os_error());
        // SAFETY: a descriptor pidfd_open just returned.
        let program = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
        assert!(!has_ended(program.as_fd()));
        drop(child.stdin.take());
        child.wait().unwrap();
        assert!(has_ended(program.as_fd()));
    }
}
