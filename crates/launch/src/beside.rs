//! The restorer of `prefetch run --restore` at work, in the image `prefetch run` forked
//! (`restorer.rs`) or in `prefetch restore-beside` executed outside the program's memory cgroup:
//! it reads and checks the snapshot, says in one line on the program's standard error if it is
//! bad (the program runs on without it; standard error is then let go), waits until the
//! program's touches are worth a restore (`residency::start`), and restores
//! (`residency::beside`), until it is done or the program has ended.
//!
//! It reads nothing until the program (or a process it started) has opened or mapped files
//! holding more of the snapshot than one read-around window: it blocks on a fanotify group
//! marking the snapshot's files (`residency::opens`), after looks in `/proc` for the files already
//! open or mapped (`residency::touch`; without fanotify's privilege it looks there again and
//! again). A snapshot of files the program never opens, or of which it opens only small files
//! every program of its kind opens, costs it nothing. The restore is all or nothing within the
//! memory the page cache can still take without reclaim, which it shares with the program; only
//! the missing pages, one C-LOOK sweep, infill, advice only, a few pieces in flight at a time;
//! where a memory cgroup bounds the page cache, each file's pages when the program opens it, as
//! fanotify reports, instead of one sweep ahead of it.
//!
//! Follows libprefetch (ATC 2009) sections 3.3 and 4.6 through crate `residency`.
//! Deviations: the paper's prefetching follows the application's list; a snapshot has no order,
//! so the restore is one sweep.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;

use residency::aside::Aside;

use crate::quiet::{idle, quiet_stderr};

/// The restorer, detached: reads the snapshot's `file` (named `path` in messages), holding the
/// program's standard error until it has said whether it is bad, and restores beside the program
/// (`program`, a pidfd of process `pid`) until it is done or the program has ended. `aside`: the
/// restorer waits outside the program's memory cgroup, and moves back into it to restore.
pub fn restore(file: File, path: &Path, program: &OwnedFd, pid: u32, aside: Option<Aside>) -> ! {
    let snapshot = read_or_say(file, path);
    end_with(program);
    restore_until_gone(&snapshot, program, pid, aside)
}

/// Starts the thread that ends this process once the program has ended (a pidfd reads as ready
/// then); the advice given so far stays given.
fn end_with(program: &OwnedFd) {
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
}

/// The whole snapshot of `file` (`path`), checked; a bad one is said in one line on the
/// program's standard error and ends the restorer (the program runs on without it). Standard
/// error goes to `/dev/null` afterwards.
fn read_or_say(mut file: File, path: &Path) -> residency::Snapshot {
    let snapshot = residency::Snapshot::load_from(&mut file, path);
    drop(file);
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

/// Waits until the program (process `pid`) or a process it started touches a file of the
/// snapshot, restores, and exits when done (or, by [`end_with`], when the program has ended).
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
