//! LFU with dynamic aging (LFU-DA; Arlitt, Cherkasova, Dilley, Friedrich and Jin, "Evaluating
//! content management techniques for Web proxy caches", Performance Evaluation Review 2000,
//! section 3.3): each block's key is its count plus the cache's age L, the key of the last
//! block evicted, so that blocks once popular but no longer referenced age out. With one
//! object per slot (the cost and size of the paper's `K = C * F + L` both 1), a new block's
//! key is `L + 1` and a hit adds L to it; the block of the smallest key leaves, and among
//! equal keys the one that reached its key first.
//!
//! No parameters (libCacheSim's `LFUDA.c` takes none).
//!
//! Follows libCacheSim's `LFUDA.c` exactly, including how it tracks L: L is the smallest key
//! at the last eviction, moved up to the next non-empty key (up to the largest key a hit has
//! made) when a hit or an eviction empties the list of key L; a hit adds the L of that moment.
//! Deviations: where that bookkeeping leaves L on an empty list (libCacheSim then fails), the
//! smallest key held leaves. Keys saturate at `u64::MAX`: a hit adds L, so on long traces (the
//! shipped `sprite` trace) keys outgrow 64 bits, where libCacheSim's signed keys overflow.

use std::time::Duration;

use super::buckets::Buckets;
use super::{NoOptions, Replacement, Touch};
use crate::disksim::workload::DiskBlock;

/// Held blocks by key, the age L (`min_freq`) and the largest key a hit made (`max_freq`).
#[derive(Debug, Default)]
pub struct Lfuda {
    keys: Buckets,
    min_freq: u64,
    max_freq: u64,
}

impl Lfuda {
    /// Moves L to the smallest non-empty key above it, up to the largest key a hit made.
    fn update_min(&mut self) {
        if let Some((freq, _)) = self
            .keys
            .first_in(self.min_freq.saturating_add(1), self.max_freq)
        {
            self.min_freq = freq;
        }
    }
}

impl Replacement for Lfuda {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        let Some(old) = self.keys.freq(block) else {
            return;
        };
        let new = old.saturating_add(self.min_freq);
        self.max_freq = self.max_freq.max(new);
        self.keys.remove(block);
        if self.min_freq == old && self.keys.is_empty_at(old) {
            self.update_min();
        }
        self.keys.set(block, new);
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        self.keys.set(block, self.min_freq.saturating_add(1));
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        let at = self.min_freq.max(1);
        let (freq, block) = self
            .keys
            .first_in(at, at)
            .or_else(|| self.keys.first_in(0, u64::MAX))?;
        self.min_freq = freq;
        self.keys.remove(block);
        if self.keys.is_empty_at(freq) {
            self.update_min();
        }
        Some(block)
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.keys.order()
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        let Some(freq) = self.keys.freq(block) else {
            return false;
        };
        self.keys.remove(block);
        if freq == self.min_freq && self.keys.is_empty_at(freq) {
            self.update_min();
        }
        true
    }
}

/// LFU-DA's configuration: it takes no options.
pub type Options = NoOptions<Lfuda>;

#[cfg(test)]
mod tests {
    use super::super::testing::replay;
    use super::*;

    /// Aging, with a cache of 3: 1 is hit four times early, then five new blocks are each
    /// referenced three times. Plain LFU keeps 1 for ever (its count of 5 is never reached);
    /// under LFU-DA the evictions raise L, the newcomers' keys pass 1's and 1 leaves, so its
    /// last reference misses. The counts (9 and 10 misses) are libCacheSim 0.3.5's.
    #[test]
    fn an_old_favourite_ages_out_where_lfu_keeps_it() {
        let mut blocks = vec![5, 6, 7, 1, 1, 1, 1, 1];
        blocks.extend((10..15).flat_map(|b| [b, b, b]));
        blocks.push(1);
        let mut lfu = super::super::lfu::Lfu::default();
        assert_eq!(replay(&mut lfu, 3, &blocks), 9);
        let mut lfuda = Lfuda::default();
        assert_eq!(replay(&mut lfuda, 3, &blocks), 10);
    }
}
