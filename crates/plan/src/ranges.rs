//! From a set of pages to the advice calls of a round: C-LOOK order from the
//! head, infill merging of small gaps, splitting of long ranges, and the
//! ranges for eviction and for the reverse-access-order pass.
//!
//! Follows libprefetch (ATC 2009) sections 3.3 and 3.5 (C-LOOK, infill of
//! gaps up to 32 KiB) and 4.5 (DONTNEED of the previous round's pages not in
//! the new window, WILLNEED in offset order, then again in reverse access
//! order).
//!
//! ```text
//!   pages (sorted)      1 2 3 . . 7 . . . . . . . 20      head = 6
//!   infill 2 pages      [1-3]   [7]               [20]    gap 3-7 is 3 pages: kept apart
//!   C-LOOK from 6       [7] [20] [1-3]                    ascending from the head, then wrap
//! ```
//!
//! Deviations: the paper implements infill in the kernel's I/O scheduler;
//! here it is done in user space by widening the WILLNEED ranges, so the
//! gap pages are read into the cache (and count as prefetched data).

use crate::access_list::PageKey;

/// A run of whole pages of one file, `[start, start + len)` in page units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageRange {
    /// File descriptor the range belongs to.
    pub fd: i32,
    /// First page.
    pub start: u64,
    /// Number of pages (at least 1).
    pub len: u64,
}

impl PageRange {
    /// One past the last page.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// Runs of adjacent pages of one file in sorted, unique pages: the most
/// ranges a merge of them makes. The merges reserve that many ranges at
/// once: a vector grown by doubling held 1.5 times its final size while it
/// moved, the largest allocation of a round that fetches a budget of
/// scattered pages.
fn runs(sorted_pages: &[PageKey]) -> usize {
    let breaks = sorted_pages
        .windows(2)
        .filter(|pair| pair[1].fd != pair[0].fd || pair[1].page != pair[0].page.wrapping_add(1))
        .count();
    breaks + usize::from(!sorted_pages.is_empty())
}

/// Merges sorted, unique pages into ranges: two neighbours of the same file
/// join when the gap between them (pages not wanted) is at most
/// `infill_pages`; 0 joins only adjacent pages.
pub fn merge_with_infill(sorted_pages: &[PageKey], infill_pages: u64) -> Vec<PageRange> {
    let mut ranges: Vec<PageRange> = Vec::with_capacity(runs(sorted_pages));
    for &key in sorted_pages {
        match ranges.last_mut() {
            Some(last)
                if last.fd == key.fd
                    && key.page >= last.end()
                    && key.page - last.end() <= infill_pages =>
            {
                last.len = key.page + 1 - last.start;
            }
            _ => ranges.push(PageRange {
                fd: key.fd,
                start: key.page,
                len: 1,
            }),
        }
    }
    ranges
}

/// What filling a gap page would cost (see [`merge_within_room`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GapPage {
    /// Already kept: free.
    Held,
    /// Costs one page of room.
    Free,
    /// Must not be read now: the gap stays open.
    Forbidden,
}

/// Merges sorted, unique pages into ranges, filling a gap of at most
/// `max_gap` pages only while the pages it adds fit in `room` and none is
/// forbidden (`gap_page` says which); returns the ranges and the gap pages
/// added, lowest first. Adjacent pages always join.
pub fn merge_within_room(
    sorted_pages: &[PageKey],
    max_gap: u64,
    mut room: u64,
    gap_page: impl Fn(PageKey) -> GapPage,
) -> (Vec<PageRange>, Vec<PageKey>) {
    let mut ranges: Vec<PageRange> = Vec::with_capacity(runs(sorted_pages));
    let mut added = Vec::new();
    for &key in sorted_pages {
        if let Some(last) = ranges
            .last_mut()
            .filter(|r| r.fd == key.fd && key.page >= r.end())
        {
            let gap = key.page - last.end();
            if gap == 0 {
                last.len += 1;
                continue;
            }
            if gap <= max_gap {
                let kinds: Vec<(PageKey, GapPage)> = (last.end()..key.page)
                    .map(|page| PageKey { fd: key.fd, page })
                    .map(|k| (k, gap_page(k)))
                    .collect();
                let cost = kinds.iter().filter(|(_, g)| *g == GapPage::Free).count() as u64;
                let forbidden = kinds.iter().any(|(_, g)| *g == GapPage::Forbidden);
                if !forbidden && cost <= room {
                    room -= cost;
                    added.extend(
                        kinds
                            .iter()
                            .filter(|(_, g)| *g == GapPage::Free)
                            .map(|(k, _)| *k),
                    );
                    last.len = key.page + 1 - last.start;
                    continue;
                }
            }
        }
        ranges.push(PageRange {
            fd: key.fd,
            start: key.page,
            len: 1,
        });
    }
    (ranges, added)
}

/// Rotates ranges sorted by (fd, start) into C-LOOK order: the ones at or
/// after `head` ascending, then the ones before it, ascending.
pub fn clook_from(mut ranges: Vec<PageRange>, head: PageKey) -> Vec<PageRange> {
    let split = ranges.partition_point(|r| (r.fd, r.end()) <= (head.fd, head.page));
    ranges.rotate_left(split);
    ranges
}

/// Splits every range into pieces of at most `max_pages` pages, in order
/// (`ranges` itself when none is longer).
pub fn split_long(ranges: Vec<PageRange>, max_pages: u64) -> Vec<PageRange> {
    let max_pages = max_pages.max(1);
    if ranges.iter().all(|range| range.len <= max_pages) {
        return ranges;
    }
    let mut out = Vec::with_capacity(ranges.len());
    for range in ranges {
        let mut start = range.start;
        while start < range.end() {
            let len = max_pages.min(range.end() - start);
            out.push(PageRange {
                fd: range.fd,
                start,
                len,
            });
            start += len;
        }
    }
    out
}

