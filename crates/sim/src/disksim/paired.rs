//! A replacement policy and a prefetcher joined into the one [`Policy`] the loop drives: how
//! DULO, Linux read-ahead, TR840's AP, CP and CPEM, and libprefetch's reorder buffer and
//! planner run (each is a line of the catalog naming its two parts).
//!
//! The pair decides at each reference: the replacement order hears of hits and insertions and
//! chooses victims, the prefetcher names the ranges to queue. The prefetcher is told the
//! replacement's prefetch-cache ceiling (CPEM, TR840 section 4) with every access.
//!
//! Why one pairing type over trait objects rather than a `Paired<R, P>` generic in its parts:
//! the catalog builds the parts by name (boxed), an experiment reads its replacement's counters
//! after the run (TR840's thrashing count), and the loop calls a policy through one pointer
//! whatever its kind, so a generic pair would gain no inlining.
//!
//! Deviations: none.

use std::time::Duration;

use super::prefetch::{Access, FetchRange, Prefetcher};
use super::replace::{Replacement, Touch};
use super::workload::{DiskBlock, FileBlock};
use crate::Policy;

/// A replacement policy and a prefetcher, borrowed for one run (their owner reads their
/// counters afterwards).
pub struct Paired<'a> {
    /// Which cached block leaves.
    pub replacement: &'a mut dyn Replacement,
    /// What to fetch besides demand misses.
    pub prefetcher: &'a mut dyn Prefetcher,
}

impl Policy for Paired<'_> {
    fn decides_at_idle(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, how: Touch) {
        self.replacement.on_hit(block, how);
    }

    fn on_insert(&mut self, block: DiskBlock, how: Touch) {
        self.replacement.on_insert(block, how);
    }

    fn evict(&mut self, now: Duration) -> Option<DiskBlock> {
        self.replacement.evict(now)
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        self.replacement.remove(block)
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.replacement.order()
    }

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let access = Access {
            prefetch_ceiling: self.replacement.prefetch_ceiling(),
            ..*access
        };
        self.prefetcher.on_access(&access)
    }

    fn drops(&mut self) -> Vec<FetchRange> {
        self.prefetcher.drops()
    }

    fn on_evict(&mut self, block: FileBlock, unused: bool) {
        self.prefetcher.on_evict(block, unused);
    }

    fn on_stream_end(&mut self, stream: usize) {
        self.prefetcher.on_stream_end(stream);
    }

    fn on_served(&mut self, request: &disk::Request, seek_bytes: Option<u64>) {
        self.prefetcher.on_served(request, seek_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disksim::replace::lru::Lru;

    /// CPEM's stand-in: a replacement order with a prefetch-cache ceiling.
    struct Ceiling(Lru);

    impl Replacement for Ceiling {
        fn on_hit(&mut self, block: DiskBlock, how: Touch) {
            self.0.on_hit(block, how);
        }
        fn on_insert(&mut self, block: DiskBlock, how: Touch) {
            self.0.on_insert(block, how);
        }
        fn evict(&mut self, now: Duration) -> Option<DiskBlock> {
            self.0.evict(now)
        }
        fn order(&self) -> Vec<DiskBlock> {
            self.0.order()
        }
        fn prefetch_ceiling(&self) -> Option<usize> {
            Some(7)
        }
    }

    /// Remembers the ceiling of each access it is shown.
    #[derive(Default)]
    struct Ceilings(Vec<Option<usize>>);

    impl Prefetcher for Ceilings {
        fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
            self.0.push(access.prefetch_ceiling);
            Vec::new()
        }
    }

    #[test]
    fn the_prefetcher_is_told_its_replacements_ceiling_and_the_order_is_the_replacements() {
        let mut replacement = Ceiling(Lru::default());
        let mut prefetcher = Ceilings::default();
        let mut paired = Paired {
            replacement: &mut replacement,
            prefetcher: &mut prefetcher,
        };
        let touch = Touch {
            stream: 0,
            now: Duration::ZERO,
            prefetched: false,
        };
        paired.on_insert(4, touch);
        paired.on_insert(9, touch);
        let access = Access {
            stream: 0,
            block: FileBlock { file: 0, block: 4 },
            found: true,
            now: Duration::ZERO,
            active_streams: 1,
            prefetch_ceiling: None,
        };
        paired.on_hit(4, touch);
        assert!(paired.on_access(&access).is_empty());
        assert!(!paired.decides_at_idle());
        assert_eq!(paired.order(), vec![4, 9]);
        assert_eq!(paired.evict(Duration::ZERO), Some(9));
        assert_eq!(prefetcher.0, vec![Some(7)]);
    }
}
