//! Aggressive (Cao et al. section 2.5): always prefetch the next missing block at the earliest
//! opportunity, discarding the block whose next reference is furthest in the future, but only
//! once that block is next referenced after the missing one. Within min(1 + F/k, 2) of the
//! optimal elapsed time (Corollary 2) and never more fetches than LRU-demand.
//!
//! Rules as applied:
//! - rule 1: `scan` finds the first reference at or after the cursor whose block is absent;
//! - rule 2: the victim is the top of the `furthest` heap;
//! - rule 3: the fetch starts only if that victim is next referenced after the missing block
//!   (or a slot is free);
//! - rule 4: the engine asks at every completion and every cursor move.
//!
//! `scan` never moves back: a fetch for position j only discards a block next referenced after
//! j, so no hole appears before it. Amortised O(1) for the scan, O(log k) for the heap.

use crate::cache::Block;
use crate::future::Pos;
use crate::policy::compose::{fetch_into, Composed, Prefetch};
use crate::policy::furthest::Furthest;
use crate::policy::Ctx;
use crate::policy::{AtIdle, Build, Fetch, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "aggressive",
    summary: "next missing block at the first opportunity, MIN victim, only if harmless",
    needs_future: true,
    build,
};

fn build(b: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    Ok(Composed::boxed(
        Furthest::new(b.capacity),
        Aggressive { scan: 0 },
    ))
}

/// The aggressive prefetch rule over MIN replacement.
struct Aggressive {
    scan: Pos,
}

impl Aggressive {
    /// Position and block of the next reference whose block is absent (rule 1).
    fn next_missing(&mut self, ctx: &Ctx<'_>) -> Option<(Pos, Block)> {
        let future = ctx.oracle().future();
        self.scan = self.scan.max(ctx.cursor());
        while (self.scan as usize) < future.len() {
            let block = future.block_at(self.scan);
            if ctx.cache().is_absent(block) {
                return Some((self.scan, block));
            }
            self.scan += 1;
        }
        None
    }
}

impl Prefetch<Furthest> for Aggressive {
    fn prefetch(&mut self, furthest: &mut Furthest, ctx: &Ctx<'_>) -> Option<Fetch> {
        // Rule 1: the next block missing from the cache.
        let (pos, block) = self.next_missing(ctx)?;
        fetch_into(block, ctx, || {
            // Rule 2: the candidate victim is the block referenced furthest in the future.
            let (next_ref, _) = furthest.peek(ctx)?;
            // Rule 3: only if it is referenced after the block to fetch; otherwise wait for
            // the next opportunity (rule 4, offered by the engine).
            if next_ref <= pos {
                return None;
            }
            furthest.pop(ctx).map(|(_, victim)| victim)
        })
    }
}
