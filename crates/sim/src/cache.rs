//! The cache with fetches in flight (Cao et al. section 2.1).
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
//! At most `depth` fetches are in flight: 1 in the paper's model (one disk, one fetch at a
//! time); more models several disks or a device queue. The cache also counts blocks that were
//! prefetched and not yet referenced (LRU-throttled's limit, and the "unused prefetch" metric).
//! Blocks are dense ids handed out by an [`Interner`] in order of first sight, so per-block
//! state lives in one plain vector (a block's residency and prefetch flag side by side).
//!
//! Deviations: none; the paper leaves the initial contents open, we take them as a setting.

use rustc_hash::FxHashMap;

use crate::time::Time;

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
/// happens out of range or on other architectures. The engine looks a few references ahead
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

/// Why a fetch was issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchKind {
    /// The program is waiting for the block.
    Demand,
    /// Issued ahead of the reference.
    Prefetch,
}

/// A fetch in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// The block being fetched.
    pub block: Block,
    /// Demand fetch or prefetch.
    pub kind: FetchKind,
    /// When it started.
    pub started: Time,
    /// When the block becomes available.
    pub done_at: Time,
}

/// What the cache knows of one block, kept together so that a reference reads one place.
#[derive(Clone, Copy, Debug)]
struct Slot {
    residency: Residency,
    /// Prefetched (arrived or in flight) and not referenced since.
    prefetched_unreferenced: bool,
}

const ABSENT: Slot = Slot {
    residency: Residency::Absent,
    prefetched_unreferenced: false,
};

/// What a policy reads of the cache it decides for ([`crate::engine::Ctx::cache`]): Cao's
/// loop's [`Cache`], or the disk-timed loop's own table of blocks when Cao's policies run
/// there (one copy of the cache, not a second one kept in step). One pointer pair, so that
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
}

impl CacheState for Cache {
    fn residency(&self, block: Block) -> Residency {
        Cache::residency(self, block)
    }

    fn free_slots(&self) -> usize {
        Cache::free_slots(self)
    }

    fn unreferenced_prefetches(&self) -> usize {
        Cache::unreferenced_prefetches(self)
    }
}

/// Cache contents and the fetches in flight.
#[derive(Clone, Debug)]
pub struct Cache {
    slots: Vec<Slot>,
    capacity: usize,
    depth: usize,
    resident: usize,
    unreferenced_prefetches: usize,
    in_flight: Vec<InFlight>,
}

impl Cache {
    /// An empty cache of `capacity` blocks with at most `depth` fetches in flight.
    pub fn new(capacity: usize, depth: usize) -> Self {
        Cache {
            slots: Vec::new(),
            capacity,
            depth,
            resident: 0,
            unreferenced_prefetches: 0,
            in_flight: Vec::with_capacity(depth),
        }
    }

    /// Where `block` is.
    pub fn residency(&self, block: Block) -> Residency {
        self.slots
            .get(block as usize)
            .map_or(Residency::Absent, |slot| slot.residency)
    }

    /// Warms the processor's cache for a coming reference to `block`.
    pub(crate) fn warm(&self, block: Block) {
        warm(&self.slots, block as usize);
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
        self.capacity - self.resident - self.in_flight.len()
    }

    /// The cache size in blocks.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Blocks prefetched (arrived or in flight) and not referenced since.
    pub fn unreferenced_prefetches(&self) -> usize {
        self.unreferenced_prefetches
    }

    /// The fetches in progress, in the order they started.
    pub fn in_flight(&self) -> &[InFlight] {
        &self.in_flight
    }

    /// The fetch in progress that completes first (the earliest started among ties).
    pub fn next_completion(&self) -> Option<InFlight> {
        self.in_flight.iter().copied().min_by_key(|f| f.done_at)
    }

    /// Whether another fetch may start (fewer than `depth` in flight).
    pub fn can_start(&self) -> bool {
        self.in_flight.len() < self.depth
    }

    fn set(&mut self, block: Block, residency: Residency) {
        let index = block as usize;
        if index >= self.slots.len() {
            self.slots.resize(index + 1, ABSENT);
        }
        self.slots[index].residency = residency;
    }

    /// Places `block` in the cache before the run starts.
    pub(crate) fn insert_initial(&mut self, block: Block) {
        if !self.is_resident(block) {
            self.set(block, Residency::Resident);
            self.resident += 1;
        }
    }

    /// Starts fetching `block` into the slot of `victim` (or a free slot). The caller has
    /// checked the model's rules. Returns whether the victim was an unreferenced prefetch.
    pub(crate) fn start(&mut self, block: Block, victim: Option<Block>, flight: InFlight) -> bool {
        let mut wasted = false;
        if let Some(victim) = victim {
            self.set(victim, Residency::Absent);
            self.resident -= 1;
            wasted = self.clear_prefetched(victim);
        }
        self.set(block, Residency::InFlight);
        if flight.kind == FetchKind::Prefetch {
            self.slots[block as usize].prefetched_unreferenced = true;
            self.unreferenced_prefetches += 1;
        }
        self.in_flight.push(flight);
        wasted
    }

    /// Completes the fetch that finishes first: its block becomes available.
    pub(crate) fn complete(&mut self) -> Option<InFlight> {
        let first = self.next_completion()?;
        let index = self.in_flight.iter().position(|f| *f == first)?;
        let flight = self.in_flight.remove(index);
        self.set(flight.block, Residency::Resident);
        self.resident += 1;
        Some(flight)
    }

    /// Records a reference to resident `block` (it is no longer an unreferenced prefetch).
    pub(crate) fn referenced(&mut self, block: Block) {
        self.clear_prefetched(block);
    }

    fn clear_prefetched(&mut self, block: Block) -> bool {
        let flag = &mut self.slots[block as usize].prefetched_unreferenced;
        let was = *flag;
        if was {
            *flag = false;
            self.unreferenced_prefetches -= 1;
        }
        was
    }
}
