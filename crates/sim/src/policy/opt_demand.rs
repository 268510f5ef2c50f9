//! OPT-demand, Belady's MIN (Cao et al. section 4.1): no prefetching; on a miss, discard the
//! block whose next reference is furthest in the future (rule 2). Its fetch count is the
//! minimum any policy can achieve, the baseline of the paper's normalised elapsed time.
//!
//! Deviations: none. O(log k) per reference with the lazy heap of `furthest`.

use crate::cache::Block;
use crate::engine::Ctx;
use crate::future::Pos;
use crate::policy::furthest::Furthest;
use crate::policy::{demand_victim, Build, Policy, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "opt-demand",
    summary: "demand paging, Belady's MIN replacement (furthest next reference)",
    needs_future: true,
    build,
};

fn build(b: &Build<'_>) -> Result<Box<dyn Policy>, SimError> {
    Ok(Box::new(OptDemand {
        furthest: Furthest::new(b.capacity),
    }))
}

/// MIN demand paging.
struct OptDemand {
    furthest: Furthest,
}

impl Policy for OptDemand {
    fn on_reference(&mut self, block: Block, _pos: Pos, ctx: &mut Ctx<'_>) {
        self.furthest.update(block, ctx);
    }

    fn on_arrival(&mut self, block: Block, ctx: &mut Ctx<'_>) {
        self.furthest.update(block, ctx);
    }

    fn demand_victim(&mut self, _block: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
        demand_victim(ctx, || self.furthest.pop(ctx).map(|(_, victim)| victim))
    }
}
