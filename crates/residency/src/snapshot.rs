//! Residency snapshots: which pages of which files were cached, saved so that `restore` can
//! bring back the ones that are missing later.
//!
//! The format (docs/residency.md) is JSON, one object:
//!
//! ```text
//! { "format": "prefetch-residency-snapshot", "version": 1, "page_size": 4096,
//!   "files": [ { "path": "/data/app.db", "dev": 2049, "ino": 1311, "size": 1073741824,
//!                "mtime_sec": 1763900000, "mtime_nsec": 120000000,
//!                "pages": [[0, 16], [96, 97]] } ] }
//! ```
//!
//! `pages` are half-open runs of page numbers, ascending and not overlapping. A file is the same
//! file at restore time when device, inode, size and modification time all match
//! ([`FileIdentity`]).
//! Loading checks everything a restore relies on (format, version, page size, runs within the
//! file) and says what is wrong in one line.
//!
//! No paper section (vmtouch's and pgfincore's snapshots keep page bitmaps; runs are smaller
//! for the clustered residency a page cache usually holds).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::expand;
use crate::probe::{page_size, pages_of, probe_file, Probe};
use crate::runs::PageRuns;
use crate::Error;

/// The `format` tag every snapshot carries.
pub const FORMAT: &str = "prefetch-residency-snapshot";
/// The version this code writes and reads.
pub const VERSION: u32 = 1;

/// What makes a file the same file later: device, inode, size and modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIdentity {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// `st_size`, bytes.
    pub size: u64,
    /// `st_mtime`, seconds.
    pub mtime_sec: i64,
    /// `st_mtime`, nanoseconds.
    pub mtime_nsec: i64,
}

impl FileIdentity {
    /// The identity of an open file.
    pub fn of(file: &impl AsFd) -> io::Result<FileIdentity> {
        let stat = rustix::fs::fstat(file).map_err(|e| crate::probe::naming("fstat")(e.into()))?;
        Ok(FileIdentity {
            dev: stat.st_dev,
            ino: stat.st_ino,
            size: stat.st_size as u64,
            mtime_sec: stat.st_mtime,
            mtime_nsec: stat.st_mtime_nsec as i64,
        })
    }

    /// What differs from `now`, as words for a warning ("size, mtime"); empty if nothing.
    pub fn differences(&self, now: &FileIdentity) -> Vec<&'static str> {
        let mut out = Vec::new();
        if (self.dev, self.ino) != (now.dev, now.ino) {
            out.push("device/inode");
        }
        if self.size != now.size {
            out.push("size");
        }
        if (self.mtime_sec, self.mtime_nsec) != (now.mtime_sec, now.mtime_nsec) {
            out.push("modification time");
        }
        out
    }
}

/// One file of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFile {
    /// Absolute path at snapshot time.
    pub path: PathBuf,
    /// The file's identity at snapshot time.
    #[serde(flatten)]
    pub identity: FileIdentity,
    /// Cached pages, as half-open runs `[start, end)`.
    pub pages: Vec<[u64; 2]>,
}

impl SnapshotFile {
    /// The cached pages as a set.
    pub fn page_runs(&self) -> PageRuns {
        PageRuns::from_unsorted(self.pages.iter().map(|&[s, e]| s..e).collect())
    }
}

/// A residency snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// Page size of the machine that took it, bytes.
    pub page_size: u64,
    /// The files, in the order they were given (directories expanded).
    pub files: Vec<SnapshotFile>,
}

impl Snapshot {
    /// An empty snapshot of this machine's page size.
    pub fn new() -> Snapshot {
        Snapshot {
            format: FORMAT.to_string(),
            version: VERSION,
            page_size: page_size(),
            files: Vec::new(),
        }
    }

    /// Adds a file with its identity and cached pages.
    pub fn add(&mut self, path: PathBuf, identity: FileIdentity, resident: &PageRuns) {
        let pages = resident
            .runs()
            .iter()
            .map(|run| [run.start, run.end])
            .collect();
        self.files.push(SnapshotFile {
            path,
            identity,
            pages,
        });
    }

    /// Takes a snapshot of `paths` (directories recursed, see [`expand`]): the files with
    /// cached pages (the others have nothing to restore, and a restore need not open them).
    /// Fails on the first file that cannot be opened or probed: a snapshot is all of what was
    /// asked or nothing.
    pub fn take(paths: &[PathBuf]) -> Result<Snapshot, Error> {
        let mut snapshot = Snapshot::new();
        for path in expand(paths)? {
            let path = std::path::absolute(&path).map_err(|source| Error::Open {
                path: path.clone(),
                action: "make the path absolute",
                source,
            })?;
            let file = File::open(&path).map_err(|source| Error::Open {
                path: path.clone(),
                action: "open",
                source,
            })?;
            let identity = FileIdentity::of(&file).map_err(|source| Error::Probe {
                path: path.clone(),
                source,
            })?;
            let residency =
                probe_file(&file, identity.size, Probe::detect(&file)).map_err(|source| {
                    Error::Probe {
                        path: path.clone(),
                        source,
                    }
                })?;
            if !residency.resident.is_empty() {
                snapshot.add(path, identity, &residency.resident);
            }
        }
        Ok(snapshot)
    }

