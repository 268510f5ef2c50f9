//! `prefetch run --restore SNAPSHOT -- CMD`: the snapshot's missing pages
//! are read back beside the program, never in front of it: `run` forks a
//! restorer and then replaces itself with the program at once, as it
//! always does, so the program starts without waiting for any of it. The
//! restorer reads nothing until the program (or a process it started) has opened
//! or mapped files holding more of the snapshot than one read-around window
//! (`residency::start`): it blocks on a fanotify group marking the
//! snapshot's files (`residency::opens`), after looks in `/proc` for the
//! files already open or mapped (`residency::touch`; without fanotify's
//! privilege it looks there again and again). A snapshot of files the
//! program never opens, or of which it opens only small files every program of
//! its kind opens, costs it nothing.
//!
//! The restorer is crate `residency`'s restore beside a program
//! (`residency::beside`: all or nothing within the memory the page cache
//! can still take without reclaim, which it shares with the program; only
//! the missing pages, one C-LOOK sweep, infill, advice only, a few pieces in
//! flight at a time; where a memory cgroup bounds the page cache, each file's
//! pages when the program opens it, as fanotify reports, instead of one sweep
//! ahead of it). It is detached (a grandchild: the program never sees
//! it among its children, so a `wait` for any child is not disturbed),
//! holds none of the program's
//! descriptors (its standard streams are `/dev/null`, so a pipe the program
//! writes to ends when the program ends), runs at the lowest CPU priority
//! (`SCHED_IDLE`) and I/O priority, and stops when the program ends (it waits on a pidfd of the
//! program) or when it is done, whichever comes first.
//!
//! In a memory cgroup with a limit, the restorer waits outside it
//! (`residency::aside`): it moves into the group's parent and executes
//! `prefetch` afresh (the hidden `prefetch restore-beside`), so that nothing
//! `prefetch run` charged to the group before the fork is held by it, and
//! it moves back into the program's group only to restore. A restorer that
//! only waited beside `import numpy, pandas` in a 48 MiB group cost the
//! import 30-40 more requests of the emulated disk, moved out or not,
//! unless it also executed afresh (docs/record.md).
//!
//! Follows libprefetch (ATC 2009) sections 3.3 and 4.6 through crate
//! `residency`.
//! Deviations: the paper's prefetching follows the application's list;
//! a snapshot has no order, so the restore is one sweep.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use residency::aside::Aside;

/// Arguments of the hidden `prefetch restore-beside`: the restorer executed afresh outside the
/// program's memory cgroup by `prefetch run --restore` (module comment).
#[derive(clap::Args)]
pub struct BesideArgs {
    /// The program's process id
    #[arg(long)]
    pid: u32,
    /// A pidfd of the program, inherited
    #[arg(long)]
    pidfd: i32,
    /// The memory cgroup the restorer left (the program's, if its own cannot be read later)
    #[arg(long)]
    home: PathBuf,
    /// The snapshot (absolute)
    snapshot: PathBuf,
}

/// Forks the detached restorer of `snapshot` (read from `path`) for this process (the program,
/// once this process execs it); returns in this process once it is on its way.
pub fn start(snapshot: residency::Snapshot, path: &Path) -> Result<()> {
    let path = std::path::absolute(path)?;
    let program = pidfd_of_self()?;
    let pid = std::process::id();
    // SAFETY: `prefetch run` is single-threaded here; both children only
    // fork, call async-signal-safe functions or start afresh in the child.
    match unsafe { libc::fork() } {
        -1 => bail!(
            "cannot start the restore: fork: {}",
            std::io::Error::last_os_error()
        ),
        0 => {
            // SAFETY: the intermediate child forks the restorer and leaves.
            if unsafe { libc::fork() } == 0 {
                let aside = libprefetch::memory::cgroup_limited()
                    .then(residency::aside::step_aside)
                    .flatten();
                detach(program.as_raw_fd());
                if let Some(aside) = &aside {
                    execute_afresh(&program, pid, aside, &path);
                }
                restore_until_gone(&snapshot, &program, pid, aside);
            }
            // SAFETY: leaving without running this process's exit handlers.
            unsafe { libc::_exit(0) }
        }
        child => {
            let mut status = 0;
            // SAFETY: waiting for the intermediate child, which exits at once.
            unsafe { libc::waitpid(child, &mut status, 0) };
            Ok(())
        }
    }
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

/// In the restorer moved out of the program's memory cgroup: executes `prefetch restore-beside`
/// afresh (its pidfd `program` inherited); returns only if that failed.
fn execute_afresh(program: &OwnedFd, pid: u32, aside: &Aside, snapshot: &Path) {
    let fd = program.as_raw_fd();
    // SAFETY: clearing close-on-exec of a descriptor this process owns.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
        return;
    }
    let _ = std::process::Command::new("/proc/self/exe")
        .arg0("prefetch")
        .arg("restore-beside")
        .args(["--pid", &pid.to_string(), "--pidfd", &fd.to_string()])
        .arg("--home")
        .arg(aside.home())
        .arg(snapshot)
        .exec();
    // SAFETY: as above.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
}

