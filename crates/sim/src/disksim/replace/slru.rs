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
//! the lower ones are full, before the first eviction). Deviations: where the segments'
//! sizes do not add up to the cache (a size not a multiple of `segments`), libCacheSim evicts
//! early to fit a new block into segment 0; here the block enters segment 0 over its size.

use std::time::Duration;

use super::queues::Queues;
use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

/// The segments, lowest (probationary) first, and their size.
#[derive(Debug)]
pub struct Slru {
    segments: Queues,
    count: u8,
    size: usize,
}

impl Slru {
    /// Empty segments for a cache of `capacity` blocks.
    pub fn new(capacity: usize, segments: u8) -> Self {
        Slru {
            segments: Queues::new(segments.into()),
            count: segments,
            size: capacity / usize::from(segments),
        }
    }

    /// Segment `id` overflowed: its LRU block moves down, and so on below.
    fn cool(&mut self, mut id: u8) {
        while id > 0 && self.segments.len(id) > self.size {
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
            .find(|&id| self.segments.len(id) < self.size)
            .unwrap_or(0);
        self.segments.push(id, block);
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
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
}
