//! A client's rest while the page cache holds its reads (`client_warm.rs` has the regime: when a
//! client comes to rest, what a resting read costs, when it wakes): the state its reads look at
//! without the client's lock, the probe's period, and the region a thread's fast path keeps
//! (`track_fast.rs`). Data and arithmetic only, so that the registry and the fast path name it
//! without importing the client.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::advice::AdviceCounts;

/// Rounds in a row that find their window cached before a client rests:
/// the second shows that the reads of the first window found it still
/// cached, and a short list planned once (a lookup) never rests.
const CLEAN_ROUNDS_TO_REST: u32 = 2;

/// What a probe costs beyond the plain read it replaces: `preadv2` with
/// `RWF_NOWAIT` against `pread` of a cached 4 KiB page (the iovec), in ns.
const PROBE_EXTRA_NS: u64 = 200;

/// A plain `pread` of a cached 4 KiB page, in ns (0.2 us is 13% of it).
const CACHED_READ_NS: u64 = 1_500;

/// The noise of a warm read: probing may add 1/this of its cost, on
/// average (the warm rows' run-to-run spread is about 3%).
const WARM_NOISE_PARTS: u64 = 32;

/// The densest probing: one read in this many, the fewest reads whose one
/// probe costs them, shared, at most 1/[`WARM_NOISE_PARTS`] of a cached
/// read (5).
pub const MIN_PROBE_PERIOD: u64 = (PROBE_EXTRA_NS * WARM_NOISE_PARTS).div_ceil(CACHED_READ_NS);

/// The sparsest probing: a miss is seen at most this many reads late, 63.
pub const MAX_PROBE_PERIOD: u64 = 64;

/// Reads from one probe of a resting client to its next: the period `n`
/// that minimizes a resting read's expected cost, `extra / n` of probing
/// plus `p * miss * (n - 1) / 2` of reads made before a miss is seen
/// (each waits for the device: `miss_seconds`, the costliest far request
/// of the client's devices, `profile.rs`), which is `sqrt(2 * extra / (p *
/// miss))`; `p`, the chance that the next read misses after
/// `cached_reads` found cached at rest and none missing, is Laplace's
/// rule of succession, `1 / (cached_reads + 2)`. Kept within
/// [`MIN_PROBE_PERIOD`] (probing within a warm read's noise) and
/// [`MAX_PROBE_PERIOD`] (a miss seen within a bounded number of reads). A
/// device of unknown cost (`None`: no profile) probes at the densest.
pub fn probe_period(miss_seconds: Option<f64>, cached_reads: u64) -> u64 {
    let Some(miss) = miss_seconds else {
        return MIN_PROBE_PERIOD;
    };
    let extra = PROBE_EXTRA_NS as f64 * 1e-9;
    let odds = cached_reads as f64 + 2.0;
    let best = (2.0 * extra * odds / miss.max(f64::MIN_POSITIVE)).sqrt();
    (best.round().min(u64::MAX as f64) as u64).clamp(MIN_PROBE_PERIOD, MAX_PROBE_PERIOD)
}

/// `miss_nanos` while no region's device cost is known.
const UNKNOWN_MISS: u64 = u64::MAX;

/// Whether a client rests (read without the state lock, before a read's
/// probe), and the rounds in a row that found their window cached.
#[derive(Debug, Default)]
pub(crate) struct Rest {
    resting: AtomicBool,
    clean_rounds: AtomicU32,
    /// Reads counted without the state lock (`count_read`).
    counted: AtomicU64,
    /// `counted` when the client came to rest.
    began: AtomicU64,
    /// `counted` at which the rest ends: when the client came to rest, plus
    /// the entries its list still held then (reads only counted cannot
    /// tell where they are on the list, so past that many the reads may
    /// have passed its end).
    until: AtomicU64,
    /// Resting reads that may be made `RWF_NOWAIT`, probes included, since
    /// the client came to rest.
    since_probe: AtomicU64,
    /// `since_probe` at which the next probe is due.
    next_probe: AtomicU64,
    /// A miss's cost on the costliest of the client's devices, in ns (0
    /// until a region is registered; [`UNKNOWN_MISS`] if a region's device
    /// has no profile).
    miss_nanos: AtomicU64,
}

impl Rest {
    /// True while the client rests: a read is probed and counted, nothing more.
    pub(crate) fn resting(&self) -> bool {
        self.resting.load(Ordering::Acquire)
            && self.counted.load(Ordering::Relaxed) < self.until.load(Ordering::Relaxed)
    }

    /// True once, for the read that finds the rest ended by its count of
    /// reads (`until`): the client wakes, and that read is followed from
    /// where the list's position was left at rest.
    pub(crate) fn ended_by_reads(&self) -> bool {
        let ended = self.counted.load(Ordering::Relaxed) >= self.until.load(Ordering::Relaxed);
        ended
            && self
                .resting
                .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            && {
                self.clean_rounds.store(0, Ordering::Release);
                true
            }
    }

