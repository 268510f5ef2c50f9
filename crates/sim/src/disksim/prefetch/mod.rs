//! Prefetching for the disk-timed simulator: the [`Prefetcher`] trait and its configuration,
//! [`MakePrefetcher`] (one file per prefetcher, one line each in the catalog).
//!
//! On every reference the engine tells the prefetcher what was referenced and whether it was
//! found in the cache; the prefetcher answers with ranges of file blocks to fetch now, in the
//! order they should be queued. The engine drops blocks already cached or in flight, so a
//! prefetcher may be generous; it turns each range into requests of consecutive blocks.
//!
//! A prefetcher is half of a policy: [`super::Paired`] joins it to a replacement policy into
//! the one [`crate::Policy`] the loop drives.

pub mod competitive;
pub mod none;

// Every prefetcher's file, declared from its line in the catalog (`catalog/lines.rs`); the
// two above are parts of other lines' policies.
crate::catalog::lines::lines!(files, prefetch);

use std::sync::Arc;
use std::time::Duration;

use plan::competitive::DiskCurves as _;
use plan::{Entry, PageKey};

use super::workload::{FileBlock, Step, Workload};
use crate::catalog::lines::files;
use crate::SimError;

/// One reference as the prefetcher sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The stream that referenced the block.
    pub stream: usize,
    /// The block referenced.
    pub block: FileBlock,
    /// The block was cached or already in flight (no demand fetch needed).
    pub found: bool,
    /// Simulated time of the reference.
    pub now: Duration,
    /// Streams that have not finished yet.
    pub active_streams: usize,
    /// The replacement policy's prefetch-cache ceiling in blocks, if it keeps one (CPEM).
    pub prefetch_ceiling: Option<usize>,
}

#[cfg(test)]
impl Access {
    /// A reference by stream 0, alone, at time 0, to block `block` of file 0, not found: the
    /// access the prefetchers' unit tests replay.
    pub(crate) fn miss(block: u64) -> Access {
        Access {
            stream: 0,
            block: FileBlock { file: 0, block },
            found: false,
            now: Duration::ZERO,
            active_streams: 1,
            prefetch_ceiling: None,
        }
    }
}

/// Blocks `start .. start + len` of `file`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchRange {
    /// The file.
    pub file: u32,
    /// First block.
    pub start: u64,
    /// Number of blocks.
    pub len: u64,
}

/// A prefetching policy. Every method is required, none has a default (a missing hook is a
/// compile error).
///
/// One engine drives one prefetcher, in simulated time order; no call may fail. What the
/// engine guarantees: `on_access` is called once per reference, after the cache lookup and
/// before any fetch, and `drops` right after it; blocks already cached or in flight are taken
/// out of the ranges it returns, so it may be generous. What the prefetcher MUST do: name only
/// blocks of the layout's files (the engine ignores blocks past a file's end) and never block.
pub trait Prefetcher {
    /// One reference: the ranges to fetch besides the demand block, in queue order (they may
    /// include the demand block, which then rides in its range's request).
    fn on_access(&mut self, access: &Access) -> Vec<FetchRange>;
    /// A block left the cache; `unused` if it was prefetched and never referenced (the losses
    /// a thrash-aware prefetcher counts).
    fn on_evict(&mut self, block: FileBlock, unused: bool);
    /// A stream issued its last reference: its state may be freed.
    fn on_stream_end(&mut self, stream: usize);
    /// The disk started serving `request`; `seek_bytes` is its distance from the end of the
    /// previous request (as in [`crate::metrics::Requests`]), `None` for the first.
    fn on_served(&mut self, request: &disk::Request, seek_bytes: Option<u64>);
    /// Called right after [`Prefetcher::on_access`]: blocks it no longer needs and wants
    /// dropped from the cache now (libprefetch's DONTNEED of the previous round); empty for a
    /// prefetcher that drops nothing. The engine drops those the replacement policy can remove
    /// ([`super::Replacement::remove`]).
    fn drops(&mut self) -> Vec<FetchRange>;
    /// Whether it never fetches beyond the demand block, drops nothing and learns nothing:
    /// the engine then calls none of its hooks (demand fetching costs no call per reference).
    /// It MUST stay the same for the whole run (the engine asks once, before the first
    /// reference); `false` is always safe, `true` only for a prefetcher whose every other hook
    /// does nothing.
    fn demand_only(&self) -> bool;
}

/// What a prefetcher constructor is told about the run.
#[derive(Clone, Copy, Debug)]
pub struct PrefetchSetup<'a> {
    /// The whole workload (an oracle such as libprefetch's access list reads it; on-line
    /// policies only read its layout).
    pub workload: &'a Workload,
    /// Cache capacity in blocks.
    pub cache_blocks: usize,
    /// The disk, described and measured once (by the caller, per device), for policies that
    /// size themselves from it (competitive prefetching's switch cost and transfer rate).
    pub disk: &'a Disk,
}

/// A disk as the policies that size themselves from it see it: its description and the curves
/// competitive prefetching reads off it ([`competitive::ModelCurves`]), built once when the
/// device is set up and shared by every run on it (a clone shares both).
#[derive(Clone, Debug)]
pub struct Disk {
    /// The model's description.
    pub spec: Arc<disk::Spec>,
    /// Its curves, or why it has none (a fixed-time disk has no transfer rate).
    curves: Result<competitive::ModelCurves, String>,
}

impl Disk {
    /// The disk `spec` with its curves, measured now.
    pub fn new(spec: Arc<disk::Spec>) -> Disk {
        let curves = competitive::ModelCurves::from_spec(&spec);
        Disk { spec, curves }
    }

    /// The curves of competitive prefetching, or why the disk has none.
    pub fn curves(&self) -> Result<&competitive::ModelCurves, String> {
        self.curves.as_ref().map_err(Clone::clone)
    }

    /// Its break-even gap (`plan::competitive::break_even_gap_bytes`, the live library's `S_p`
    /// and infill): its average switch (seek and half a turn) times its mean transfer rate; or
    /// why it has none (a fixed-time disk has no transfer rate).
    pub fn break_even_gap_bytes(&self) -> Result<u64, String> {
        let curves = self.curves()?;
        Ok(plan::competitive::break_even_gap_bytes(
            curves.average_seek() + curves.rotational_delay(),
            curves.mean_rate(),
        ))
    }
}

/// A prefetcher configured once from its options (typed values, parsed when the catalog built
/// the policy): builds a fresh instance for each run. Adding a prefetcher is its file (the
/// prefetcher, this configuration) plus its line in the catalog,
/// `catalog/lines.rs`, which also declares its module.
pub trait MakePrefetcher: std::fmt::Debug + Send + Sync {
    /// A fresh instance for the run `setup`; fails only where the run cannot host it (CP's
    /// depth on a device without a transfer rate), saying what to give instead.
    fn build(&self, setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError>;
}

/// The page key the `plan` crate knows `block` by: its file as the descriptor.
pub(crate) fn page_key(block: FileBlock) -> PageKey {
    PageKey {
        fd: i32::try_from(block.file).unwrap_or(i32::MAX),
        page: block.block,
    }
}

/// A stream's references as a `plan` access list (unmarked entries, in reference order).
pub(crate) fn access_list(steps: &[Step]) -> Vec<Entry> {
    steps
        .iter()
        .map(|s| Entry {
            key: page_key(s.block),
            mark: false,
        })
        .collect()
}
