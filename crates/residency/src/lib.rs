//! Page-cache residency of files: what `prefetch fincore`, `prefetch snapshot` and `prefetch
//! restore` do.
//!
//! - [`probe`]: which pages of a file are cached (cachestat, bisected; mincore where cachestat
//!   is missing), after libprefetch (ATC 2009) section 4.5's `fincore`.
//! - [`runs`]: page sets as sorted runs, and their arithmetic.
//! - [`files`]: the paths given, directories recursed.
//! - [`mod@fincore`]: the table and JSON rows of `prefetch fincore`.
//! - [`snapshot`]: the saved residency of files with their identity (docs/residency.md).
//! - [`snapshot_head`]: whether a file starts as a snapshot, from its first bytes only.
//! - [`mod@restore`]: reading back only the missing pages, in C-LOOK order with infill, within the
//!   memory budget (libprefetch sections 3.3 and 4.6).
//! - [`beside`]: the same beside a running program: advice only, all or nothing within the memory
//!   free, paced (`prefetch run --restore`).
//! - [`aside`]: the restorer beside a program waits outside the program's memory cgroup and
//!   joins it to restore.
//! - [`touch`]: whether a running program has opened or mapped a snapshot's files yet, and
//!   what those touches are worth.
//! - [`opens`]: the same seen as it happens, through fanotify marks on the snapshot's files.
//! - [`start`]: when the restore beside a program starts: once the files it touched hold more
//!   of the snapshot than one read-around window.
//!
//! Nothing here writes to a file it probes or restores, and no function changes what a reader
//! of those files sees: probes are read-only system calls, restore only advises WILLNEED.
//! Thread safety: every function may be called from any thread.

use std::path::PathBuf;

pub mod aside;
pub mod beside;
pub mod files;
pub mod fincore;
pub mod opens;
pub mod probe;
pub mod restore;
pub mod runs;
pub mod snapshot;
pub mod snapshot_head;
pub mod start;
pub mod touch;

pub use probe::{probe_file, Probe, Residency};
pub use restore::{restore, Options, Summary};
pub use runs::PageRuns;
pub use snapshot::{FileIdentity, Snapshot};

/// What can go wrong; each says what failed and on which path, in one line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path cannot be opened, read or listed.
    #[error("{path}: cannot {action}: {source}", path = path.display())]
    Open {
        /// The path.
        path: PathBuf,
        /// What was tried ("open", "list the directory").
        action: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// A path names something that is not a regular file or a directory.
    #[error("{path}: not a regular file or directory", path = path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
    },
    /// The kernel would not say which pages are cached.
    #[error("{path}: residency probe failed: {source}", path = path.display())]
    Probe {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// posix_fadvise(WILLNEED) failed.
    #[error("{path}: posix_fadvise(WILLNEED) failed: {source}", path = path.display())]
    Advise {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The snapshot cannot be written.
    #[error("writing snapshot {path}: {source}", path = path.display())]
    Save {
        /// The snapshot file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The snapshot file is not a snapshot this program can restore.
    #[error(
        "{path} is not a valid residency snapshot: {reason} (write one with `prefetch snapshot -o FILE PATHS...`)",
        path = path.display()
    )]
    Malformed {
        /// The snapshot file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl Error {
    /// `path` cannot be read, for `source`.
    pub fn reading(path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Open {
            path: path.to_path_buf(),
            action: "read",
            source,
        }
    }
}
