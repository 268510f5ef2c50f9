//! Emptying the page cache before a cold run, and the advice calls of the `naive` mode.
//!
//! The default evicts only the data file, with `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file
//! (DESIGN.md, "Cold-cache runs"); `--drop-caches` writes 3 to `/proc/sys/vm/drop_caches` after a `sync`,
//! which empties every clean page of every file (root only).

use std::fs::File;
use std::num::NonZeroU64;

use anyhow::{Context, Result};
use rustix::fs::{fadvise, Advice};
use serde::{Deserialize, Serialize};

/// How the page cache is emptied before each cold run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Eviction {
    /// `posix_fadvise(DONTNEED)` of the data file only.
    Fadvise,
    /// `sync` then `echo 3 > /proc/sys/vm/drop_caches` (all files; needs root).
    DropCaches,
}

impl Eviction {
    /// How the report names this method.
    pub fn describe(self) -> &'static str {
        match self {
            Eviction::Fadvise => "posix_fadvise(DONTNEED) of the data file",
            Eviction::DropCaches => "sync + echo 3 > /proc/sys/vm/drop_caches",
        }
    }

    /// Empties the cache of `file` (and, for [`Eviction::DropCaches`], of everything else).
    pub fn evict(self, file: &File) -> Result<()> {
        match self {
            Eviction::Fadvise => advise(file, 0, None, Advice::DontNeed)
                .context("posix_fadvise(DONTNEED) of the data file failed"),
            Eviction::DropCaches => drop_all_caches(),
        }
    }
}

/// Writes 3 to /proc/sys/vm/drop_caches after flushing dirty data, so that clean pages can be dropped.
fn drop_all_caches() -> Result<()> {
    const PATH: &str = "/proc/sys/vm/drop_caches";
    rustix::fs::sync();
    std::fs::write(PATH, "3\n").with_context(|| {
        format!("--drop-caches: writing 3 to {PATH} failed (it needs root; without the flag only the data file is evicted)")
    })
}

/// `posix_fadvise(advice)` on `[offset, offset + len)`; `len` None means "to the end of the file".
pub fn advise(file: &File, offset: u64, len: Option<u64>, advice: Advice) -> std::io::Result<()> {
    fadvise(file, offset, len.and_then(NonZeroU64::new), advice).map_err(std::io::Error::from)
}

/// `posix_fadvise(WILLNEED)` on `[offset, offset + len)`: starts reading it into the cache and returns.
pub fn will_need(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    advise(file, offset, Some(len), Advice::WillNeed)
}
