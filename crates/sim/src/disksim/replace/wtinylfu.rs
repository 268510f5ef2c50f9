//! W-TinyLFU (Einziger, Friedman and Manes, "TinyLFU: A highly efficient cache admission
//! policy", ACM TOS 2017, section 3 for TinyLFU's sketch and reset, section 4 for the window):
//! a new block enters a small LRU window; when the cache is full, the window's LRU block is a
//! candidate for the main cache, a segmented LRU, and is admitted only if a frequency sketch
//! estimates it more popular than the main cache's victim, which then leaves; otherwise the
//! candidate leaves. Counts halve every `32 x main` references that hit the main cache.
//!
//! Parameters, with libCacheSim's defaults (`WTinyLFU.c`): `window=0.01` (the window's share,
//! `floor(window * cache)` blocks, the main cache the rest); the main cache is SLRU with two
//! segments of `floor(0.2 * main)` and `floor(0.8 * main)` (its `seg-size=1:4`); the sketch is
//! libCacheSim's `minimalIncrementCBF` for `main` entries at error 0.001 (10 counters per block
//! hashed by XXH64 with libCacheSim's two seeds, so its estimates are libCacheSim's).
//!
//! Follows libCacheSim's `WTinyLFU.c`: a hit counts in the sketch only in the main cache; every
//! insertion and every window candidate (admitted or not) counts once; a candidate moves into
//! the main cache without comparison while the main cache has room. A hit that cools the main
//! cache's probation segment over its size drops a block there (libCacheSim's `SLRU_cool`),
//! which it owes the engine ([`Replacement::owes_eviction`]), so the cache may run a block
//! short until the next miss, as libCacheSim's does.

use std::time::Duration;

use xxhash_rust::xxh64::xxh64;

use super::queues::Queues;
use super::slru::Slru;
use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

/// libCacheSim's `HASH_SEED0` and `HASH_SEED1` (`hash.h`).
const SEEDS: [u64; 2] = [0x1234_5678, 0x1234_4321];

/// A counting Bloom filter (count-min sketch) as libCacheSim's `minimalIncrementCBF`: every
/// add increments all of a block's counters; the estimate is their minimum.
#[derive(Debug)]
struct Sketch {
    counters: Vec<u32>,
    hashes: u32,
}

impl Sketch {
    /// Sized as libCacheSim sizes it for `entries` blocks at false-positive rate `error`, with
    /// its literals for ln(2)^2 and ln(2), so that the sizes round as its do.
    #[allow(clippy::approx_constant)]
    fn new(entries: usize, error: f64) -> Self {
        let per_entry = -error.ln() / 0.480_453_013_918_201;
        let hashes = (0.693_147_180_559_945 * per_entry).ceil() as u32;
        let counters = ((per_entry * entries as f64).ceil() as usize).max(2 * hashes as usize);
        Sketch {
            counters: vec![0; counters],
            hashes,
        }
    }

    /// The counter indexes of `block` (libCacheSim keeps the hashes' low 32 bits).
    fn slots(&self, block: DiskBlock) -> impl Iterator<Item = usize> + '_ {
        let key = block.to_le_bytes();
        let a = xxh64(&key, SEEDS[0]) as u32;
        let b = xxh64(&key, SEEDS[1]) as u32;
        let n = self.counters.len() as u32;
        (0..self.hashes).map(move |i| (a.wrapping_add(i.wrapping_mul(b)) % n) as usize)
    }

    fn estimate(&self, block: DiskBlock) -> u32 {
        self.slots(block)
            .map(|x| self.counters[x])
            .min()
            .unwrap_or(0)
    }

    fn add(&mut self, block: DiskBlock) {
        let slots: Vec<usize> = self.slots(block).collect();
        for x in slots {
            self.counters[x] = self.counters[x].saturating_add(1);
        }
    }

    fn halve(&mut self) {
        self.counters.iter_mut().for_each(|c| *c >>= 1);
    }
}

/// The window, the main cache and the sketch.
#[derive(Debug)]
pub struct WTinyLfu {
    window: Queues,
    main: Slru,
    main_size: usize,
    sketch: Sketch,
    /// Main-cache hits since the last halving, and how many trigger it.
    hits: usize,
    reset_after: usize,
}

impl WTinyLfu {
    /// Empty, for a cache of `capacity` blocks with the window's share `window`.
    pub fn new(capacity: usize, window: f64) -> Self {
        let main_size = capacity - (capacity as f64 * window) as usize;
        let probation = (0.2 * main_size as f64) as usize;
        let protected = (0.8 * main_size as f64) as usize;
        WTinyLfu {
            window: Queues::new(1),
            main: Slru::with_sizes(vec![probation, protected]),
            main_size,
            sketch: Sketch::new(main_size, 0.001),
            hits: 0,
            reset_after: 32 * main_size,
        }
    }

