//! OPT-OBL (Cao et al. section 4.1): optimal (furthest next reference) replacement plus
//! sequential one-block lookahead. The lookahead ignores the future: it may fetch a block that
//! is never referenced, or discard a block needed before the prefetched one (it breaks rule 3).
//!
//! Deviations: the prefetch victim is never the block the program is about to reference.

use crate::cache::Block;
use crate::engine::Ctx;
use crate::future::Pos;
use crate::policy::furthest::Furthest;
use crate::policy::obl::Obl;
use crate::policy::{demand_victim, fetch_into, Build, Fetch, Policy, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "opt-obl",
    summary: "MIN replacement with one-block lookahead (K, K+1 -> prefetch K+2)",
    needs_future: true,
    build,
};

fn build(b: &Build<'_>) -> Result<Box<dyn Policy>, SimError> {
    Ok(Box::new(OptObl {
        furthest: Furthest::new(b.capacity),
        obl: Obl::default(),
    }))
}

/// MIN with one-block lookahead.
struct OptObl {
    furthest: Furthest,
    obl: Obl,
}

impl Policy for OptObl {
    fn on_request(&mut self, block: Block, _pos: Pos, ctx: &mut Ctx<'_>) {
        self.obl.observe(block, ctx);
    }

    fn on_reference(&mut self, block: Block, _pos: Pos, ctx: &mut Ctx<'_>) {
        self.furthest.update(block, ctx);
    }

    fn on_arrival(&mut self, block: Block, ctx: &mut Ctx<'_>) {
        self.furthest.update(block, ctx);
    }

    fn demand_victim(&mut self, _block: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
        demand_victim(ctx, || self.furthest.pop(ctx).map(|(_, victim)| victim))
    }

    fn prefetch(&mut self, ctx: &mut Ctx<'_>) -> Option<Fetch> {
        let block = self.obl.take(ctx)?;
        fetch_into(block, ctx, || self.furthest.pop(ctx).map(|(_, victim)| victim))
    }
}
