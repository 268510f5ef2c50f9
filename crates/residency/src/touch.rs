//! Whether a running program has touched a file of a snapshot yet: one of the files open
//! (`/proc/PID/fd`) or mapped (`/proc/PID/maps`) by the program or a process it started
//! (`/proc/PID/task/TID/children`, recursively).
//!
//! `prefetch run --restore` reads nothing until the first touch: a snapshot of another
//! program's files, or of files this run never opens, then costs the program nothing (a
//! restore of them competed with the program's own reads for the disk), as a replay advises
//! nothing until the program touches a page of its list (docs/record.md, "What a replay
//! does"). Files are known by device and inode, so any path to them counts. Looking costs
//! reads of `/proc` files and a `statx` per open descriptor that asks for nothing the inode
//! does not hold (`AT_STATX_DONT_SYNC`: no round trip to a FUSE daemon).
//!
//! Follows libprefetch (ATC 2009) section 3.2 (prefetching starts from the application's
//! own accesses); the snapshot has no order, so the first touch of any of its files starts
//! the whole sweep.

use std::collections::HashSet;
use std::fs;

use rustix::fs::{statx, AtFlags, StatxFlags, CWD};

use crate::snapshot::Snapshot;

/// The files of a snapshot, by device and inode.
#[derive(Clone, Debug, Default)]
pub struct Files {
    ids: HashSet<(u64, u64)>,
}

impl Files {
    /// The files of `snapshot`.
    pub fn of(snapshot: &Snapshot) -> Files {
        Files {
            ids: snapshot
                .files
                .iter()
                .map(|file| (file.identity.dev, file.identity.ino))
                .collect(),
        }
    }

    /// True if process `pid` or one of its descendants has one of the files open or mapped
    /// now (false for a process that is gone).
    pub fn touched_by(&self, pid: u32) -> bool {
        let mut pending = vec![pid];
        while let Some(pid) = pending.pop() {
            if self.mapped_by(pid) || self.open_in(pid) {
                return true;
            }
            pending.extend(children(pid));
        }
        false
    }

    /// True if a mapping of process `pid` is of one of the files.
    fn mapped_by(&self, pid: u32) -> bool {
        let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return false;
        };
        maps.lines()
            .filter_map(mapped_file)
            .any(|id| self.ids.contains(&id))
    }

    /// True if a descriptor of process `pid` is of one of the files.
    fn open_in(&self, pid: u32) -> bool {
        let Ok(entries) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        entries.flatten().any(|entry| {
            statx(CWD, entry.path(), AtFlags::STATX_DONT_SYNC, StatxFlags::INO).is_ok_and(|stat| {
                let dev = libc::makedev(stat.stx_dev_major, stat.stx_dev_minor);
                self.ids.contains(&(dev, stat.stx_ino))
            })
        })
    }
}

/// The device and inode of a line of `/proc/PID/maps` (`start-end perms offset MAJ:MIN inode
/// path`, the numbers of the device in hex), if it maps a file.
fn mapped_file(line: &str) -> Option<(u64, u64)> {
    let mut fields = line.split_ascii_whitespace().skip(3);
    let (major, minor) = fields.next()?.split_once(':')?;
    let ino: u64 = fields.next()?.parse().ok()?;
    let major = u32::from_str_radix(major, 16).ok()?;
    let minor = u32::from_str_radix(minor, 16).ok()?;
    (ino != 0).then(|| (libc::makedev(major, minor), ino))
}

/// The children of every thread of process `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_ascii_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_of_maps_gives_the_device_and_inode_of_a_file() {
        let line = "7f1c2a000000-7f1c2a021000 r--p 00000000 fd:01 1837 /usr/lib/libc.so.6";
        assert_eq!(mapped_file(line), Some((libc::makedev(0xfd, 1), 1837)));
        let fuse = "55d0c0a00000-55d0c0a01000 r-xp 00001000 00:28 874 /mnt/site/x.so";
        assert_eq!(mapped_file(fuse), Some((40, 874)));
        assert_eq!(
            mapped_file("7ffd1c9e0000-7ffd1ca01000 rw-p 00000000 00:00 0 [stack]"),
            None
        );
        assert_eq!(
            mapped_file("7f0000000000-7f0000001000 rw-p 00000000 00:00 0"),
            None
        );
    }
}
