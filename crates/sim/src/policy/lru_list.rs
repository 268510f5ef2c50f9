//! Recency order for the LRU family: an intrusive doubly linked list over dense block ids,
//! O(1) to touch, remove and find the least recently used block.
//!
//! Hand-written rather than a crate: the LRU crates key a hash map by block, and here blocks
//! are already dense indices, so two vectors of links are both simpler and faster.

use crate::cache::Block;
use crate::engine::Ctx;
use crate::policy::compose::Order;

const NIL: Block = Block::MAX;

/// Blocks ordered from most to least recently used.
#[derive(Clone, Debug, Default)]
pub(crate) struct LruList {
    prev: Vec<Block>,
    next: Vec<Block>,
    linked: Vec<bool>,
    head: Option<Block>,
    tail: Option<Block>,
}

impl LruList {
    fn grow(&mut self, block: Block) {
        let needed = block as usize + 1;
        if needed > self.linked.len() {
            self.prev.resize(needed, NIL);
            self.next.resize(needed, NIL);
            self.linked.resize(needed, false);
        }
    }

    /// Makes `block` the most recently used, inserting it if needed.
    pub(crate) fn touch(&mut self, block: Block) {
        self.grow(block);
        if self.head == Some(block) {
            return;
        }
        self.remove(block);
        let b = block as usize;
        self.prev[b] = NIL;
        self.next[b] = self.head.unwrap_or(NIL);
        match self.head {
            Some(h) => self.prev[h as usize] = block,
            None => self.tail = Some(block),
        }
        self.head = Some(block);
        self.linked[b] = true;
    }

    /// Takes `block` out of the order if it is there.
    pub(crate) fn remove(&mut self, block: Block) {
        let b = block as usize;
        if !self.linked.get(b).copied().unwrap_or(false) {
            return;
        }
        let (p, n) = (self.prev[b], self.next[b]);
        match p {
            NIL => self.head = (n != NIL).then_some(n),
            _ => self.next[p as usize] = n,
        }
        match n {
            NIL => self.tail = (p != NIL).then_some(p),
            _ => self.prev[n as usize] = p,
        }
        self.linked[b] = false;
    }

    /// Removes and returns the least recently used block other than `keep`.
    pub(crate) fn pop_lru_except(&mut self, keep: Option<Block>) -> Option<Block> {
        let mut candidate = self.tail?;
        if Some(candidate) == keep {
            candidate = self.prev[candidate as usize];
            if candidate == NIL {
                return None;
            }
        }
        self.remove(candidate);
        Some(candidate)
    }

    /// Removes and returns the least recently used block.
    pub(crate) fn pop_lru(&mut self) -> Option<Block> {
        self.pop_lru_except(None)
    }
}

/// Least recently used replacement.
impl Order for LruList {
    fn note(&mut self, block: Block, _ctx: &Ctx<'_>) {
        self.touch(block);
    }

    fn demand_victim(&mut self, _ctx: &Ctx<'_>) -> Option<Block> {
        self.pop_lru()
    }

    fn prefetch_victim(&mut self, ctx: &Ctx<'_>) -> Option<Block> {
        self.pop_lru_except(ctx.pinned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_in_recency_order_and_skips_the_kept_block() {
        let mut lru = LruList::default();
        for b in [3, 1, 2] {
            lru.touch(b);
        }
        lru.touch(3);
        assert_eq!(lru.pop_lru_except(Some(1)), Some(2));
        assert_eq!(lru.pop_lru(), Some(1));
        assert_eq!(lru.pop_lru(), Some(3));
        assert_eq!(lru.pop_lru(), None);
    }
}
