//! LRU-throttled (Cao et al. section 4.1), modelling informed prefetching with a throttle
//! (Patterson et al., the paper's reference 19): walk down the known future, take a buffer (the least recently used
//! block) and prefetch every missing block, stopping while one third of the cache holds blocks
//! prefetched and not yet referenced. Blocks the walk finds already cached ("soon to be used")
//! move to the most-recently-used end. It ignores rule 3 (do no harm), so it can discard a
//! block needed before the one it fetches, and can fetch more than LRU-demand.
//!
//! The walk is bounded only by the throttle, as in the paper: when misses are sparse it runs
//! far ahead, refreshing every cached block it passes; when those outnumber the free room, the
//! least recently used of them (the soonest needed) is discarded, which is the thrashing the
//! paper observed on the Sprite traces. The walk never moves back (a block it passed and that
//! was discarded since is fetched on demand), so it costs amortised O(1) per reference.
//!
//! Deviations: the throttle is floor(k / 3) blocks (a cache under 3 blocks never prefetches).
//! The victim is never the block the program is about to reference.

use crate::cache::{Block, Residency};
use crate::future::Pos;
use crate::policy::compose::{fetch_into, Composed, Prefetch};
use crate::policy::lru_list::LruList;
use crate::policy::Ctx;
use crate::policy::{AtIdle, Build, Fetch, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru-throttled",
    summary: "prefetch every missing block ahead, LRU victims, at most k/3 unreferenced prefetches",
    needs_future: true,
    build,
};

fn build(b: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    let walk = ThrottledWalk {
        walk: 0,
        limit: b.capacity / 3,
    };
    Ok(Composed::boxed(LruList::default(), walk))
}

/// Throttled informed prefetching over LRU replacement.
struct ThrottledWalk {
    walk: Pos,
    limit: usize,
}

impl ThrottledWalk {
    /// Walks ahead to the next absent block, refreshing cached blocks on the way.
    fn next_absent(&mut self, lru: &mut LruList, ctx: &Ctx<'_>) -> Option<Block> {
        let future = ctx.oracle().future();
        self.walk = self.walk.max(ctx.cursor());
        while (self.walk as usize) < future.len() {
            let block = future.block_at(self.walk);
            match ctx.cache().residency(block) {
                Residency::Absent => return Some(block),
                Residency::Resident => lru.touch(block),
                Residency::InFlight => {}
            }
            self.walk += 1;
        }
        None
    }
}

impl Prefetch<LruList> for ThrottledWalk {
    fn prefetch(&mut self, lru: &mut LruList, ctx: &Ctx<'_>) -> Option<Fetch> {
        if ctx.cache().unreferenced_prefetches() >= self.limit {
            return None;
        }
        let block = self.next_absent(lru, ctx)?;
        let fetch = fetch_into(block, ctx, || lru.pop_lru_except(ctx.pinned()))?;
        self.walk += 1;
        Some(fetch)
    }
}
