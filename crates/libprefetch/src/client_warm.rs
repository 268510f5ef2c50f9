//! A client at rest while the page cache holds its reads: as Linux's
//! read-ahead stops when it keeps finding pages cached, a client whose last
//! two rounds found every page of their windows cached already (no WILLNEED
//! issued, nothing dropped), with no read missing between them, rests. A
//! resting client's read costs a counter and, where it may be made with
//! `RWF_NOWAIT` (`track_cached.rs`), the first read at rest and then one
//! read every [`crate::client_rest::probe_period`] is its own probe; other reads (at the file position, on files that refuse the
//! flag) cost one residency probe (the paper's `fincore` before each read,
//! ATC 2009 section 4.5; none inside a span found cached,
//! `client_probe.rs`): no planner accounting, no round, no callback, no
//! hand-over to the advice thread. The first read a probe finds missing
//! wakes the client: the planner's position moves up to that read's entry
//! (`Planner::skip_to`; if the list no longer holds it, the position moves
//! on by the reads counted at rest, and the read diverges and calls back
//! for the list from there), and the read is accounted as
//! any other, a miss, so a round starts at once. A request that discloses
//! reads (a list set, even an empty one, or entries appended) wakes the
//! client too: its reads are followed from the next one (section 4.2: the
//! list's reads are planned, and a read off it calls back), where waiting
//! for a miss would leave a new list's callbacks unmade while its pages
//! are cached. The reads counted at rest move the position as at a read
//! that wakes the client: after an append, at the next read; before a list
//! set, on the list they were made on, so the last mark they passed is the
//! one the new list's callbacks are told (a list set keeps the last mark).
//! A list set starts the count of clean rounds over, and a
//! client without a list never rests (its every read calls back), and a
//! rest lasts at most as many reads as its list held unread entries when
//! it began: reads only counted cannot tell where they are on the list, so
//! past that many they may be past its end, where the next read, off the
//! list, must call back (a scan's next stretch is listed there); the
//! client wakes and that read moves the position up to its entry.
//!
//! The probe's period trades its cost against a miss seen late. A probe
//! costs 0.2 us more than the plain read it replaces (`preadv2` with
//! `RWF_NOWAIT` against `pread` of a cached 4 KiB page, which takes about
//! 1.5 us); a read the probe would have found missing, made unprobed, and
//! each read after it until the next probe wait for the device: a far
//! request each, the costliest of the client's devices' measured profiles
//! (`profile.rs`; unknown without one). With a period of `n` reads and a
//! chance `p` that a resting read misses, a resting read's expected cost
//! is `0.2 us / n` of probing plus `p * miss * (n - 1) / 2` of reads
//! waiting late, least at `n = sqrt(2 * 0.2 us / (p * miss))`; `p` is
//! Laplace's rule of succession over the reads found cached since the
//! client came to rest, `1 / (reads + 2)`. So a costlier miss probes
//! denser, and a longer rest sparser. The period is kept between 5 (five
//! reads share a probe's cost: within 1/32 of a cached read, the warm
//! rows' noise) and 64 (a miss seen at most 63 reads late); a device
//! without a profile probes at 5. On this machine's disk (a far request 8
//! us) the period is 5 for the first 600 reads at rest, 22 after 10,000
//! and 64 after 83,000; on the emulated 7200 RPM disk it stays 5 (FUSE
//! refuses the flag anyway).
//!
//! A round is found clean where it is planned: before its advice is
//! handed to the advice thread, the reading thread asks `cachestat` (one
//! call a range, about 0.3 us, never waiting for the device) whether every
//! range it fetches is cached already and it drops nothing; if so, no
//! advice is due and the round ends there (`settle_if_cached`), counting
//! towards rest at once. Left to the advice thread, the verdict came late:
//! the reader planned a round at nearly every read of a warm random list
//! (about 160 in its first 230 reads) while the thread caught up, so the
//! client rested only after hundreds of followed reads, and the thread it
//! started left glibc's cancellation checks on for every later read of the
//! process. A warm client so rests after its first two rounds (within a few
//! reads) and never starts the thread. A round with a range not all cached
//! stops at that range's call and goes to the advice thread as before (a
//! cold round's cost: one `cachestat`), as does any round while another's
//! advice is still out, so advice is issued and accounted in order.
//!
//! Deviations: the paper plans a round whenever one is due; a resting client
//! plans none until a read misses or a request discloses more reads, and
//! follows no divergence until then; where the list cannot place the reads
//! it counted at rest (it wakes at a read not on the list, or a list set
//! replaces the list they were made on), they are taken to have followed
//! the list (as many entries passed, the last mark among them). The paper
//! probes every read; here a miss among a resting client's unprobed reads
//! is seen at its next probe, at most `probe_period - 1` (4 to 63) reads
//! later.

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

use plan::{Mode, RoundPlan};