    /// Whether this resting read is to be made with `RWF_NOWAIT`, the
    /// client's probe: the first at rest, then one every [`probe_period`].
    pub(crate) fn probe_due(&self) -> bool {
        let read = self.since_probe.fetch_add(1, Ordering::Relaxed);
        let due = self.next_probe.load(Ordering::Relaxed);
        if read < due {
            return false;
        }
        let next = read + probe_period(self.miss_seconds(), read);
        self.next_probe
            .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// A region on a device whose far request costs `seconds` (`None`: no
    /// profile): the client's misses cost at least that.
    pub(crate) fn note_miss_cost(&self, seconds: Option<f64>) {
        let nanos = seconds.map_or(UNKNOWN_MISS, |s| (s * 1e9).max(1.0) as u64);
        self.miss_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    /// A miss's cost, `None` if unknown.
    fn miss_seconds(&self) -> Option<f64> {
        match self.miss_nanos.load(Ordering::Relaxed) {
            0 | UNKNOWN_MISS => None,
            nanos => Some(nanos as f64 * 1e-9),
        }
    }

    /// A resting read counted without the state lock.
    pub(crate) fn count_read(&self) {
        self.counted.fetch_add(1, Ordering::Relaxed);
    }

    /// The reads counted since the client last came to rest.
    pub(crate) fn counted_at_rest(&self) -> u64 {
        let counted = self.counted.load(Ordering::Relaxed);
        counted.saturating_sub(self.began.load(Ordering::Relaxed))
    }

    /// The reads counted by `count_read`.
    pub(crate) fn counted_reads(&self) -> u64 {
        self.counted.load(Ordering::Relaxed)
    }

    /// A read found missing: the client plans again from this read on.
    pub(crate) fn wake(&self) {
        self.clean_rounds.store(0, Ordering::Release);
        self.resting.store(false, Ordering::Release);
    }

    /// A round's advice is out (`counts`): the client rests if this round
    /// and the one before found every range they would fetch cached, issued
    /// no call at all, and no read missed in between (`missed`: since the
    /// round before's advice was out), and its list holds entries not yet
    /// read (`unread`): a client with none calls back at its next read,
    /// which is off the list, and at rest would not. The rest lasts at most
    /// `unread` reads. Called under the state lock.
    pub(crate) fn after_round(&self, counts: &AdviceCounts, missed: bool, unread: u64) {
        if unread == 0 || !at_rest(counts, missed) {
            self.clean_rounds.store(0, Ordering::Release);
            return;
        }
        let clean = self.clean_rounds.fetch_add(1, Ordering::AcqRel) + 1;
        if clean >= CLEAN_ROUNDS_TO_REST && !self.resting() {
            self.since_probe.store(0, Ordering::Relaxed);
            self.next_probe.store(0, Ordering::Relaxed);
            let began = self.counted.load(Ordering::Relaxed);
            self.began.store(began, Ordering::Relaxed);
            self.until
                .store(began.saturating_add(unread), Ordering::Relaxed);
            self.resting.store(true, Ordering::Release);
        }
    }
}

/// A round that found its whole window cached and advised nothing, with no
/// miss since it was planned.
fn at_rest(counts: &AdviceCounts, missed: bool) -> bool {
    !missed && counts.calls == 0 && counts.cached_ranges > 0 && counts.pages_fetched == 0
}

/// The one region of a descriptor, of a resting client, that a read fell
/// in: what a thread keeps for the next read.
pub(crate) struct SoleRegion {
    /// The registry's epoch read before the region was looked at.
    pub epoch: u64,
    /// The region's first byte.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
    /// Its client's rest.
    pub rest: Arc<Rest>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of a list not yet read, more than any test reads.
    const UNREAD: u64 = 1 << 20;

    fn counts(calls: u64, cached_ranges: u64, pages_fetched: u64) -> AdviceCounts {
        AdviceCounts {
            calls,
            failures: 0,
            cached_ranges,
            pages_fetched,
        }
    }

    #[test]
    fn a_round_that_found_its_window_cached_rests_the_client_until_a_miss() {
        let rest = Rest::default();
        rest.after_round(&counts(0, 3, 0), false, UNREAD);
        assert!(!rest.resting(), "one round found its window cached");
        rest.after_round(&counts(0, 3, 0), false, UNREAD);
        assert!(rest.resting(), "two in a row did");
        rest.wake();
        assert!(!rest.resting());
        rest.after_round(&counts(0, 3, 0), false, UNREAD);
        assert!(!rest.resting(), "a miss starts the count again");
    }

    /// The reads at which a resting client with misses of `miss` probes,
    /// among its first `reads`.
    fn probes(miss: Option<f64>, reads: u64) -> Vec<u64> {
        let rest = Rest::default();
        rest.note_miss_cost(miss);
        (0..reads).filter(|_| rest.probe_due()).collect()
    }

    #[test]
    fn a_costlier_miss_gives_a_denser_probe_within_the_bounds() {
        for reads in [0, 100, 10_000, 1_000_000] {
            let periods: Vec<u64> = [1e-7, 8e-6, 2e-4, 7e-3, 1.0]
                .iter()
                .map(|&miss| probe_period(Some(miss), reads))
                .collect();
            assert!(periods.windows(2).all(|w| w[0] >= w[1]), "{periods:?}");
            assert!(periods
                .iter()
                .all(|p| (MIN_PROBE_PERIOD..=MAX_PROBE_PERIOD).contains(p)));
        }
        assert!(probe_period(Some(8e-6), 10_000) > probe_period(Some(7e-3), 10_000));
        assert_eq!(probe_period(None, 1_000_000), MIN_PROBE_PERIOD);
        assert_eq!(probe_period(Some(0.0), 0), MAX_PROBE_PERIOD, "a free miss");
    }

    #[test]
    fn the_longer_the_rest_the_sparser_the_probe() {
        let periods: Vec<u64> = [0, 1_000, 10_000, 100_000, 10_000_000]
            .iter()
            .map(|&reads| probe_period(Some(8e-6), reads))
            .collect();
        assert!(periods.windows(2).all(|w| w[0] <= w[1]), "{periods:?}");
        assert_eq!(periods[0], MIN_PROBE_PERIOD);
        assert_eq!(periods[4], MAX_PROBE_PERIOD);
    }

    #[test]
    fn the_densest_probe_costs_a_cached_read_at_most_its_noise() {
        let share = |period: u64| PROBE_EXTRA_NS * WARM_NOISE_PARTS / period;
        assert!(share(MIN_PROBE_PERIOD) <= CACHED_READ_NS);
        assert!(share(MIN_PROBE_PERIOD - 1) > CACHED_READ_NS);
    }

    #[test]
    fn a_resting_client_probes_its_first_read_then_by_the_period() {
        // A disk's miss: the densest probe throughout.
        let disk = probes(Some(7e-3), 1_000);
        assert_eq!(disk[0], 0);
        assert!(disk.windows(2).all(|w| w[1] - w[0] == MIN_PROBE_PERIOD));
        // Flash: sparser as the reads at rest keep finding the cache.
        let flash = probes(Some(8e-6), 200_000);
        let gaps: Vec<u64> = flash.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(gaps.last(), Some(&MAX_PROBE_PERIOD));
        assert!(flash.len() < disk.len() * 200 / 2);
        // Coming to rest again starts the count over.
        let rest = Rest::default();
        rest.note_miss_cost(Some(8e-6));
        (0..100_000).for_each(|_| {
            rest.probe_due();
        });
        rest.wake();
        rest.after_round(&counts(0, 3, 0), false, UNREAD);
        rest.after_round(&counts(0, 3, 0), false, UNREAD);
        let again: Vec<bool> = (0..MIN_PROBE_PERIOD + 1)
            .map(|_| rest.probe_due())
            .collect();
        assert!(again[0] && again[MIN_PROBE_PERIOD as usize]);
    }

    #[test]
    fn a_rest_ends_once_its_reads_may_have_passed_the_end_of_the_list() {
        let rest = Rest::default();
        rest.after_round(&counts(0, 3, 0), false, 3);
        rest.after_round(&counts(0, 3, 0), false, 3);
        for _ in 0..2 {
            rest.count_read();
        }
        assert!(rest.resting(), "two of the three entries left were read");
        rest.count_read();
        assert!(!rest.resting(), "the reads may be past the list's end");
        assert!(rest.ended_by_reads(), "the next read wakes the client");
        assert!(!rest.ended_by_reads(), "once");
    }

    #[test]
    fn a_client_without_a_list_or_given_a_new_one_does_not_rest() {
        let rest = Rest::default();
        rest.after_round(&counts(0, 3, 0), false, UNREAD);
        rest.after_round(&counts(0, 3, 0), false, 0);
        assert!(!rest.resting(), "no entry left to read");
        rest.after_round(&counts(0, 3, 0), false, UNREAD);
        rest.wake();
        rest.after_round(&counts(0, 3, 0), false, UNREAD);
        assert!(!rest.resting(), "a new list counts its own rounds");
    }

    #[test]
    fn a_round_that_advised_or_followed_a_miss_does_not() {
        for (counts, missed) in [
            (counts(1, 2, 4), false), // a range was fetched
            (counts(1, 3, 0), false), // pages were dropped
            (counts(0, 0, 0), false), // nothing was probed
            (counts(0, 3, 0), true),  // a read missed since the round was planned
        ] {
            let rest = Rest::default();
            rest.after_round(&super::tests::counts(0, 3, 0), false, UNREAD);
            rest.after_round(&counts, missed, UNREAD);
            assert!(!rest.resting(), "{counts:?}, missed {missed}");
        }
    }
}
