//! Page-cache replacement for the disk-timed simulator: the [`Replacement`] trait and its
//! configuration, [`MakeReplacement`] (one file per policy, one line each in the catalog).
//!
//! The engine owns residency (which blocks are cached, which are in flight); a policy only
//! keeps the replacement order. The engine tells it about every hit and every insertion and
//! asks it for a victim when the cache is full. Blocks are disk block numbers, so a policy can
//! reason about disk adjacency (DULO's block table).
//!
//! A replacement policy is half of a policy: [`super::Paired`] joins it to a prefetcher into
//! the one [`crate::Policy`] the loop drives.

pub mod buckets;
pub mod clock;
pub mod demand;
pub mod lru;
pub mod queues;
#[cfg(test)]
mod testing;

// Every replacement policy's file, declared from its line in the catalog (`catalog/lines.rs`);
// the ones above are parts or foundations of other policies.
crate::catalog::lines::lines!(files, replace);

use std::marker::PhantomData;
use std::time::Duration;

use super::spec::PolicySpec;
use super::workload::DiskBlock;
use crate::catalog::lines::files;
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

/// A replacement policy: keeps the order in which cached blocks leave. Every method is
/// required (a missing hook is a compile error), as foyer's `Eviction` states each contract.
///
/// Not thread-safe and not required to be: one engine drives one policy, in simulated time
/// order, and no call may fail. What the engine guarantees: `on_hit` names a block it holds
/// (cached or in flight), `on_insert` a block it does not hold and for which it has made room,
/// `remove` a block it holds; `on_miss` comes before the room is made for a block and its
/// `on_insert`; `evict` is called only when the cache is full or the policy owes an eviction
/// ([`Replacement::owes_eviction`]). What the policy
/// MUST do: after `on_insert(b)` hold `b` until `evict` returns it or `remove(b)` answers true,
/// and never return from `evict` a block it does not hold.
pub trait Replacement {
    /// A held block was referenced: it MUST update its order (recency, reference bit).
    fn on_hit(&mut self, block: DiskBlock, how: Touch);
    /// A block not held is about to enter (a reference missed it or a prefetcher fetches it):
    /// the engine then makes room ([`Replacement::evict`], as often as needed) and inserts it
    /// ([`Replacement::on_insert`]). Policies with a history of evicted blocks (ARC's ghosts)
    /// look the block up here, before choosing victims, as libCacheSim's `find` does.
    fn on_miss(&mut self, block: DiskBlock, how: Touch);
    /// A block entered the cache (the engine has made room): it MUST hold it from now on.
    fn on_insert(&mut self, block: DiskBlock, how: Touch);
    /// The cache is full and `incoming` is about to enter it (ARC's and 2Q's victims depend on
    /// whether it is in their history), or the policy owes an eviction
    /// ([`Replacement::owes_eviction`]) after a hit, and `incoming` is the block hit: it MUST
    /// choose a victim, forget it and return it; `None` only if it holds nothing (the engine
    /// then stops making room).
    fn evict(&mut self, now: Duration, incoming: DiskBlock) -> Option<DiskBlock>;
    /// The held blocks from the most to the least protected end (the papers' "MRU end on the
    /// left"), for tests and traces; it MUST NOT change the order.
    fn order(&self) -> Vec<DiskBlock>;
    /// The engine asks it to forget a held block (a prefetcher's drop): true if it did, false
    /// if it cannot remove arbitrary blocks, in which case it MUST keep holding the block (the
    /// block stays cached).
    fn remove(&mut self, block: DiskBlock) -> bool;
    /// For policies that keep prefetched pages apart (CPEM): the current ceiling of that
    /// prefetch cache in blocks, which the prefetcher is told with every access so that it can
    /// cap its depth; `None` for a policy without one.
    fn prefetch_ceiling(&self) -> Option<usize>;
    /// Whether it has chosen to evict more now, though the cache may have room: after any
    /// call that made it true (`on_hit`, `evict`), the engine calls [`Replacement::evict`]
    /// until it answers false. False for policies that make exactly one slot per eviction and
    /// never evict on a hit; SLRU (and W-TinyLFU's main SLRU) owes one when a hit cools its
    /// lowest segment over size, as libCacheSim's `SLRU_cool` evicts.
    fn owes_eviction(&self) -> bool;
}

/// What a replacement constructor is told about the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheGeometry {
    /// Capacity in blocks.
    pub capacity: usize,
    /// Block size in bytes (to turn byte-sized options into blocks).
    pub block_size: u64,
}

/// A replacement policy configured once from its options (typed values, parsed when the
/// catalog built the policy): builds a fresh instance for each run. Adding a replacement is
/// its file (the policy, this configuration) plus its line in the catalog,
/// `catalog/lines.rs`, which also declares its module.
pub trait MakeReplacement: std::fmt::Debug + Send + Sync {
    /// A fresh instance for a cache of `geometry`: empty, holding nothing.
    fn build(&self, geometry: CacheGeometry) -> Box<dyn Replacement>;
}

/// How a replacement that takes no options starts: empty, for a cache of `geometry` (a
/// `Default` one ignores it; LIRS and CLOCK-Pro size their sets by the capacity).
pub trait Empty {
    /// The empty policy.
    fn empty(geometry: CacheGeometry) -> Self;
}

impl<R: Default> Empty for R {
    fn empty(_geometry: CacheGeometry) -> Self {
        R::default()
    }
}

/// The configuration of a replacement that takes no options and starts empty
/// ([`Empty::empty`]), as SIEVE, LFU, LFU-DA, LIRS and CLOCK-Pro do.
#[derive(Debug)]
pub struct NoOptions<R>(PhantomData<fn() -> R>);

impl<R> NoOptions<R> {
    /// Reads `given`, which must be empty.
    pub fn parse(given: &PolicySpec) -> Result<Self, SimError> {
        given.only(&[])?;
        Ok(NoOptions(PhantomData))
    }
}

impl<R: Replacement + Empty + std::fmt::Debug + 'static> MakeReplacement for NoOptions<R> {
    fn build(&self, geometry: CacheGeometry) -> Box<dyn Replacement> {
        Box::new(R::empty(geometry))
    }
}
