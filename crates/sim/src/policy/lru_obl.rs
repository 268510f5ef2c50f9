//! LRU-OBL (Cao et al. section 4.1): LRU replacement plus sequential one-block lookahead, the
//! combination of existing file systems (Ultrix 4.3). A prefetched block enters the
//! most-recently-used end of the list when it arrives (the paper's footnote 2).
//!
//! Deviations: the prefetch victim is the least recently used block other than the block the
//! program is about to reference. Needs no future, so it runs on a streamed trace.

use crate::cache::Block;
use crate::engine::Ctx;
use crate::future::Pos;
use crate::policy::lru_list::LruList;
use crate::policy::obl::Obl;
use crate::policy::{demand_victim, fetch_into, Build, Fetch, Policy, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru-obl",
    summary: "LRU replacement with one-block lookahead (K, K+1 -> prefetch K+2)",
    needs_future: false,
    build,
};

fn build(_: &Build<'_>) -> Result<Box<dyn Policy>, SimError> {
    Ok(Box::new(LruObl::default()))
}

/// LRU with one-block lookahead.
#[derive(Default)]
struct LruObl {
    lru: LruList,
    obl: Obl,
}

impl Policy for LruObl {
    fn on_request(&mut self, block: Block, _pos: Pos, ctx: &mut Ctx<'_>) {
        self.obl.observe(block, ctx);
    }

    fn on_reference(&mut self, block: Block, _pos: Pos, _ctx: &mut Ctx<'_>) {
        self.lru.touch(block);
    }

    fn on_arrival(&mut self, block: Block, _ctx: &mut Ctx<'_>) {
        self.lru.touch(block);
    }

    fn demand_victim(&mut self, _block: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
        demand_victim(ctx, || self.lru.pop_lru())
    }

    fn prefetch(&mut self, ctx: &mut Ctx<'_>) -> Option<Fetch> {
        let block = self.obl.take(ctx)?;
        fetch_into(block, ctx, || self.lru.pop_lru_except(ctx.pinned()))
    }
}
