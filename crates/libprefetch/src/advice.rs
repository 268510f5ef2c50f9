//! Carrying out a round's plan with posix_fadvise.
//!
//! Follows libprefetch (ATC 2009) section 4.5: DONTNEED the stale pages of
//! the previous round in one batch, then WILLNEED the new window in C-LOOK
//! order (ranges already split by the planner so that no call asks for
//! more than one call loads: max(read_ahead_kb, max_sectors_kb)), then,
//! if enabled, WILLNEED again in reverse access order.
//!
//! The advice never changes file contents: WILLNEED only reads, and
//! DONTNEED only drops clean pages (dirty ones stay until written back by
//! the kernel as usual).

use plan::{PageRange, RoundPlan};

/// Advice calls issued and the ones the kernel refused (counted, never
/// surfaced to the application: advice is a hint).
#[derive(Clone, Copy, Debug, Default)]
pub struct AdviceCounts {
    /// fadvise calls made.
    pub calls: u64,
    /// fadvise calls that returned an error.
    pub failures: u64,
}

/// Issues the advice of `plan`; `reverse_pass` enables the second,
/// reverse-access-order WILLNEED pass.
pub fn execute(plan: &RoundPlan, page_size: u64, reverse_pass: bool) -> AdviceCounts {
    let mut counts = AdviceCounts::default();
    for range in &plan.evict {
        advise(range, page_size, libc::POSIX_FADV_DONTNEED, &mut counts);
    }
    for range in &plan.fetch {
        advise(range, page_size, libc::POSIX_FADV_WILLNEED, &mut counts);
    }
    if reverse_pass {
        for range in &plan.reverse {
            advise(range, page_size, libc::POSIX_FADV_WILLNEED, &mut counts);
        }
    }
    counts
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
