//! The residency probe of a tracked read (libprefetch, ATC 2009, section
//! 4.5: the paper's `fincore` before each read), made once for many reads
//! where the kernel reads ahead.
//!
//! A read of pages the planner leaves to the kernel's read-ahead
//! (`plan::readahead`) is probed together with the pages after it in the
//! same left run, up to [`MAX_SPAN_PAGES`] past the read. When all are cached (being read
//! included, as `cachestat` counts), the span is remembered and the reads
//! that follow inside it skip their probe: on the strided row, one probe
//! for a dozen tiles of a tile row or so instead of one a tile. A span not all cached costs a second
//! probe, of the read alone, and halves the next span; a span all cached
//! doubles it. A tiled image's rows are each read again one column later,
//! after a read of every other row (362 reads on the 2 GiB strided row,
//! past a round or two), so spans are kept as long as their pages can be:
//! one per 2 MiB block, as many as the planner's interleaved streams
//! (`plan::readahead::STREAMS`; past that they start afresh), until a
//! round drops pages. Pages left to the kernel are never the plan's, and
//! only a round's `DONTNEED` takes pages away.
//!
//! Deviations: a page of a remembered span that the kernel (or the
//! page-cache budget, `cache_budget.rs`) evicts before it is read is taken
//! as cached: pages left to the kernel are not the plan's, so no premature
//! eviction is missed, only a miss in the counters (and the kernel's
//! refusal to read ahead is seen one span later).

use std::os::fd::RawFd;

use plan::{PageKey, RoundPlan};
use rustc_hash::FxHashMap;

use super::ClientInner;
use crate::residency::Probe;

/// The most pages probed past a read: 2 MiB of 4 KiB pages.
const MAX_SPAN_PAGES: u64 = 512;
/// The narrowest span worth probing beyond a read.
const MIN_SPAN_PAGES: u64 = 16;
/// Spans remembered at most: one per stream the planner leaves to the kernel.
const SPANS: usize = plan::readahead::STREAMS;

/// Spans of pages found cached since the last round that dropped pages.
#[derive(Debug)]
pub(super) struct KnownCached {
    /// `(first page, end page)` by `(fd, the first page's block)`.
    spans: FxHashMap<(RawFd, u64), (u64, u64)>,
    /// Pages past its read the next wide probe covers.
    width: u64,
}

impl Default for KnownCached {
    fn default() -> KnownCached {
        KnownCached {
            spans: FxHashMap::default(),
            width: MIN_SPAN_PAGES,
        }
    }
}

impl KnownCached {
    /// Pages `first..=last` of `fd` lie in one remembered span.
    fn covers(&self, fd: RawFd, first: u64, last: u64) -> bool {
        if self.spans.is_empty() {
            return false;
        }
        let block = first / MAX_SPAN_PAGES;
        [Some(block), block.checked_sub(1)]
            .into_iter()
            .flatten()
            .any(|block| {
                self.spans
                    .get(&(fd, block))
                    .is_some_and(|&(start, end)| start <= first && last < end)
            })
    }

    /// A wide probe found `first..end` of `fd` cached.
    fn found(&mut self, fd: RawFd, first: u64, end: u64) {
        if self.spans.len() >= SPANS {
            self.spans.clear();
        }
        self.spans
            .insert((fd, first / MAX_SPAN_PAGES), (first, end));
        self.width = (self.width * 2).min(MAX_SPAN_PAGES);
    }

    /// A wide probe found part of its span missing.
    fn missed(&mut self) {
        self.width = (self.width / 2).max(MIN_SPAN_PAGES);
    }

    /// A round planned `plan`: every span is forgotten if it drops pages.
    pub(super) fn after_round(&mut self, plan: &RoundPlan) {
        if !plan.evict.is_empty() {
            self.spans.clear();
        }
    }
}

