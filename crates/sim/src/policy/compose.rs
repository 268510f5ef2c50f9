//! The six policies of Cao et al. section 4.1 and 2.5 that are a replacement order plus a
//! prefetch rule, built from the two parts: the section 2.1 questions *which block to replace*
//! ([`Order`]: LRU, or MIN's furthest next reference) and *when and which block to fetch*
//! ([`Prefetch`]: never, one-block lookahead, the throttled walk, aggressive).
//!
//! [`Composed`] is the one [`AtIdle`] policy they share: references and arrivals update the order, a
//! demand fetch into a full cache discards the order's victim, and prefetch offers go to the
//! prefetch rule, which may take its victim from the order.

use crate::cache::{Block, Interner};
use crate::future::Pos;
use crate::policy::Ctx;
use crate::policy::{AtIdle, Fetch};

/// Which cached block to discard.
pub(crate) trait Order {
    /// `block` was referenced or became available.
    fn note(&mut self, block: Block, ctx: &Ctx<'_>);

    /// The block to discard for a demand fetch into a full cache.
    fn demand_victim(&mut self, ctx: &Ctx<'_>) -> Option<Block>;

    /// The block to discard for a prefetch into a full cache; never the pinned block (the one
    /// the program is about to reference).
    fn prefetch_victim(&mut self, ctx: &Ctx<'_>) -> Option<Block>;

    /// `block` is coming (see [`AtIdle::warm`]).
    fn warm(&self, _block: Block) {}

    /// The next demand victim, if known cheaply (see [`AtIdle::likely_victim`]).
    fn likely_victim(&self) -> Option<Block> {
        None
    }
}

/// When and which block to prefetch, over the replacement order `O`.
pub(crate) trait Prefetch<O> {
    /// The program reaches a reference to `block` (see [`AtIdle::on_request`]).
    fn on_request(&mut self, _block: Block, _ctx: &mut Ctx<'_>) {}

    /// A fetch slot is free: a prefetch to start now, if any.
    fn prefetch(&mut self, order: &mut O, ctx: &Ctx<'_>) -> Option<Fetch>;

    /// `block` is coming (see [`AtIdle::warm`]).
    fn warm(&self, _block: Block, _ids: &Interner) {}

    /// Whether it never prefetches and ignores requests (see [`AtIdle::demand_only`]).
    fn demand_only(&self) -> bool {
        false
    }
}

/// Demand paging: no prefetch ever.
pub(crate) struct NoPrefetch;

impl<O> Prefetch<O> for NoPrefetch {
    fn prefetch(&mut self, _order: &mut O, _ctx: &Ctx<'_>) -> Option<Fetch> {
        None
    }

    fn demand_only(&self) -> bool {
        true
    }
}

/// A policy made of a replacement order and a prefetch rule.
pub(crate) struct Composed<O, P> {
    order: O,
    prefetch: P,
}

impl<O: Order, P: Prefetch<O>> Composed<O, P> {
    /// The policy with replacement order `order` and prefetch rule `prefetch`, boxed for the
    /// registry.
    pub(crate) fn boxed(order: O, prefetch: P) -> Box<dyn AtIdle>
    where
        O: 'static,
        P: 'static,
    {
        Box::new(Composed { order, prefetch })
    }
}

impl<O: Order, P: Prefetch<O>> AtIdle for Composed<O, P> {
    fn on_request(&mut self, block: Block, _pos: Pos, ctx: &mut Ctx<'_>) {
        self.prefetch.on_request(block, ctx);
    }

    fn on_reference(&mut self, block: Block, _pos: Pos, ctx: &mut Ctx<'_>) {
        self.order.note(block, ctx);
    }

    fn on_arrival(&mut self, block: Block, ctx: &mut Ctx<'_>) {
        self.order.note(block, ctx);
    }

    fn demand_victim(&mut self, _block: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
        match ctx.cache().free_slots() {
            0 => self.order.demand_victim(ctx),
            _ => None,
        }
    }

    fn prefetch(&mut self, ctx: &mut Ctx<'_>) -> Option<Fetch> {
        self.prefetch.prefetch(&mut self.order, ctx)
    }

    fn warm(&self, block: Block, ids: &Interner) {
        self.order.warm(block);
        self.prefetch.warm(block, ids);
    }

    fn likely_victim(&self) -> Option<Block> {
        self.order.likely_victim()
    }

    fn demand_only(&self) -> bool {
        self.prefetch.demand_only()
    }
}

/// A fetch of `block` into a free slot, or, when the cache is full, in place of `victim()`;
/// `None` when the cache is full and `victim()` names no block.
pub(crate) fn fetch_into(
    block: Block,
    ctx: &Ctx<'_>,
    victim: impl FnOnce() -> Option<Block>,
) -> Option<Fetch> {
    let victim = match ctx.cache().free_slots() {
        0 => Some(victim()?),
        _ => None,
    };
    Some(Fetch { block, victim })
}
