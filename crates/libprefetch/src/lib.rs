//! libprefetch: application-directed prefetching for Linux.
//!
//! The live library of "Application-directed prefetching" (USENIX ATC 2009,
//! section 4): an application registers a [`Client`] with a callback,
//! declares the file regions to track, and hands over its future reads as
//! an access list. The library prefetches as much of the list as memory
//! allows, in file-offset order with infill, drops what the previous round
//! fetched and no longer needs, adapts its budget with AIMD, and follows the
//! application through its reads. All decisions come from crate `plan`;
//! this crate performs them (posix_fadvise, residency probes, memory
//! limits) and exposes the Rust API and the C ABI of `include/libprefetch.h`.
//!
//! Reads are seen through [`note_read`], which the `preload` crate's
//! interposed `read`/`pread`/`readv` family calls; code whose reads the
//! interposers cannot see calls it directly. A resting client's read is
//! made through [`read_cached`] first (`RWF_NOWAIT`, its own probe).
//!
//! Thread safety: every function may be called from any thread. Fork: a
//! child starts with no clients; Rust handles inherited from the parent
//! fail with [`Error::Forked`], C handles are unknown in the child and fail
//! with `EINVAL`.

mod advice;
mod advice_thread;
mod cache_budget;
mod cache_budget_closed;
mod cache_budget_fds;
mod cache_budget_io;
mod cache_budget_pending;
pub mod capi;
mod client;
mod client_rest;
mod competitive;
mod descriptors;
pub mod device;
mod env;
mod filestat;
mod guard;
mod instance;
mod instance_entry;
mod mapped;
pub mod memory;
mod observe;
pub mod profile;
mod rawio;
mod record;
mod registry;
mod replay;
mod replay_mapped;
mod replay_open;
pub mod residency;
mod share;
mod track;
mod track_cached;
mod track_fast;
pub mod variables;

pub use cache_budget_io::{
    budget_copy_piece, budget_running, note_copied_from, note_seek, note_written,
};
pub use client::{
    probe_period, AccessEntry, CallbackInfo, Client, Config, IgnoreGuard, RegionId, Stats,
    MAX_PROBE_PERIOD, MIN_PROBE_PERIOD,
};
pub use env::{EnvConfig, Refused};
pub use instance_entry::id as instance_id;
pub use observe::start_from_env;
pub use plan::{Mode, Schedule};
pub use track::{may_track, note_close, note_mmap, note_munmap, note_read, note_read_at_position};
pub use track_cached::{read_cached, CachedRead};

/// Errors of the Rust API (the C API maps each to an errno).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The descriptor is not open.
    #[error("bad file descriptor")]
    BadFd,
    /// An argument is out of range or inconsistent.
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// The client belongs to the parent of this forked process.
    #[error("client was registered before fork() in another process")]
    Forked,
}

impl Error {
    /// The errno the C API sets for this error.
    pub fn errno(&self) -> i32 {
        match self {
            Error::BadFd => libc::EBADF,
            Error::InvalidArgument(_) => libc::EINVAL,
            Error::Forked => libc::ESRCH,
        }
    }
}
