//! Segmented LRU (Karedla, Love and Wherry, "Caching strategies to improve disk system
//! performance", IEEE Computer 1994, section "Segmented LRU"): the cache is split into LRU
//! segments of equal size, from the probationary (0) to the most protected. A new block
//! enters the lowest segment with room; a hit moves a block to the head of the next segment
//! up (in the top segment, to its head), and a segment that overflows pushes its LRU block
//! down to the head of the segment below, which may push in turn. The LRU block of the
//! lowest non-empty segment leaves.
//!
//! Parameters, with libCacheSim's defaults (`SLRU.c`): `segments=4`, each of
//! `floor(cache / segments)` blocks.
//!
//! Follows libCacheSim's `SLRU.c` (which also fills the upper segments with new blocks while
//! the lower ones are full, before the first eviction, and evicts the lowest segment's LRU
//! block when a hit cools it over its size, owed to the engine through
//! [`Replacement::owes_eviction`]; with equal segments filling the cache that never happens,
//! with W-TinyLFU's 20%/80% segments it does). Deviations: where the segments'
//! sizes do not add up to the cache (a size not a multiple of `segments`), libCacheSim evicts
//! early to fit a new block into segment 0; here the block enters segment 0 over its size.

use std::time::Duration;

use super::queues::Queues;
use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

/// The segments, lowest (probationary) first, and their sizes.
#[derive(Debug)]
pub struct Slru {
    segments: Queues,
    count: u8,
    sizes: Vec<usize>,
    /// Blocks a hit pushed out of the lowest segment, owed to the engine.
    dropped: Vec<DiskBlock>,
}

impl Slru {
    /// Empty segments of equal size for a cache of `capacity` blocks.
    pub fn new(capacity: usize, segments: u8) -> Self {
        Self::with_sizes(vec![capacity / usize::from(segments); segments.into()])
    }

    /// Empty segments of the given sizes, lowest first (W-TinyLFU's main cache: 20% and 80%).
    pub fn with_sizes(sizes: Vec<usize>) -> Self {
        let count = u8::try_from(sizes.len()).expect("at most 255 segments");
        Slru {
            segments: Queues::new(sizes.len()),
            count,
            sizes,
            dropped: Vec::new(),
        }
    }

    /// Blocks held in all segments.
    pub fn blocks_held(&self) -> usize {
        (0..self.count).map(|id| self.segments.len(id)).sum()
    }

    /// The block [`Replacement::evict`] would return, without evicting it.
    pub fn victim(&self) -> Option<DiskBlock> {
        let id = (0..self.count).find(|&id| self.segments.len(id) > 0)?;
        Some(self.segments.get(self.segments.tail(id)).block)
    }

    /// Whether it holds `block`.
    pub fn holds(&self, block: DiskBlock) -> bool {
        self.segments.find(block).is_some()
    }

    /// Segment `id` overflowed: its LRU block moves down, and so on below; the lowest
    /// segment over its size drops its LRU blocks (owed to the engine), as libCacheSim's
    /// `SLRU_cool` evicts.
    fn cool(&mut self, mut id: u8) {
        while self.segments.len(id) > self.sizes[usize::from(id)] {
            if id == 0 {
                let dropped = self.segments.pop_tail(0).expect("over size");
                self.dropped.push(dropped);
                continue;
            }
            let tail = self.segments.tail(id);
            self.segments.move_to_head(id - 1, tail);
            id -= 1;
        }
    }
}

impl Replacement for Slru {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        let Some(node) = self.segments.find(block) else {
            return;
        };
        let id = self.segments.get(node).list;
        let up = (id + 1).min(self.count - 1);
        self.segments.move_to_head(up, node);
        self.cool(up);
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        let id = (0..self.count)
            .find(|&id| self.segments.len(id) < self.sizes[usize::from(id)])
            .unwrap_or(0);
        self.segments.push(id, block);
    }

    fn owes_eviction(&self) -> bool {
        !self.dropped.is_empty()
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        if let Some(dropped) = self.dropped.pop() {
            return Some(dropped);
        }
        let id = (0..self.count).find(|&id| self.segments.len(id) > 0)?;
        self.segments.pop_tail(id)
    }

    fn order(&self) -> Vec<DiskBlock> {
        (0..self.count)
            .rev()
            .flat_map(|id| self.segments.blocks(id))
            .collect()
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        match self.segments.find(block) {
            Some(node) => {
                self.segments.remove(node);
                true
            }
            None => false,
        }
    }
}

/// SLRU's configuration: the number of segments.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Segments, from probationary to most protected.
    pub segments: u8,
}

impl Options {
    /// Reads `segments` (libCacheSim's default 4; 1 to 16).
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["segments"])?;
        match given.count("segments", 4)? {
            n @ 1..=16 => Ok(Options { segments: n as u8 }),
            n => Err(SimError::Config(format!(
                "slru: `segments={n}` must be between 1 and 16"
            ))),
        }
    }
}

impl MakeReplacement for Options {
    fn build(&self, geometry: CacheGeometry) -> Box<dyn Replacement> {
        Box::new(Slru::new(geometry.capacity, self.segments))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::Replay;
    use super::*;

    /// Two segments of 2 in a cache of 4: 1 2 3 4 fill segment 0 then segment 1 (3 and 4).
    /// After the first eviction, a hit on 5 lifts it into segment 1, whose LRU block drops
    /// back to segment 0's head; the LRU block of segment 0 leaves next.
    #[test]
    fn a_hit_lifts_a_block_and_the_overflow_drops_down() {
        let mut slru = Slru::new(4, 2);
        let mut cache = Replay::new(4);
        assert_eq!(cache.run(&mut slru, &[1, 2, 3, 4, 5]), 5);
        assert_eq!(slru.order(), vec![4, 3, 5, 2]);
        assert_eq!(cache.run(&mut slru, &[5, 6]), 1);
        assert_eq!(slru.order(), vec![5, 4, 6, 3]);
    }

    /// Segments of 1 and 2 in a cache of 4 (W-TinyLFU's main cache does not add up either):
    /// 4 enters segment 0 over its size. A hit on 1 lifts it into segment 1, whose LRU block 2
    /// cools into segment 0, now over size: its LRU block 4 is dropped during the hit.
    #[test]
    fn a_hit_that_cools_the_lowest_segment_over_size_drops_its_lru_block() {
        let mut slru = Slru::with_sizes(vec![1, 2]);
        let mut cache = Replay::new(4);
        assert_eq!(cache.run(&mut slru, &[1, 2, 3, 4]), 4);
        assert_eq!(slru.order(), vec![3, 2, 4, 1]);
        assert_eq!(cache.run(&mut slru, &[1]), 0);
        assert!(!slru.owes_eviction(), "the replay took the owed block");
        assert_eq!(slru.order(), vec![1, 3, 2]);
        assert_eq!(cache.run(&mut slru, &[4]), 1);
    }
}
