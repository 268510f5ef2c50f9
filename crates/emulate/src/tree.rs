//! A snapshot of the backing directory taken at mount time: its directories
//! and regular files, their attributes, inode numbers, and where each file
//! lies on the emulated disk.
//!
//! Inode numbers: 1 is the backing directory itself, then every entry in
//! depth-first order with names sorted bytewise, which is also the path order
//! of the contiguous layout.
//!
//! Deviations: the mount is a read-only snapshot: files added to the backing
//! directory after mount do not appear, and symbolic links, devices, sockets
//! and pipes are left out.

use crate::fiemap;
use crate::layout::{self, FileMap, Placement};
use crate::Error;
use fuser::{FileAttr, FileType, INodeNo};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The inode number of the backing directory, the mount's root.
pub const ROOT: u64 = 1;

/// One directory or regular file of the backing directory.
#[derive(Debug)]
pub struct Node {
    /// Path of the backing file or directory.
    pub path: PathBuf,
    /// Inode number of the containing directory (the root's is itself).
    pub parent: u64,
    /// Attributes as the mount shows them (write permission bits removed).
    pub attr: FileAttr,
    /// For a directory, its entries `(name, inode)` sorted by name.
    pub children: Vec<(OsString, u64)>,
    /// For a regular file, where its bytes lie on the emulated disk.
    pub map: FileMap,
}

/// The snapshot: nodes indexed by inode number minus one.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
}

impl Tree {
    /// Scans `root` and places its files on a disk of `capacity` bytes.
    pub fn scan(root: &Path, placement: Placement, capacity: u64) -> Result<Self, Error> {
        let mut tree = Tree { nodes: Vec::new() };
        let meta = metadata(root)?;
        if !meta.is_dir() {
            return Err(Error::Backing {
                path: root.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        tree.add(root.to_path_buf(), ROOT, &meta);
        tree.scan_dir(ROOT)?;
        tree.place(placement, capacity)?;
        Ok(tree)
    }

    /// The node with inode number `ino`.
    pub fn get(&self, ino: u64) -> Option<&Node> {
        let index = usize::try_from(ino.checked_sub(1)?).ok()?;
        self.nodes.get(index)
    }

    /// The inode number of entry `name` in directory `parent`.
    pub fn lookup(&self, parent: u64, name: &OsStr) -> Option<u64> {
        let children = &self.get(parent)?.children;
        let index = children
            .binary_search_by(|(child, _)| child.as_os_str().cmp(name))
            .ok()?;
        Some(children[index].1)
    }

    /// Number of directories and files.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the snapshot holds nothing (never, once scanned: the root is there).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn add(&mut self, path: PathBuf, parent: u64, meta: &Metadata) -> u64 {
        let ino = self.nodes.len() as u64 + 1;
        self.nodes.push(Node {
            path,
            parent,
            attr: attr_of(ino, meta),
            children: Vec::new(),
            map: FileMap::default(),
        });
        ino
    }

    fn scan_dir(&mut self, dir: u64) -> Result<(), Error> {
        let dir_path = self.nodes[dir as usize - 1].path.clone();
        let mut entries = read_dir_sorted(&dir_path)?;
        entries.retain(|(_, meta)| meta.is_dir() || meta.is_file());
        for (name, meta) in entries {
            let path = dir_path.join(&name);
            let ino = self.add(path, dir, &meta);
            self.nodes[dir as usize - 1].children.push((name, ino));
            if meta.is_dir() {
                self.scan_dir(ino)?;
            }
        }
        Ok(())
    }

    /// Fills each file's disk map by `placement`.
    fn place(&mut self, placement: Placement, capacity: u64) -> Result<(), Error> {
        let files: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].attr.kind == FileType::RegularFile)
            .collect();
        let maps = match placement {
            Placement::Contiguous => {
                let sizes: Vec<u64> = files.iter().map(|&i| self.nodes[i].attr.size).collect();
                layout::contiguous(&sizes, capacity)
            }
            Placement::Physical => {
                let extents = files
                    .iter()
                    .map(|&i| file_extents(&self.nodes[i].path))
                    .collect::<Result<Vec<_>, Error>>()?;
                layout::physical(&extents, capacity)
            }
        }
        .map_err(|too_large| Error::TooLarge {
            needed: too_large.needed,
            capacity: too_large.capacity,
        })?;
        for (index, map) in files.into_iter().zip(maps) {
            self.nodes[index].map = map;
        }
        Ok(())
    }
}

