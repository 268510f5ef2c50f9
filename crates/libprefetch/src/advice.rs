//! Carrying out a round's plan with posix_fadvise.
//!
//! Follows libprefetch (ATC 2009) section 4.5: DONTNEED the stale pages of
//! the previous round in one batch, then WILLNEED the new window in C-LOOK
//! order (ranges already split by the planner so that no call asks for
//! more than one call loads: max(read_ahead_kb, max_sectors_kb)), then,
//! if enabled, WILLNEED again in reverse access order.
//!
//! Before each WILLNEED, `cachestat` (one system call, about 0.3 us) says
//! how much of the range is cached already: a range that is all cached is
//! not advised (a WILLNEED walks the range in the page cache and does
//! nothing else for cached pages), so a warm cache costs probes only; the
//! pages that were not cached are counted as fetched, what prefetching
//! asked of the device.
//!
//! The advice never changes file contents: WILLNEED only reads, and
//! DONTNEED only drops clean pages (dirty ones stay until written back by
//! the kernel as usual).
//!
//! Deviations: the paper advises every range of the window; ranges found
//! cached are skipped here.

use plan::{PageRange, RoundPlan};

use crate::residency::cachestat;

/// Advice calls issued and the ones the kernel refused (counted, never
/// surfaced to the application: advice is a hint).
#[derive(Clone, Copy, Debug, Default)]
pub struct AdviceCounts {
    /// fadvise calls made.
    pub calls: u64,
    /// fadvise calls that returned an error.
    pub failures: u64,
    /// WILLNEED ranges not advised because all their pages were cached.
    pub cached_ranges: u64,
    /// Pages of WILLNEED ranges that were not cached when advised (all of
    /// a range's pages where cachestat is unavailable).
    pub pages_fetched: u64,
}

/// Issues the advice of `plan`; `reverse_pass` enables the second,
/// reverse-access-order WILLNEED pass.
pub fn execute(plan: &RoundPlan, page_size: u64, reverse_pass: bool) -> AdviceCounts {
    let mut counts = AdviceCounts::default();
    for range in &plan.evict {
        advise(range, page_size, libc::POSIX_FADV_DONTNEED, &mut counts);
    }
    for range in &plan.fetch {
        fetch(range, page_size, &mut counts);
    }
    if reverse_pass {
        for range in &plan.reverse {
            advise(range, page_size, libc::POSIX_FADV_WILLNEED, &mut counts);
        }
    }
    counts
}

/// WILLNEED of `range` unless all of it is cached already.
fn fetch(range: &PageRange, page_size: u64, counts: &mut AdviceCounts) {
    let missing = match cachestat(range.fd, range.start * page_size, range.len * page_size) {
        Ok(stat) => range.len.saturating_sub(stat.nr_cache),
        Err(_) => range.len,
    };
    if missing == 0 {
        counts.cached_ranges += 1;
        return;
    }
    counts.pages_fetched += missing;
    advise(range, page_size, libc::POSIX_FADV_WILLNEED, counts);
}

fn advise(range: &PageRange, page_size: u64, advice: libc::c_int, counts: &mut AdviceCounts) {
    let offset = (range.start * page_size) as libc::off_t;
    let len = (range.len * page_size) as libc::off_t;
    // SAFETY: posix_fadvise takes plain integers; a bad fd only yields EBADF.
    let rc = unsafe { libc::posix_fadvise(range.fd, offset, len, advice) };
    counts.calls += 1;
    if rc != 0 {
        counts.failures += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    const PAGE: u64 = 4096;

    fn file_of(pages: u64) -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![7u8; (pages * PAGE) as usize]).unwrap();
        file.sync_all().unwrap();
        file
    }

    fn plan_fetching(fd: i32, start: u64, len: u64) -> RoundPlan {
        RoundPlan {
            fetch: vec![PageRange { fd, start, len }],
            ..RoundPlan::default()
        }
    }

    #[test]
    fn a_cached_range_is_not_advised() {
        let file = file_of(8);
        // Just written: every page is in the page cache.
        let counts = execute(&plan_fetching(file.as_raw_fd(), 0, 8), PAGE, false);
        assert_eq!(
            (counts.calls, counts.cached_ranges, counts.pages_fetched),
            (0, 1, 0)
        );
    }

    #[test]
    fn the_missing_pages_of_a_range_are_fetched_and_counted() {
        use std::os::unix::fs::FileExt;
        let file = file_of(8);
        let fd = file.as_raw_fd();
        // Drop the whole file (a large folio cannot be dropped in part), then read pages 0..4 back one at a
        // time without read-ahead: exactly 4 of the 8 pages are cached.
        for advice in [libc::POSIX_FADV_DONTNEED, libc::POSIX_FADV_RANDOM] {
            // SAFETY: plain integers on an open descriptor.
            assert_eq!(unsafe { libc::posix_fadvise(fd, 0, 0, advice) }, 0);
        }
        let mut page = vec![0u8; PAGE as usize];
        for index in 0..4 {
            file.read_exact_at(&mut page, index * PAGE).unwrap();
        }
        assert_eq!(cachestat(fd, 0, 8 * PAGE).unwrap().nr_cache, 4);
        let counts = execute(&plan_fetching(fd, 0, 8), PAGE, false);
        assert_eq!(
            (counts.calls, counts.cached_ranges, counts.pages_fetched),
            (1, 0, 4)
        );
        assert_eq!(cachestat(fd, 0, 8 * PAGE).unwrap().nr_cache, 8);
    }
}