use super::ClientInner;
use crate::advice::AdviceCounts;
use crate::residency::{cachestat, Probe};

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
                self.wake_for_next_read(&mut self.lock_state());
                false
            }
        }
    }

    /// Ends a round planned with nothing to advise where it was planned:
    /// true if `plan` drops nothing, has no reverse pass to issue, and
    /// `cachestat` finds every range it fetches cached, and no other
    /// round's advice is out (`rounds_in_flight` counts this one). The
    /// round is then accounted as the advice thread would have (no call,
    /// its ranges cached), without the thread. Call without the state lock.
    pub(super) fn settle_if_cached(&self, plan: &RoundPlan) -> bool {
        let reverse = self.config.reverse_pass && !plan.reverse.is_empty();
        if !plan.evict.is_empty() || reverse || plan.fetch.is_empty() {
            return false;
        }
        if self.rounds_in_flight.load(Ordering::Acquire) != 1 {
            return false;
        }
        let page = self.page_size;
        let all_cached = plan.fetch.iter().all(|range| {
            cachestat(range.fd, range.start * page, range.len * page)
                .is_ok_and(|stat| stat.nr_cache >= range.len)
        });
        if !all_cached {
            return false;
        }
        let counts = AdviceCounts {
            cached_ranges: plan.fetch.len() as u64,
            ..AdviceCounts::default()
        };
        self.end_round(&counts, &plan.fetch, &[]);
        true
    }

    /// A request in `mode` is about to change the list: if it sets one
    /// (`PF_SET` or `PF_SET_FROM_MARK`) on a client that rested, the reads
    /// it counted at rest are taken to have followed the list they were
    /// made on, before that list is replaced (as many entries passed, the
    /// last mark among them), so the new list's callbacks are told the last
    /// mark those reads reached: setting a list keeps the last mark
    /// (`plan::AccessList`), and `PF_SET_FROM_MARK` cuts at the position
    /// either way. Called under the state lock.
    pub(super) fn before_request(&self, state: &mut super::State, mode: Mode) {
        if !replaces(mode) {
            return;
        }
        self.leave_rest(state);
        if std::mem::take(&mut state.skip_to_next_read) {
            let passed = std::mem::take(&mut state.passed_at_rest);
            state.planner.pass_entries(passed);
        }
    }

    /// The application disclosed reads while the client rested: a list set
    /// (`mode` replaces the list, `PF_SET` or `PF_SET_FROM_MARK`, even an
    /// empty one; its reads at rest were passed before,
    /// [`Self::before_request`]) or `accepted` entries appended. The
    /// client wakes, so its reads are followed from the next one: a round
    /// plans the new entries and a read off the list calls back, without
    /// waiting for a read its probe finds missing (which never comes while
    /// the new list is cached, or when the list was emptied). After an
    /// append, the position is where the client came to rest, behind the
    /// reads only counted since: the next read moves it up to its entry,
    /// or, off the list, on by those reads, as at a read that wakes it.
    /// Called under the state lock.
    pub(super) fn wake_on_request(&self, state: &mut super::State, mode: Mode, accepted: usize) {
        if replaces(mode) {
            // A new list's rest count starts over: its own rounds must find it cached.
            self.rest.wake();
        } else if accepted > 0 {
            self.leave_rest(state);
        }
    }

    /// The client wakes if it rests, its count of reads run out or not: the
    /// reads it counted at rest are left to the next read's accounting, as
    /// at a read that wakes it ([`Self::wake_for_next_read`]). Called under
    /// the state lock.
    fn leave_rest(&self, state: &mut super::State) {
        if self.rest.resting() || self.rest.ended_by_reads() {
            self.wake_for_next_read(state);
        }
    }

    /// The reads counted at rest may have passed the end of the list
    /// (`Rest::until`): the client wakes at its next read ([`Self::wake_for_next_read`]).
    pub(super) fn wake_if_rest_ran_out(&self) {
        if self.rest.ended_by_reads() {
            self.wake_for_next_read(&mut self.lock_state());
        }
    }

    /// The client wakes; the read it wakes at, accounted next, moves the
    /// planner's position up to its entry or, off the list, on by the reads
    /// counted at rest, taken to have followed the list (as many entries
    /// passed, the last mark among them). Called under the state lock.
    fn wake_for_next_read(&self, state: &mut super::State) {
        state.passed_at_rest = self.rest.counted_at_rest();
        self.rest.wake();
        state.skip_to_next_read = true;
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
        self.wake_for_next_read(&mut self.lock_state());
        self.on_probed_read(fd, offset, len, false, first_cached);
    }
}

/// True if a request in `mode` sets the list (`PF_SET`, `PF_SET_FROM_MARK`).
fn replaces(mode: Mode) -> bool {
    mode.contains(Mode::SET) || mode.contains(Mode::SET_FROM_MARK)
}
