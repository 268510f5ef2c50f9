//! Strict LRU: every reference moves its block to the top; the bottom leaves.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::eviction::{Block, Eviction};

/// Blocks ordered by the time of their last reference.
#[derive(Debug, Default)]
pub struct Lru {
    by_use: BTreeMap<u64, Block>,
    last_use: FxHashMap<Block, u64>,
    tick: u64,
}

impl Lru {
    fn touch_top(&mut self, block: Block) {
        if let Some(old) = self.last_use.insert(block, self.tick) {
            self.by_use.remove(&old);
        }
        self.by_use.insert(self.tick, block);
        self.tick += 1;
    }

    /// Forgets `block` (it left the cache by other means); false if it was not held.
    pub fn remove(&mut self, block: Block) -> bool {
        match self.last_use.remove(&block) {
            Some(tick) => self.by_use.remove(&tick).is_some(),
            None => false,
        }
    }
}

impl Eviction for Lru {
    fn hit(&mut self, block: Block) {
        self.touch_top(block);
    }

    fn insert(&mut self, block: Block, _young: bool) {
        self.touch_top(block);
    }

    fn evict(&mut self) -> Option<Block> {
        let (_, block) = self.by_use.pop_first()?;
        self.last_use.remove(&block);
        Some(block)
    }

    fn order(&self) -> Vec<Block> {
        self.by_use.values().rev().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_leaves() {
        let mut lru = Lru::default();
        for block in 1..=3 {
            lru.insert(block, true);
        }
        lru.hit(1);
        assert_eq!(lru.order(), vec![1, 3, 2]);
        assert!(lru.remove(3));
        assert!(!lru.remove(3));
        assert_eq!(lru.evict(), Some(2));
        assert_eq!(lru.evict(), Some(1));
        assert_eq!(lru.evict(), None);
    }
}
