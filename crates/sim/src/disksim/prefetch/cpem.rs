//! CPEM's memory management (TR840 s4): a *prefetch cache* for prefetched but not yet
//! referenced pages, beside the ordinary page cache (CLOCK here, Linux's LRU lists there).
//! Used as the `cpem` replacement policy together with the `competitive` prefetcher, which
//! caps each window at `P_mem / N_stream` when the policy reports its ceiling.
//!
//! # The problem: prefetching-incurred page thrashing
//! With hundreds of concurrent streams, an LRU evicts pages prefetched for a stream that has
//! not run yet before it reads them; they are read again, often one page at a time.
//!
//! # The mechanism
//! ```text
//!   prefetch --> [ prefetch cache: FIFO, tagged with the prefetching stream ] --ref--> CLOCK
//!                  |  above the ceiling: reclaim from the head                          |
//!                  |    stream moved on, or went past the page --> CLOCK (unreferenced) |
//!                  |    otherwise: untag, back to the tail (second chance)             |
//!                  v                                                          evict <--+
//!             eviction history (what each evicted page was) --> misses --> ceiling
//! ```
//! * The ceiling `x` starts at 25% of the cache (option `ceiling`; the TR840 experiments pass
//!   25% of the server's memory) and moves by one adjustment unit per 4-second
//!   epoch: the first move is up; afterwards it keeps its direction unless the epoch's misses
//!   on recently evicted pages (LRU misses plus prefetching misses) rose obviously, in which
//!   case it turns (the paper's approximate gradient descent on `f_tot(x)`).
//! * The adjustment unit is Linux's `pages_low` for the cache's size (5/4 of
//!   `min_free_kbytes = sqrt(16 x memory in KiB)`), "the low free memory threshold used by the
//!   paging daemon".
//! * The eviction history holds up to 20% of the cache's pages.
//!
//! Deviations: a simulated stream has no CPU time, so "the process had significant opportunity
//! to reference the page" is judged by position: the stream's latest reference in that region
//! of the disk (within `region` bytes, default 4 MiB, one file of the microbenchmarks) lies
//! past the page. A stream that has moved on from the region (it keeps its two most recent
//! regions) counts as the paper's exited process. The first epoch's move is up, not random.
//! An "obvious" rise is more than `threshold` percent (default 5) and at least one miss. A miss
//! is a fetch (demand or prefetch) of a page found in the eviction history. When CLOCK is
//! empty, the prefetch cache's head is evicted.

use std::collections::VecDeque;
use std::hash::Hash;
use std::time::Duration;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::disksim::replace::clock::Clock;
use crate::disksim::replace::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

/// Initial ceiling, percent of the cache.
pub const INITIAL_CEILING_PERCENT: u64 = 25;
/// Eviction history size, percent of the cache.
pub const HISTORY_PERCENT: u64 = 20;
/// Epoch between ceiling adjustments.
pub const EPOCH: Duration = Duration::from_secs(4);
/// Regions a stream is remembered in.
const REGIONS_PER_STREAM: usize = 2;

/// Decides, for a tagged page at the prefetch cache's head, whether it gets a second chance.
pub trait SecondChance<K> {
    /// True when the page's prefetching `stream` is still active and has not yet had
    /// significant opportunity to reference `page`.
    fn deserves(&self, page: K, stream: usize) -> bool;
}

/// Prefetched, not yet referenced pages in FIFO order, each tagged with its prefetching
/// stream until it has had its second chance.
#[derive(Clone, Debug)]
pub struct PrefetchCache<K> {
    queue: VecDeque<(K, u64)>,
    pages: FxHashMap<K, (u64, Option<usize>)>,
    next_seq: u64,
}

impl<K> Default for PrefetchCache<K> {
    fn default() -> Self {
        PrefetchCache {
            queue: VecDeque::new(),
            pages: FxHashMap::default(),
            next_seq: 0,
        }
    }
}

