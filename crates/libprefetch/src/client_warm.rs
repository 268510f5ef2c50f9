//! A client at rest while the page cache holds its reads: as Linux's
//! read-ahead stops when it keeps finding pages cached, a client whose last
//! two rounds found every page of their windows cached already (no WILLNEED
//! issued, nothing dropped), with no read missing between them, rests. A
//! resting client's read costs a counter and, where it may be made with
//! `RWF_NOWAIT` (`track_cached.rs`), one read in [`PROBE_EVERY`] is its own
//! probe; other reads (at the file position, on files that refuse the
//! flag) cost one residency probe (the paper's `fincore` before each read,
//! ATC 2009 section 4.5; none inside a span found cached,
//! `client_probe.rs`): no planner accounting, no round, no callback, no
//! hand-over to the advice thread. The first read a probe finds missing
//! wakes the client: the planner's position moves up to that read's entry
//! (`Planner::skip_to`; if the list no longer holds it, the read diverges
//! and calls back for the list from there), and the read is accounted as
//! any other, a miss, so a round starts at once. A request that discloses
//! reads (a list set, even an empty one, or entries appended) wakes the
//! client too: its reads are followed from the next one (section 4.2: the
//! list's reads are planned, and a read off it calls back), where waiting
//! for a miss would leave a new list's callbacks unmade while its pages
//! are cached.
//!
//! Deviations: the paper plans a round whenever one is due; a resting client
//! plans none until a read misses or a request discloses more reads, and
//! follows no divergence until then.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use plan::{Mode, PageKey};

use super::ClientInner;
use crate::advice::AdviceCounts;
use crate::residency::Probe;

/// Rounds in a row that find their window cached before a client rests:
/// the second shows that the reads of the first window found it still
/// cached, and a short list planned once (a lookup) never rests.
const CLEAN_ROUNDS_TO_REST: u32 = 2;

/// A resting client's reads made with `RWF_NOWAIT` (`track_cached.rs`):
/// one in this many; the others are plain reads, only counted.
pub const PROBE_EVERY: u64 = 8;

/// Whether a client rests (read without the state lock, before a read's
/// probe), and the rounds in a row that found their window cached.
#[derive(Debug, Default)]
pub(super) struct Rest {
    resting: AtomicBool,
    clean_rounds: AtomicU32,
    /// Reads counted without the state lock (`count_read`).
    counted: AtomicU64,
    /// Resting reads that may be made `RWF_NOWAIT`, probes included.
    since_probe: AtomicU64,
}

impl Rest {
    /// True while the client rests: a read is probed and counted, nothing more.
    pub(super) fn resting(&self) -> bool {
        self.resting.load(Ordering::Acquire)
    }

    /// Whether this resting read is to be made with `RWF_NOWAIT`, the
    /// client's probe: one in [`PROBE_EVERY`].
    pub(super) fn probe_due(&self) -> bool {
        self.since_probe
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(PROBE_EVERY)
    }

    /// A resting read counted without the state lock.
    pub(super) fn count_read(&self) {
        self.counted.fetch_add(1, Ordering::Relaxed);
    }

    /// The reads counted by `count_read`.
    pub(super) fn counted_reads(&self) -> u64 {
        self.counted.load(Ordering::Relaxed)
    }

    /// A read found missing: the client plans again from this read on.
    pub(super) fn wake(&self) {
        self.clean_rounds.store(0, Ordering::Release);
        self.resting.store(false, Ordering::Release);
    }

    /// A round's advice is out (`counts`): the client rests if this round
    /// and the one before found every range they would fetch cached, issued
    /// no call at all, and no read missed in between (`missed`: since the
    /// round before's advice was out). Called under the state lock.
    pub(super) fn after_round(&self, counts: &AdviceCounts, missed: bool) {
        if !at_rest(counts, missed) {
            self.clean_rounds.store(0, Ordering::Release);
            return;
        }
        let clean = self.clean_rounds.fetch_add(1, Ordering::AcqRel) + 1;
        if clean >= CLEAN_ROUNDS_TO_REST {
            self.resting.store(true, Ordering::Release);
        }
    }
}

