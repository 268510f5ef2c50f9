//! CLOCK, which the DULO paper (FAST'05 s3.4) builds on and calls "LRU" in its evaluation.
//!
//! The cache is a stack: new blocks enter at the top; a hit only flags the block *young*. To
//! evict, look at the bottom block: a young one loses its flag and moves to the top; the first
//! block that is not young leaves.
//!
//! Deviations: DULO's Figure 2 places a demand-fetched block at the top "as a young block";
//! we do the same, and insert prefetched blocks not young (Linux marks read-ahead pages
//! unreferenced), so a prefetched block that is never used leaves on its first trip to the
//! bottom.

use std::collections::VecDeque;
use std::time::Duration;

use rustc_hash::{FxHashMap, FxHashSet};

use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

/// The CLOCK stack: `stack.front()` is the bottom. Removal is lazy: an entry of the stack is
/// live only while `live` maps its block to the entry's insertion number.
#[derive(Debug, Default)]
pub struct Clock {
    stack: VecDeque<(DiskBlock, u64)>,
    live: FxHashMap<DiskBlock, u64>,
    young: FxHashSet<DiskBlock>,
    inserted: u64,
}

impl Replacement for Clock {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        self.young.insert(block);
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, how: Touch) {
        self.inserted += 1;
        self.live.insert(block, self.inserted);
        self.stack.push_back((block, self.inserted));
        if !how.prefetched {
            self.young.insert(block);
        }
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        loop {
            let (bottom, number) = self.stack.pop_front()?;
            if self.live.get(&bottom) != Some(&number) {
                continue;
            }
            if !self.young.remove(&bottom) {
                self.live.remove(&bottom);
                return Some(bottom);
            }
            self.stack.push_back((bottom, number));
        }
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.stack
            .iter()
            .rev()
            .filter(|(block, number)| self.live.get(block) == Some(number))
            .map(|&(block, _)| block)
            .collect()
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        self.young.remove(&block);
        self.live.remove(&block).is_some()
    }
}

/// CLOCK's configuration: it takes no options.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options;

impl Options {
    /// Reads `given`, which must be empty.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&[])?;
        Ok(Options)
    }
}

impl MakeReplacement for Options {
    fn build(&self, _geometry: CacheGeometry) -> Box<dyn Replacement> {
        Box::new(Clock::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(prefetched: bool) -> Touch {
        Touch {
            stream: 0,
            now: Duration::ZERO,
            prefetched,
        }
    }

    #[test]
    fn young_blocks_get_a_second_trip() {
        let mut clock = Clock::default();
        for block in 1..=3 {
            clock.on_insert(block, touch(true));
        }
        clock.on_hit(1, touch(true));
        assert_eq!(clock.evict(Duration::ZERO, 0), Some(2));
        assert_eq!(clock.order(), vec![1, 3]);
        assert_eq!(clock.evict(Duration::ZERO, 0), Some(3));
        assert_eq!(clock.evict(Duration::ZERO, 0), Some(1));
        assert_eq!(clock.evict(Duration::ZERO, 0), None);
    }

    #[test]
    fn removed_blocks_never_come_back() {
        let mut clock = Clock::default();
        for block in 1..=3 {
            clock.on_insert(block, touch(true));
        }
        assert!(clock.remove(1));
        assert!(!clock.remove(1));
        clock.on_insert(1, touch(true));
        assert_eq!(clock.order(), vec![1, 3, 2]);
        assert_eq!(clock.evict(Duration::ZERO, 0), Some(2));
        assert_eq!(clock.evict(Duration::ZERO, 0), Some(3));
        assert_eq!(clock.evict(Duration::ZERO, 0), Some(1));
        assert_eq!(clock.evict(Duration::ZERO, 0), None);
    }
}
