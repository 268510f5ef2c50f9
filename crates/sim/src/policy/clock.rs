//! CLOCK demand paging (Corbato's second chance): no prefetching; each cached block has a
//! reference bit, set when it is referenced; on a miss into a full cache the hand passes over
//! blocks from the oldest, clearing set bits (the block goes round again) until it finds a
//! clear one to discard. A newly fetched block starts with its bit clear, and the reference
//! that fetched it does not set it, as in libCacheSim's one-bit CLOCK, against which miss
//! counts are checked. Paired with a prefetcher (`clock+obl`), a prefetched block also
//! arrives with its bit clear and its first reference, a hit, sets it (libCacheSim's
//! `Clock_find`).
//!
//! Needs no future, so it runs on a streamed trace.

use std::collections::VecDeque;

use crate::cache::{warm, Block, Interner};
use crate::future::Pos;
use crate::policy::Ctx;
use crate::policy::{AtIdle, Build, Fetch, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "clock",
    summary: "demand paging, CLOCK (second chance) replacement",
    needs_future: false,
    build,
};

fn build(_: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    Ok(Box::new(Clock::default()))
}

/// The ring of cached blocks from the hand (front) round, and the reference bits by block.
#[derive(Default)]
struct Clock {
    ring: VecDeque<Block>,
    referenced: Vec<bool>,
    /// The block that just arrived for the reference now being served (its bit stays clear);
    /// none after a prefetched block's arrival, whose first reference is a hit that sets it.
    arrived: Option<Block>,
}

impl Clock {
    fn bit(&mut self, block: Block) -> &mut bool {
        let index = block as usize;
        if index >= self.referenced.len() {
            self.referenced.resize(index + 1, false);
        }
        &mut self.referenced[index]
    }
}

impl AtIdle for Clock {
    fn on_request(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}

    fn prefetch(&mut self, _: &mut Ctx<'_>) -> Option<Fetch> {
        None
    }

    fn on_reference(&mut self, block: Block, _: Pos, _: &mut Ctx<'_>) {
        if self.arrived.take() != Some(block) {
            *self.bit(block) = true;
        }
    }

    fn warm(&self, block: Block, _: &Interner) {
        warm(&self.referenced, block as usize);
    }

    fn on_arrival(&mut self, block: Block, ctx: &mut Ctx<'_>) {
        *self.bit(block) = false;
        self.arrived = (!ctx.cache().is_unreferenced_prefetch(block)).then_some(block);
        self.ring.push_back(block);
    }

    fn demand_victim(&mut self, _: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
        if ctx.cache().free_slots() > 0 {
            return None;
        }
        while let Some(block) = self.ring.pop_front() {
            if !std::mem::take(self.bit(block)) {
                return Some(block);
            }
            self.ring.push_back(block);
        }
        None
    }

    /// The block under the hand, the first the next sweep looks at.
    fn likely_victim(&self) -> Option<Block> {
        self.ring.front().copied()
    }

    fn demand_only(&self) -> bool {
        true
    }
}
