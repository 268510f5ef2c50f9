//! Sets of pages of one file as sorted, disjoint, non-adjacent runs `[start, end)`: what a
//! residency probe returns, what a snapshot stores, and what a restore subtracts.
//!
//! ```text
//!   pages      0 1 2 3 4 5 6 7 8 9
//!   cached     x x x . . x . x x .      runs [0,3) [5,6) [7,9)
//!   snapshot   x x x x x x . x x x      runs [0,6) [7,10)
//!   missing = snapshot - cached         runs [3,5) [9,10)
//! ```
//!
//! No paper section: plain set arithmetic kept in one place so that it can be checked
//! against a naive set by property tests.

use std::ops::Range;

/// A set of page numbers as sorted, disjoint runs; two runs never touch (they would be one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageRuns {
    runs: Vec<Range<u64>>,
}

impl PageRuns {
    /// The empty set.
    pub fn new() -> PageRuns {
        PageRuns::default()
    }

    /// The set of the given runs, which may be in any order, overlap, touch or be empty.
    pub fn from_unsorted(mut runs: Vec<Range<u64>>) -> PageRuns {
        runs.sort_by_key(|run| run.start);
        let mut set = PageRuns::new();
        for run in runs {
            set.push(run);
        }
        set
    }

    /// Adds `run`, which must not start before the start of the last run added.
    /// Empty runs are ignored; a run touching or overlapping the last one joins it.
    pub fn push(&mut self, run: Range<u64>) {
        if run.is_empty() {
            return;
        }
        match self.runs.last_mut() {
            Some(last) if run.start <= last.end => {
                debug_assert!(run.start >= last.start, "runs pushed out of order");
                last.end = last.end.max(run.end);
            }
            _ => self.runs.push(run),
        }
    }

    /// The runs, ascending.
    pub fn runs(&self) -> &[Range<u64>] {
        &self.runs
    }

    /// Number of pages in the set.
    pub fn page_count(&self) -> u64 {
        self.runs.iter().map(|run| run.end - run.start).sum()
    }

    /// True if the set holds no page.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// One past the highest page, or 0 for the empty set.
    pub fn end(&self) -> u64 {
        self.runs.last().map_or(0, |run| run.end)
    }

    /// True if `page` is in the set.
    pub fn contains(&self, page: u64) -> bool {
        let after = self.runs.partition_point(|run| run.end <= page);
        self.runs.get(after).is_some_and(|run| run.start <= page)
    }

    /// Number of pages of the set within `range`.
    pub fn count_within(&self, range: Range<u64>) -> u64 {
        let first = self.runs.partition_point(|run| run.end <= range.start);
        self.runs[first..]
            .iter()
            .take_while(|run| run.start < range.end)
            .map(|run| run.end.min(range.end) - run.start.max(range.start))
            .sum()
    }

    /// The first `pages` pages of the set (all of it if it holds fewer).
    pub fn first_pages(&self, mut pages: u64) -> PageRuns {
        let mut out = PageRuns::new();
        for run in &self.runs {
            let take = pages.min(run.end - run.start);
            out.push(run.start..run.start + take);
            pages -= take;
        }
        out
    }

    /// The pages of `self` that are not in `other`.
    pub fn minus(&self, other: &PageRuns) -> PageRuns {
        let mut out = PageRuns::new();
        let mut others = other.runs.iter().peekable();
        for run in &self.runs {
            let mut start = run.start;
            while start < run.end {
                while others.peek().is_some_and(|o| o.end <= start) {
                    others.next();
                }
                match others.peek() {
                    Some(o) if o.start < run.end => {
                        out.push(start..o.start.max(start));
                        start = o.end;
                    }
                    _ => {
                        out.push(start..run.end);
                        start = run.end;
                    }
                }
            }
        }
        out
    }

    /// The pages in both sets.
    pub fn intersect(&self, other: &PageRuns) -> PageRuns {
        let mut out = PageRuns::new();
        let (mut i, mut j) = (0, 0);
        while let (Some(a), Some(b)) = (self.runs.get(i), other.runs.get(j)) {
            out.push(a.start.max(b.start)..a.end.min(b.end));
            if a.end <= b.end {
                i += 1;
            } else {
                j += 1;
            }
        }
        out
    }