    /// Pages the snapshot holds, over all files.
    pub fn page_count(&self) -> u64 {
        self.files.iter().map(|f| f.page_runs().page_count()).sum()
    }

    /// Writes the snapshot to `path` (replacing it through a temporary file and a rename, so a
    /// reader never sees half of one).
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let saving = |source: io::Error| Error::Save {
            path: path.to_path_buf(),
            source,
        };
        let text = serde_json::to_vec(self).map_err(|e| saving(io::Error::other(e)))?;
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(format!(".partial-{}", std::process::id()));
        let temporary = PathBuf::from(temporary);
        std::fs::write(&temporary, text).map_err(saving)?;
        std::fs::rename(&temporary, path).map_err(|error| {
            let _ = std::fs::remove_file(&temporary);
            saving(error)
        })
    }

    /// Reads and checks a snapshot written by [`Snapshot::save`].
    pub fn load(path: &Path) -> Result<Snapshot, Error> {
        let mut file = File::open(path).map_err(|source| Error::reading(path, source))?;
        Snapshot::load_from(&mut file, path)
    }

    /// Reads and checks the snapshot of an open `file` (from where it is), `path` its name in
    /// messages.
    pub fn load_from(file: &mut File, path: &Path) -> Result<Snapshot, Error> {
        let mut text = Vec::new();
        io::Read::read_to_end(file, &mut text).map_err(|source| Error::reading(path, source))?;
        Snapshot::parse(path, &text)
    }

    /// The snapshot `text` of file `path`, checked.
    fn parse(path: &Path, text: &[u8]) -> Result<Snapshot, Error> {
        let malformed = |reason: String| Error::Malformed {
            path: path.to_path_buf(),
            reason,
        };
        let mut snapshot: Snapshot =
            serde_json::from_slice(text).map_err(|e| malformed(e.to_string()))?;
        snapshot.check().map_err(malformed)?;
        snapshot.deduplicate();
        Ok(snapshot)
    }

    /// Lists each file once (by device and inode, under its first path),
    /// with the union of its pages: a file listed many times is restored
    /// and counted once.
    fn deduplicate(&mut self) {
        let mut first: std::collections::HashMap<(u64, u64), usize> = Default::default();
        let mut kept: Vec<SnapshotFile> = Vec::with_capacity(self.files.len());
        for file in self.files.drain(..) {
            let key = (file.identity.dev, file.identity.ino);
            match first.get(&key) {
                Some(&at) if kept[at].identity == file.identity => {
                    let mut runs = kept[at].page_runs().runs().to_vec();
                    runs.extend(file.page_runs().runs().iter().cloned());
                    kept[at].pages = PageRuns::from_unsorted(runs)
                        .runs()
                        .iter()
                        .map(|run| [run.start, run.end])
                        .collect();
                }
                _ => {
                    first.insert(key, kept.len());
                    kept.push(file);
                }
            }
        }
        self.files = kept;
    }

    /// Everything a restore relies on; the reason in words if something is wrong.
    fn check(&self) -> Result<(), String> {
        check_head(&self.format, self.version, self.page_size)?;
        self.files.iter().try_for_each(check_file)
    }
}

/// A snapshot's format, version and page size are this program's and this machine's.
pub(crate) fn check_head(format: &str, version: u32, page_size_then: u64) -> Result<(), String> {
    if format != FORMAT {
        return Err(format!("format is {format:?}, expected {FORMAT:?}"));
    }
    if version != VERSION {
        return Err(format!(
            "version {version} is not known (this prefetch reads version {VERSION})"
        ));
    }
    if page_size_then != page_size() {
        return Err(format!(
            "taken with {page_size_then}-byte pages, this machine has {}-byte pages",
            page_size()
        ));
    }
    Ok(())
}

impl Default for Snapshot {
    fn default() -> Snapshot {
        Snapshot::new()
    }
}

/// A file's runs are ascending, apart, non-empty and within the file.
fn check_file(file: &SnapshotFile) -> Result<(), String> {
    let pages = pages_of(file.identity.size);
    let mut previous_end = None;
    for &[start, end] in &file.pages {
        let bad = if start >= end {
            Some("is empty or reversed")
        } else if end > pages {
            Some("lies past the end of the file")
        } else if previous_end.is_some_and(|prev| start < prev) {
            Some("overlaps or precedes the previous run")
        } else {
            None
        };
        if let Some(bad) = bad {
            return Err(format!(
                "{}: page run [{start}, {end}) {bad} ({pages} pages)",
                file.path.display()
            ));
        }
        previous_end = Some(end);
    }
    Ok(())
}
