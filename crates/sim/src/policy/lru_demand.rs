//! LRU-demand (Cao et al. section 4.1): no prefetching; on a miss, discard the least recently
//! used block. The replacement of traditional file systems.
//!
//! Deviations: none. Needs no future, so it runs on a streamed trace.

use crate::cache::Block;
use crate::engine::Ctx;
use crate::future::Pos;
use crate::policy::lru_list::LruList;
use crate::policy::{demand_victim, Build, Policy, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru-demand",
    summary: "demand paging, least recently used replacement",
    needs_future: false,
    build,
};

fn build(_: &Build<'_>) -> Result<Box<dyn Policy>, SimError> {
    Ok(Box::new(LruDemand::default()))
}

/// LRU demand paging.
#[derive(Default)]
struct LruDemand {
    lru: LruList,
}

impl Policy for LruDemand {
    fn on_reference(&mut self, block: Block, _pos: Pos, _ctx: &mut Ctx<'_>) {
        self.lru.touch(block);
    }

    fn on_arrival(&mut self, block: Block, _ctx: &mut Ctx<'_>) {
        self.lru.touch(block);
    }

    fn demand_victim(&mut self, _block: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
        demand_victim(ctx, || self.lru.pop_lru())
    }
}