    /// The set with every page at or after `end` removed.
    pub fn truncated(&self, end: u64) -> PageRuns {
        let mut out = PageRuns::new();
        for run in self.runs.iter().take_while(|run| run.start < end) {
            out.push(run.start..run.end.min(end));
        }
        out
    }

    /// Every page, ascending.
    pub fn pages(&self) -> impl Iterator<Item = u64> + '_ {
        self.runs.iter().flat_map(Clone::clone)
    }

    /// The set of the pages whose byte in `bitmap` has its low bit set (mincore's format),
    /// numbered from `first`.
    pub fn from_bitmap(first: u64, bitmap: &[u8]) -> PageRuns {
        let mut out = PageRuns::new();
        for (index, byte) in bitmap.iter().enumerate() {
            if byte & 1 == 1 {
                let page = first + index as u64;
                out.push(page..page + 1);
            }
        }
        out
    }

    /// The runs as `"0-2,5,7-8"` (inclusive, as util-linux prints page ranges); `"-"` if empty.
    pub fn to_ranges_text(&self) -> String {
        if self.runs.is_empty() {
            return "-".to_string();
        }
        let parts: Vec<String> = self
            .runs
            .iter()
            .map(|run| match run.end - run.start {
                1 => run.start.to_string(),
                _ => format!("{}-{}", run.start, run.end - 1),
            })
            .collect();
        parts.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn set(runs: &[(u64, u64)]) -> PageRuns {
        PageRuns::from_unsorted(runs.iter().map(|&(s, e)| s..e).collect())
    }

    fn naive(runs: &PageRuns) -> BTreeSet<u64> {
        runs.pages().collect()
    }

    #[test]
    fn module_diagram_example() {
        let cached = set(&[(0, 3), (5, 6), (7, 9)]);
        let snapshot = set(&[(0, 6), (7, 10)]);
        assert_eq!(snapshot.minus(&cached), set(&[(3, 5), (9, 10)]));
        assert_eq!(snapshot.minus(&cached).to_ranges_text(), "3-4,9");
        assert_eq!(cached.intersect(&snapshot), cached);
    }

    #[test]
    fn touching_runs_join() {
        assert_eq!(set(&[(4, 6), (0, 2), (2, 4)]), set(&[(0, 6)]));
        assert_eq!(set(&[(0, 2), (3, 4)]).runs().len(), 2);
    }

    #[test]
    fn bitmap_low_bit_marks_a_resident_page() {
        let runs = PageRuns::from_bitmap(10, &[1, 1, 0, 3, 2, 1]);
        assert_eq!(runs.runs(), &[10..12, 13..14, 15..16]);
    }

    fn any_runs() -> impl Strategy<Value = PageRuns> {
        proptest::collection::vec((0u64..200, 0u64..12), 0..20).prop_map(|pairs| {
            PageRuns::from_unsorted(pairs.into_iter().map(|(s, l)| s..s + l).collect())
        })
    }

    proptest! {
        #[test]
        fn runs_are_sorted_disjoint_and_apart(runs in any_runs()) {
            for pair in runs.runs().windows(2) {
                prop_assert!(pair[0].end < pair[1].start);
            }
            prop_assert!(runs.runs().iter().all(|run| !run.is_empty()));
        }

        #[test]
        fn set_operations_match_a_naive_set(a in any_runs(), b in any_runs(), end in 0u64..220) {
            let (na, nb) = (naive(&a), naive(&b));
            prop_assert_eq!(naive(&a.minus(&b)), na.difference(&nb).copied().collect());
            prop_assert_eq!(naive(&a.intersect(&b)), na.intersection(&nb).copied().collect());
            prop_assert_eq!(naive(&a.truncated(end)), na.iter().copied().filter(|&p| p < end).collect());
            prop_assert_eq!(a.page_count(), na.len() as u64);
            prop_assert_eq!(a.count_within(end / 2..end), na.iter().filter(|&&p| p >= end / 2 && p < end).count() as u64);
            prop_assert_eq!(naive(&a.first_pages(end)), na.iter().copied().take(end as usize).collect());
            for page in 0..220 {
                prop_assert_eq!(a.contains(page), na.contains(&page));
            }
        }
    }
}
