//! Whether a running program has touched a file of a snapshot yet: one of the files open
//! (`/proc/PID/fd`) or mapped (`/proc/PID/maps`) by the program or a process it started
//! (`/proc/PID/task/TID/children`, recursively).
//!
//! `prefetch run --restore` reads nothing until the program touches the snapshot: a snapshot
//! of another
//! program's files, or of files this run never opens, then costs the program nothing (a
//! restore of them competed with the program's own reads for the disk), as a replay advises
//! nothing until the program touches a page of its list (docs/record.md, "What a replay
//! does"). Files are known by device and inode, so any path to them counts. Looking costs
//! reads of `/proc` files and a `statx` per open descriptor that asks for nothing the inode
//! does not hold (`AT_STATX_DONT_SYNC`: no round trip to a FUSE daemon).
//!
//! What a touch is worth ([`Touched`]): the pages the snapshot holds of the files touched so
//! far. A file every program of a kind opens (a repository's `.git/HEAD` and `.git/config`, one
//! page each, opened by every git command) is no sign that the program is the one the
//! snapshot was taken of; the restore starts once the files touched hold more of the snapshot
//! than one read-around window ([`pages_to_start`]).
//!
//! Follows libprefetch (ATC 2009) section 3.2 (prefetching starts from the application's
//! own accesses); the snapshot has no order, so the touches that start it start the whole
//! sweep.

use std::collections::{HashMap, HashSet};
use std::fs;

use rustix::fs::{statx, AtFlags, StatxFlags, CWD};

use crate::snapshot::Snapshot;

/// The files of a snapshot, by device and inode, with the pages the snapshot holds of each.
#[derive(Clone, Debug, Default)]
pub struct Files {
    pages: HashMap<(u64, u64), u64>,
}

impl Files {
    /// The files of `snapshot`.
    pub fn of(snapshot: &Snapshot) -> Files {
        let mut pages = HashMap::new();
        for file in &snapshot.files {
            // A file listed more than once (two paths to it) counts once, at its largest.
            let most = pages
                .entry((file.identity.dev, file.identity.ino))
                .or_default();
            *most = file.page_runs().page_count().max(*most);
        }
        Files { pages }
    }

    /// True if process `pid` or one of its descendants has one of the files open or mapped
    /// now (false for a process that is gone).
    pub fn touched_by(&self, pid: u32) -> bool {
        let mut touched = Touched::default();
        self.look(pid, &mut touched);
        !touched.files.is_empty()
    }

    /// Adds to `touched` every file process `pid` or one of its descendants has open or mapped
    /// now.
    pub fn look(&self, pid: u32, touched: &mut Touched) {
        let mut pending = vec![pid];
        while let Some(pid) = pending.pop() {
            for id in self.mapped_by(pid).into_iter().chain(self.open_in(pid)) {
                touched.add(self, id);
            }
            pending.extend(children(pid));
        }
    }

    /// The files of the snapshot mapped by process `pid`.
    fn mapped_by(&self, pid: u32) -> Vec<(u64, u64)> {
        let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return Vec::new();
        };
        maps.lines()
            .filter_map(mapped_file)
            .filter(|id| self.pages.contains_key(id))
            .collect()
    }

    /// The files process `pid` has open (any, not only the snapshot's).
    fn open_in(&self, pid: u32) -> Vec<(u64, u64)> {
        let Ok(entries) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let stat = statx(CWD, entry.path(), AtFlags::STATX_DONT_SYNC, StatxFlags::INO);
                stat.ok().map(|stat| {
                    (
                        libc::makedev(stat.stx_dev_major, stat.stx_dev_minor),
                        stat.stx_ino,
                    )
                })
            })
            .collect()
    }
}

/// The snapshot's files a program touched so far, and the snapshot's pages of them.
#[derive(Clone, Debug, Default)]
pub struct Touched {
    files: HashSet<(u64, u64)>,
    /// The snapshot's pages of the files touched.
    pub pages: u64,
}

impl Touched {
    /// The files touched (device and inode).
    pub fn files(&self) -> Vec<(u64, u64)> {
        self.files.iter().copied().collect()
    }

    /// Counts the file of device and inode `id` as touched, once, if it is one of `files`.
    pub fn add(&mut self, files: &Files, id: (u64, u64)) {
        if let Some(pages) = files.pages.get(&id) {
            if self.files.insert(id) {
                self.pages += pages;
            }
        }
    }
}

/// The snapshot's pages the files a program touched must hold for the restore beside it to
/// start (module comment): more than one read-around window of `window_pages` (what the
/// kernel reads with a file's first page in one request: a touch of a file no larger tells
/// nothing the snapshot's restore could pay for), or the whole snapshot of `snapshot_pages`
/// if it is no larger; at least one page (any touch, without a window).
pub fn pages_to_start(window_pages: u64, snapshot_pages: u64) -> u64 {
    (window_pages + 1).min(snapshot_pages).max(1)
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
    fn a_file_listed_twice_counts_once_and_files_outside_the_snapshot_not_at_all() {
        let file = |path: &str, ino, pages| crate::snapshot::SnapshotFile {
            path: path.into(),
            identity: crate::snapshot::FileIdentity {
                dev: 1,
                ino,
                size: 1 << 20,
                mtime_sec: 0,
                mtime_nsec: 0,
            },
            pages: vec![[0, pages]],
        };
        let mut snapshot = Snapshot::new();
        snapshot.files = vec![file("/a", 7, 5), file("/b", 7, 5), file("/c", 8, 3)];
        let files = Files::of(&snapshot);
        let mut touched = Touched::default();
        for id in [(1, 7), (1, 7), (1, 9), (2, 8)] {
            touched.add(&files, id);
        }
        assert_eq!(touched.pages, 5);
        touched.add(&files, (1, 8));
        assert_eq!(touched.pages, 8);
    }

    #[test]
    fn the_restore_starts_past_one_window_or_at_the_whole_of_a_smaller_snapshot() {
        assert_eq!(pages_to_start(32, 1178), 33);
        assert_eq!(pages_to_start(32, 4), 4, "a snapshot within one window");
        assert_eq!(pages_to_start(0, 1178), 1, "no window: the first touch");
        assert_eq!(pages_to_start(0, 0), 1);
    }

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
