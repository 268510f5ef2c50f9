//! The contention controller: additive increase, multiplicative decrease of
//! the reorder-buffer size.
//!
//! Follows libprefetch (ATC 2009) section 4.6. The buffer starts at 90% of
//! the memory available for caching (no slow start: the library knows the
//! cache size), grows by 10% of that memory after a round that was consumed
//! with no premature eviction, and halves when prefetched pages are evicted
//! before use. It never exceeds the 90% cap.
//!
//! **Slow start** ([`Aimd::starting_at`]): the buffer starts small and
//! multiplies by its growth factor (2 unless the device's costs say more,
//! [`Aimd::with_growth`] and the planner's header) at each step of the
//! consumer's progress with no premature eviction, until it
//! reaches the threshold (the cap, or half the size at the last premature
//! eviction); then it grows by the paper's additive step. A list the
//! application abandons early (a `LIMIT 10` query reading ten rows through
//! an index whose whole scan was listed) then costs one small window, not
//! 90% of memory read for nothing; a list read to its end reaches the
//! paper's size after a few rounds (log2(cap / start) of them), in the
//! spirit of PostgreSQL's `read_stream` look-ahead distance and of TCP's
//! slow start, which AIMD already borrows from.
//!
//! Deviations: the paper gives no lower bound; a floor (default 1 MiB) keeps
//! a run of evictions from shrinking the buffer to nothing, which would turn
//! every read into a round (a slow start below the floor halves no lower
//! than where it started). Slow start is ours; [`Aimd::new`] is the paper's
//! controller.

/// AIMD state for one client. All sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aimd {
    available: u64,
    floor: u64,
    current: u64,
    /// Below this size a clean round doubles the buffer (slow start); at or
    /// above it, the additive step applies.
    threshold: u64,
    /// What a slow-start step multiplies the buffer by (at least 2).
    growth: u64,
}

/// Fraction of the available memory used as the cap and the starting size.
const CAP_PERCENT: u64 = 90;
/// Additive step, as a percentage of the available memory.
const STEP_PERCENT: u64 = 10;

/// `percent`% of `bytes`, exact (no overflow, no early rounding).
fn percent_of(bytes: u64, percent: u64) -> u64 {
    (u128::from(bytes) * u128::from(percent) / 100) as u64
}

impl Aimd {
    /// A controller for `available` bytes of cache memory, never going below
    /// `floor` (nor above the cap, even if `floor` is larger).
    pub fn new(available: u64, floor: u64) -> Aimd {
        let mut aimd = Aimd {
            available,
            floor,
            current: 0,
            threshold: 0,
            growth: 2,
        };
        aimd.current = aimd.cap();
        aimd.threshold = aimd.cap();
        aimd
    }

    /// A controller that starts at `start` bytes (at most the cap) and
    /// doubles after each clean round up to the cap (slow start), then
    /// behaves as [`Aimd::new`]'s. The floor is lowered to `start` if above.
    pub fn starting_at(available: u64, floor: u64, start: u64) -> Aimd {
        let mut aimd = Aimd::new(available, floor.min(start.max(1)));
        aimd.current = start.min(aimd.cap());
        aimd
    }

    /// The same controller whose slow-start steps multiply the buffer by
    /// `growth` (at least 2) instead of doubling it.
    pub fn with_growth(mut self, growth: u64) -> Aimd {
        self.growth = growth.max(2);
        self
    }

    /// What a slow-start step multiplies the buffer by.
    pub fn growth(&self) -> u64 {
        self.growth
    }

    /// Ends slow start: the buffer jumps to the threshold (the cap unless a
    /// premature eviction lowered it), as the paper starts.
    pub fn skip_slow_start(&mut self) {
        self.current = self.current.max(self.threshold.min(self.cap()));
    }

    /// 90% of the available memory.
    pub fn cap(&self) -> u64 {
        percent_of(self.available, CAP_PERCENT)
    }

    /// The memory available for caching, as last set.
    pub fn available(&self) -> u64 {
        self.available
    }

    /// The lowest size the decrease goes to.
    pub fn floor(&self) -> u64 {
        self.floor.min(self.cap())
    }

    /// The current reorder-buffer size.
    pub fn current(&self) -> u64 {
        self.current
    }

    /// What the plan may keep cached: the threshold, or the current size if
    /// above it. Slow start limits how far ahead the plan reads, not what it
    /// keeps: until a premature eviction says memory is short (and lowers
    /// the threshold), pages already read stay while the cap allows.
    pub fn keep_limit(&self) -> u64 {
        self.threshold.min(self.cap()).max(self.current)
    }

    /// True while a clean round doubles the buffer (below the threshold).
    pub fn in_slow_start(&self) -> bool {
        self.current < self.threshold.min(self.cap())
    }

