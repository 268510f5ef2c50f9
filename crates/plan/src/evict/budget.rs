//! A page-cache budget: the pages a program has read, kept within a capacity by one of the
//! replacement orders of this module's parent (DULO, LRU, CLOCK, drop-behind). The live
//! library (`cache_budget.rs`) feeds it every read and drops the victims it returns with
//! `POSIX_FADV_DONTNEED`, before the kernel has to evict anything; the tests feed it traces.
//!
//! ```text
//!   read [a, b) of file f:  pages cached -> hit; others -> insert (young: demanded)
//!   over capacity:          evict in the order's order down to capacity - batch,
//!                           never a page of this read (set aside, put back on top)
//!   victims:                grouped into runs of adjacent pages per file (one advice each)
//! ```
//!
//! A page is a [`Block`]: the file's number (in order of first sight) above [`PAGE_BITS`]
//! bits of page index, so a file's consecutive pages are adjacent blocks and DULO forms its
//! sequences from file offsets.
//!
//! The pages held are kept as ranges ([`rangemap::RangeSet`]): a read of many pages is looked
//! up and recorded in one step, and the order is told of its held and new runs of pages.
//!
//! Deviations: DULO's paper replaces the kernel's policy; here the kernel still evicts when
//! its own memory runs short (a cgroup smaller than the budget), and only the pages the
//! program read are counted (the kernel's read-ahead past them is not, until read).

use std::ops::Range;

use rangemap::RangeSet;

use super::eviction::{Block, Eviction};

/// Bits of page index under a file's number (4 PiB files of 4 KiB pages).
pub const PAGE_BITS: u32 = 40;

/// The block of page `page` of file number `file` (pages past 2^40 share the last block).
pub fn block_of(file: u32, page: u64) -> Block {
    (u64::from(file) << PAGE_BITS) | page.min((1 << PAGE_BITS) - 1)
}

/// The page index of `block` within its file.
pub fn page_of(block: Block) -> u64 {
    block & ((1 << PAGE_BITS) - 1)
}

/// Pages a budget of `capacity` pages evicts beyond what it must once over it: 1/16 of the
/// budget, at most 1,024 pages (4 MiB of 4 KiB pages), so that each advice drops a run and a
/// pass of the reading thread over the budget is rare.
pub fn batch_pages(capacity: usize) -> usize {
    (capacity / 16).clamp(1, 1024)
}

/// Counts of a budget's reads, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetStats {
    /// Pages read that the budget held.
    pub hits: u64,
    /// Pages read that it did not (never read, or evicted since).
    pub misses: u64,
    /// Pages it evicted.
    pub evicted: u64,
}

/// The pages read, within `capacity`, in an order's keeping.
pub struct Budget {
    order: Box<dyn Eviction>,
    cached: RangeSet<Block>,
    /// Pages in `cached`.
    held: usize,
    capacity: usize,
    batch: usize,
    stats: BudgetStats,
}

impl Budget {
    /// A budget of `capacity` pages that, once over it, evicts `batch` pages more than it must
    /// (so that advice goes in runs, not page by page; clamped to `capacity`).
    pub fn new(order: Box<dyn Eviction>, capacity: usize, batch: usize) -> Budget {
        Budget {
            order,
            cached: RangeSet::new(),
            held: 0,
            capacity,
            batch: batch.min(capacity),
            stats: BudgetStats::default(),
        }
    }

    /// The program reads `pages` (of one file, in order): returns the pages to drop, none of
    /// them in `pages`, sorted.
    pub fn read(&mut self, pages: Range<Block>) -> Vec<Block> {
        if pages.is_empty() {
            return Vec::new();
        }
        let mut at = pages.start;
        for gap in self.cached.gaps(&pages) {
            if at < gap.start {
                self.order.hit_range(at..gap.start);
                self.stats.hits += gap.start - at;
            }
            self.order.insert_range(gap.clone(), true);
            self.stats.misses += gap.end - gap.start;
            self.held += (gap.end - gap.start) as usize;
            at = gap.end;
        }
        if at < pages.end {
            self.order.hit_range(at..pages.end);
            self.stats.hits += pages.end - at;
        }
        self.cached.insert(pages.clone());
        if self.held <= self.capacity {
            return Vec::new();
        }
        let target = self.capacity - self.batch;
        let mut victims = Vec::new();
        let mut kept = Vec::new();
        while self.held - victims.len() - kept.len() > target {
            let Some(victim) = self.order.evict() else {
                break;
            };
            if pages.contains(&victim) {
                kept.push(victim);
            } else {
                victims.push(victim);
            }
        }
        for page in kept {
            self.order.insert(page, true);
        }
        self.stats.evicted += victims.len() as u64;
        self.held -= victims.len();
        // A stable sort merges the ascending runs the order gives its victims in (DULO's
        // sequences); the blocks are distinct, so the result is the unstable sort's.
        victims.sort();
        for run in victims.chunk_by(|a, b| a + 1 == *b) {
            self.cached.remove(run[0]..run[run.len() - 1] + 1);
        }
        victims
    }

    /// True if `pages` has a page held.
    pub fn holds_any(&self, pages: Range<Block>) -> bool {
        !pages.is_empty() && self.cached.overlaps(&pages)
    }

    /// The runs of `pages` not held, in order.
    pub fn not_held(&self, pages: Range<Block>) -> Vec<Range<Block>> {
        if pages.is_empty() {
            return Vec::new();
        }
        self.cached.gaps(&pages).collect()
    }

