//! ARC (Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST'03,
//! section 4, Figure 4): two LRU lists of cached blocks, T1 (seen once recently) and T2 (seen
//! at least twice), and two ghost lists of the ids they evicted, B1 and B2. A target `p` for
//! T1's size adapts: a miss found in B1 (T1 was too small) raises it by
//! `max(|B2| / |B1|, 1)`, one found in B2 lowers it by `max(|B1| / |B2|, 1)`; the block then
//! enters T2. REPLACE evicts T1's LRU block into B1 when T1 exceeds `p` (or equals it and
//! the miss was found in B2), else T2's into B2. A miss found in neither (case IV): when
//! `|T1| + |B1|` reaches the cache size, B1's oldest id is dropped (or, B1 empty, T1's LRU
//! block is evicted outright), else when all four lists hold twice the cache, B2's oldest id
//! is; then REPLACE. A hit in T1 moves the block to T2's head; a hit in T2 to its head.
//!
//! No parameters (libCacheSim's `ARC.c` takes none); `p` starts at 0.
//!
//! Follows libCacheSim's `ARC.c`: the ghost lists are trimmed only when room is made (a miss
//! into a full cache), not on every miss as in the paper's Figure 4, and `p` is a real number
//! capped at the cache size.

use std::time::Duration;

use super::queues::{Queues, NIL};
use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

const T1: u8 = 0;
const T2: u8 = 1;
const B1: u8 = 2;
const B2: u8 = 3;

/// Which ghost list the block being missed was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ghost {
    None,
    B1,
    B2,
}

/// The four lists and the target size of T1.
#[derive(Debug)]
pub struct Arc {
    lists: Queues,
    capacity: usize,
    p: f64,
    missed_in: Ghost,
}

impl Arc {
    /// Empty lists for a cache of `capacity` blocks.
    pub fn new(capacity: usize) -> Self {
        Arc {
            lists: Queues::new(4),
            capacity,
            p: 0.0,
            missed_in: Ghost::None,
        }
    }

    /// The adaptation target `p` (T1's target size).
    pub fn target(&self) -> f64 {
        self.p
    }

    fn len(&self, list: u8) -> usize {
        self.lists.len(list)
    }

    /// Moves the LRU block of `from` to the head of its ghost list `to`; returns it.
    fn demote(&mut self, from: u8, to: u8) -> Option<DiskBlock> {
        match self.lists.tail(from) {
            NIL => None,
            node => {
                self.lists.move_to_head(to, node);
                Some(self.lists.get(node).block)
            }
        }
    }

    /// The paper's REPLACE.
    fn replace(&mut self) -> Option<DiskBlock> {
        let t1 = self.len(T1) as f64;
        let from_t1 = (t1 > 0.0 && (t1 > self.p || (t1 == self.p && self.missed_in == Ghost::B2)))
            || self.len(T2) == 0;
        match from_t1 {
            true => self.demote(T1, B1),
            false => self.demote(T2, B2),
        }
    }
}

impl Replacement for Arc {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        self.missed_in = Ghost::None;
        if let Some(node) = self.lists.find(block) {
            self.lists.move_to_head(T2, node);
        }
    }

    fn on_miss(&mut self, block: DiskBlock, _how: Touch) {
        let Some(node) = self.lists.find(block) else {
            self.missed_in = Ghost::None;
            return;
        };
        let (b1, b2) = (self.len(B1) as f64, self.len(B2) as f64);
        self.missed_in = match self.lists.get(node).list {
            B1 => {
                self.p = (self.p + (b2 / b1).max(1.0)).min(self.capacity as f64);
                Ghost::B1
            }
            _ => {
                self.p = (self.p - (b1 / b2).max(1.0)).max(0.0);
                Ghost::B2
            }
        };
        self.lists.remove(node);
    }

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        let list = match std::mem::replace(&mut self.missed_in, Ghost::None) {
            Ghost::None => T1,
            Ghost::B1 | Ghost::B2 => T2,
        };
        self.lists.push(list, block);
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        if self.missed_in != Ghost::None {
            return self.replace();
        }
        if self.len(T1) + self.len(B1) + 1 > self.capacity {
            if self.len(B1) == 0 {
                return self.lists.pop_tail(T1);
            }
            self.lists.pop_tail(B1);
        } else if self.len(T1) + self.len(B1) + self.len(T2) + self.len(B2) >= 2 * self.capacity {
            self.lists.pop_tail(B2);
        }
        self.replace()
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.lists.blocks_of(&[T2, T1])
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        match self.lists.find(block) {
            Some(node) if matches!(self.lists.get(node).list, T1 | T2) => {
                self.lists.remove(node);
                true
            }
            _ => false,
        }
    }
}

/// ARC's configuration: it takes no options.
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
    fn build(&self, geometry: CacheGeometry) -> Box<dyn Replacement> {
        Box::new(Arc::new(geometry.capacity))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::Replay;
    use super::*;

    /// The paper's adaptation (Figure 4, cases II and III) worked by hand with a cache of 4.
    /// 1 2 1 3 4 5 6: 1 is in T2, the scan pushes 2 then 3 into B1 (2 is dropped again when
    /// B1 and T1 reach the cache size). 3 is found in B1: `p` rises by max(|B2|/|B1|, 1) = 1
    /// and 3 enters T2. 7, then 4 found in B1: `p` rises to 2 and T1 no longer exceeds it, so
    /// T2's LRU block 1 goes to B2. 1 is then found in B2: `p` falls by max(|B1|/|B2|, 1) = 1.
    #[test]
    fn a_miss_found_in_a_ghost_list_moves_the_target() {
        let mut arc = Arc::new(4);
        let mut cache = Replay::new(4);
        assert_eq!(cache.run(&mut arc, &[1, 2, 1, 3, 4, 5, 6, 3]), 7);
        assert_eq!(arc.target(), 1.0);
        let lists = |arc: &Arc| [T1, T2, B1, B2].map(|l| arc.lists.blocks(l));
        assert_eq!(lists(&arc), [vec![6, 5], vec![3, 1], vec![4], vec![]]);
        assert_eq!(cache.run(&mut arc, &[7, 4]), 2);
        assert_eq!(arc.target(), 2.0);
        assert_eq!(lists(&arc), [vec![7, 6], vec![4, 3], vec![5], vec![1]]);
        assert_eq!(cache.run(&mut arc, &[1]), 1);
        assert_eq!(arc.target(), 1.0);
        assert_eq!(lists(&arc), [vec![7], vec![1, 4, 3], vec![6, 5], vec![]]);
    }
}