    /// Moves the window's LRU block into the main cache (counted in the sketch).
    fn admit(&mut self, candidate: DiskBlock) {
        self.window.pop_tail(0);
        self.main.on_insert(candidate, demand());
        self.sketch.add(candidate);
    }
}

/// The touch the main cache is told of (it ignores it).
fn demand() -> Touch {
    Touch {
        stream: 0,
        now: Duration::ZERO,
        prefetched: false,
    }
}

impl Replacement for WTinyLfu {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        self.main.owes_eviction()
    }

    fn on_hit(&mut self, block: DiskBlock, how: Touch) {
        if let Some(node) = self.window.find(block) {
            self.window.move_to_head(0, node);
            return;
        }
        self.main.on_hit(block, how);
        self.sketch.add(block);
        self.hits += 1;
        if self.hits >= self.reset_after {
            self.hits = 0;
            self.sketch.halve();
        }
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        self.window.push(0, block);
        self.sketch.add(block);
    }

    fn evict(&mut self, now: Duration, incoming: DiskBlock) -> Option<DiskBlock> {
        if self.main.owes_eviction() {
            return self.main.evict(now, incoming);
        }
        while self.window.len(0) > 0 {
            let candidate = self.window.get(self.window.tail(0)).block;
            if self.main.blocks_held() < self.main_size {
                self.admit(candidate);
                continue;
            }
            let victim = self.main.victim()?;
            if self.sketch.estimate(candidate) > self.sketch.estimate(victim) {
                self.main.evict(now, incoming);
                self.admit(candidate);
                return Some(victim);
            }
            self.window.pop_tail(0);
            self.sketch.add(candidate);
            return Some(candidate);
        }
        self.main.evict(now, incoming)
    }

    fn order(&self) -> Vec<DiskBlock> {
        let mut order = self.window.blocks(0);
        order.extend(self.main.order());
        order
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        match self.window.find(block) {
            Some(node) => {
                self.window.remove(node);
                true
            }
            None => self.main.remove(block),
        }
    }
}

/// W-TinyLFU's configuration: the window's share.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The window's share of the cache.
    pub window: f64,
}

impl Options {
    /// Reads `window` (libCacheSim's default 0.01; below 1).
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["window"])?;
        match given.ratio("window", 0.01)? {
            window if window < 1.0 => Ok(Options { window }),
            window => Err(SimError::Config(format!(
                "wtinylfu: `window={window}` must be below 1 (the main cache needs room)"
            ))),
        }
    }
}

impl MakeReplacement for Options {
    fn build(&self, geometry: CacheGeometry) -> Box<dyn Replacement> {
        Box::new(WTinyLfu::new(geometry.capacity, self.window))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::Replay;
    use super::*;

    /// A cache of 10: window 1, main 9 (probation 1, protected 7). 1..=10 fill the window
    /// (nothing moves before the first eviction). 11 misses: 1..=9 move into main as room
    /// allows (each now counted twice: inserted, then as a candidate); 10 (counted once) is not
    /// more popular than main's victim 1, so 10 leaves. 12 pushes 11 out the same way (a hit in
    /// the window would not have counted), which counts 11 a second time; 11 comes back (three)
    /// and pushes 12 out (two, not more than 1's two); 13 then finds 11 more popular than 1:
    /// 11 is admitted and 1 leaves.
    #[test]
    fn a_candidate_enters_main_only_if_more_popular_than_its_victim() {
        let mut tiny = WTinyLfu::new(10, 0.1);
        let mut cache = Replay::new(10);
        let blocks: Vec<DiskBlock> = (1..=10).collect();
        assert_eq!(cache.run(&mut tiny, &blocks), 10);
        assert_eq!(tiny.main.blocks_held(), 0);
        assert_eq!(cache.run(&mut tiny, &[11]), 1);
        assert_eq!(tiny.window.blocks(0), vec![11]);
        assert_eq!(tiny.main.victim(), Some(1));
        assert!(!tiny.order().contains(&10));
        assert_eq!(cache.run(&mut tiny, &[12, 11]), 2);
        assert_eq!(tiny.window.blocks(0), vec![11]);
        assert_eq!(tiny.sketch.estimate(11), 3);
        assert_eq!(cache.run(&mut tiny, &[13]), 1);
        assert!(tiny.main.holds(11));
        assert!(!tiny.order().contains(&1));
        assert_eq!(tiny.window.blocks(0), vec![13]);
    }
}