    /// Pages held.
    pub fn len(&self) -> usize {
        self.held
    }

    /// True if no page is held.
    pub fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// Hits, misses and evictions so far.
    pub fn stats(&self) -> BudgetStats {
        self.stats
    }
}

/// Sorted blocks as runs of adjacent pages per file: `(file, first page .. end page)`.
pub fn runs(sorted: &[Block]) -> Vec<(u32, Range<u64>)> {
    let mut out: Vec<(u32, Range<u64>)> = Vec::new();
    for &block in sorted {
        let file = (block >> PAGE_BITS) as u32;
        let page = page_of(block);
        match out.last_mut() {
            Some((f, run)) if *f == file && run.end == page => run.end += 1,
            _ => out.push((file, page..page + 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evict::by_name;

    fn budget(policy: &str, capacity: usize, batch: usize) -> Budget {
        Budget::new(by_name(policy, capacity, 4096).unwrap(), capacity, batch)
    }

    #[test]
    fn a_sequential_pass_stays_within_capacity_plus_nothing() {
        for policy in crate::evict::POLICIES {
            let mut b = budget(policy, 64, 8);
            for chunk in 0..100 {
                let start = block_of(3, chunk * 4);
                let victims = b.read(start..start + 4);
                assert!(victims.iter().all(|v| *v < start), "{policy}");
                assert!(b.len() <= 64, "{policy}: {}", b.len());
            }
            assert_eq!(b.stats().misses, 400, "{policy}");
            assert_eq!(b.stats().evicted as usize, 400 - b.len(), "{policy}");
        }
    }

    /// The alternating program in miniature: a pass over a long file between re-reads of a
    /// few random pages of another. DULO and drop-behind keep the random pages (which cost a
    /// seek each) and let the pass go; LRU and CLOCK let the pass flush them every time.
    #[test]
    fn dulo_keeps_random_pages_through_a_sequential_pass() {
        let random: Vec<u64> = (0..16).map(|i| (i * 37) % 500).collect();
        let random_misses = |policy: &str| {
            let mut b = budget(policy, 80, 4);
            let mut misses = 0;
            for _ in 0..6 {
                for chunk in 0..64 {
                    let start = block_of(1, chunk * 4);
                    b.read(start..start + 4);
                }
                let before = b.stats().misses;
                for &page in &random {
                    let block = block_of(2, page * 2);
                    b.read(block..block + 1);
                }
                misses += b.stats().misses - before;
            }
            misses
        };
        assert_eq!(random_misses("dulo"), 16);
        assert_eq!(random_misses("drop-behind"), 16);
        assert_eq!(random_misses("lru"), 6 * 16);
        assert_eq!(random_misses("clock"), 6 * 16);
    }

    proptest::proptest! {
        /// The held ranges agree with a set of pages kept by hand: each read's hits are the
        /// pages held before it, its victims are held pages outside it, and what is left held
        /// is what `len` and `not_held` say, for every order.
        #[test]
        fn held_ranges_agree_with_a_set_of_pages(
            policy in 0..crate::evict::POLICIES.len(),
            capacity in 1usize..64,
            reads in proptest::collection::vec((0u32..3, 0u64..200, 1u64..20), 1..200),
        ) {
            let mut b = budget(crate::evict::POLICIES[policy], capacity, capacity / 8);
            let mut held = std::collections::BTreeSet::new();
            for (file, start, len) in reads {
                let pages = block_of(file, start)..block_of(file, start + len);
                let hits = pages.clone().filter(|p| held.contains(p)).count() as u64;
                let before = b.stats();
                let victims = b.read(pages.clone());
                proptest::prop_assert_eq!(b.stats().hits - before.hits, hits);
                held.extend(pages.clone());
                for victim in victims {
                    proptest::prop_assert!(!pages.contains(&victim));
                    proptest::prop_assert!(held.remove(&victim));
                }
                proptest::prop_assert_eq!(b.len(), held.len());
                for f in 0..3 {
                    let all = block_of(f, 0)..block_of(f, 220);
                    let free: Vec<Block> = b.not_held(all.clone()).into_iter().flatten().collect();
                    let expected: Vec<Block> = all.filter(|p| !held.contains(p)).collect();
                    proptest::prop_assert_eq!(free, expected);
                }
            }
        }
    }

    #[test]
    fn held_and_not_held_runs_of_a_range() {
        let mut b = budget("lru", 64, 8);
        b.read(block_of(1, 4)..block_of(1, 6));
        b.read(block_of(1, 9)..block_of(1, 10));
        let not_held = b.not_held(block_of(1, 0)..block_of(1, 12));
        let expected = [(0, 4), (6, 9), (10, 12)].map(|(s, e)| block_of(1, s)..block_of(1, e));
        assert_eq!(not_held, expected);
        assert!(b.holds_any(block_of(1, 5)..block_of(1, 9)));
        assert!(!b.holds_any(block_of(1, 6)..block_of(1, 9)));
        assert!(!b.holds_any(block_of(1, 5)..block_of(1, 5)));
        assert!(b.not_held(block_of(1, 5)..block_of(1, 5)).is_empty());
    }

    #[test]
    fn runs_split_at_gaps_and_files() {
        let blocks = [
            block_of(1, 4),
            block_of(1, 5),
            block_of(1, 7),
            block_of(2, 8),
        ];
        assert_eq!(runs(&blocks), vec![(1, 4..6), (1, 7..8), (2, 8..9)]);
    }
}