impl<K: Copy + Eq + Hash> PrefetchCache<K> {
    /// Pages held.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// True when no page is held.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// True when `page` is held.
    pub fn contains(&self, page: K) -> bool {
        self.pages.contains_key(&page)
    }

    /// The pages from head to tail.
    pub fn order(&self) -> Vec<K> {
        self.queue
            .iter()
            .filter(|(page, seq)| self.is_live(*page, *seq))
            .map(|(page, _)| *page)
            .collect()
    }

    /// Attaches a newly prefetched page, tagged with `stream`, at the tail.
    pub fn insert(&mut self, page: K, stream: usize) {
        self.push_tail(page, Some(stream));
    }

    /// Removes `page` (referenced or evicted); true if it was held.
    pub fn remove(&mut self, page: K) -> bool {
        self.pages.remove(&page).is_some()
    }

    /// Removes and returns the page at the head.
    pub fn pop_head(&mut self) -> Option<K> {
        self.pop_tagged().map(|(page, _)| page)
    }

    /// Second-chance reclamation down to `ceiling` pages; returns the pages taken out, in
    /// order. Each page is given at most one second chance, so this ends.
    pub fn reclaim(&mut self, ceiling: usize, judge: &impl SecondChance<K>) -> Vec<K> {
        let mut out = Vec::new();
        while self.pages.len() > ceiling {
            let Some((page, tag)) = self.pop_tagged() else {
                break;
            };
            match tag {
                Some(stream) if judge.deserves(page, stream) => self.push_tail(page, None),
                _ => out.push(page),
            }
        }
        out
    }

    fn is_live(&self, page: K, seq: u64) -> bool {
        self.pages.get(&page).is_some_and(|&(live, _)| live == seq)
    }

    fn push_tail(&mut self, page: K, tag: Option<usize>) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pages.insert(page, (seq, tag));
        self.queue.push_back((page, seq));
        if self.queue.len() > 2 * self.pages.len() + 64 {
            let pages = &self.pages;
            self.queue
                .retain(|(page, seq)| pages.get(page).is_some_and(|&(live, _)| live == *seq));
        }
    }

    fn pop_tagged(&mut self) -> Option<(K, Option<usize>)> {
        while let Some((page, seq)) = self.queue.pop_front() {
            if self.is_live(page, seq) {
                let (_, tag) = self.pages.remove(&page)?;
                return Some((page, tag));
            }
        }
        None
    }
}

/// What a page was when it left memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evicted {
    /// Referenced at least once (it left from the LRU side).
    Lru,
    /// Prefetched and never referenced.
    Prefetched,
}

/// A bounded record of recently evicted pages and what they were.
#[derive(Clone, Debug)]
pub struct EvictionHistory<K> {
    capacity: usize,
    order: VecDeque<(K, u64)>,
    entries: FxHashMap<K, (u64, Evicted)>,
    next_seq: u64,
}

impl<K: Copy + Eq + Hash> EvictionHistory<K> {
    /// A history of at most `capacity` pages.
    pub fn new(capacity: usize) -> Self {
        EvictionHistory {
            capacity,
            order: VecDeque::new(),
            entries: FxHashMap::default(),
            next_seq: 0,
        }
    }

    /// Pages recorded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records that `page` was evicted as `kind`, forgetting the oldest record when full.
    pub fn record(&mut self, page: K, kind: Evicted) {
        if self.capacity == 0 {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.entries.insert(page, (seq, kind));
        self.order.push_back((page, seq));
        while self.entries.len() > self.capacity || self.order.len() > 2 * self.capacity {
            let Some((old, old_seq)) = self.order.pop_front() else {
                break;
            };
            if self.entries.get(&old).is_some_and(|&(s, _)| s == old_seq) {
                self.entries.remove(&old);
            }
        }
    }

    /// On a fetch: what the page was when evicted, if recorded (the record is consumed).
    pub fn take(&mut self, page: K) -> Option<Evicted> {
        self.entries.remove(&page).map(|(_, kind)| kind)
    }
}

/// The adaptive prefetch cache ceiling (approximate gradient descent on the miss count).
#[derive(Clone, Debug, PartialEq)]
pub struct Ceiling {
    pages: u64,
    unit: u64,
    max: u64,
    threshold: f64,
    step_up: bool,
    last_misses: Option<u64>,
}

impl Ceiling {
    /// A ceiling starting at `initial` pages, moved by `unit` pages per epoch within
    /// `0..=max`, first upwards. A rise of more than `threshold` (a fraction of the previous
    /// epoch's misses, and at least one miss) turns it.
    pub fn new(initial: u64, unit: u64, max: u64, threshold: f64) -> Self {
        Ceiling {
            pages: initial.min(max),
            unit,
            max,
            threshold,
            step_up: true,
            last_misses: None,
        }
    }

