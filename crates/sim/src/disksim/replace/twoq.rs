//! 2Q (Johnson and Shasha, "2Q: A Low Overhead High Performance Buffer Management Replacement
//! Algorithm", VLDB'94, section 2, the full version): a new block enters A1in, a FIFO; when
//! A1in holds more than its share, its oldest block leaves into A1out, a FIFO of ids only. A
//! miss found in A1out enters Am, an LRU list; a hit in A1in changes nothing, a hit in Am
//! moves the block to Am's head. When A1in is within its share, Am's LRU block leaves.
//!
//! Parameters, with libCacheSim's defaults (`TwoQ.c`): `in=0.25` (A1in's share of the cache,
//! `floor(in * cache)` blocks: the paper's Kin), `out=0.5` (A1out's entries as a share of the
//! cache: Kout).
//!
//! Follows libCacheSim's `TwoQ.c`. Deviations: libCacheSim refuses to cache anything when A1in's
//! share is under one block (caches under 4); here a block always enters.

use std::time::Duration;

use super::queues::Queues;
use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

const A1IN: u8 = 0;
const AM: u8 = 1;
const A1OUT: u8 = 2;

/// The three queues and their sizes.
#[derive(Debug)]
pub struct TwoQ {
    queues: Queues,
    in_size: usize,
    out_size: usize,
    /// The block being missed was found in A1out (it enters Am).
    hit_on_ghost: bool,
}

impl TwoQ {
    /// Empty queues for a cache of `capacity` blocks with `options`.
    pub fn new(capacity: usize, options: &Options) -> Self {
        TwoQ {
            queues: Queues::new(3),
            in_size: (capacity as f64 * options.a_in) as usize,
            out_size: (capacity as f64 * options.a_out) as usize,
            hit_on_ghost: false,
        }
    }
}

impl Replacement for TwoQ {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        if let Some(node) = self.queues.find(block) {
            if self.queues.get(node).list == AM {
                self.queues.move_to_head(AM, node);
            }
        }
    }

    fn on_miss(&mut self, block: DiskBlock, _how: Touch) {
        self.hit_on_ghost = false;
        if let Some(node) = self.queues.find(block) {
            if self.queues.get(node).list == A1OUT {
                self.queues.remove(node);
                self.hit_on_ghost = true;
            }
        }
    }

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        let list = match std::mem::take(&mut self.hit_on_ghost) {
            true => AM,
            false => A1IN,
        };
        self.queues.push(list, block);
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        if self.queues.len(A1IN) <= self.in_size {
            return self.queues.pop_tail(AM);
        }
        let block = self.queues.pop_tail(A1IN)?;
        if self.out_size > 0 {
            if self.queues.len(A1OUT) >= self.out_size {
                self.queues.pop_tail(A1OUT);
            }
            self.queues.push(A1OUT, block);
        }
        Some(block)
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.queues.blocks_of(&[AM, A1IN])
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        self.queues.remove_held(block, A1OUT)
    }
}

/// 2Q's configuration: the shares `in` (A1in) and `out` (A1out).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// A1in's share of the cache (Kin).
    pub a_in: f64,
    /// A1out's entries as a share of the cache (Kout).
    pub a_out: f64,
}

impl Options {
    /// Reads `in` and `out` (libCacheSim's defaults 0.25 and 0.5).
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["in", "out"])?;
        Ok(Options {
            a_in: given.ratio("in", 0.25)?,
            a_out: given.ratio("out", 0.5)?,
        })
    }
}

impl MakeReplacement for Options {
    fn build(&self, geometry: CacheGeometry) -> Box<dyn Replacement> {
        Box::new(TwoQ::new(geometry.capacity, self))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::replay;
    use super::*;

    /// Section 2 worked by hand with a cache of 4 (Kin 1, Kout 2): a scan passes through
    /// A1in and leaves its ids in A1out; a block missed again from A1out enters Am and stays
    /// while the next scan goes by.
    #[test]
    fn a_block_seen_twice_enters_am_and_outlives_a_scan() {
        let mut twoq = TwoQ::new(4, &Options::parse(&PolicySpec::named("2q")).unwrap());
        // 5 pushes 1 out of A1in into A1out; 1 again is found there and enters Am, pushing
        // 2 out. The scan 6 7 8 pushes 3, 4, 5 through A1out (2 and 3 drop off its end);
        // 1 is still cached in Am.
        assert_eq!(replay(&mut twoq, 4, &[1, 2, 3, 4, 5, 1, 6, 7, 8, 1]), 9);
        assert_eq!(twoq.queues.blocks(AM), vec![1]);
        assert_eq!(twoq.queues.blocks(A1IN), vec![8, 7, 6]);
        assert_eq!(twoq.queues.blocks(A1OUT), vec![5, 4]);
    }
}
