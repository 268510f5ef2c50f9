//! The FUSE file system of the emulated disk: a read-only view of the backing
//! directory whose file reads wait for the emulated disk.
//!
//! A read is answered in two steps: the FUSE thread copies the bytes from the
//! backing file at once (the backing disk's own time is not charged), then
//! submits a request for the file range's disk address to the actuator, which
//! sends the reply when the model says the read completes. The FUSE thread
//! never waits for the disk, so the kernel can keep many reads in flight (up to
//! `MAX_BACKGROUND` readahead requests plus one per reading thread) and the
//! scheduler sees a real queue.
//!
//! The kernel page cache stays on above the mount: regular files open with
//! `FOPEN_KEEP_CACHE` and never `direct_io`, so cached pages are served without
//! reaching this file system, and `posix_fadvise`, `readahead` and `mincore`
//! act as on a disk-backed file system. Only the counters file
//! `.emulate-stats` at the root is `direct_io`, so each open shows fresh numbers
//! (a snapshot taken at open, so a reader never sees two half-snapshots).
//!
//! Deviations: a read is one disk request at the address of its first byte,
//! even when it crosses from one physical extent into another.

use crate::actuator::DiskHandle;
use crate::tree::{Tree, ROOT};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, KernelConfig,
    LockOwner, OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, Request,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, UNIX_EPOCH};

/// Name of the counters file at the mount root.
pub const STATS_NAME: &str = ".emulate-stats";

/// Inode number of the counters file (above any snapshot's numbers).
const STATS_INO: u64 = u64::MAX >> 1;

/// How long the kernel may cache names and attributes: the snapshot never changes.
const TTL: Duration = Duration::from_secs(3600);

/// Most asynchronous (readahead) requests the kernel keeps in flight to the
/// mount. The kernel's default of 12 would cap the queue a prefetcher can build.
const MAX_BACKGROUND: u16 = 256;

/// The file system served by the FUSE thread.
pub struct EmulatedFs {
    tree: Arc<Tree>,
    disk: DiskHandle,
    /// Backing files of the inodes open on the mount, with their open counts:
    /// one descriptor per inode however many opens, closed at the last release.
    open_files: Mutex<HashMap<u64, (Arc<File>, usize)>>,
    /// The counters file's text as of each open of it, by file handle, so
    /// that one reader sees one consistent snapshot however it splits reads.
    stats_snapshots: Mutex<HashMap<u64, Arc<String>>>,
    next_handle: AtomicU64,
}

impl EmulatedFs {
    /// A file system showing `tree`, whose reads go to `disk`.
    pub fn new(tree: Arc<Tree>, disk: DiskHandle) -> Self {
        EmulatedFs {
            tree,
            disk,
            open_files: Mutex::new(HashMap::new()),
            stats_snapshots: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
        }
    }

