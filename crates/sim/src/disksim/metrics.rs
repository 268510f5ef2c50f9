//! What a disk-timed run measured. All times are simulated.
//!
//! * elapsed: from 0 until the last stream's last reference is served;
//! * disk busy: sum of service times (a disk serving several requests at once counts each);
//! * requests and their sizes in blocks (the request-size CDF; DULO's "sequence size" CDF is the
//!   same histogram weighted by blocks, [`DiskMetrics::size_cdf_by_blocks`]);
//! * found ratio: references that needed no demand fetch (cached, or already in flight) over
//!   all references, the "hit ratio" DULO's tables report (a page found in the page cache);
//!   `inflight_hits` counts the second kind, where the stream still waits. The simulator's one
//!   [`crate::Metrics`] ([`crate::catalog::unified`]) counts those as misses, as Cao et al. do:
//!   only a block that has arrived is a hit;
//! * seek distance: for each request after the first, the distance in bytes from the end of the
//!   previous request served to the start of this one (libprefetch's Figure 1 definition: 0
//!   for back-to-back sequential reads).

use std::collections::BTreeMap;
use std::time::Duration;

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskMetrics {
    /// Time until every stream finished.
    pub elapsed: Duration,
    /// Total service time of all requests.
    pub disk_busy: Duration,
    /// Time streams spent waiting for the disk, summed over streams.
    pub stall: Duration,
    /// References issued.
    pub references: u64,
    /// References to blocks cached and arrived.
    pub hits: u64,
    /// References to blocks in flight (no new fetch, but the stream waits).
    pub inflight_hits: u64,
    /// References that needed a demand fetch.
    pub misses: u64,
    /// Disk requests served.
    pub requests: u64,
    /// Blocks read from the disk.
    pub blocks_fetched: u64,
    /// Prefetched blocks evicted before any reference.
    pub prefetched_unused: u64,
    /// Request size in blocks -> number of requests of that size.
    pub request_sizes: BTreeMap<u64, u64>,
    /// Sum of seek distances in bytes.
    pub seek_bytes: u128,
    /// Number of seek distances summed (requests after the first).
    pub seeks: u64,
    /// Block size in bytes.
    pub block_size: u64,
}

impl DiskMetrics {
    /// Fraction of references that needed no demand fetch (cached or in flight): DULO's hit
    /// ratio. Not the hit ratio of [`crate::Metrics`], where a block in flight is a miss.
    pub fn found_ratio(&self) -> f64 {
        ratio(self.hits + self.inflight_hits, self.references)
    }

    /// Average seek distance in bytes (0 with fewer than two requests).
    pub fn avg_seek_bytes(&self) -> f64 {
        if self.seeks == 0 {
            0.0
        } else {
            self.seek_bytes as f64 / self.seeks as f64
        }
    }

    /// Fraction of the elapsed time the disk was busy.
    pub fn utilisation(&self) -> f64 {
        if self.elapsed.is_zero() {
            0.0
        } else {
            self.disk_busy.as_secs_f64() / self.elapsed.as_secs_f64()
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

    /// Application throughput: referenced bytes per second of elapsed time.
    pub fn app_bytes_per_sec(&self) -> f64 {
        if self.elapsed.is_zero() {
            0.0
        } else {
            (self.references * self.block_size) as f64 / self.elapsed.as_secs_f64()
        }
    }

    pub(crate) fn note_request(&mut self, blocks: u64, seek: Option<u64>, service: Duration) {
        self.requests += 1;
        self.blocks_fetched += blocks;
        *self.request_sizes.entry(blocks).or_default() += 1;
        self.disk_busy += service;
        if let Some(distance) = seek {
            self.seek_bytes += u128::from(distance);
            self.seeks += 1;
        }
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_is_weighted_by_blocks() {
        let mut m = DiskMetrics::default();
        m.note_request(1, None, Duration::ZERO);
        m.note_request(1, Some(10), Duration::ZERO);
        m.note_request(6, Some(20), Duration::ZERO);
        assert_eq!(m.size_cdf_by_blocks(), vec![(1, 0.25), (6, 1.0)]);
        assert_eq!(m.blocks_in_requests_below(6), 0.25);
        assert_eq!(m.avg_seek_bytes(), 15.0);
    }
}