impl ClientInner {
    /// Whether the whole read of `len` bytes at `offset` of `fd` is in the
    /// page cache, and whether its first page is; either is true where the
    /// kernel would not say.
    pub(super) fn probe_read(
        &self,
        fd: RawFd,
        offset: u64,
        len: u64,
        probe: Probe,
    ) -> (bool, bool) {
        let page = self.page_size;
        let (first, last) = (offset / page, (offset + len - 1) / page);
        let wide_end = {
            let state = self.lock_state();
            if state.known.covers(fd, first, last) {
                return (true, true);
            }
            let key = PageKey { fd, page: first };
            let width = state.known.width;
            state
                .planner
                .left_run_end(key)
                .map(|end| end.min(last + 1 + width))
                .filter(|&end| end > last + 1)
        };
        if let Some(end) = wide_end {
            let found = probe.resident_pages(fd, first * page, (end - first) * page, page);
            let mut state = self.lock_state();
            match found {
                None => return (true, true),
                Some((cached, pages)) if cached == pages => {
                    state.known.found(fd, first, end);
                    return (true, true);
                }
                Some(_) => state.known.missed(),
            }
        }
        self.probe_read_alone(fd, offset, len, probe)
    }

    /// One probe of the whole read answers for its first page too when all
    /// or none of it is cached (nearly every multi-page read, such as a
    /// record); the first page alone is probed only when part of the read
    /// is cached.
    fn probe_read_alone(&self, fd: RawFd, offset: u64, len: u64, probe: Probe) -> (bool, bool) {
        match probe.resident_pages(fd, offset, len, self.page_size) {
            None => (true, true),
            Some((cached, pages)) if cached == pages => (true, true),
            Some((0, _)) => (false, false),
            Some(_) => {
                let first_page_bytes = len.min(self.page_size - offset % self.page_size);
                let first = probe.resident_pages(fd, offset, first_page_bytes, self.page_size);
                (false, first.is_none_or(|(cached, pages)| cached == pages))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dropping(len: u64) -> RoundPlan {
        RoundPlan {
            evict: vec![plan::PageRange {
                fd: 3,
                start: 0,
                len,
            }],
            ..RoundPlan::default()
        }
    }

    #[test]
    fn a_span_found_cached_covers_the_reads_inside_it_until_a_round_drops_pages() {
        let mut known = KnownCached::default();
        assert!(!known.covers(3, 10, 13));
        known.found(3, 10, 40);
        assert!(known.covers(3, 10, 13));
        assert!(known.covers(3, 36, 39));
        assert!(!known.covers(3, 38, 41), "past the span's end");
        assert!(!known.covers(4, 10, 13), "another descriptor");
        assert!(!known.covers(3, 9, 12), "before the span");
        known.after_round(&RoundPlan::default());
        assert!(known.covers(3, 10, 13), "a round that drops nothing");
        known.after_round(&dropping(1));
        assert!(!known.covers(3, 10, 13));
    }

    #[test]
    fn every_row_of_a_tiled_image_keeps_its_span() {
        // The 2 GiB strided row: 362 tile rows of 1,448 pages, each with a span found at its
        // column; each is covered when its row is read again, a column later.
        let mut known = KnownCached::default();
        let row = 1448;
        for r in 0..362 {
            known.found(3, r * row + 4, r * row + 4 + 64);
        }
        assert!((0..362).all(|r| known.covers(3, r * row + 8, r * row + 11)));
    }

    #[test]
    fn a_span_starting_in_the_block_before_is_found() {
        let mut known = KnownCached::default();
        known.found(3, MAX_SPAN_PAGES - 4, 2 * MAX_SPAN_PAGES - 4);
        assert!(known.covers(3, MAX_SPAN_PAGES + 8, MAX_SPAN_PAGES + 11));
    }

    #[test]
    fn the_span_doubles_when_found_and_halves_when_missed() {
        let mut known = KnownCached::default();
        known.found(3, 0, 16);
        assert_eq!(known.width, 2 * MIN_SPAN_PAGES);
        for _ in 0..10 {
            known.found(3, 0, 16);
        }
        assert_eq!(known.width, MAX_SPAN_PAGES);
        known.missed();
        assert_eq!(known.width, MAX_SPAN_PAGES / 2);
        for _ in 0..10 {
            known.missed();
        }
        assert_eq!(known.width, MIN_SPAN_PAGES);
    }
}
