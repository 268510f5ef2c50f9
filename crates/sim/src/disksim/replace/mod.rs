//! Page-cache replacement for the disk-timed simulator: the [`Replacement`] trait and the
//! [`REPLACEMENTS`] table (one line per policy, one file per policy).
//!
//! The engine owns residency (which blocks are cached, which are in flight); a policy only
//! keeps the replacement order. The engine tells it about every hit and every insertion and
//! asks it for a victim when the cache is full. Blocks are disk block numbers, so a policy can
//! reason about disk adjacency (DULO's block table).
//!
//! A replacement policy is half of a policy: [`super::Paired`] joins it to a prefetcher into
//! the one [`crate::Policy`] the loop drives.

pub mod clock;
pub mod dulo;
pub mod lru;

use std::time::Duration;

use super::spec::PolicySpec;
use super::workload::DiskBlock;
use crate::SimError;

/// Who touched a block, when, and how (arguments of [`Replacement::on_hit`] and
/// [`Replacement::on_insert`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touch {
    /// The stream whose reference or prefetch caused the call.
    pub stream: usize,
    /// Simulated time of the call.
    pub now: Duration,
    /// On insertion: the block was prefetched (not demanded). On a hit: this is the first
    /// reference to a prefetched block.
    pub prefetched: bool,
}

/// A replacement policy: keeps the order in which cached blocks leave.
///
/// Not thread-safe and not required to be: one engine drives one policy. Calls never fail;
/// the engine guarantees that `on_hit` names a cached block, that `on_insert` names a block not
/// cached, and that `evict` is called only when at least one block is cached.
pub trait Replacement {
    /// A cached (or in-flight) block was referenced.
    fn on_hit(&mut self, block: DiskBlock, how: Touch);
    /// A block entered the cache (the engine has made room).
    fn on_insert(&mut self, block: DiskBlock, how: Touch);
    /// Chooses a victim, forgets it and returns it; `None` only if nothing is cached.
    fn evict(&mut self, now: Duration) -> Option<DiskBlock>;
    /// The cached blocks from the most to the least protected end (the papers' "MRU end on
    /// the left"), for tests and traces.
    fn order(&self) -> Vec<DiskBlock>;
    /// Forgets a cached block at the engine's request (a prefetcher's drop); returns false if
    /// the policy cannot remove arbitrary blocks, in which case the block stays cached.
    fn remove(&mut self, _block: DiskBlock) -> bool {
        false
    }
    /// For policies that keep prefetched pages apart (CPEM): the current ceiling of that
    /// prefetch cache in blocks, so that a prefetcher can cap its depth. `None` otherwise.
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }
}

/// What a replacement constructor is told about the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheGeometry {
    /// Capacity in blocks.
    pub capacity: usize,
    /// Block size in bytes (to turn byte-sized options into blocks).
    pub block_size: u64,
}

/// Builds a policy from its spec (options already parsed) and the cache geometry.
pub type ReplacementCtor = fn(&PolicySpec, CacheGeometry) -> Result<Box<dyn Replacement>, SimError>;

/// The registered replacement policies: name, one-line description, constructor.
pub const REPLACEMENTS: &[(&str, &str, ReplacementCtor)] = &[
    ("clock", "CLOCK (the DULO paper's \"LRU\")", clock::build),
    (
        "lru",
        "strict LRU (DULO Table 1's traditional column)",
        lru::build,
    ),
    (
        "dulo",
        "DULO over CLOCK (FAST'05 s3); options bank=8M, evict=64M",
        dulo::build,
    ),
    (
        "cpem",
        "CPEM prefetch cache over CLOCK (TR840 s4)",
        super::prefetch::cpem::build,
    ),
];

/// Builds the replacement policy named by `spec`.
pub fn replacement_from(
    spec: &PolicySpec,
    geometry: CacheGeometry,
) -> Result<Box<dyn Replacement>, SimError> {
    spec.lookup(REPLACEMENTS)?(spec, geometry)
}
