//! CLOCK as DULO builds on it (FAST'05 s3.4, Figure 2): the cache is a stack; new blocks enter
//! at the top, a hit only flags its block *young*; to evict, look at the bottom block: a young
//! one loses its flag and moves to the top, the first one not young leaves.
//!
//! Deviations: prefetched blocks enter not young (Linux marks read-ahead pages unreferenced),
//! so a prefetched block never used leaves on its first trip to the bottom.

use std::collections::VecDeque;

use rustc_hash::FxHashSet;

use super::eviction::{Block, Eviction};

/// The CLOCK stack: `stack.front()` is the bottom.
#[derive(Debug, Default)]
pub struct Clock {
    stack: VecDeque<Block>,
    young: FxHashSet<Block>,
}

impl Eviction for Clock {
    fn hit(&mut self, block: Block) {
        self.young.insert(block);
    }

    fn insert(&mut self, block: Block, young: bool) {
        self.stack.push_back(block);
        if young {
            self.young.insert(block);
        }
    }

    fn evict(&mut self) -> Option<Block> {
        loop {
            let bottom = self.stack.pop_front()?;
            if !self.young.remove(&bottom) {
                return Some(bottom);
            }
            self.stack.push_back(bottom);
        }
    }

    fn order(&self) -> Vec<Block> {
        self.stack.iter().rev().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn young_blocks_get_a_second_trip() {
        let mut clock = Clock::default();
        for block in 1..=3 {
            clock.insert(block, false);
        }
        clock.hit(1);
        assert_eq!(clock.evict(), Some(2));
        assert_eq!(clock.order(), vec![1, 3]);
        assert_eq!(clock.evict(), Some(3));
        assert_eq!(clock.evict(), Some(1));
        assert_eq!(clock.evict(), None);
    }
}
