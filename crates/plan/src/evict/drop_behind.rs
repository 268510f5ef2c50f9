//! Drop-behind: the pages of sequential streams leave once read, before anything else.
//!
//! A block inserted right after its predecessor (block - 1, still cached) continues a
//! sequential run and joins the *behind* queue, which is evicted first, oldest first. Every
//! other block, and a block of the queue referenced again, is kept by [`Clock`]. This is what
//! a program that streams through data would do by hand with `POSIX_FADV_DONTNEED` behind
//! itself, and what `nocache` users ask for.
//!
//! Deviations: a run's first block is not known to start a run when it enters, so it stays
//! with the CLOCK blocks (one block per run).

use std::collections::VecDeque;

use rustc_hash::FxHashSet;

use super::clock::Clock;
use super::eviction::{Block, Eviction};

/// Sequential blocks in a FIFO in front of a CLOCK of the others.
#[derive(Debug, Default)]
pub struct DropBehind {
    /// Blocks continuing a run, oldest first (lazy: a block is live while in `behind_set`).
    behind: VecDeque<Block>,
    behind_set: FxHashSet<Block>,
    /// Every cached block.
    cached: FxHashSet<Block>,
    rest: Clock,
}

impl Eviction for DropBehind {
    fn hit(&mut self, block: Block) {
        if self.behind_set.remove(&block) {
            self.rest.insert(block, true);
        } else {
            self.rest.hit(block);
        }
    }

    fn insert(&mut self, block: Block, young: bool) {
        let continues = block
            .checked_sub(1)
            .is_some_and(|prev| self.cached.contains(&prev));
        self.cached.insert(block);
        if continues {
            self.behind.push_back(block);
            self.behind_set.insert(block);
        } else {
            self.rest.insert(block, young);
        }
    }

    fn evict(&mut self) -> Option<Block> {
        while let Some(block) = self.behind.pop_front() {
            if self.behind_set.remove(&block) {
                self.cached.remove(&block);
                return Some(block);
            }
        }
        let block = self.rest.evict()?;
        self.cached.remove(&block);
        Some(block)
    }

    fn order(&self) -> Vec<Block> {
        let behind = self
            .behind
            .iter()
            .rev()
            .filter(|b| self.behind_set.contains(b))
            .copied();
        let mut order = self.rest.order();
        order.extend(behind);
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_leave_before_random_blocks_and_rereads_stay() {
        let mut order = DropBehind::default();
        for block in [50, 10, 11, 12, 13, 90] {
            order.insert(block, true);
        }
        order.hit(12);
        assert_eq!(order.order(), vec![12, 90, 10, 50, 13, 11]);
        assert_eq!(order.evict(), Some(11));
        assert_eq!(order.evict(), Some(13));
        assert_eq!(order.evict(), Some(50));
    }
}
