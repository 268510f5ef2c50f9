//! Recency order for the LRU family: an intrusive doubly linked list over dense block ids,
//! O(1) to touch, remove and find the least recently used block.
//!
//! Hand-written rather than a crate: the LRU crates key a hash map by block, and here blocks
//! are already dense indices, so one vector of links indexed by block is both simpler and
//! faster (a block's two links share a cache line: a touch reads one place per block).

use crate::cache::{warm, Block};
use crate::policy::compose::Order;
use crate::policy::Ctx;

/// End of the list (no neighbour), and the empty list's head and tail.
const NIL: Block = Block::MAX;
/// The `prev` of a block that is not in the list. Never a block id: the engine numbers fewer
/// than `Block::MAX - 1` blocks.
const OUT: Block = Block::MAX - 1;

/// A block's neighbours, towards the most (`prev`) and the least (`next`) recently used end;
/// both in one place, so that touching a block reads one cache line of it.
#[derive(Clone, Copy, Debug)]
struct Link {
    prev: Block,
    next: Block,
}

const UNLINKED: Link = Link {
    prev: OUT,
    next: NIL,
};

/// Blocks ordered from most to least recently used.
#[derive(Clone, Debug)]
pub(crate) struct LruList {
    links: Vec<Link>,
    head: Block,
    tail: Block,
}

impl Default for LruList {
    fn default() -> Self {
        LruList {
            links: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }
}

impl LruList {
    /// Makes `block` the most recently used, inserting it if needed.
    pub(crate) fn touch(&mut self, block: Block) {
        let b = block as usize;
        if b >= self.links.len() {
            self.links.resize(b + 1, UNLINKED);
        }
        if self.head == block {
            return;
        }
        self.remove(block);
        self.links[b] = Link {
            prev: NIL,
            next: self.head,
        };
        match self.head {
            NIL => self.tail = block,
            h => self.links[h as usize].prev = block,
        }
        self.head = block;
    }

    /// Takes `block` out of the order if it is there.
    pub(crate) fn remove(&mut self, block: Block) {
        let Some(&Link { prev, next }) = self.links.get(block as usize) else {
            return;
        };
        if prev == OUT {
            return;
        }
        match prev {
            NIL => self.head = next,
            p => self.links[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.links[n as usize].prev = prev,
        }
        self.links[block as usize] = UNLINKED;
    }

    /// Removes and returns the least recently used block other than `keep`.
    pub(crate) fn pop_lru_except(&mut self, keep: Option<Block>) -> Option<Block> {
        let mut candidate = self.tail;
        if Some(candidate) == keep {
            candidate = self.links[candidate as usize].prev;
        }
        if candidate == NIL {
            return None;
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

    fn warm(&self, block: Block) {
        warm(&self.links, block as usize);
    }

    fn likely_victim(&self) -> Option<Block> {
        (self.tail != NIL).then_some(self.tail)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

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

    #[derive(Clone, Debug)]
    enum Op {
        Touch(Block),
        Remove(Block),
        PopExcept(Option<Block>),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..12u32).prop_map(Op::Touch),
            (0..12u32).prop_map(Op::Remove),
            proptest::option::of(0..12u32).prop_map(Op::PopExcept),
        ]
    }

    proptest! {
        /// The linked list evicts exactly as a plain vector kept in recency order does.
        #[test]
        fn matches_a_vector_in_recency_order(ops in proptest::collection::vec(op(), 0..200)) {
            let mut lru = LruList::default();
            let mut model: Vec<Block> = Vec::new();
            for op in ops {
                match op {
                    Op::Touch(b) => {
                        lru.touch(b);
                        model.retain(|&m| m != b);
                        model.insert(0, b);
                    }
                    Op::Remove(b) => {
                        lru.remove(b);
                        model.retain(|&m| m != b);
                    }
                    Op::PopExcept(keep) => {
                        let expected = model.iter().rev().take(2).copied().find(|&m| Some(m) != keep);
                        model.retain(|&m| Some(m) != expected);
                        prop_assert_eq!(lru.pop_lru_except(keep), expected);
                    }
                }
            }
        }
    }
}
