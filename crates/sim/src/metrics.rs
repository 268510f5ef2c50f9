//! What a run reports (Cao et al. section 4.4 and Figure 3): elapsed time, stall time, fetches
//! split into demand fetches and prefetches, hits and misses.

use serde::Serialize;

use crate::time::Time;

/// Counters of one simulation run. Times are in ticks of the run's time model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// References served.
    pub references: u64,
    /// Time at which the last reference finished: reference time plus stall time.
    pub elapsed: Time,
    /// Time the program spent waiting for blocks.
    pub stall: Time,
    /// References whose block was available when the program reached them.
    pub hits: u64,
    /// References that had to wait (block absent, or still being prefetched).
    pub misses: u64,
    /// Completed fetches issued because the program was waiting for the block.
    pub demand_fetches: u64,
    /// Completed fetches issued ahead of the reference.
    pub prefetches: u64,
    /// Prefetched blocks that left the cache, or were still in it at the end, unreferenced.
    pub unused_prefetches: u64,
    /// Prefetches still in flight when the last reference finished (not counted as fetches).
    pub cancelled_prefetches: u64,
}

impl Metrics {
    /// All completed fetches: the disk load.
    pub fn fetches(&self) -> u64 {
        self.demand_fetches + self.prefetches
    }

    /// Misses over references (0 for an empty run).
    pub fn miss_ratio(&self) -> f64 {
        match self.references {
            0 => 0.0,
            n => self.misses as f64 / n as f64,
        }
    }

    /// Elapsed time divided by the minimum total fetch time `min_fetches x fetch_time`
    /// (the paper's Figure 3 normalisation); `None` when that minimum is zero.
    pub fn normalized_elapsed(&self, min_fetches: u64, fetch_time: Time) -> Option<f64> {
        let minimum = min_fetches * fetch_time;
        (minimum > 0).then(|| self.elapsed as f64 / minimum as f64)
    }
}
