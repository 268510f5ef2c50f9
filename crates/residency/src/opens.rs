//! The first open of a snapshot's files by a process tree, seen through fanotify: a mark on
//! each file of the snapshot (an inode mark: only opens of these files are reported, by any
//! path, `exec` and the loader's opens of shared libraries included) and a blocking read of
//! the group's events, each checked for an opener in the tree (`/proc/PID/stat`'s parent,
//! up to the program).
//!
//! `prefetch run --restore` waits for the program's first touch of its snapshot before it
//! reads anything ([`crate::touch`]). Looking for it in `/proc` every few milliseconds cost
//! the program the looks (its `/proc/PID/maps` read while it ran) and the restore its start
//! (up to a look's interval late); a blocked read costs nothing until an open of a snapshot
//! file, and wakes at it. The events carry file identifiers (`FAN_REPORT_FID`), not
//! descriptors: reading one opens nothing (an event descriptor on FUSE is an open sent to
//! its daemon). Needs `CAP_SYS_ADMIN`; without it [`Opens::watch`] gives `None` and the
//! caller looks in `/proc` instead ([`crate::touch::Files`], which also sees the files the
//! program opened or mapped before the marks were made).
//!
//! Follows libprefetch (ATC 2009) section 3.2 (prefetching starts from the application's
//! own accesses), as [`crate::touch`].

use std::fs;
use std::io;

use nix::errno::Errno;
use nix::fcntl::AT_FDCWD;
use nix::sys::fanotify::{EventFFlags, Fanotify, InitFlags, MarkFlags, MaskFlags};

use crate::snapshot::Snapshot;

/// A fanotify group with a mark on the opens of each file of a snapshot.
#[derive(Debug)]
pub struct Opens {
    group: Fanotify,
}

impl Opens {
    /// Marks the opens of every file of `snapshot`; `None` where fanotify cannot (no
    /// `CAP_SYS_ADMIN`, no kernel support, a file system that gives no file identifiers). A
    /// file gone since the snapshot is left unmarked: it is not restored either.
    pub fn watch(snapshot: &Snapshot) -> Option<Opens> {
        let flags = InitFlags::FAN_CLASS_NOTIF
            | InitFlags::FAN_CLOEXEC
            | InitFlags::from_bits_retain(libc::FAN_REPORT_FID);
        let group = Fanotify::init(flags, EventFFlags::O_RDONLY).ok()?;
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

    /// Blocks until process `pid` or one of its descendants opens a marked file (or the
    /// queue overflowed, which hides who did); an error if the events cannot be read.
    pub fn wait_for(&self, pid: u32) -> io::Result<()> {
        loop {
            let events = match self.group.read_events() {
                Ok(events) => events,
                Err(Errno::EINTR) => continue,
                Err(error) => return Err(error.into()),
            };
            let ours = |event: &nix::sys::fanotify::FanotifyEvent| {
                event.mask().contains(MaskFlags::FAN_Q_OVERFLOW) || in_tree(event.pid(), pid)
            };
            if events.iter().any(ours) {
                return Ok(());
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
