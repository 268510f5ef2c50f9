//! LRU-sensible (Cao et al. section 4.1): fetch the next missing block at the earliest moment
//! allowed by rule 3 (do no harm), discarding the least recently used of the blocks that rule 3
//! allows. The best LRU-based prefetcher; it makes as many fetches as LRU-demand.
//!
//! Rules as applied: rule 1 (next missing block), rule 3 (victim not referenced before it),
//! rule 4 (every opportunity); rule 2 is replaced by LRU on purpose. The least recent of the
//! allowed blocks is LRU-demand's victim at the miss, so this is LRU-demand's schedule issued
//! early (argument and mechanism in `schedule`).

use crate::policy::schedule::EarlySchedule;
use crate::policy::{lru_demand, AtIdle, Build, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru-sensible",
    summary: "next missing block at the first harmless opportunity, LRU among harmless victims",
    needs_future: true,
    build,
};

fn build(b: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    Ok(Box::new(EarlySchedule::record(&lru_demand::INFO, b)?))
}