    /// After a round consumed with no premature eviction: multiply by the
    /// growth factor while below the threshold (slow start), else grow by
    /// 10% of the available memory; never above the cap.
    pub fn increase(&mut self) {
        let grown = if self.current < self.threshold {
            self.current.saturating_mul(self.growth).min(self.threshold)
        } else {
            let step = percent_of(self.available, STEP_PERCENT);
            self.current.saturating_add(step.max(1))
        };
        self.current = grown.min(self.cap());
    }

    /// On premature eviction: halve, down to the floor; growth from there
    /// is additive (the threshold drops to the new size).
    pub fn decrease(&mut self) {
        self.current = (self.current / 2).max(self.floor());
        self.threshold = self.current;
    }

    /// The memory available for caching changed (e.g. a new cgroup limit):
    /// keep the current size unless it is above the new cap.
    pub fn set_available(&mut self, available: u64) {
        self.available = available;
        self.current = self.current.min(self.cap());
        self.threshold = self.threshold.min(self.cap());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn starts_at_ninety_percent() {
        assert_eq!(Aimd::new(10 * GIB, 1 << 20).current(), 9 * GIB);
    }

    #[test]
    fn halves_then_grows_by_a_tenth() {
        let mut aimd = Aimd::new(10 * GIB, 1 << 20);
        aimd.decrease();
        assert_eq!(aimd.current(), 9 * GIB / 2);
        aimd.increase();
        assert_eq!(aimd.current(), 9 * GIB / 2 + GIB);
        for _ in 0..10 {
            aimd.increase();
        }
        assert_eq!(aimd.current(), 9 * GIB);
    }

    #[test]
    fn decrease_stops_at_floor() {
        let mut aimd = Aimd::new(100 << 20, 8 << 20);
        for _ in 0..20 {
            aimd.decrease();
        }
        assert_eq!(aimd.current(), 8 << 20);
    }

    #[test]
    fn slow_start_doubles_to_the_cap_then_steps() {
        let mut aimd = Aimd::starting_at(10 * GIB, 1 << 20, 128 << 10);
        assert_eq!(aimd.current(), 128 << 10);
        aimd.increase();
        assert_eq!(aimd.current(), 256 << 10);
        for _ in 0..20 {
            aimd.increase();
        }
        assert_eq!(aimd.current(), 9 * GIB, "doubling stops at the cap");
        aimd.decrease();
        assert_eq!(aimd.current(), 9 * GIB / 2);
        aimd.increase();
        assert_eq!(
            aimd.current(),
            9 * GIB / 2 + GIB,
            "after an eviction, additive"
        );
    }

    #[test]
    fn a_larger_growth_reaches_the_cap_in_fewer_steps() {
        let mut aimd = Aimd::starting_at(10 * GIB, 1 << 20, 128 << 10).with_growth(128);
        aimd.increase();
        assert_eq!(aimd.current(), 16 << 20);
        aimd.increase();
        assert_eq!(aimd.current(), 2 * GIB);
        aimd.increase();
        assert_eq!(aimd.current(), 9 * GIB);
    }

    #[test]
    fn skipping_slow_start_jumps_to_the_cap() {
        let mut aimd = Aimd::starting_at(10 * GIB, 1 << 20, 128 << 10);
        aimd.skip_slow_start();
        assert_eq!(aimd.current(), 9 * GIB);
        assert!(!aimd.in_slow_start());
    }

    #[test]
    fn slow_start_below_the_floor_halves_no_lower_than_its_start() {
        let mut aimd = Aimd::starting_at(10 * GIB, 1 << 20, 128 << 10);
        aimd.decrease();
        assert_eq!(aimd.current(), 128 << 10);
    }

    #[test]
    fn a_new_cap_lowers_but_never_raises_the_size() {
        let mut aimd = Aimd::starting_at(10 * GIB, 1 << 20, 128 << 10);
        aimd.set_available(100 << 10);
        assert_eq!(aimd.current(), 90 << 10);
        aimd.set_available(10 * GIB);
        assert_eq!(aimd.current(), 90 << 10);
    }

    proptest! {
        #[test]
        fn stays_within_bounds(available in 0u64..(64 * GIB), floor in 0u64..(1 << 30),
                               steps in proptest::collection::vec(any::<bool>(), 0..200)) {
            let mut aimd = Aimd::new(available, floor);
            for grow in steps {
                if grow { aimd.increase() } else { aimd.decrease() }
                prop_assert!(aimd.current() <= aimd.cap());
                prop_assert!(aimd.current() >= aimd.floor());
            }
        }

        #[test]
        fn slow_start_stays_within_bounds(available in 0u64..(64 * GIB), floor in 0u64..(1 << 30),
                                          start in 1u64..(1 << 30),
                                          steps in proptest::collection::vec(any::<bool>(), 0..200)) {
            let mut aimd = Aimd::starting_at(available, floor, start);
            prop_assert!(aimd.current() <= start.max(1));
            for grow in steps {
                if grow { aimd.increase() } else { aimd.decrease() }
                prop_assert!(aimd.current() <= aimd.cap());
                prop_assert!(aimd.current() >= aimd.floor());
            }
        }
    }
}
