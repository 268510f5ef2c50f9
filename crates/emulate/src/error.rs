//! The [`Error`] of setting up and running the emulated disk. Re-exported at the crate root;
//! in a file of its own so that the modules the root mounts with (the tree scan) do not import
//! it from the root.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong setting up or running the emulated disk.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The time scale is outside [`crate::TIME_SCALES`].
    #[error("time scale must be between 1e-6 and 1e6 wall seconds per model second, got {0}")]
    BadTimeScale(f64),
    /// The mount point is the backing directory or lies inside it (or the
    /// reverse): reads of the backing files would go through the mount itself.
    #[error(
        "mount point {mountpoint} and backing directory {backing} overlap \
         (reads would loop through the mount and hang): mount outside the backing tree"
    )]
    Overlap {
        /// The mount point.
        mountpoint: PathBuf,
        /// The backing directory.
        backing: PathBuf,
    },
    /// The actuator thread panicked (a bug): reads failed with EIO and the
    /// disk was unmounted.
    #[error("the emulated disk failed and was unmounted (actuator thread panicked: {0})")]
    ActuatorFailed(String),
    /// The model or scheduler name is not known to the disk crate.
    #[error(transparent)]
    Disk(#[from] disk::Error),
    /// The backing directory or one of its entries cannot be read.
    #[error("backing directory: {path}: {source}")]
    Backing {
        /// The path that failed.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// FIEMAP is not supported where a backing file lives.
    #[error(
        "cannot read the physical extents of {path} (FIEMAP: {source}); \
         use --contiguous to lay the files out end to end instead"
    )]
    Fiemap {
        /// The backing file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The backing files do not fit on the modelled disk.
    #[error("the backing files need {needed} bytes but the disk model holds {capacity}")]
    TooLarge {
        /// Bytes needed.
        needed: u64,
        /// Capacity of the model.
        capacity: u64,
    },
    /// The mount point is a dead FUSE mount left by a killed daemon.
    #[error(
        "{0} is a dead FUSE mount (a previous emulator was killed): \
         run `fusermount3 -u -z {0}` (or `umount -l {0}`) and retry"
    )]
    StaleMount(PathBuf),
    /// The mount point is missing or not a directory.
    #[error("mount point {path}: {source}")]
    MountPoint {
        /// The mount point.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The request log cannot be created.
    #[error("cannot create the request log {path}: {source}; give a writable file path")]
    RequestLog {
        /// The log's path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// FUSE is not usable on this machine.
    #[error("FUSE unavailable: {0}")]
    NoFuse(String),
    /// Mounting or running the FUSE session failed.
    #[error("FUSE mount at {mountpoint}: {source}")]
    Mount {
        /// The mount point.
        mountpoint: PathBuf,
        /// Why.
        source: io::Error,
    },
}
