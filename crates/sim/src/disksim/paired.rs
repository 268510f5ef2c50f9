//! The one [`Policy`] the loop drives per run, of one of two kinds: a policy of Cao et al.'s
//! deciding every fetch when the device is idle ([`AtIdle`]), or a replacement policy and a
//! prefetcher joined by [`Paired`] (DULO, Linux read-ahead, TR840's AP, CP and CPEM,
//! libprefetch's reorder buffer and planner; each a line of the catalog naming its two parts).
//!
//! A pair decides at each reference: the replacement order hears of hits and insertions and
//! chooses victims, the prefetcher names the ranges to queue. The prefetcher is told the
//! replacement's prefetch-cache ceiling (CPEM, TR840 section 4) with every access, and its ranges
//! are cut to that ceiling, so any prefetcher paired with a replacement that keeps one respects it.
//!
//! Why an enum over the two kinds rather than one trait with both kinds' hooks: each kind's
//! hooks are required of it and of nothing else, and the loop's two ways of deciding are
//! matched in one place, where the compiler checks every hook is routed.
//!
//! Why one pairing type over trait objects rather than a `Paired<R, P>` generic in its parts:
//! the catalog builds the parts by name (boxed), an experiment reads its replacement's counters
//! after the run (TR840's thrashing count), and the loop calls a policy through one pointer
//! whatever its kind, so a generic pair would gain no inlining.

use std::time::Duration;

use super::prefetch::{Access, FetchRange, Prefetcher};
use super::replace::{Replacement, Touch};
use super::workload::{DiskBlock, FileBlock};
use crate::cache::Block;
use crate::policy::AtIdle;

/// A replacement policy and a prefetcher, borrowed for one run (their owner reads their
/// counters afterwards).
pub struct Paired<'a> {
    /// Which cached block leaves.
    pub replacement: &'a mut dyn Replacement,
    /// What to fetch besides demand misses.
    pub prefetcher: &'a mut dyn Prefetcher,
}

/// The policy of one run, borrowed from its owner.
pub enum Policy<'a> {
    /// Cao et al.'s model: every fetch decided when the device is idle.
    AtIdle(&'a mut dyn AtIdle),
    /// A replacement order and a prefetcher, deciding at each reference.
    Pair(Paired<'a>),
}

impl Policy<'_> {
    /// Whether it decides every fetch when the device is idle.
    pub fn at_idle(&self) -> bool {
        matches!(self, Policy::AtIdle(_))
    }

    /// A held block was referenced: a pair's replacement hears of it (a policy deciding at
    /// idle hears of references through [`AtIdle::on_reference`]).
    pub fn on_hit(&mut self, block: DiskBlock, how: Touch) {
        if let Policy::Pair(pair) = self {
            pair.replacement.on_hit(block, how);
        }
    }

    /// A block not held is about to enter: a pair's replacement looks it up
    /// ([`Replacement::on_miss`]; a policy deciding at idle chose its victim with its fetch).
    pub fn on_miss(&mut self, block: DiskBlock, how: Touch) {
        if let Policy::Pair(pair) = self {
            pair.replacement.on_miss(block, how);
        }
    }

    /// A block entered the cache: a pair's replacement holds it (a policy deciding at idle
    /// hears of it through [`AtIdle::on_arrival`]).
    pub fn on_insert(&mut self, block: DiskBlock, how: Touch) {
        if let Policy::Pair(pair) = self {
            pair.replacement.on_insert(block, how);
        }
    }

    /// A pair's victim ([`Replacement::evict`]); a policy deciding at idle chose its victim with
    /// its fetch, so it has none to give here.
    pub fn evict(&mut self, now: Duration, incoming: DiskBlock) -> Option<DiskBlock> {
        match self {
            Policy::Pair(pair) => pair.replacement.evict(now, incoming),
            Policy::AtIdle(_) => None,
        }
    }

    /// [`Replacement::owes_eviction`] for a pair; a policy deciding at idle owes none.
    pub fn owes_eviction(&self) -> bool {
        match self {
            Policy::Pair(pair) => pair.replacement.owes_eviction(),
            Policy::AtIdle(_) => false,
        }
    }

    /// [`Replacement::remove`] for a pair; a policy deciding at idle drops nothing.
    pub fn remove(&mut self, block: DiskBlock) -> bool {
        match self {
            Policy::Pair(pair) => pair.replacement.remove(block),
            Policy::AtIdle(_) => false,
        }
    }

    /// A pair's replacement order ([`Replacement::order`]); empty for a policy deciding at
    /// idle, which does not expose one.
    pub fn order(&self) -> Vec<DiskBlock> {
        match self {
            Policy::Pair(pair) => pair.replacement.order(),
            Policy::AtIdle(_) => Vec::new(),
        }
    }

    /// Whether it never prefetches: [`AtIdle::demand_only`], or a pair whose prefetcher is
    /// [`Prefetcher::demand_only`] (the loop then calls none of the prefetcher's hooks).
    pub fn demand_only(&self) -> bool {
        match self {
            Policy::AtIdle(policy) => policy.demand_only(),
            Policy::Pair(pair) => pair.prefetcher.demand_only(),
        }
    }

    /// The speed hint [`AtIdle::likely_victim`] (a pair gives none).
    pub fn likely_victim(&self) -> Option<Block> {
        match self {
            Policy::AtIdle(policy) => policy.likely_victim(),
            Policy::Pair(_) => None,
        }
    }

    /// A stream issued its last reference: a pair's prefetcher hears of it.
    pub fn on_stream_end(&mut self, stream: usize) {
        if let Policy::Pair(pair) = self {
            pair.prefetcher.on_stream_end(stream);
        }
    }

    /// The disk started serving `request`: a pair's prefetcher hears of it.
    pub fn on_served(&mut self, request: &disk::Request, seek_bytes: Option<u64>) {
        if let Policy::Pair(pair) = self {
            pair.prefetcher.on_served(request, seek_bytes);
        }
    }
}

