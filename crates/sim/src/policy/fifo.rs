//! FIFO demand paging: no prefetching; on a miss into a full cache, discard the block that
//! arrived first, whatever its use since. A baseline of cache simulators (libCacheSim's FIFO),
//! run here so that miss counts can be checked against theirs.
//!
//! Needs no future, so it runs on a streamed trace.

use std::collections::VecDeque;

use crate::cache::{Block, Interner};
use crate::future::Pos;
use crate::policy::Ctx;
use crate::policy::{AtIdle, Build, Fetch, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "fifo",
    summary: "demand paging, first in first out replacement",
    needs_future: false,
    build,
};

fn build(_: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    Ok(Box::new(Fifo::default()))
}

/// Cached blocks in order of arrival.
#[derive(Default)]
struct Fifo(VecDeque<Block>);

impl AtIdle for Fifo {
    fn on_request(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}

    fn prefetch(&mut self, _: &mut Ctx<'_>) -> Option<Fetch> {
        None
    }

    fn warm(&self, _: Block, _: &Interner) {}

    fn on_reference(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}

    fn on_arrival(&mut self, block: Block, _: &mut Ctx<'_>) {
        self.0.push_back(block);
    }

    fn demand_victim(&mut self, _: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
        match ctx.cache().free_slots() {
            0 => self.0.pop_front(),
            _ => None,
        }
    }

    fn likely_victim(&self) -> Option<Block> {
        self.0.front().copied()
    }

    fn demand_only(&self) -> bool {
        true
    }
}