    /// The current ceiling, pages.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Ends an epoch that saw `misses`; returns the new ceiling.
    pub fn end_epoch(&mut self, misses: u64) -> u64 {
        if let Some(last) = self.last_misses {
            let allowed = (last as f64 * self.threshold).max(1.0);
            if misses as f64 - last as f64 > allowed {
                self.step_up = !self.step_up;
            }
        }
        self.last_misses = Some(misses);
        self.pages = if self.step_up {
            self.pages.saturating_add(self.unit).min(self.max)
        } else {
            self.pages.saturating_sub(self.unit)
        };
        self.pages
    }
}

/// Linux's `pages_low` for `bytes` of memory, in pages of `page` bytes: 5/4 of
/// `min_free_kbytes = sqrt(16 x KiB)`.
pub fn pages_low(bytes: u64, page: u64) -> u64 {
    let min_free_kib = (16.0 * (bytes / 1024) as f64).sqrt();
    ((min_free_kib * 1.25 * 1024.0) / page.max(1) as f64).ceil() as u64
}

/// The latest references of one stream, one per disk region it reads (most recent last).
#[derive(Clone, Debug, Default)]
struct Regions(Vec<DiskBlock>);

/// Where every stream last referenced, per region: the second-chance judge.
#[derive(Clone, Debug)]
struct Positions {
    region: u64,
    streams: FxHashMap<usize, Regions>,
}

impl Positions {
    fn note(&mut self, stream: usize, block: DiskBlock) {
        let region = self.region;
        let regions = &mut self.streams.entry(stream).or_default().0;
        if let Some(i) = regions.iter().position(|&b| b.abs_diff(block) <= region) {
            regions.remove(i);
        } else if regions.len() == REGIONS_PER_STREAM {
            regions.remove(0);
        }
        regions.push(block);
    }
}

impl SecondChance<DiskBlock> for Positions {
    fn deserves(&self, page: DiskBlock, stream: usize) -> bool {
        let Some(regions) = self.streams.get(&stream) else {
            return true;
        };
        regions
            .0
            .iter()
            .find(|&&b| b.abs_diff(page) <= self.region)
            .is_some_and(|&latest| latest < page)
    }
}

/// Counters of a CPEM cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpemStats {
    /// Fetches of pages evicted after being referenced.
    pub lru_misses: u64,
    /// Fetches of pages evicted before being referenced.
    pub prefetch_misses: u64,
    /// Pages moved from the prefetch cache to CLOCK unreferenced.
    pub demoted: u64,
    /// Epochs ended.
    pub epochs: u64,
}

/// The CPEM page cache: prefetch cache plus CLOCK.
#[derive(Debug)]
pub struct Cpem {
    lru: Clock,
    demoted_unused: FxHashSet<DiskBlock>,
    prefetch: PrefetchCache<DiskBlock>,
    history: EvictionHistory<DiskBlock>,
    ceiling: Ceiling,
    positions: Positions,
    epoch_end: Duration,
    epoch_misses: u64,
    stats: CpemStats,
}

/// CPEM's parameters, in pages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpemConfig {
    /// Cache capacity.
    pub capacity: u64,
    /// Starting ceiling.
    pub initial_ceiling: u64,
    /// Ceiling adjustment unit.
    pub unit: u64,
    /// Fractional miss rise that turns the ceiling.
    pub threshold: f64,
    /// Width of a stream's region, pages.
    pub region: u64,
}