impl Paired<'_> {
    /// One reference: the prefetcher's ranges, told the replacement's prefetch ceiling and cut
    /// to it, so that whatever prefetcher is paired with a replacement that keeps a ceiling, one
    /// reference's prefetches displace at most that many of the replacement's blocks.
    pub fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let ceiling = self.replacement.prefetch_ceiling();
        let access = Access {
            prefetch_ceiling: ceiling,
            ..*access
        };
        let ranges = self.prefetcher.on_access(&access);
        match ceiling {
            Some(ceiling) => cut(ranges, access.block, ceiling as u64),
            None => ranges,
        }
    }

    /// [`Prefetcher::drops`].
    pub fn drops(&mut self) -> Vec<FetchRange> {
        self.prefetcher.drops()
    }

    /// A block left the cache: the prefetcher hears of it.
    pub fn on_evict(&mut self, block: FileBlock, unused: bool) {
        self.prefetcher.on_evict(block, unused);
    }
}

/// `ranges` cut to `ceiling` blocks besides `demand` (which rides free where a range holds it):
/// each range keeps its longest affordable front, and the ranges after a cut one are dropped.
fn cut(ranges: Vec<FetchRange>, demand: FileBlock, ceiling: u64) -> Vec<FetchRange> {
    let mut left = ceiling;
    let mut kept = Vec::with_capacity(ranges.len());
    for range in ranges {
        let mut len = 0;
        while len < range.len {
            let block = FileBlock {
                file: range.file,
                block: range.start + len,
            };
            if block != demand {
                match left {
                    0 => break,
                    _ => left -= 1,
                }
            }
            len += 1;
        }
        if len > 0 {
            kept.push(FetchRange { len, ..range });
        }
        if len < range.len {
            break;
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disksim::replace::lru::Lru;

    /// CPEM's stand-in: a replacement order with a prefetch-cache ceiling.
    struct Ceiling(Lru);

    impl Replacement for Ceiling {
        fn remove(&mut self, _block: DiskBlock) -> bool {
            false
        }

        fn on_hit(&mut self, block: DiskBlock, how: Touch) {
            self.0.on_hit(block, how);
        }
        fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}
        fn on_insert(&mut self, block: DiskBlock, how: Touch) {
            self.0.on_insert(block, how);
        }
        fn evict(&mut self, now: Duration, incoming: DiskBlock) -> Option<DiskBlock> {
            self.0.evict(now, incoming)
        }
        fn order(&self) -> Vec<DiskBlock> {
            self.0.order()
        }
        fn prefetch_ceiling(&self) -> Option<usize> {
            Some(7)
        }

        fn owes_eviction(&self) -> bool {
            false
        }
    }

    /// Remembers the ceiling of each access it is shown.
    #[derive(Default)]
    struct Ceilings(Vec<Option<usize>>);

    impl Prefetcher for Ceilings {
        fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

        fn on_stream_end(&mut self, _stream: usize) {}

        fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

        fn drops(&mut self) -> Vec<FetchRange> {
            Vec::new()
        }

        fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
            self.0.push(access.prefetch_ceiling);
            Vec::new()
        }

        fn demand_only(&self) -> bool {
            false
        }
    }

    #[test]
    fn ranges_are_cut_to_the_ceiling_with_the_demand_block_free() {
        let range = |start, len| FetchRange {
            file: 0,
            start,
            len,
        };
        let demand = FileBlock { file: 0, block: 10 };
        let ranges = vec![range(10, 4), range(20, 5), range(30, 2)];
        assert_eq!(cut(ranges.clone(), demand, 5), [range(10, 4), range(20, 2)]);
        assert_eq!(cut(ranges.clone(), demand, 0), [range(10, 1)]);
        assert_eq!(cut(ranges.clone(), demand, 100), ranges);
    }

    #[test]
    fn the_prefetcher_is_told_its_replacements_ceiling_and_the_order_is_the_replacements() {
        let mut replacement = Ceiling(Lru::default());
        let mut prefetcher = Ceilings::default();
        let mut paired = Policy::Pair(Paired {
            replacement: &mut replacement,
            prefetcher: &mut prefetcher,
        });
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
        let Policy::Pair(pair) = &mut paired else {
            unreachable!("built as a pair")
        };
        assert!(pair.on_access(&access).is_empty());
        assert!(!paired.at_idle());
        assert_eq!(paired.order(), vec![4, 9]);
        assert_eq!(paired.evict(Duration::ZERO, 11), Some(9));
        assert_eq!(prefetcher.0, vec![Some(7)]);
    }
}
