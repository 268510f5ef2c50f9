//! S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction", SOSP'23, section
//! 4, Algorithm 1): three FIFO queues. A new block enters the small queue S (10% of the cache);
//! a block found in the ghost queue G (the ids of blocks recently evicted from S) enters the
//! main queue M instead. A hit only counts (frequency capped at 3 when used). Evicting from S:
//! its oldest block moves to M if it was hit at least `threshold` times since it entered,
//! else it leaves and its id enters G. Evicting from M: its oldest block goes back to M's head
//! with its count less one if it was hit, else it leaves. S is evicted from while M holds no
//! more than its share and S is not empty. Until the first eviction, new blocks that find S
//! full enter M (the cache warms up with M filled).
//!
//! ```text
//!   miss ──> S (10%) ──freq >= threshold──> M (90%) ──freq > 0: reinsert, freq-1
//!            │ freq < threshold                     └─ freq = 0: evict
//!            └─> G (ids only, 90% of the cache in entries) ──hit in G: insert into M
//! ```
//!
//! Parameters, with libCacheSim's defaults (`S3FIFO.c`): `small=0.10` (S's share, S's size
//! is `floor(small * cache)`), `ghost=0.90` (G's entries, `floor(ghost * cache)`),
//! `threshold=2` (hits in S to move to M).
//!
//! Follows libCacheSim's `S3FIFO.c`, with its counts: a block keeps counting hits in M
//! without a cap, and M's reinsertion keeps `min(freq, 3) - 1`; a block moved from S to M
//! starts in M with count 0.
//!
//! Deviations: libCacheSim refuses to cache an object as large as S (with one object per slot,
//! every new object when the cache holds fewer than 20); here a block always enters, so caches
//! under 20 blocks differ.

use std::time::Duration;

use super::queues::Queues;
use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

const SMALL: u8 = 0;
const MAIN: u8 = 1;
const GHOST: u8 = 2;

/// The three queues and their sizes.
#[derive(Debug)]
pub struct S3Fifo {
    queues: Queues,
    small_size: usize,
    main_size: usize,
    ghost_size: usize,
    threshold: u32,
    /// The block being missed was found in G (it enters M).
    hit_on_ghost: bool,
    /// Whether anything was evicted yet (until then, new blocks beyond S's size fill M).
    has_evicted: bool,
}

impl S3Fifo {
    /// Empty queues for a cache of `capacity` blocks with `options`.
    pub fn new(capacity: usize, options: &Options) -> Self {
        let small = (capacity as f64 * options.small) as usize;
        S3Fifo {
            queues: Queues::new(3),
            small_size: small,
            main_size: capacity - small,
            ghost_size: (capacity as f64 * options.ghost) as usize,
            threshold: options.threshold,
            hit_on_ghost: false,
            has_evicted: false,
        }
    }

    /// S's oldest block moves to M or leaves for G; `None` when S empties first.
    fn evict_small(&mut self) -> Option<DiskBlock> {
        loop {
            let node = match self.queues.tail(SMALL) {
                super::queues::NIL => return None,
                node => node,
            };
            if self.queues.get(node).freq >= self.threshold {
                self.queues.move_to_head(MAIN, node);
                self.queues.get_mut(node).freq = 0;
                continue;
            }
            let block = self.queues.remove(node);
            if self.ghost_size > 0 {
                if self.queues.len(GHOST) >= self.ghost_size {
                    self.queues.pop_tail(GHOST);
                }
                self.queues.push(GHOST, block);
            }
            return Some(block);
        }
    }

    /// M's oldest block goes round again while it has hits left, else leaves.
    fn evict_main(&mut self) -> Option<DiskBlock> {
        loop {
            let node = match self.queues.tail(MAIN) {
                super::queues::NIL => return None,
                node => node,
            };
            let freq = self.queues.get(node).freq;
            if freq == 0 {
                return Some(self.queues.remove(node));
            }
            self.queues.move_to_head(MAIN, node);
            self.queues.get_mut(node).freq = freq.min(3) - 1;
        }
    }
}

impl Replacement for S3Fifo {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        if let Some(node) = self.queues.find(block) {
            self.queues.get_mut(node).freq += 1;
        }
    }

    fn on_miss(&mut self, block: DiskBlock, _how: Touch) {
        self.hit_on_ghost = false;
        if let Some(node) = self.queues.find(block) {
            if self.queues.get(node).list == GHOST {
                self.queues.remove(node);
                self.hit_on_ghost = true;
            }
        }
    }

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        let warming = !self.has_evicted && self.queues.len(SMALL) >= self.small_size;
        let list = match std::mem::take(&mut self.hit_on_ghost) || warming {
            true => MAIN,
            false => SMALL,
        };
        self.queues.push(list, block);
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        self.has_evicted = true;
        loop {
            if self.queues.len(MAIN) > self.main_size || self.queues.len(SMALL) == 0 {
                return self.evict_main();
            }
            if let Some(block) = self.evict_small() {
                return Some(block);
            }
        }
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.queues.blocks_of(&[MAIN, SMALL])
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        self.queues.remove_held(block, GHOST)
    }
}

/// S3-FIFO's configuration: `small`, `ghost` (shares of the cache) and `threshold`.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// S's share of the cache.
    pub small: f64,
    /// G's entries as a share of the cache.
    pub ghost: f64,
    /// Hits in S that move a block to M.
    pub threshold: u32,
}

impl Options {
    /// Reads `small`, `ghost` and `threshold` (libCacheSim's defaults 0.1, 0.9, 2).
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["small", "ghost", "threshold"])?;
        Ok(Options {
            small: given.ratio("small", 0.1)?,
            ghost: given.ratio("ghost", 0.9)?,
            threshold: u32::try_from(given.count("threshold", 2)?).unwrap_or(u32::MAX),
        })
    }
}

impl MakeReplacement for Options {
    fn build(&self, geometry: CacheGeometry) -> Box<dyn Replacement> {
        Box::new(S3Fifo::new(geometry.capacity, self))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::replay;
    use super::*;

    fn defaults() -> Options {
        Options::parse(&PolicySpec::named("s3fifo")).unwrap()
    }

    /// Algorithm 1 worked by hand with a cache of 10 (S's share 1, M's 9, G's 9). Block 1
    /// enters S; 2..10 find S full before any eviction and fill M. 1 is hit twice, 2 once.
    /// 11 misses: S's oldest, 1, moves to M (two hits); M now exceeds its share, so M's
    /// oldest, 2, goes round once (its hit spent) and 3 leaves. 11 enters S; 12 pushes it out
    /// of S into G; 11 missing again is found in G and enters M, while 12 leaves S into G.
    #[test]
    fn a_twice_hit_block_moves_to_main_and_a_ghost_returns_to_main() {
        let mut s3 = S3Fifo::new(10, &defaults());
        let mut blocks: Vec<DiskBlock> = (1..=10).collect();
        blocks.extend([1, 1, 2, 11, 12, 11]);
        assert_eq!(replay(&mut s3, 10, &blocks), 13);
        assert_eq!(s3.queues.blocks(MAIN), vec![11, 2, 1, 10, 9, 8, 7, 6, 5, 4]);
        assert_eq!(s3.queues.blocks(GHOST), vec![12]);
        assert_eq!(s3.queues.len(SMALL), 0);
        assert!(!s3.remove(12), "a ghost is not cached");
    }
}