impl CpemConfig {
    /// The paper's defaults for a cache of `capacity` pages of `page` bytes.
    pub fn paper(capacity: u64, page: u64) -> CpemConfig {
        CpemConfig {
            capacity,
            initial_ceiling: capacity * INITIAL_CEILING_PERCENT / 100,
            unit: pages_low(capacity * page, page),
            threshold: 0.05,
            region: (4 << 20) / page.max(1),
        }
    }
}

impl Cpem {
    /// An empty CPEM cache.
    pub fn new(config: CpemConfig) -> Cpem {
        Cpem {
            lru: Clock::default(),
            demoted_unused: FxHashSet::default(),
            prefetch: PrefetchCache::default(),
            history: EvictionHistory::new((config.capacity * HISTORY_PERCENT / 100) as usize),
            ceiling: Ceiling::new(
                config.initial_ceiling,
                config.unit,
                config.capacity,
                config.threshold,
            ),
            positions: Positions {
                region: config.region,
                streams: FxHashMap::default(),
            },
            epoch_end: EPOCH,
            epoch_misses: 0,
            stats: CpemStats::default(),
        }
    }

    /// Pages in the prefetch cache.
    pub fn prefetch_len(&self) -> usize {
        self.prefetch.len()
    }

    /// The counters.
    pub fn stats(&self) -> CpemStats {
        self.stats
    }

    /// Ends the epochs that `now` has passed, then reclaims down to the new ceiling.
    fn advance(&mut self, now: Duration) {
        while now >= self.epoch_end {
            self.ceiling.end_epoch(self.epoch_misses);
            self.epoch_misses = 0;
            self.epoch_end += EPOCH;
            self.stats.epochs += 1;
        }
        self.reclaim();
    }

    fn reclaim(&mut self) {
        let ceiling = self.ceiling.pages() as usize;
        for page in self.prefetch.reclaim(ceiling, &self.positions) {
            self.demote(page);
        }
    }

    fn demote(&mut self, page: DiskBlock) {
        self.stats.demoted += 1;
        self.demoted_unused.insert(page);
        self.lru_insert(page, true);
    }

    fn lru_insert(&mut self, page: DiskBlock, prefetched: bool) {
        let how = Touch {
            stream: 0,
            now: Duration::ZERO,
            prefetched,
        };
        self.lru.on_insert(page, how);
    }

    fn count_miss(&mut self, block: DiskBlock) {
        match self.history.take(block) {
            Some(Evicted::Lru) => self.stats.lru_misses += 1,
            Some(Evicted::Prefetched) => self.stats.prefetch_misses += 1,
            None => return,
        }
        self.epoch_misses += 1;
    }
}

impl Replacement for Cpem {
    fn remove(&mut self, _block: DiskBlock) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, how: Touch) {
        self.positions.note(how.stream, block);
        if self.prefetch.remove(block) {
            self.lru_insert(block, false);
        } else {
            self.demoted_unused.remove(&block);
            self.lru.on_hit(block, how);
        }
        self.advance(how.now);
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, how: Touch) {
        self.count_miss(block);
        if how.prefetched {
            self.prefetch.insert(block, how.stream);
        } else {
            self.positions.note(how.stream, block);
            self.lru_insert(block, false);
        }
        self.advance(how.now);
    }

    fn evict(&mut self, now: Duration, incoming: DiskBlock) -> Option<DiskBlock> {
        self.advance(now);
        let (victim, kind) = match self.lru.evict(now, incoming) {
            Some(page) if self.demoted_unused.remove(&page) => (page, Evicted::Prefetched),
            Some(page) => (page, Evicted::Lru),
            None => (self.prefetch.pop_head()?, Evicted::Prefetched),
        };
        self.history.record(victim, kind);
        Some(victim)
    }

    fn order(&self) -> Vec<DiskBlock> {
        let mut order = self.lru.order();
        order.extend(self.prefetch.order().into_iter().rev());
        order
    }

    fn prefetch_ceiling(&self) -> Option<usize> {
        Some(self.ceiling.pages() as usize)
    }

    fn owes_eviction(&self) -> bool {
        false
    }
}