fn file_extents(path: &Path) -> Result<Vec<fiemap::Extent>, Error> {
    let file = File::open(path).map_err(|source| Error::Backing {
        path: path.to_path_buf(),
        source,
    })?;
    fiemap::extents(&file).map_err(|source| Error::Fiemap {
        path: path.to_path_buf(),
        source,
    })
}

fn metadata(path: &Path) -> Result<Metadata, Error> {
    fs::symlink_metadata(path).map_err(|source| Error::Backing {
        path: path.to_path_buf(),
        source,
    })
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<(OsString, Metadata)>, Error> {
    let error = |source| Error::Backing {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir).map_err(error)? {
        let entry = entry.map_err(error)?;
        let meta = metadata(&entry.path())?;
        entries.push((entry.file_name(), meta));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// The attributes the mount shows for a backing entry: its own, read-only.
fn attr_of(ino: u64, meta: &Metadata) -> FileAttr {
    let kind = if meta.is_dir() {
        FileType::Directory
    } else {
        FileType::RegularFile
    };
    FileAttr {
        ino: INodeNo(ino),
        size: meta.len(),
        blocks: meta.blocks(),
        atime: time(meta.atime(), meta.atime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        crtime: time(meta.ctime(), meta.ctime_nsec()),
        kind,
        perm: (meta.mode() & 0o7555) as u16,
        nlink: meta.nlink() as u32,
        uid: meta.uid(),
        gid: meta.gid(),
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

fn time(secs: i64, nanos: i64) -> SystemTime {
    let nanos = Duration::from_nanos(nanos.clamp(0, 999_999_999) as u64);
    match u64::try_from(secs) {
        Ok(secs) => UNIX_EPOCH + Duration::from_secs(secs) + nanos,
        Err(_) => UNIX_EPOCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backing() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("b"), vec![1u8; 5000]).unwrap();
        fs::write(dir.path().join("a"), vec![2u8; 10]).unwrap();
        fs::write(dir.path().join("sub/c"), vec![3u8; 4096]).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("link")).unwrap();
        dir
    }

    #[test]
    fn scan_numbers_entries_depth_first_by_name() {
        let dir = backing();
        let tree = Tree::scan(dir.path(), Placement::Contiguous, 1 << 30).unwrap();
        assert_eq!(
            tree.len(),
            5,
            "root, a, b, sub, sub/c; the symlink is left out"
        );
        assert_eq!(tree.lookup(ROOT, OsStr::new("a")), Some(2));
        assert_eq!(tree.lookup(ROOT, OsStr::new("b")), Some(3));
        assert_eq!(tree.lookup(ROOT, OsStr::new("sub")), Some(4));
        assert_eq!(tree.lookup(4, OsStr::new("c")), Some(5));
        assert_eq!(tree.lookup(ROOT, OsStr::new("link")), None);
        assert_eq!(tree.get(5).unwrap().parent, 4);
        assert_eq!(tree.get(3).unwrap().attr.size, 5000);
    }

    #[test]
    fn contiguous_placement_follows_path_order() {
        let dir = backing();
        let tree = Tree::scan(dir.path(), Placement::Contiguous, 1 << 30).unwrap();
        let start = |ino| tree.get(ino).unwrap().map.address(0);
        assert_eq!([start(2), start(3), start(5)], [0, 4096, 12288]);
    }

    #[test]
    fn write_permission_is_removed() {
        let dir = backing();
        let tree = Tree::scan(dir.path(), Placement::Contiguous, 1 << 30).unwrap();
        assert_eq!(tree.get(2).unwrap().attr.perm & 0o222, 0);
    }

    #[test]
    fn files_larger_than_the_disk_are_refused() {
        let dir = backing();
        let error = Tree::scan(dir.path(), Placement::Contiguous, 8192).unwrap_err();
        assert!(matches!(error, Error::TooLarge { .. }), "{error}");
    }

    #[test]
    fn a_missing_backing_directory_is_named_in_the_error() {
        let error = Tree::scan(
            Path::new("/nonexistent/backing"),
            Placement::Contiguous,
            1 << 30,
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("/nonexistent/backing"),
            "{error}"
        );
    }
}