    fn stats_attr(&self) -> FileAttr {
        let root = self.tree.get(ROOT).map(|node| node.attr);
        FileAttr {
            ino: INodeNo(STATS_INO),
            size: 0,
            blocks: 0,
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind: FileType::RegularFile,
            perm: 0o444,
            nlink: 1,
            uid: root.map_or(0, |attr| attr.uid),
            gid: root.map_or(0, |attr| attr.gid),
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn attr(&self, ino: u64) -> Option<FileAttr> {
        if ino == STATS_INO {
            return Some(self.stats_attr());
        }
        self.tree.get(ino).map(|node| node.attr)
    }

    /// Opens the backing file of inode `ino` for one more open of it on the mount.
    fn open_backing(&self, ino: u64) -> io::Result<()> {
        let mut files = lock(&self.open_files);
        if let Some((_, opens)) = files.get_mut(&ino) {
            *opens += 1;
            return Ok(());
        }
        let node = self.tree.get(ino).ok_or(io::ErrorKind::NotFound)?;
        files.insert(ino, (Arc::new(File::open(&node.path)?), 1));
        Ok(())
    }

    /// Ends one open of inode `ino`, closing its backing file after the last.
    fn release_backing(&self, ino: u64) {
        let mut files = lock(&self.open_files);
        if let Some((_, opens)) = files.get_mut(&ino) {
            *opens -= 1;
            if *opens == 0 {
                files.remove(&ino);
            }
        }
    }

    /// The backing file of inode `ino`: the open one, or (for a read with no
    /// open on record) a fresh descriptor.
    fn backing_file(&self, ino: u64) -> io::Result<Arc<File>> {
        if let Some((file, _)) = lock(&self.open_files).get(&ino) {
            return Ok(Arc::clone(file));
        }
        let node = self.tree.get(ino).ok_or(io::ErrorKind::NotFound)?;
        Ok(Arc::new(File::open(&node.path)?))
    }

    /// Reads `len` bytes at `offset` of the backing file (fewer at its end).
    fn read_backing(&self, ino: u64, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let file = self.backing_file(ino)?;
        let mut buffer = vec![0u8; len];
        let mut filled = 0;
        while filled < len {
            match file.read_at(&mut buffer[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buffer.truncate(filled);
        Ok(buffer)
    }

    /// Takes a snapshot of the counters for a new open of the counters file.
    fn open_stats(&self) -> FileHandle {
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
        let text = Arc::new(self.disk.stats().to_json());
        lock(&self.stats_snapshots).insert(handle, text);
        FileHandle(handle)
    }

    fn read_stats(&self, fh: FileHandle, offset: u64, size: u32, reply: ReplyData) {
        let Some(text) = lock(&self.stats_snapshots).get(&fh.0).cloned() else {
            return reply.error(Errno::EBADF);
        };
        let bytes = text.as_bytes();
        let start = usize::try_from(offset).map_or(bytes.len(), |o| o.min(bytes.len()));
        let end = start.saturating_add(size as usize).min(bytes.len());
        reply.data(&bytes[start..end]);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn errno_of(error: &io::Error) -> Errno {
    error.raw_os_error().map_or(Errno::EIO, Errno::from_i32)
}

impl fuser::Filesystem for EmulatedFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // On refusal the kernel keeps its own limit; the mount still works.
        let _ = config.set_max_background(MAX_BACKGROUND);
        // The kernel's FUSE readahead skips (drops) pages once the queue is
        // "congested" (default 3/4 of max_background), so a prefetcher's
        // WILLNEED could silently lose pages a real disk would have queued.
        // Congested only when full.
        let _ = config.set_congestion_threshold(MAX_BACKGROUND);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent.0 == ROOT && name == STATS_NAME {
            reply.entry(&Duration::ZERO, &self.stats_attr(), Generation(0));
            return;
        }
        match self
            .tree
            .lookup(parent.0, name)
            .and_then(|ino| self.attr(ino))
        {
            Some(attr) => reply.entry(&TTL, &attr, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino.0) {
            Some(attr) if ino.0 == STATS_INO => reply.attr(&Duration::ZERO, &attr),
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            reply.error(Errno::EROFS);
        } else if ino.0 == STATS_INO {
            reply.opened(self.open_stats(), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            match self.open_backing(ino.0) {
                Ok(()) => reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE),
                Err(e) => reply.error(errno_of(&e)),
            }
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if ino.0 == STATS_INO {
            return self.read_stats(fh, offset, size, reply);
        }
        let arrival = self.disk.now();
        let Some(node) = self.tree.get(ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let len = node.attr.size.saturating_sub(offset).min(u64::from(size));
        if len == 0 {
            return reply.data(&[]);
        }
        match self.read_backing(ino.0, offset, len as usize) {
            Ok(data) => {
                let addr = node.map.address(offset);
                let complete = Box::new(move |served: io::Result<()>| match served {
                    Ok(()) => reply.data(&data),
                    Err(e) => reply.error(errno_of(&e)),
                });
                self.disk.submit(addr, len, arrival, complete);
            }
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if ino.0 == STATS_INO {
            lock(&self.stats_snapshots).remove(&fh.0);
        } else {
            self.release_backing(ino.0);
        }
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let Some(node) = self.tree.get(ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        if node.attr.kind != FileType::Directory {
            return reply.error(Errno::ENOTDIR);
        }
        let mut entries = vec![
            (ino.0, FileType::Directory, OsStr::new(".")),
            (node.parent, FileType::Directory, OsStr::new("..")),
        ];
        if ino.0 == ROOT {
            entries.push((STATS_INO, FileType::RegularFile, OsStr::new(STATS_NAME)));
        }
        for (name, child) in &node.children {
            let kind = self.attr(*child).map_or(FileType::RegularFile, |a| a.kind);
            entries.push((*child, kind, name.as_os_str()));
        }
        for (index, (child, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(child), index as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks = self.disk.capacity() / 4096;
        let files = self.tree.len() as u64;
        reply.statfs(blocks, 0, 0, files, 0, 4096, 255, 4096);
    }
}
