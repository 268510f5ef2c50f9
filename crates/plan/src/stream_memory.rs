//! The memory cap of competitive prefetching: each active stream may read ahead at most its
//! share of the process's prefetch memory, `P_mem / N_stream` pages.
//!
//! Follows Li, Papathanasiou and Shen, "Competitive Prefetching for Data-Intensive Online
//! Servers" (TR840), section 4.2 ("Constrained prefetching at high concurrency levels"):
//! `S_p^ = P_mem / N_stream`, where `P_mem` is the ceiling of the prefetch cache, which starts
//! at 25% of the memory (section 4.1), and `N_stream` the active prefetching streams,
//! approximated by the open files.
//!
//! # The problem
//! Competitive windows are sized by the disk alone (`S_p = C_switch x R_tr`). When the streams'
//! windows together outgrow memory, pages advised for one stream are evicted before its reader
//! reaches them and are read again, often one page a request. A cap of the memory over the
//! streams keeps all windows in memory at once.
//!
//! # Who feeds it
//! The callers measure `memory` and count `streams`; this file is the only place the cap is
//! computed. The live library (`prefetch run --competitive`) passes the memory its probe reads
//! (`MemAvailable`, or the memory cgroup's room if smaller) and its open descriptors being
//! followed; the simulator's `cp` passes the cache size and the streams it follows, a (stream,
//! file) pair from its first read until its stream has made 64 references elsewhere (a workload
//! has no closes); the simulator's `cpem` passes its prefetch cache's adaptive ceiling as the
//! prefetch memory itself ([`MemoryShare::of_prefetch_memory`]).
//!
//! # Two windows per stream
//! `plan::stream` keeps between one and two windows of advice ahead of its reader (Linux 2.6's
//! current and ahead windows, which TR840 builds on), so its windows are capped at half the
//! share, `P_mem / 2 N_stream` ([`MemoryShare::window`]): then all of a stream's advice fits in
//! its share. The simulator's `cpem` reproduces the paper's kernel and caps its windows at the
//! whole share as printed ([`MemoryShare::per_stream_at_least`]). Measured in simulation on the
//! single-program traces (`docs/competitive.md`), the whole share as the window's cap left
//! `cp` up to 1.70x Linux's time (ps at 568 blocks), half of it 1.37x.
//!
//! Deviations: TR840's kernel moves `P_mem` by gradient descent over the prefetch cache's misses
//! (the simulator's `cpem` does); user space has no prefetch cache, so outside `cpem` `P_mem`
//! stays at its starting point, 25% of the memory, re-read as the memory changes. The share is
//! never below slow start's first window (16 pages), as the thrash cap of `plan::stream`.

use crate::competitive::SLOW_START_PAGES;

/// `P_mem` as a share of the memory, percent: the prefetch cache ceiling's starting point.
pub const PREFETCH_MEMORY_PERCENT: u64 = 25;

/// The prefetch memory of a process and the streams that share it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryShare {
    /// `P_mem`, pages.
    prefetch_pages: u64,
    /// `N_stream` (at least 1).
    streams: u64,
}

impl MemoryShare {
    /// `streams` active streams sharing a memory of `memory_pages` pages, of which
    /// [`PREFETCH_MEMORY_PERCENT`] is for prefetching.
    pub fn of_memory(memory_pages: u64, streams: u64) -> MemoryShare {
        // In two parts, so that no memory overflows.
        let percent = PREFETCH_MEMORY_PERCENT;
        let prefetch = memory_pages / 100 * percent + memory_pages % 100 * percent / 100;
        MemoryShare::of_prefetch_memory(prefetch, streams)
    }

    /// `streams` active streams sharing a prefetch memory (`P_mem`) of `prefetch_pages` pages.
    pub fn of_prefetch_memory(prefetch_pages: u64, streams: u64) -> MemoryShare {
        MemoryShare {
            prefetch_pages,
            streams: streams.max(1),
        }
    }

    /// The most pages one stream may read ahead, `P_mem / N_stream`, at least `floor`.
    pub fn per_stream_at_least(&self, floor: u64) -> u64 {
        (self.prefetch_pages / self.streams).max(floor)
    }

    /// The most pages one window of a stream that keeps up to two windows of advice ahead of
    /// its reader may hold: half its share, `P_mem / 2 N_stream`, so that both fit in it; at
    /// least slow start's first window.
    pub fn window(&self) -> u64 {
        (self.per_stream_at_least(0) / 2).max(SLOW_START_PAGES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each stream's share is a quarter of the memory over the streams (no stream count
    /// divides by zero, no memory overflows); a window is half of it, never below 16 pages.
    #[test]
    fn each_stream_gets_its_share_of_a_quarter_of_the_memory() {
        let share = |memory, streams| MemoryShare::of_memory(memory, streams);
        assert_eq!(share(4000, 1).per_stream_at_least(1), 1000);
        assert_eq!(share(4000, 4).per_stream_at_least(1), 250);
        assert_eq!(share(4000, 0).per_stream_at_least(1), 1000);
        assert_eq!(share(4001, 1).per_stream_at_least(1), 1000);
        assert_eq!(share(u64::MAX, 1).per_stream_at_least(1), u64::MAX / 4);
        assert_eq!(share(4000, 4).window(), 125);
        assert_eq!(share(4000, 100).window(), 16);
        let prefetch = MemoryShare::of_prefetch_memory(10, 3);
        assert_eq!(prefetch.per_stream_at_least(1), 3);
        assert_eq!(prefetch.per_stream_at_least(8), 8);
    }
}
