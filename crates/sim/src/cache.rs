//! What Cao's policies see of the cache (Cao et al. section 2.1): dense block ids, where each
//! block is, and the view a loop gives a policy of its cache.
//!
//! The cache holds `capacity` blocks. When a fetch starts, the victim leaves the cache at once
//! and the incoming block occupies its slot, but is unavailable until the fetch completes:
//!
//! ```text
//!   start of fetch (t)            fetch completes (t + F)
//!   victim: Resident -> Absent     block: InFlight -> Resident
//!   block:  Absent   -> InFlight
//! ```
//!
//! The disk-timed loop keeps that cache (`disksim::state`); a policy reads it through a
//! [`CacheView`]: a block's residency, the free slots, and the blocks prefetched and not yet
//! referenced (LRU-throttled's limit, and the "unused prefetch" metric). Blocks are dense ids
//! handed out by an [`Interner`] in order of first sight, so per-block state lives in plain
//! vectors.
//!
//! Deviations: the paper leaves the initial contents open, we take them as a setting.

use rustc_hash::FxHashMap;

/// A block of the simulation: a dense id (0, 1, 2, ...) for a trace block number.
pub type Block = u32;

/// Trace block numbers below this are mapped through a vector instead of the hash map.
const DIRECT_LIMIT: u64 = 1 << 24;
const UNSEEN: Block = Block::MAX;

/// Maps trace block numbers (any `u64`) to dense [`Block`] ids in order of first sight.
///
/// Small block numbers (below 2^24, as in the reference traces and synthetic workloads) go
/// through a vector indexed by the number, which grows to the largest number seen (at most
/// 64 MiB); larger ones (request traces, whose numbers carry a file in their top bits) go
/// through a hash map. The vector keeps streaming runs free of hashing.
#[derive(Clone, Debug, Default)]
pub struct Interner {
    direct: Vec<Block>,
    ids: FxHashMap<u64, Block>,
    raw: Vec<u64>,
}

impl Interner {
    /// The dense id of trace block `raw`, handing out the next id on first sight.
    pub fn intern(&mut self, raw: u64) -> Block {
        let next = self.raw.len() as Block;
        let slot = match raw < DIRECT_LIMIT {
            true => {
                let index = raw as usize;
                if index >= self.direct.len() {
                    let size = (index + 1).next_power_of_two().min(DIRECT_LIMIT as usize);
                    self.direct.resize(size, UNSEEN);
                }
                &mut self.direct[index]
            }
            false => self.ids.entry(raw).or_insert(UNSEEN),
        };
        if *slot == UNSEEN {
            *slot = next;
            self.raw.push(raw);
        }
        *slot
    }

    /// The dense id of `raw` if it was seen.
    pub fn get(&self, raw: u64) -> Option<Block> {
        let id = match raw < DIRECT_LIMIT {
            true => self.direct.get(raw as usize).copied(),
            false => self.ids.get(&raw).copied(),
        };
        id.filter(|&id| id != UNSEEN)
    }

    /// Warms the processor's cache for a coming [`Interner::intern`] of `raw` (block numbers
    /// mapped through the vector only).
    pub(crate) fn warm_intern(&self, raw: u64) {
        if raw < DIRECT_LIMIT {
            warm(&self.direct, raw as usize);
        }
    }

    /// Warms the processor's cache for a coming [`Interner::raw`] of `block`.
    pub(crate) fn warm_raw(&self, block: Block) {
        warm(&self.raw, block as usize);
    }

    /// The trace block number of dense id `block`.
    pub fn raw(&self, block: Block) -> u64 {
        self.raw[block as usize]
    }

    /// How many distinct blocks were seen.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether no block was seen.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

/// Asks the processor to bring `items[index]` into its cache ahead of use: a hint, so nothing
/// happens out of range or on other architectures. The loop looks a few references ahead
/// on traces in memory, where per-block state is spread over a million blocks.
pub(crate) fn warm<T>(items: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(item) = items.get(index) {
        // SAFETY: a prefetch is a hint that reads no value and cannot fault, here on the
        // address of an element that exists; SSE, which provides it, is part of every x86_64.
        unsafe {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>((item as *const T).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, index);
}

/// Where a block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residency {
    /// Not in the cache and not being fetched.
    Absent,
    /// In the cache and available.
    Resident,
    /// Being fetched: holds a slot, not yet available.
    InFlight,
}

/// What a policy reads of the cache it decides for ([`crate::policy::Ctx::cache`]): the
/// disk-timed loop's own table of blocks (one copy of the cache). One pointer pair, so that
/// handing it to a policy at every reference costs two registers.
#[derive(Clone, Copy)]
pub struct CacheView<'a>(&'a dyn CacheState);

/// What a loop's cache tells a policy (see [`CacheView`]).
pub(crate) trait CacheState {
    /// Where `block` is.
    fn residency(&self, block: Block) -> Residency;
    /// Slots neither resident nor reserved by a fetch in flight.
    fn free_slots(&self) -> usize;
    /// Blocks prefetched (arrived or in flight) and not referenced since.
    fn unreferenced_prefetches(&self) -> usize;
    /// Whether `block` was prefetched (it arrived or is in flight) and not referenced since.
    fn is_unreferenced_prefetch(&self, block: Block) -> bool;
}

impl<'a> CacheView<'a> {
    /// The view of a loop's cache.
    pub(crate) fn new(state: &'a dyn CacheState) -> CacheView<'a> {
        CacheView(state)
    }

    /// Where `block` is.
    pub fn residency(&self, block: Block) -> Residency {
        self.0.residency(block)
    }

    /// Whether `block` is in the cache and available.
    pub fn is_resident(&self, block: Block) -> bool {
        self.residency(block) == Residency::Resident
    }

    /// Whether `block` is neither cached nor being fetched.
    pub fn is_absent(&self, block: Block) -> bool {
        self.residency(block) == Residency::Absent
    }

    /// Slots neither resident nor reserved by a fetch in flight.
    pub fn free_slots(&self) -> usize {
        self.0.free_slots()
    }

    /// Blocks prefetched (arrived or in flight) and not referenced since.
    pub fn unreferenced_prefetches(&self) -> usize {
        self.0.unreferenced_prefetches()
    }

    /// Whether `block` was prefetched (it arrived or is in flight) and not referenced since.
    pub fn is_unreferenced_prefetch(&self, block: Block) -> bool {
        self.0.is_unreferenced_prefetch(block)
    }
}