/// `prefetch restore-beside`: the restorer executed afresh outside the program's memory cgroup
/// goes on (a snapshot it cannot read now, or a pidfd it did not inherit, end it quietly).
pub fn resume(args: BesideArgs) -> ! {
    // SAFETY: fcntl only reads the descriptor's flags.
    let inherited = args.pidfd > 2 && unsafe { libc::fcntl(args.pidfd, libc::F_GETFD) } >= 0;
    if let (true, Ok(snapshot)) = (inherited, residency::Snapshot::load(&args.snapshot)) {
        // SAFETY: a descriptor `prefetch run --restore` passed on for this process alone.
        let program = unsafe { OwnedFd::from_raw_fd(args.pidfd) };
        detach(program.as_raw_fd());
        let aside = Aside::from_home(args.home);
        restore_until_gone(&snapshot, &program, args.pid, Some(aside));
    }
    // SAFETY: leaving without running the exit handlers of `prefetch`.
    unsafe { libc::_exit(0) }
}

/// In the restorer, detached: waits until the program (`program`, a pidfd of process `pid`) or a
/// process it started touches a file of the snapshot, restores, and exits when done or when the
/// program has ended. `aside`: the restorer waits outside the program's memory cgroup, and moves
/// back into it to restore.
fn restore_until_gone(
    snapshot: &residency::Snapshot,
    program: &OwnedFd,
    pid: u32,
    aside: Option<Aside>,
) -> ! {
    // The heap `prefetch run` freed before the fork stays charged to the program's memory
    // cgroup for as long as the restorer lives; given back, the program keeps that room.
    // SAFETY: malloc_trim only returns free memory of this process's heap to the kernel.
    unsafe { libc::malloc_trim(0) };
    let watched = program.as_raw_fd();
    let _ = std::thread::Builder::new().spawn(move || {
        let mut poll = libc::pollfd {
            fd: watched,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a pidfd reads as ready once its process ends.
        while unsafe { libc::poll(&mut poll, 1, -1) } < 0 {}
        // SAFETY: leaving at once; the advice given so far stays given.
        unsafe { libc::_exit(0) }
    });
    let window = residency::start::window_pages(snapshot);
    let (touched, opens) = residency::start::wait_until_touched(snapshot, pid, window);
    // Back in the program's group to measure its room and advise: the restore is charged to the
    // program, within the user's limit, or does not run.
    if aside.is_some_and(|aside| !rejoin(aside, pid)) {
        // SAFETY: leaving without running the exit handlers of `prefetch`.
        unsafe { libc::_exit(0) }
    }
    let reads = residency::beside::Reads {
        infill_bytes: residency::Options::default().infill_bytes,
        read_around_bytes: None,
    };
    // Where a memory cgroup bounds the page cache, the restore follows the program's opens.
    let follow = libprefetch::memory::cgroup_bounds_cache()
        .then(|| opens.or_else(|| residency::opens::Opens::watch(snapshot)))
        .flatten();
    match follow {
        Some(opens) => {
            let mut next_open = || loop {
                match opens.wait_for(pid) {
                    Ok(residency::opens::Opened::File(id)) => return Some(id),
                    Ok(residency::opens::Opened::Unknown) => {}
                    Err(_) => return None,
                }
            };
            residency::beside::restore_as_opened(snapshot, reads, &touched.files(), &mut next_open);
        }
        None => {
            residency::beside::restore_beside(snapshot, reads);
        }
    }
    // SAFETY: leaving without running the exit handlers of `prefetch`.
    unsafe { libc::_exit(0) }
}

/// Moves the restorer back into the memory cgroup of the program (process `pid`); false if it
/// could not be. The move is made at the normal policy (nice 19): a move takes a lock the
/// program's forks and thread starts wait for, which `SCHED_IDLE` could hold while every
/// processor is busy.
fn rejoin(aside: Aside, pid: u32) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: scheduling policy changes of this thread, no memory involved.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    let joined = aside.rejoin(pid);
    // SAFETY: as above.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    joined
}

/// Standard streams to `/dev/null`, every other descriptor but `keep`
/// closed, lowest CPU priority (`SCHED_IDLE`) and I/O priority, a session of its own (Ctrl-C at
/// the terminal is for the program).
fn detach(keep: i32) {
    // SAFETY: plain system calls on descriptors of this process.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for stream in 0..3 {
            if null >= 0 && null != stream {
                libc::dup2(null, stream);
            }
        }
        if keep > 3 {
            libc::syscall(libc::SYS_close_range, 3, keep - 1, 0);
        }
        libc::syscall(libc::SYS_close_range, keep.max(2) + 1, u32::MAX, 0);
        libc::setsid();
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
        // Below nice 19: a processor goes to the restorer only when nothing else wants it,
        // so a program that keeps every processor busy never waits for it.
        let idle = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle);
        // IOPRIO_WHO_PROCESS = 1, IOPRIO_CLASS_IDLE = 3 << 13.
        libc::syscall(libc::SYS_ioprio_set, 1, 0, 3 << 13);
    }
}
