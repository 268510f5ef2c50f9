//! What a run reports, on either engine: one [`Metrics`].
//!
//! The counters of Cao et al. section 4.4 and Figure 3 (elapsed time, stall time, fetches split
//! into demand fetches and prefetches, hits and misses), and, for the disk-timed engine, what
//! the device was asked ([`Requests`]: request sizes, seek distances, busy time; DULO's
//! "sequence size" CDF, libprefetch's Figure 1 seek distance).
//!
//! Definitions, the same on both engines:
//!
//! * a *hit* is a reference to a block that has arrived; a reference to a block still in
//!   flight is a *miss* (the program waits for it), as in Cao et al., and is also counted in
//!   `inflight_hits`. DULO's tables report the *found* ratio ([`Metrics::found_ratio`]): a page
//!   found in the page cache, arrived or not;
//! * elapsed: from 0 until the last reference is served (the last stream's, on the disk-timed
//!   engine); stall: time the program (summed over streams) waited for blocks;
//! * seek distance: for each request after the first, the distance in bytes from the end of the
//!   previous request served to the start of this one (libprefetch's Figure 1 definition: 0 for
//!   back-to-back sequential reads).
//!
//! Times are in ticks of the run's time model: units or microseconds for Cao's policies,
//! nanoseconds for the disk-timed replacement and prefetcher policies ([`seconds`] turns those
//! into seconds).
//!
//! Deviations: for a replacement policy and prefetcher `unused_prefetches` counts prefetched
//! blocks that left the cache unreferenced (evicted or dropped), not those still cached at the
//! end; for Cao's policies it counts both, as Cao et al. do, and [`Requests`] stays empty
//! (each fetch is one one-block request).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::time::Time;

/// Counters of one simulation run. Times are in ticks of the run's time model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// References served.
    pub references: u64,
    /// Time at which the last reference finished: reference time plus stall time.
    pub elapsed: Time,
    /// Time the program spent waiting for blocks.
    pub stall: Time,
    /// References whose block was available when the program reached them.
    pub hits: u64,
    /// References that had to wait (block absent, or still in flight).
    pub misses: u64,
    /// Misses whose block was already in flight (no new fetch, but the program waited).
    pub inflight_hits: u64,
    /// Completed fetches issued because the program was waiting for the block.
    pub demand_fetches: u64,
    /// Completed fetches issued ahead of the reference.
    pub prefetches: u64,
    /// Prefetched blocks that left the cache, or were still in it at the end, unreferenced.
    pub unused_prefetches: u64,
    /// Prefetches still in flight when the last reference finished (not counted as fetches).
    pub cancelled_prefetches: u64,
    /// The requests the device served (disk-timed engine).
    #[serde(skip_serializing_if = "Requests::is_empty")]
    pub disk: Requests,
}

/// What the device was asked on the disk-timed engine: requests and their sizes in blocks,
/// seek distances and busy time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Requests {
    /// Disk requests served.
    pub requests: u64,
    /// Blocks read from the disk.
    pub blocks_fetched: u64,
    /// Request size in blocks -> number of requests of that size.
    pub request_sizes: BTreeMap<u64, u64>,
    /// Sum of seek distances in bytes.
    pub seek_bytes: u128,
    /// Number of seek distances summed (requests after the first).
    pub seeks: u64,
    /// Total service time of all requests (a device serving several at once counts each).
    pub busy: Time,
    /// Block size in bytes.
    pub block_size: u64,
}

impl Metrics {
    /// All completed fetches: the disk load.
    pub fn fetches(&self) -> u64 {
        self.demand_fetches + self.prefetches
    }

    /// Misses over references (0 for an empty run).
    pub fn miss_ratio(&self) -> f64 {
        ratio(self.misses, self.references)
    }

    /// References that needed no demand fetch (arrived, or already in flight) over all
    /// references: DULO's hit ratio. Not `1 - miss_ratio`, where a block in flight is a miss.
    pub fn found_ratio(&self) -> f64 {
        ratio(self.hits + self.inflight_hits, self.references)
    }

