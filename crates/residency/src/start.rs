//! When the restore beside a running program starts (`prefetch run --restore`): once the
//! program (or a process it started) has touched files that hold more of the snapshot than one
//! read-around window of its device ([`crate::touch::pages_to_start`]), seen by looks in
//! `/proc` ([`crate::touch`]) and by fanotify's reports of opens ([`crate::opens`]).
//!
//! A snapshot another program left of the same tree shares its small files with this one: every
//! git command opens `.git/HEAD` and `.git/config` (one page each), and a restore started at the
//! first touch of any file read `git log -p`'s 4.3 MiB pack beside `git grep`, which never opens
//! it (624 requests against stock's 585, docs/record.md). One window is what the kernel reads
//! with a file's first page in one request, and what a request costs as much as
//! (`libprefetch::device::read_around_bytes`): files no larger are read whole by the program's
//! first read whoever restores them, and what the program opens of them says nothing of the
//! snapshot's larger files.
//!
//! Follows libprefetch (ATC 2009) section 3.2 (prefetching starts from the application's own
//! accesses).

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use rustix::fs::{open, Mode, OFlags};

use crate::opens::{Opened, Opens};
use crate::probe::page_size;
use crate::snapshot::Snapshot;
use crate::touch::{pages_to_start, Files, Touched};

/// Where fanotify cannot be used, the interval between two looks for the program's touches of
/// the snapshot's files for its first [`TOUCH_SOON`]; after that each look doubles it, up to
/// [`TOUCH_POLL_MOST`].
pub const TOUCH_POLL: Duration = Duration::from_millis(2);
/// How long the looks stay [`TOUCH_POLL`] apart: a program starts (the interpreter, the
/// loader) before it opens its files, and a restore that starts late finishes late (`mmap
/// random`, which maps its file some 20-30 ms in, ran at 5.13x against 5.67x when the looks
/// doubled from the start).
pub const TOUCH_SOON: Duration = Duration::from_millis(128);
/// The longest interval between two looks: a look reads the program's `/proc/PID/maps`,
/// which a program that never touches the snapshot had read every 2 ms all its run
/// (`import numpy, pandas` beside another program's snapshot: 0.86x of stock, its requests
/// stock's).
pub const TOUCH_POLL_MOST: Duration = Duration::from_millis(64);

/// Returns once process `pid` or those it started have touched files holding more than
/// `window_pages` of `snapshot`'s pages (or all of a snapshot no larger): a look in `/proc`
/// for the files it has open or mapped, fanotify marks on the snapshot's files, a look again
/// (the files opened while the marks were made), and then only the opens reported: no look
/// while the program runs (looks every 2 ms for its first 128 ms spanned the whole of a `git
/// grep` beside another program's snapshot: 0.90x of plain `git grep` against 0.96x without
/// them, docs/record.md). An open fanotify cannot tell (its queue overflowed) counts as enough.
/// Where fanotify cannot be used, looks every [`TOUCH_POLL`] for [`TOUCH_SOON`], then further
/// apart, up to [`TOUCH_POLL_MOST`].
/// Returns the files touched so far and the fanotify group that saw them, if any (its later
/// reports are the program's next opens).
pub fn wait_until_touched(
    snapshot: &Snapshot,
    pid: u32,
    window_pages: u64,
) -> (Touched, Option<Opens>) {
    let files = Files::of(snapshot);
    let needed = pages_to_start(window_pages, snapshot.page_count());
    let mut touched = Touched::default();
    files.look(pid, &mut touched);
    if touched.pages >= needed {
        return (touched, None);
    }
    let mut opens = Opens::watch(snapshot);
    if opens.is_some() {
        files.look(pid, &mut touched);
    }
    let started = Instant::now();
    let mut poll = TOUCH_POLL;
    while touched.pages < needed {
        match opens.as_ref().map(|opens| opens.wait_for(pid)) {
            Some(Ok(Opened::File(id))) => touched.add(&files, id),
            Some(Ok(Opened::Unknown)) => return (touched, opens),
            Some(Err(_)) => opens = None,
            None => {
                std::thread::sleep(poll);
                if started.elapsed() >= TOUCH_SOON {
                    poll = (poll * 2).min(TOUCH_POLL_MOST);
                }
                files.look(pid, &mut touched);
            }
        }
    }
    (touched, opens)
}

/// The pages of one read-around window on the device of `snapshot`'s first file (in device and
/// inode order; `libprefetch::device::read_around_bytes`), looked at through a descriptor that
/// opens nothing (`O_PATH`: no request to a FUSE daemon); 0 if it cannot be.
pub fn window_pages(snapshot: &Snapshot) -> u64 {
    let first = snapshot
        .files
        .iter()
        .min_by_key(|file| (file.identity.dev, file.identity.ino));
    let Some(Ok(fd)) =
        first.map(|file| open(&file.path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()))
    else {
        return 0;
    };
    libprefetch::device::read_around_bytes(fd.as_raw_fd()) / page_size()
}
