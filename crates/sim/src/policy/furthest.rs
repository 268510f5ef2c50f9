//! Rule 2 of Cao et al. section 2.2 (optimal replacement): find the cached block whose next
//! reference is furthest in the future, in O(log k).
//!
//! A lazy max-heap of `(next reference, block)`: each reference pushes the block's new key and
//! stale entries (block evicted, or key outdated) are dropped when they reach the top. When
//! stale entries make the heap more than twice the cache, it is rebuilt from the live entries,
//! which keeps its size O(k) at amortised O(log k) per reference. Ties between blocks never
//! referenced again go to the higher dense id (the block first seen later); the choice is
//! deterministic.
//!
//! Hand-written on `std::collections::BinaryHeap` rather than an indexed priority-queue crate:
//! those hash their keys, and here the validity check is two vector reads.

use std::collections::BinaryHeap;

use crate::cache::Block;
use crate::future::Pos;
use crate::policy::compose::Order;
use crate::policy::Ctx;

/// Cached blocks by next reference, furthest first.
#[derive(Clone, Debug)]
pub(crate) struct Furthest {
    heap: BinaryHeap<(Pos, Block)>,
    limit: usize,
}

fn live(ctx: &Ctx<'_>, (key, block): (Pos, Block)) -> bool {
    ctx.cache().is_resident(block) && ctx.oracle().next_ref(block) == key
}

impl Furthest {
    /// An empty order for a cache of `capacity` blocks.
    pub(crate) fn new(capacity: usize) -> Self {
        Furthest {
            heap: BinaryHeap::new(),
            limit: 2 * capacity + 64,
        }
    }

    /// Records `block`'s current next reference (after a reference or an arrival).
    pub(crate) fn update(&mut self, block: Block, ctx: &Ctx<'_>) {
        self.heap.push((ctx.oracle().next_ref(block), block));
        if self.heap.len() > self.limit {
            let mut entries = std::mem::take(&mut self.heap).into_vec();
            entries.retain(|&e| live(ctx, e));
            entries.sort_unstable();
            entries.dedup();
            self.heap = BinaryHeap::from(entries);
        }
    }

    /// The cached block referenced furthest in the future, with that position, unless it is
    /// the pinned block (which happens only when it is the only cached block).
    pub(crate) fn peek(&mut self, ctx: &Ctx<'_>) -> Option<(Pos, Block)> {
        while let Some(&top) = self.heap.peek() {
            if live(ctx, top) {
                return (Some(top.1) != ctx.pinned()).then_some(top);
            }
            self.heap.pop();
        }
        None
    }

    /// Removes and returns what [`Furthest::peek`] returns.
    pub(crate) fn pop(&mut self, ctx: &Ctx<'_>) -> Option<(Pos, Block)> {
        let top = self.peek(ctx)?;
        self.heap.pop();
        Some(top)
    }
}

/// MIN replacement (rule 2): the block referenced furthest in the future, for demand fetches
/// and prefetches alike.
impl Order for Furthest {
    fn note(&mut self, block: Block, ctx: &Ctx<'_>) {
        self.update(block, ctx);
    }

    fn demand_victim(&mut self, ctx: &Ctx<'_>) -> Option<Block> {
        self.pop(ctx).map(|(_, victim)| victim)
    }

    fn prefetch_victim(&mut self, ctx: &Ctx<'_>) -> Option<Block> {
        self.pop(ctx).map(|(_, victim)| victim)
    }
}
