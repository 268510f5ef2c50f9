//! LFU: evict the block referenced least often since it entered the cache; among equals, the
//! one that reached its count first (libCacheSim's `LFU.c`: a block is appended to its new
//! frequency's list at each hit and the head of the smallest frequency's list leaves). A new
//! block starts at count 1. Counts are forgotten on eviction (in-cache LFU).
//!
//! No parameters (libCacheSim's LFU takes none). The classic policy of the caching
//! literature (e.g. as the baseline of Arlitt et al., "Evaluating content management
//! techniques for Web proxy caches", 2000, section 3).

use std::time::Duration;

use super::buckets::Buckets;
use super::{NoOptions, Replacement, Touch};
use crate::disksim::workload::DiskBlock;

/// Held blocks by count.
#[derive(Debug, Default)]
pub struct Lfu(Buckets);

impl Replacement for Lfu {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        if let Some(freq) = self.0.freq(block) {
            self.0.set(block, freq + 1);
        }
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        self.0.set(block, 1);
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        let (_, block) = self.0.first_in(0, u64::MAX)?;
        self.0.remove(block);
        Some(block)
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.0.order()
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        self.0.remove(block)
    }
}

/// LFU's configuration: it takes no options.
pub type Options = NoOptions<Lfu>;

#[cfg(test)]
mod tests {
    use super::super::testing::replay;
    use super::*;

    /// Counts decide, and among equal counts the block that reached its count first leaves:
    /// 1 is hit twice, 2 and 3 once each (2 first), so 4 evicts 2, and 5 evicts 4 (count 1).
    #[test]
    fn the_least_counted_leaves_first_come_first_among_equals() {
        let mut lfu = Lfu::default();
        assert_eq!(replay(&mut lfu, 3, &[1, 2, 3, 1, 1, 2, 3, 4, 5]), 5);
        assert_eq!(lfu.order(), vec![1, 3, 5]);
    }
}
