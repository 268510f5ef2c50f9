//! SIEVE (Zhang et al., "SIEVE is Simpler than LRU", NSDI'24, section 3, Algorithm 1): one
//! FIFO queue, a visited bit per block and a hand. A hit only sets the block's bit; a new
//! block enters at the head with its bit clear. To evict, the hand walks from where it last
//! stopped (the tail at first) towards the head, clearing set bits, and evicts the first block
//! whose bit is clear; past the head it wraps to the tail. Unlike CLOCK, survivors stay where
//! they are, so new blocks are sifted out quickly (quick demotion) and kept ones keep their
//! place (lazy promotion).
//!
//! Follows libCacheSim's `Sieve.c` (no parameters): the hand is left at the evicted block's
//! newer neighbour, and a removed block under the hand moves the hand the same way.

use std::time::Duration;

use super::queues::{Node, Queues, NIL};
use super::{NoOptions, Replacement, Touch};
use crate::disksim::workload::DiskBlock;

const QUEUE: u8 = 0;

/// The queue and the hand ([`NIL`]: start at the tail).
#[derive(Debug)]
pub struct Sieve {
    queue: Queues,
    hand: Node,
}

impl Default for Sieve {
    fn default() -> Self {
        Sieve {
            queue: Queues::new(1),
            hand: NIL,
        }
    }
}

impl Replacement for Sieve {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        if let Some(node) = self.queue.find(block) {
            self.queue.get_mut(node).flag = true;
        }
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        self.queue.push(QUEUE, block);
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        let mut node = match self.hand {
            NIL => self.queue.tail(QUEUE),
            hand => hand,
        };
        if node == NIL {
            return None;
        }
        while std::mem::take(&mut self.queue.get_mut(node).flag) {
            node = match self.queue.newer(node) {
                NIL => self.queue.tail(QUEUE),
                newer => newer,
            };
        }
        self.hand = self.queue.newer(node);
        Some(self.queue.remove(node))
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.queue.blocks(QUEUE)
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        let Some(node) = self.queue.find(block) else {
            return false;
        };
        if self.hand == node {
            self.hand = self.queue.newer(node);
        }
        self.queue.remove(node);
        true
    }
}

/// SIEVE's configuration: it takes no options.
pub type Options = NoOptions<Sieve>;

#[cfg(test)]
mod tests {
    use super::super::testing::{replay, touch};
    use super::*;

    /// Algorithm 1 worked by hand (a cache of 7): the hand passes visited blocks, clearing
    /// their bits, evicts the first unvisited one, and the next eviction resumes where it
    /// stopped, not at the tail.
    #[test]
    fn the_hand_clears_visited_blocks_and_resumes_where_it_stopped() {
        let mut sieve = Sieve::default();
        // A B C D E F G enter in order (A oldest, at the tail); A and B are visited.
        for block in 1..=7 {
            sieve.on_insert(block, touch());
        }
        sieve.on_hit(1, touch());
        sieve.on_hit(2, touch());
        // The hand starts at the tail: A and B lose their bits, C leaves.
        assert_eq!(sieve.evict(Duration::ZERO, 8), Some(3));
        sieve.on_insert(8, touch());
        // The hand resumes at D, not at the tail: D leaves, A stays (its bit was cleared).
        assert_eq!(sieve.evict(Duration::ZERO, 9), Some(4));
        assert_eq!(sieve.order(), vec![8, 7, 6, 5, 2, 1]);
    }

    /// A B A C A with two slots: A's hit keeps it past B, which leaves for C.
    #[test]
    fn a_visited_block_survives_newer_ones() {
        let mut sieve = Sieve::default();
        assert_eq!(replay(&mut sieve, 2, &[1, 2, 1, 3, 1]), 3);
        assert_eq!(sieve.order(), vec![3, 1]);
    }
}
