//! LRU-K (O'Neil, O'Neil and Weikum, "The LRU-K Page Replacement Algorithm for Database Disk
//! Buffering", SIGMOD'93, section 2.1): evict the block whose K-th most recent reference is
//! the oldest (the largest backward K-distance). Blocks referenced fewer than K times since
//! they entered have an infinite distance and leave first, first in first out.
//!
//! Parameters, with libCacheSim's defaults (`LRU_K.cpp`): `k=2`.
//!
//! Follows libCacheSim's `LRU_K.cpp`: times are reference counts; a block's history starts
//! when it enters and is forgotten when it leaves (no retained information period, section
//! 2.1.2 of the paper), and the paper's correlated reference period is 0.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use rustc_hash::FxHashMap;

use super::queues::Queues;
use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

/// Blocks with fewer than K references, in order of arrival.
const YOUNG: u8 = 0;

/// The young FIFO, the others by K-th most recent reference, and each block's last K times.
#[derive(Debug)]
pub struct LruK {
    k: usize,
    young: Queues,
    by_kth: BTreeSet<(u64, DiskBlock)>,
    history: FxHashMap<DiskBlock, VecDeque<u64>>,
    now: u64,
}

impl LruK {
    /// An empty cache remembering `k` references per block.
    pub fn new(k: usize) -> Self {
        LruK {
            k,
            young: Queues::new(1),
            by_kth: BTreeSet::new(),
            history: FxHashMap::default(),
            now: 0,
        }
    }

    fn forget(&mut self, block: DiskBlock) {
        if let Some(times) = self.history.remove(&block) {
            if times.len() >= self.k {
                self.by_kth.remove(&(times[0], block));
            }
        }
    }
}

impl Replacement for LruK {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        self.now += 1;
        let Some(times) = self.history.get_mut(&block) else {
            return;
        };
        let old_kth = (times.len() >= self.k).then(|| times[0]);
        times.push_back(self.now);
        if times.len() > self.k {
            times.pop_front();
        }
        if times.len() < self.k {
            return;
        }
        let kth = times[0];
        match old_kth {
            Some(old) => {
                self.by_kth.remove(&(old, block));
            }
            None => {
                if let Some(node) = self.young.find(block) {
                    self.young.remove(node);
                }
            }
        }
        self.by_kth.insert((kth, block));
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {
        self.now += 1;
    }

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        self.history.insert(block, VecDeque::from([self.now]));
        match self.k {
            1 => {
                self.by_kth.insert((self.now, block));
            }
            _ => {
                self.young.push(YOUNG, block);
            }
        }
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        let block = match self.young.pop_tail(YOUNG) {
            Some(block) => block,
            None => self.by_kth.first()?.1,
        };
        self.forget(block);
        Some(block)
    }

    fn order(&self) -> Vec<DiskBlock> {
        let mut order: Vec<DiskBlock> = self.by_kth.iter().rev().map(|&(_, b)| b).collect();
        order.extend(self.young.blocks(YOUNG));
        order
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        if !self.history.contains_key(&block) {
            return false;
        }
        if let Some(node) = self.young.find(block) {
            self.young.remove(node);
        }
        self.forget(block);
        true
    }
}

/// LRU-K's configuration: K.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// References remembered per block.
    pub k: usize,
}

impl Options {
    /// Reads `k` (libCacheSim's default 2; at least 1).
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["k"])?;
        match given.count("k", 2)? {
            0 => Err(SimError::Config("lruk: `k` must be at least 1".into())),
            k => Ok(Options {
                k: usize::try_from(k).unwrap_or(usize::MAX),
            }),
        }
    }
}

impl MakeReplacement for Options {
    fn build(&self, _geometry: CacheGeometry) -> Box<dyn Replacement> {
        Box::new(LruK::new(self.k))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::replay;
    use super::*;

    /// LRU-2 with a cache of 3: 1 and 2 are referenced twice, 3 once, so 4 evicts 3 (one
    /// reference: an infinite distance) although 3 is more recent than both. 4's second
    /// reference gives it a full history; 5 then finds no block seen once and evicts 1, whose
    /// second most recent reference (time 1) is the oldest.
    #[test]
    fn blocks_seen_once_leave_first_then_the_oldest_kth_reference() {
        let mut lru2 = LruK::new(2);
        assert_eq!(replay(&mut lru2, 3, &[1, 2, 1, 2, 3, 4]), 4);
        assert_eq!(lru2.order(), vec![2, 1, 4]);
        let mut lru2 = LruK::new(2);
        assert_eq!(replay(&mut lru2, 3, &[1, 2, 1, 2, 3, 4, 4, 5]), 5);
        assert_eq!(lru2.order(), vec![4, 2, 5]);
    }
}