/// The paper's threshold of CPEM's adjustments, in percent (the default of option `threshold`).
pub const THRESHOLD_PERCENT: u64 = 5;

/// CPEM's configuration: options `ceiling` (initial, bytes), `unit` (bytes), `threshold`
/// (percent), `region` (bytes).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The prefetch cache's first ceiling in bytes; `None`: the paper's for the cache.
    pub ceiling: Option<u64>,
    /// The step of the ceiling in bytes; `None`: the paper's.
    pub unit: Option<u64>,
    /// The threshold in percent.
    pub threshold: u64,
    /// The region in bytes; `None`: the paper's.
    pub region: Option<u64>,
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["ceiling", "unit", "threshold", "region"])?;
        Ok(Options {
            ceiling: given.bytes_given("ceiling")?,
            unit: given.bytes_given("unit")?,
            threshold: given.count("threshold", THRESHOLD_PERCENT)?,
            region: given.bytes_given("region")?,
        })
    }
}

impl MakeReplacement for Options {
    fn build(&self, cache: CacheGeometry) -> Box<dyn Replacement> {
        let page = cache.block_size.max(1);
        let paper = CpemConfig::paper(cache.capacity as u64, page);
        let config = CpemConfig {
            initial_ceiling: self.ceiling.unwrap_or(paper.initial_ceiling * page) / page,
            unit: self.unit.unwrap_or(paper.unit * page) / page,
            threshold: self.threshold as f64 / 100.0,
            region: self.region.unwrap_or(paper.region * page) / page,
            ..paper
        };
        Box::new(Cpem::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// A judge that gives a second chance to the pages in its list.
    struct Favour(Vec<u64>);

    impl SecondChance<u64> for Favour {
        fn deserves(&self, page: u64, _stream: usize) -> bool {
            self.0.contains(&page)
        }
    }

    /// FIFO with second chance: a favoured page is untagged and re-queued at the tail, then
    /// leaves at its next turn whatever the judge says.
    #[test]
    fn second_chance_order() {
        let mut cache = PrefetchCache::default();
        for page in [1, 2, 3] {
            cache.insert(page, 0);
        }
        assert_eq!(cache.reclaim(1, &Favour(vec![1])), vec![2, 3]);
        assert_eq!(cache.order(), vec![1]);
        cache.insert(4, 0);
        assert_eq!(cache.reclaim(1, &Favour(vec![1, 4])), vec![1]);
        assert!(cache.remove(4));
        assert!(cache.is_empty());
    }

    /// The history keeps the most recent evictions only, and a record is consumed once.
    #[test]
    fn eviction_history_is_bounded() {
        let mut history = EvictionHistory::new(2);
        history.record(1, Evicted::Lru);
        history.record(2, Evicted::Prefetched);
        history.record(3, Evicted::Lru);
        assert_eq!(history.len(), 2);
        assert_eq!(history.take(1), None);
        assert_eq!(history.take(2), Some(Evicted::Prefetched));
        assert_eq!(history.take(2), None);
    }

    /// The ceiling's gradient steps: up first, on while misses do not rise obviously, turn
    /// when they do, clamped to 0..=max.
    #[test]
    fn ceiling_follows_the_miss_gradient() {
        let mut ceiling = Ceiling::new(100, 10, 125, 0.05);
        let steps: Vec<u64> = [50, 50, 52, 80, 79, 200, 10, 10]
            .into_iter()
            .map(|misses| ceiling.end_epoch(misses))
            .collect();
        assert_eq!(steps, [110, 120, 125, 115, 105, 115, 125, 125]);
        let mut low = Ceiling::new(5, 10, 100, 0.05);
        assert_eq!(low.end_epoch(10), 15);
        assert_eq!(low.end_epoch(100), 5);
        assert_eq!(low.end_epoch(99), 0);
    }

    /// Linux's pages_low for 512 MiB: 5/4 of sqrt(16 x 524288) KiB = 3620 KiB = 906 pages.
    #[test]
    fn adjustment_unit_is_pages_low() {
        assert_eq!(pages_low(512 << 20, 4096), 906);
    }

    /// A referenced prefetched page moves to CLOCK; a stream that went past a page, or moved
    /// to another region, loses it first.
    #[test]
    fn reclaim_demotes_pages_the_stream_passed() {
        let mut cpem = Cpem::new(CpemConfig {
            initial_ceiling: 2,
            ..CpemConfig::paper(100, 4096)
        });
        let touch = |stream, prefetched| Touch {
            stream,
            now: Duration::ZERO,
            prefetched,
        };
        cpem.on_insert(10, touch(0, false));
        cpem.on_insert(11, touch(0, true));
        cpem.on_insert(12, touch(0, true));
        cpem.on_hit(12, touch(0, true));
        assert_eq!(cpem.prefetch_len(), 1);
        cpem.on_insert(13, touch(0, true));
        cpem.on_insert(14, touch(0, true));
        assert_eq!(cpem.prefetch_len(), 2);
        assert_eq!(
            cpem.stats().demoted,
            1,
            "block 11, passed by the stream at 12"
        );
        assert_eq!(cpem.prefetch.order(), vec![13, 14]);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert {
            block: u64,
            stream: usize,
            prefetched: bool,
        },
        Hit {
            pick: usize,
            stream: usize,
        },
        Evict,
        Wait(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..4000, 0usize..8, any::<bool>())
                .prop_map(|(block, stream, prefetched)| Op::Insert { block, stream, prefetched }),
            3 => (any::<usize>(), 0usize..8).prop_map(|(pick, stream)| Op::Hit { pick, stream }),
            2 => Just(Op::Evict),
            1 => (0u64..6000).prop_map(Op::Wait),
        ]
    }

    proptest! {
        /// Driven as the engine drives it (bounded cache, evict when full), CPEM never holds
        /// more prefetched pages than its ceiling, evicts only cached blocks, and its order is
        /// exactly the cached set.
        #[test]
        fn prefetch_cache_never_exceeds_its_ceiling(
            ops in proptest::collection::vec(op(), 1..300),
        ) {
            let capacity = 64;
            let mut cpem = Cpem::new(CpemConfig {
                unit: 8,
                region: 256,
                ..CpemConfig::paper(capacity, 4096)
            });
            let mut cached: BTreeSet<u64> = BTreeSet::new();
            let mut now = Duration::ZERO;
            for op in ops {
                match op {
                    Op::Insert { block, stream, prefetched } if !cached.contains(&block) => {
                        while cached.len() >= capacity as usize {
                            let victim = cpem.evict(now, block).expect("cache is full");
                            prop_assert!(cached.remove(&victim), "evicted uncached {victim}");
                        }
                        cached.insert(block);
                        cpem.on_insert(block, Touch { stream, now, prefetched });
                    }
                    Op::Hit { pick, stream } if !cached.is_empty() => {
                        let block = *cached.iter().nth(pick % cached.len()).expect("non-empty");
                        cpem.on_hit(block, Touch { stream, now, prefetched: false });
                    }
                    Op::Evict if !cached.is_empty() => {
                        let victim = cpem.evict(now, u64::MAX).expect("cached blocks");
                        prop_assert!(cached.remove(&victim), "evicted uncached {victim}");
                    }
                    Op::Wait(ms) => now += Duration::from_millis(ms),
                    _ => {}
                }
                let ceiling = cpem.prefetch_ceiling().expect("CPEM has a ceiling");
                prop_assert!(cpem.prefetch_len() <= ceiling);
                let order: BTreeSet<u64> = cpem.order().into_iter().collect();
                prop_assert_eq!(&order, &cached);
            }
        }
    }
}