    /// Elapsed time divided by the minimum total fetch time `min_fetches x fetch_time`
    /// (the paper's Figure 3 normalisation); `None` when that minimum is zero.
    pub fn normalized_elapsed(&self, min_fetches: u64, fetch_time: Time) -> Option<f64> {
        let minimum = min_fetches * fetch_time;
        (minimum > 0).then(|| self.elapsed as f64 / minimum as f64)
    }

    /// Fraction of the elapsed time the disk was busy.
    pub fn utilisation(&self) -> f64 {
        match self.elapsed {
            0 => 0.0,
            elapsed => self.disk.busy as f64 / elapsed as f64,
        }
    }

    /// The same run with its times divided by `ticks` (at least 1): from the disk-timed
    /// engine's nanoseconds to a device's unit.
    pub fn in_ticks_of(mut self, ticks: Time) -> Metrics {
        let ticks = ticks.max(1);
        self.elapsed /= ticks;
        self.stall /= ticks;
        self.disk.busy /= ticks;
        self
    }
}

impl Requests {
    /// Whether no request was counted (Cao's policies).
    pub fn is_empty(&self) -> bool {
        self.requests == 0
    }

    /// Average seek distance in bytes (0 with fewer than two requests).
    pub fn avg_seek_bytes(&self) -> f64 {
        match self.seeks {
            0 => 0.0,
            n => self.seek_bytes as f64 / n as f64,
        }
    }

    /// Mean request size in blocks.
    pub fn avg_request_blocks(&self) -> f64 {
        ratio(self.blocks_fetched, self.requests)
    }

    /// For each request size `s` seen: the fraction of fetched blocks that came in requests of
    /// at most `s` blocks (DULO Figures 3-4, "sequence size" CDF), ascending.
    pub fn size_cdf_by_blocks(&self) -> Vec<(u64, f64)> {
        let total: u64 = self.request_sizes.iter().map(|(s, n)| s * n).sum();
        let mut acc = 0;
        self.request_sizes
            .iter()
            .map(|(&size, &n)| {
                acc += size * n;
                (size, ratio(acc, total))
            })
            .collect()
    }

    /// Fraction of fetched blocks that came in requests of fewer than `size` blocks.
    pub fn blocks_in_requests_below(&self, size: u64) -> f64 {
        let total: u64 = self.request_sizes.iter().map(|(s, n)| s * n).sum();
        let below: u64 = self.request_sizes.range(..size).map(|(s, n)| s * n).sum();
        ratio(below, total)
    }

    /// Counts a request of `blocks` blocks, `seek` bytes from the previous one, served in
    /// `service` ticks.
    pub(crate) fn note(&mut self, blocks: u64, seek: Option<u64>, service: Time) {
        self.requests += 1;
        self.blocks_fetched += blocks;
        *self.request_sizes.entry(blocks).or_default() += 1;
        self.busy += service;
        if let Some(distance) = seek {
            self.seek_bytes += u128::from(distance);
            self.seeks += 1;
        }
    }
}

/// Seconds in `nanos` nanoseconds (the disk-timed engine's ticks).
pub fn seconds(nanos: Time) -> f64 {
    nanos as f64 / 1e9
}

/// Nanoseconds in `duration` (saturating at 584 years).
pub fn nanos(duration: std::time::Duration) -> Time {
    Time::try_from(duration.as_nanos()).unwrap_or(Time::MAX)
}

fn ratio(part: u64, whole: u64) -> f64 {
    match whole {
        0 => 0.0,
        whole => part as f64 / whole as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_is_weighted_by_blocks() {
        let mut r = Requests::default();
        r.note(1, None, 0);
        r.note(1, Some(10), 0);
        r.note(6, Some(20), 0);
        assert_eq!(r.size_cdf_by_blocks(), vec![(1, 0.25), (6, 1.0)]);
        assert_eq!(r.blocks_in_requests_below(6), 0.25);
        assert_eq!(r.avg_seek_bytes(), 15.0);
    }

    #[test]
    fn a_block_in_flight_is_a_miss_but_found() {
        let m = Metrics {
            references: 4,
            hits: 1,
            misses: 3,
            inflight_hits: 1,
            ..Metrics::default()
        };
        assert_eq!(m.miss_ratio(), 0.75);
        assert_eq!(m.found_ratio(), 0.5);
    }
}
