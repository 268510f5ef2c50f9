//! The hidden `prefetch restore-beside`: the restorer of `prefetch run
//! --restore SNAPSHOT -- CMD`, executed afresh beside the program by the
//! process crate `launch` forks (`launch::restorer`, which says how it is
//! detached and at which priorities it runs), passed the program's pidfd
//! and the snapshot's open file. It reads and checks the snapshot, below
//! the program's priority, and says in one line on the program's standard
//! error if it is bad (the program runs on without it; standard error is
//! then let go). It reads nothing until the program (or a process it
//! started) has opened or mapped files holding more of the snapshot than
//! one read-around window (`residency::start`): it blocks on a fanotify
//! group marking the snapshot's files (`residency::opens`), after looks in
//! `/proc` for the files already open or mapped (`residency::touch`;
//! without fanotify's privilege it looks there again and again). A snapshot
//! of files the program never opens, or of which it opens only small files
//! every program of its kind opens, costs it nothing.
//!
//! The restore is crate `residency`'s restore beside a program
//! (`residency::beside`: all or nothing within the memory the page cache
//! can still take without reclaim, which it shares with the program; only
//! the missing pages, one C-LOOK sweep, infill, advice only, a few pieces in
//! flight at a time; where a memory cgroup bounds the page cache, each file's
//! pages when the program opens it, as fanotify reports, instead of one sweep
//! ahead of it). It stops when the program ends (it waits on a pidfd of the
//! program) or when it is done, whichever comes first. With `--home` it was
//! started outside the program's memory cgroup v1 (`residency::aside`) and
//! moves back into the program's group only to restore.
//!
//! Follows libprefetch (ATC 2009) sections 3.3 and 4.6 through crate
//! `residency`.
//! Deviations: the paper's prefetching follows the application's list;
//! a snapshot has no order, so the restore is one sweep.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use launch::restorer::{detach, idle, quiet_stderr};
use residency::aside::Aside;

/// Arguments of the hidden `prefetch restore-beside`: the restorer executed afresh by `prefetch run
/// --restore` (module comment).
#[derive(clap::Args)]
pub struct BesideArgs {
    /// The program's process id
    #[arg(long)]
    pid: u32,
    /// A pidfd of the program, inherited
    #[arg(long)]
    pidfd: i32,
    /// The memory cgroup the restorer left (the program's, if its own cannot be read later), if
    /// it waits outside it
    #[arg(long)]
    home: Option<PathBuf>,
    /// The snapshot's file, open, inherited
    #[arg(long)]
    snapshot_fd: i32,
}

/// The whole snapshot of `file` (`path`), checked; a bad one is said in one line on the
/// program's standard error and ends the restorer (the program runs on without it). Standard
/// error goes to `/dev/null` afterwards.
fn read_or_say(file: &mut File, path: &Path) -> residency::Snapshot {
    let snapshot = residency::Snapshot::load_from(file, path);
    if let Err(error) = &snapshot {
        eprintln!("prefetch: --restore: {error}: the program runs without the restore");
    }
    quiet_stderr();
    match snapshot {
        Ok(snapshot) => snapshot,
        // SAFETY: leaving without running the exit handlers of `prefetch`.
        Err(_) => unsafe { libc::_exit(0) },
    }
}

/// `prefetch restore-beside`: the restorer executed afresh goes on; arguments that are not what
/// `prefetch run --restore` passes end it with an error.
pub fn resume(args: BesideArgs) -> ! {
    let (program, file) = match inherited(&args) {
        Ok(both) => both,
        Err(error) => {
            eprintln!(
                "prefetch restore-beside (started by `prefetch run --restore` only): {error:#}"
            );
            // SAFETY: leaving without running the exit handlers of `prefetch`.
            unsafe { libc::_exit(2) }
        }
    };
    detach(&[program.as_raw_fd(), file.as_raw_fd()]);
    let fd_path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    let path = std::fs::read_link(&fd_path).unwrap_or(fd_path);
    let snapshot = read_or_say(&mut File::from(file), &path);
    let aside = args.home.map(Aside::from_home);
    restore_until_gone(&snapshot, &program, args.pid, aside);
}

/// The program's pidfd and the snapshot's file `prefetch run --restore` passed on (the
/// descriptors close-on-exec again).
fn inherited(args: &BesideArgs) -> Result<(OwnedFd, OwnedFd)> {
    if args.pidfd == args.snapshot_fd {
        bail!("--pidfd and --snapshot-fd are the same descriptor");
    }
    let program = inherited_fd(args.pidfd).context("--pidfd")?;
    let file = inherited_fd(args.snapshot_fd).context("--snapshot-fd")?;
    Ok((program, file))
}

/// Descriptor `fd`, inherited, owned from now on and close-on-exec again.
fn inherited_fd(fd: i32) -> Result<OwnedFd> {
    // SAFETY: fcntl sets the flags of a descriptor, failing if it is not open.
    if fd <= 2 || unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
        bail!("descriptor {fd} was not inherited");
    }
    // SAFETY: a descriptor `prefetch run --restore` passed on for this process alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
    // program, within the user's limit, or does not run. The restorer waited aside at the normal
    // policy (nice 19) and enters `SCHED_IDLE` only now: a move takes a lock every fork and exit
    // on the machine waits for, which `SCHED_IDLE` could hold while every processor is busy, and
    // leaving `SCHED_IDLE` needs a privilege (`RLIMIT_NICE`, `CAP_SYS_NICE`) entering it does not.
    if let Some(aside) = aside {
        if !aside.rejoin(pid, program.as_fd()) {
            // SAFETY: leaving without running the exit handlers of `prefetch`.
            unsafe { libc::_exit(0) }
        }
        idle();
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
