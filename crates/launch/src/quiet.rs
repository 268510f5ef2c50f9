//! How the restorer of `prefetch run --restore` keeps out of the program's way: its standard
//! streams let go, a session of its own, and the lowest CPU and I/O priorities
//! (`restorer.rs`, `beside.rs`, and the cli crate's `restore-beside`).
//!
//! No paper section (how this project's restorer runs beside an unmodified program).

/// The restorer's I/O priority: best-effort, its lowest level (`IOPRIO_CLASS_BE << 13 | 7`).
/// Not the idle class: the program waits for the pages the restorer advised, and mq-deadline
/// dispatches an idle-class request only once no best-effort one is queued, so while the
/// program's other reads kept coming, its wait for an advised page lasted until they stopped.
/// With 4 pieces in flight instead of 64 (the program reading most pages beside the restore's)
/// `git grep` on this machine's disk took 82 ms at the median with the idle class and 53 ms with
/// this one, stock 45 ms (docs/record.md).
pub const IO_PRIORITY: i32 = (2 << 13) | 7;

/// Nice 19 and [`IO_PRIORITY`], as soon as the restorer has moved out of the program's memory
/// cgroup if it does (a move takes a lock every fork and exit on the machine waits for, which it
/// should not hold at nice 19: `beside.rs` enters `SCHED_IDLE` after its move back): its
/// work until it waits runs while the program starts, on processors the program's threads want.
pub fn lowest_priority() {
    // The I/O priority first: once at nice 19 the restorer may wait long for a processor, and
    // anyone who sees the nice value (a test, `ps`) then sees both set.
    // SAFETY: priority changes of this process, no memory involved.
    unsafe {
        // IOPRIO_WHO_PROCESS = 1.
        libc::syscall(libc::SYS_ioprio_set, 1, 0, IO_PRIORITY);
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
}

/// Standard input and output to `/dev/null` (standard error once the snapshot is read:
/// [`quiet_stderr`]), every other descriptor but those in `keep` closed, a session of its own
/// (Ctrl-C at the terminal is for the program).
pub fn detach(keep: &[i32]) {
    let mut kept: Vec<i32> = keep.iter().copied().filter(|&fd| fd > 2).collect();
    kept.sort_unstable();
    let mut first = 3;
    // SAFETY: plain system calls on descriptors of this process.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for stream in 0..2 {
            if null >= 0 && null != stream {
                libc::dup2(null, stream);
            }
        }
        for fd in kept {
            if fd > first {
                libc::syscall(libc::SYS_close_range, first, fd - 1, 0);
            }
            first = fd + 1;
        }
        libc::syscall(libc::SYS_close_range, first, u32::MAX, 0);
        libc::setsid();
    }
}

/// Standard error to `/dev/null`, so that a pipe the program writes its errors to ends when the
/// program ends.
pub fn quiet_stderr() {
    // SAFETY: plain system calls on descriptors of this process.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 2);
            libc::close(null);
        }
    }
}

/// Below nice 19 (`SCHED_IDLE`): a processor goes to the restorer only when nothing else wants
/// it, so a program that keeps every processor busy never waits for it.
pub fn idle() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a scheduling policy change of this thread, no memory involved.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
}