/// Pages of `previous` (sorted) that are not in `current` (sorted), in
/// order: the stale set a new round evicts. One walk of both lists, not a
/// search of `current` per page: a round's lists hold up to a window of
/// pages, and the searches' scattered reads cost a cache miss each.
pub fn stale_pages(previous: &[PageKey], current: &[PageKey]) -> Vec<PageKey> {
    let mut rest = current.iter().peekable();
    previous
        .iter()
        .copied()
        .filter(|key| {
            while rest.next_if(|c| *c < key).is_some() {}
            rest.peek() != Some(&key)
        })
        .collect()
}

/// The pages of a window in reverse order of their first access, joined into
/// runs where consecutive pages of the file are next to each other in that
/// order (so a sequential window costs one call, not one per page).
pub fn reverse_access_runs(access_order: impl IntoIterator<Item = PageKey>) -> Vec<PageRange> {
    let mut seen = rustc_hash::FxHashSet::default();
    let first_use: Vec<PageKey> = access_order
        .into_iter()
        .filter(|k| seen.insert(*k))
        .collect();
    let mut runs: Vec<PageRange> = Vec::new();
    for key in first_use.into_iter().rev() {
        match runs.last_mut() {
            Some(run) if run.fd == key.fd && run.start == key.page + 1 => {
                run.start = key.page;
                run.len += 1;
            }
            _ => runs.push(PageRange {
                fd: key.fd,
                start: key.page,
                len: 1,
            }),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pages: &[u64]) -> Vec<PageKey> {
        pages.iter().map(|&page| PageKey { fd: 1, page }).collect()
    }

    fn numbers(keys: &[PageKey]) -> Vec<u64> {
        keys.iter().map(|k| k.page).collect()
    }

    fn spans(ranges: &[PageRange]) -> Vec<(u64, u64)> {
        ranges.iter().map(|r| (r.start, r.end())).collect()
    }

    #[test]
    fn module_diagram_example() {
        let merged = merge_with_infill(&keys(&[1, 2, 3, 7, 20]), 2);
        assert_eq!(spans(&merged), vec![(1, 4), (7, 8), (20, 21)]);
        let ordered = clook_from(merged, PageKey { fd: 1, page: 6 });
        assert_eq!(spans(&ordered), vec![(7, 8), (20, 21), (1, 4)]);
    }

    #[test]
    fn gaps_are_filled_only_within_the_room() {
        let held = |k: PageKey| {
            if k.page == 5 {
                GapPage::Held
            } else {
                GapPage::Free
            }
        };
        // Gap 2-3 costs 2 pages, gap 5-6 costs 1 (5 is held), gap 8-9 costs 2.
        let (ranges, added) = merge_within_room(&keys(&[1, 4, 7, 10]), 2, 3, held);
        assert_eq!(spans(&ranges), vec![(1, 8), (10, 11)]);
        assert_eq!(numbers(&added), vec![2, 3, 6]);
        let (ranges, added) = merge_within_room(&keys(&[1, 2, 4]), 1, 0, |_| GapPage::Free);
        assert_eq!(spans(&ranges), vec![(1, 3), (4, 5)]);
        assert!(added.is_empty());
        let (ranges, _) = merge_within_room(&keys(&[1, 3]), 1, 9, |_| GapPage::Forbidden);
        assert_eq!(spans(&ranges), vec![(1, 2), (3, 4)]);
    }

    #[test]
    fn merges_reserve_one_range_a_run_of_adjacent_pages() {
        let pages = [
            PageKey { fd: 1, page: 1 },
            PageKey { fd: 1, page: 2 },
            PageKey { fd: 1, page: 4 },
            PageKey { fd: 2, page: 5 },
        ];
        assert_eq!(runs(&pages), 3);
        assert_eq!(runs(&[]), 0);
        assert_eq!(merge_with_infill(&pages, 0).capacity(), 3);
        assert_eq!(merge_with_infill(&pages, 9).len(), 2);
    }

    #[test]
    fn zero_infill_joins_only_adjacent_pages() {
        assert_eq!(
            spans(&merge_with_infill(&keys(&[1, 2, 4]), 0)),
            vec![(1, 3), (4, 5)]
        );
    }

    #[test]
    fn infill_never_joins_different_files() {
        let pages = [PageKey { fd: 1, page: 1 }, PageKey { fd: 2, page: 2 }];
        assert_eq!(merge_with_infill(&pages, 100).len(), 2);
    }

    #[test]
    fn splits_at_the_advice_limit() {
        let split = split_long(
            vec![PageRange {
                fd: 1,
                start: 0,
                len: 2500,
            }],
            1024,
        );
        assert_eq!(spans(&split), vec![(0, 1024), (1024, 2048), (2048, 2500)]);
    }

    #[test]
    fn ranges_within_the_limit_are_kept_as_they_are() {
        let ranges = merge_with_infill(&keys(&[1, 2, 4]), 0);
        let address = ranges.as_ptr();
        let kept = split_long(ranges, 2);
        assert_eq!(spans(&kept), vec![(1, 3), (4, 5)]);
        assert_eq!(kept.as_ptr(), address);
    }

    #[test]
    fn reverse_runs_follow_last_needed_first() {
        let order = keys(&[10, 11, 12, 3, 11]);
        assert_eq!(spans(&reverse_access_runs(order)), vec![(3, 4), (10, 13)]);
    }
}
