//! The opens of a snapshot's files by a process tree, seen through fanotify: a mark on
//! each file of the snapshot (an inode mark: only opens of these files are reported, by any
//! path, `exec` and the loader's opens of shared libraries included) and a blocking read of
//! the group's events, each checked for an opener in the tree (`/proc/PID/stat`'s parent,
//! up to the program).
//!
//! `prefetch run --restore` waits for the program's touches of its snapshot before it reads
//! anything ([`crate::start`]). Looking for it in `/proc` every few milliseconds cost
//! the program the looks (its `/proc/PID/maps` read while it ran) and the restore its start
//! (up to a look's interval late); a blocked read costs nothing until an open of a snapshot
//! file, and wakes at it. The events carry descriptors, read one event at a time: a group
//! reporting file identifiers instead (`FAN_REPORT_FID`) asks the file system for its id at
//! each mark, a request to the daemon on FUSE (794 marks: 16-64 ms against 3 ms), while an
//! event's descriptor is one open, and only the events read until the program's are opened.
//! Each event says which file was opened (the descriptor's device and inode): what a touch is
//! worth depends on the file ([`crate::touch::Touched`]).
//! Needs `CAP_SYS_ADMIN`; without it [`Opens::watch`] gives `None` and the caller looks in
//! `/proc` instead ([`crate::touch::Files`], which also sees the files the program opened or
//! mapped before the marks were made).
//!
//! Follows libprefetch (ATC 2009) section 3.2 (prefetching starts from the application's
//! own accesses), as [`crate::touch`].

use std::fs;
use std::io;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::AT_FDCWD;
use nix::sys::fanotify::{EventFFlags, Fanotify, InitFlags, MarkFlags, MaskFlags};
use rustix::fs::fstat;

use crate::snapshot::Snapshot;

/// What an open reported was of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    /// The file of this device and inode.
    File((u64, u64)),
    /// A file that cannot be told (the queue overflowed, or the file cannot be looked at).
    Unknown,
}

/// A fanotify group with a mark on the opens of each file of a snapshot.
#[derive(Debug)]
pub struct Opens {
    group: Fanotify,
}

impl Opens {
    /// Marks the opens of every file of `snapshot`; `None` where fanotify cannot (no
    /// `CAP_SYS_ADMIN`, no kernel support). A file gone since the snapshot is left unmarked: it
    /// is not restored either.
    pub fn watch(snapshot: &Snapshot) -> Option<Opens> {
        let flags = InitFlags::FAN_CLASS_NOTIF | InitFlags::FAN_CLOEXEC;
        let events = EventFFlags::O_RDONLY | EventFFlags::O_CLOEXEC;
        let group = Fanotify::init(flags, events).ok()?;
        for file in &snapshot.files {
            match group.mark(
                MarkFlags::FAN_MARK_ADD,
                MaskFlags::FAN_OPEN,
                AT_FDCWD,
                Some(&file.path),
            ) {
                Ok(()) | Err(Errno::ENOENT | Errno::ENOTDIR) => {}
                Err(_) => return None,
            }
        }
        Some(Opens { group })
    }

    /// Waits until process `pid` or one of its descendants opens a marked file: the file
    /// opened (its device and inode), or [`Opened::Unknown`] if the queue overflowed (which
    /// hides who opened what) or the file cannot be looked at. An error if the events cannot be
    /// read.
    pub fn wait_for(&self, pid: u32) -> io::Result<Opened> {
        loop {
            let (event, fd) = self.next_event()?;
            if event.mask & libc::FAN_Q_OVERFLOW != 0 {
                return Ok(Opened::Unknown);
            }
            if in_tree(event.pid, pid) {
                // The inode's attributes are cached (the opener just opened it): no round trip
                // to a FUSE daemon.
                let id = fd.and_then(|fd| fstat(&fd).ok());
                return Ok(id.map_or(Opened::Unknown, |stat| {
                    Opened::File((stat.st_dev, stat.st_ino))
                }));
            }
        }
    }

    /// The next event and its descriptor (`None` for an event without one): read alone (a
    /// buffer of one event's size), so that the kernel opens no descriptor for the events
    /// after it.
    fn next_event(&self) -> io::Result<(libc::fanotify_event_metadata, Option<OwnedFd>)> {
        let mut event = MaybeUninit::<libc::fanotify_event_metadata>::uninit();
        let size = size_of::<libc::fanotify_event_metadata>();
        loop {
            // SAFETY: reads at most `size` bytes into the event's storage.
            let read =
                unsafe { libc::read(self.group.as_raw_fd(), event.as_mut_ptr().cast(), size) };
            match usize::try_from(read) {
                Ok(read) if read >= size => {
                    // SAFETY: the kernel wrote a whole event's metadata.
                    let event = unsafe { event.assume_init() };
                    // SAFETY: the event's descriptor is this process's, owned by nobody else.
                    let fd = (event.fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(event.fd) });
                    return Ok((event, fd));
                }
                Ok(_) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Err(_) if Errno::last() == Errno::EINTR => {}
                Err(_) => return Err(io::Error::last_os_error()),
            }
        }
    }
}

/// True if process `opener` is `pid` or a descendant of it, or cannot be told: gone before it
/// was looked at (a short-lived child of the program: `sh -c 'cat FILE'`), or not reported
/// (`0`).
fn in_tree(opener: i32, pid: u32) -> bool {
    let Ok(mut process) = u32::try_from(opener) else {
        return true;
    };
    loop {
        if process == pid || process == 0 {
            return true;
        }
        match parent(process) {
            Some(0 | 1) => return false,
            Some(next) => process = next,
            None => return true,
        }
    }
}

/// The parent of process `pid` (`/proc/PID/stat`'s fourth field, after the command's name in
/// parentheses, which may hold spaces), `None` once it is gone.
fn parent(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after) = stat.rsplit_once(')')?;
    after.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_in_the_tree_of_its_ancestors_and_not_of_a_stranger() {
        let me = std::process::id();
        let parent_pid = parent(me).unwrap();
        assert!(in_tree(me as i32, me));
        assert!(in_tree(me as i32, parent_pid), "a child of the tree's root");
        assert!(
            !in_tree(parent_pid as i32, me),
            "a parent is not a descendant"
        );
        assert!(in_tree(0, me), "an opener not reported counts");
    }
}
