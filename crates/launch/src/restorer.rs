//! `prefetch run --restore SNAPSHOT -- CMD`: the start of the restorer
//! beside the program. `run` forks a restorer and then replaces itself with
//! the program at once, as it always does, so the program starts without
//! waiting for any of it. In front of the program only the snapshot's first
//! bytes are read (format, version, page size: `residency::snapshot_head`);
//! the restorer reads and checks the rest (`beside.rs`).
//!
//! The restorer is detached (a grandchild, forked by a child that exits
//! at once without a signal and that no `wait` of the program reports, so
//! the program sees no child of its own and `prefetch` does not wait for it
//! before the exec), holds none of the program's descriptors (its standard
//! input and output are `/dev/null`, standard error is let go once the
//! snapshot is checked, so a pipe the program writes to ends when the
//! program ends), and runs at the lowest CPU priority (`SCHED_IDLE`; nice
//! 19 while it waits outside a memory cgroup, below) and the lowest
//! best-effort I/O priority (`quiet.rs`).
//!
//! In a cgroup v1 memory cgroup with a limit, a restorer of a snapshot in a
//! regular file waits outside the group (`residency::aside`): it moves into
//! the group's parent and executes the full command line afresh (the hidden
//! `prefetch restore-beside`, passed the program's pidfd and the snapshot's
//! open file: the file it reads is the one `prefetch run` read), so that
//! nothing `prefetch run` charged to the group before the fork is held by
//! it, and it moves back into the program's group only to restore. A
//! restorer that only waited beside `import numpy, pandas` in a 48 MiB
//! group cost the import 30-40 more requests of the emulated disk, moved
//! out or not, unless it also executed afresh (docs/record.md). A snapshot
//! read from a pipe (`--restore <(...)`) stays in the group, in this image.
//!
//! Follows libprefetch (ATC 2009) sections 3.3 and 4.6 through crate
//! `residency`.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;

use anyhow::{bail, Result};
use residency::aside::Aside;

/// Forks the detached restorer of the snapshot at `path` for this process (the program, once
/// this process execs it), which executes `full` (the full command line); returns in this
/// process once it is on its way. Only the snapshot's first bytes are read here
/// ([`residency::snapshot_head`]); the restorer reads the rest.
pub fn start(path: &Path, full: &Path) -> Result<()> {
    let file = open_snapshot(path)?;
    let kind = file.metadata().map(|m| m.file_type());
    if kind.as_ref().is_ok_and(|kind| kind.is_dir()) {
        let source = std::io::Error::from_raw_os_error(libc::EISDIR);
        return Err(residency::Error::reading(path, source).into());
    }
    let regular = kind.is_ok_and(|kind| kind.is_file());
    if regular {
        residency::snapshot_head::check_start(&file, path)?;
    }
    let program = pidfd_of_self()?;
    let pid = std::process::id();
    // SAFETY: `prefetch run` is single-threaded here; both children only
    // fork, call async-signal-safe functions or start afresh in the child.
    match unsafe { fork_unseen() } {
        -1 => bail!(
            "cannot start the restore: fork: {}",
            std::io::Error::last_os_error()
        ),
        0 => {
            // SAFETY: the intermediate child forks the restorer and leaves.
            if unsafe { libc::fork() } == 0 {
                restorer(file, regular, path, &program, pid, full);
            }
            // SAFETY: leaving without running this process's exit handlers.
            unsafe { libc::_exit(0) }
        }
        _ => Ok(()),
    }
}

/// In the restorer, forked: steps out of the program's memory cgroup where it should, detaches,
/// and reads the snapshot's `file` (`path`; `regular`: not a pipe) and restores
/// (`crate::beside`), itself or executed afresh as `full restore-beside`.
fn restorer(file: File, regular: bool, path: &Path, program: &OwnedFd, pid: u32, full: &Path) -> ! {
    let aside = (regular && libprefetch::memory::cgroup_limited())
        .then(residency::aside::step_aside)
        .flatten();
    crate::quiet::lowest_priority();
    crate::quiet::detach(&[program.as_raw_fd(), file.as_raw_fd()]);
    match &aside {
        Some(aside) => execute_afresh(full, program, pid, aside, &file),
        // Below the program already while it reads the snapshot (a 100 KB one is milliseconds).
        None => crate::quiet::idle(),
    }
    crate::beside::restore(file, path, program, pid, aside)
}

/// The snapshot at `path`, open (close-on-exec, blocking reads: a pipe's writer may be slower
/// than the program), or why not in one line.
fn open_snapshot(path: &Path) -> Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|source| residency::Error::reading(path, source))?;
    // SAFETY: clearing O_NONBLOCK of a descriptor this process owns (set only so that opening a
    // FIFO never waits for a writer).
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, 0) };
    Ok(file)
}

/// `fork` of a child that signals nothing when it exits (`clone` with no exit signal): a child
/// `wait`, `waitpid(-1)` and `waitid(P_ALL)` never report (only `__WALL` or `__WCLONE` does), so
/// neither this process nor the program that replaces it waits for it, and no `SIGCHLD` reaches
/// the program. Waiting for it before the exec cost `git grep` 4.4 ms of a 40 ms run at load 6:
/// the child queued 3.8 ms for a processor before it forked the restorer (`perf sched timehist`,
/// docs/record.md). It stays the program's zombie until the program ends, and is then reaped by
/// whoever adopts it.
///
/// # Safety
/// As `fork` in a single-threaded process, and the child must call only what is safe after a
/// fork that ran no `pthread_atfork` handlers (glibc's own `fork`, `_exit`, system calls).
unsafe fn fork_unseen() -> libc::pid_t {
    // SAFETY: clone(flags = 0: nothing shared and no exit signal, the same stack, no thread
    // ids, no TLS) is a fork; the caller keeps to what is safe after one.
    unsafe { libc::syscall(libc::SYS_clone, 0, 0, 0, 0, 0) as libc::pid_t }
}

/// A pidfd of this process (close-on-exec, so the program never holds it).
fn pidfd_of_self() -> Result<OwnedFd> {
    // SAFETY: pidfd_open of our own pid, no flags.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
    if fd < 0 {
        bail!(
            "cannot follow the program for --restore: pidfd_open: {} (Linux 5.3 or later)",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: a descriptor pidfd_open just returned, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// In the restorer moved out of the program's memory cgroup: executes `full restore-beside`
/// (its pidfd `program` and the snapshot's `file` inherited, `--home` the group it left), so that
/// nothing `prefetch run` charged to the group is held by it; returns only if that failed.
fn execute_afresh(full: &Path, program: &OwnedFd, pid: u32, aside: &Aside, file: &File) {
    let fds = [program.as_raw_fd(), file.as_raw_fd()];
    // SAFETY: clearing close-on-exec of descriptors this process owns.
    if fds
        .iter()
        .any(|&fd| unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0)
    {
        return;
    }
    let _ = std::process::Command::new(full)
        .arg0("prefetch")
        .arg("restore-beside")
        .args(["--pid", &pid.to_string(), "--pidfd", &fds[0].to_string()])
        .args(["--snapshot-fd", &fds[1].to_string(), "--home"])
        .arg(aside.home())
        .exec();
    for fd in fds {
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
}