impl ClientInner {
    /// True if a read now would only be counted: the client rests, is
    /// alive, of this process, and not ignoring its reads.
    pub(super) fn rests_now(&self) -> bool {
        self.rest.resting()
            && self.generation == crate::registry::generation()
            && self.ignoring.load(Ordering::Acquire) == 0
            && !self.dead.load(Ordering::Acquire)
    }

    /// A read of `len` bytes at `offset` of `fd` while the client rests:
    /// true if the probe finds all of it cached (the read is only counted);
    /// otherwise the client wakes and the read is to be accounted as usual.
    pub(super) fn read_while_resting(
        &self,
        fd: RawFd,
        offset: u64,
        len: u64,
        probe: Probe,
    ) -> bool {
        // The usual probe: a read inside a span found cached (`client_probe.rs`) costs none, and
        // spans are kept while no round runs.
        match self.probe_read(fd, offset, len, probe) {
            (true, _) => {
                self.rest.count_read();
                true
            }
            (false, _) => {
                self.wake_at(fd, offset);
                false
            }
        }
    }

    /// The application disclosed reads while the client rested: a list set
    /// (`mode` replaces the list, `PF_SET` or `PF_SET_FROM_MARK`, even an
    /// empty one) or `accepted` entries appended. The client wakes, so its
    /// reads are followed from the next one: a round plans the new entries
    /// and a read off the list calls back, without waiting for a read its
    /// probe finds missing (which never comes while the new list is
    /// cached, or when the list was emptied). After an append, the
    /// position is where the client came to rest, behind the reads only
    /// counted since: the next read moves it up to its entry, as a wake
    /// at a miss does. Called under the state lock.
    pub(super) fn wake_on_request(&self, state: &mut super::State, mode: Mode, accepted: usize) {
        let replaces = mode.contains(Mode::SET) || mode.contains(Mode::SET_FROM_MARK);
        if !self.rest.resting() || !(replaces || accepted > 0) {
            return;
        }
        self.rest.wake();
        state.skip_to_next_read = !replaces;
    }

    /// The client wakes at a read of `fd` at `offset` that missed: the
    /// planner moves to that read's entry.
    fn wake_at(&self, fd: RawFd, offset: u64) {
        self.rest.wake();
        let key = PageKey {
            fd,
            page: offset / self.page_size,
        };
        self.lock_state().planner.skip_to(key);
    }

    /// A read made with `RWF_NOWAIT` while the client rested found
    /// `[offset, offset + len)` missing (`track_cached.rs`): the client
    /// wakes and the read is accounted as a miss, which starts a round.
    /// Not left to the probe: the kernel starts reading the missing pages
    /// ahead on the refused read, and the probe counts pages being read as
    /// cached.
    pub(super) fn on_missed_read(
        self: &std::sync::Arc<Self>,
        fd: RawFd,
        offset: u64,
        len: u64,
        first_cached: bool,
    ) {
        if !self.rests_now() {
            return;
        }
        let Some(len) = super::clip_to_file(fd, offset, len) else {
            return;
        };
        self.wake_at(fd, offset);
        self.on_probed_read(fd, offset, len, false, first_cached);
    }
}

/// A round that found its whole window cached and advised nothing, with no
/// miss since it was planned.
fn at_rest(counts: &AdviceCounts, missed: bool) -> bool {
    !missed && counts.calls == 0 && counts.cached_ranges > 0 && counts.pages_fetched == 0
}

#[cfg(test)]
mod tests {
    use super::*;

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
        rest.after_round(&counts(0, 3, 0), false);
        assert!(!rest.resting(), "one round found its window cached");
        rest.after_round(&counts(0, 3, 0), false);
        assert!(rest.resting(), "two in a row did");
        rest.wake();
        assert!(!rest.resting());
        rest.after_round(&counts(0, 3, 0), false);
        assert!(!rest.resting(), "a miss starts the count again");
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
            rest.after_round(&super::tests::counts(0, 3, 0), false);
            rest.after_round(&counts, missed);
            assert!(!rest.resting(), "{counts:?}, missed {missed}");
        }
    }
}
