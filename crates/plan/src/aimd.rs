//! The contention controller: additive increase, multiplicative decrease of
//! the reorder-buffer size.
//!
//! Follows libprefetch (ATC 2009) section 4.6. The buffer starts at 90% of
//! the memory available for caching (no slow start: the library knows the
//! cache size), grows by 10% of that memory after a round that was consumed
//! with no premature eviction, and halves when prefetched pages are evicted
//! before use. It never exceeds the 90% cap.
//!
//! Deviations: the paper gives no lower bound; a floor (default 1 MiB) keeps
//! a run of evictions from shrinking the buffer to nothing, which would turn
//! every read into a round.

/// AIMD state for one client. All sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aimd {
    available: u64,
    floor: u64,
    current: u64,
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
        };
        aimd.current = aimd.cap();
        aimd
    }

    /// 90% of the available memory.
    pub fn cap(&self) -> u64 {
        percent_of(self.available, CAP_PERCENT)
    }

    /// The lowest size the decrease goes to.
    pub fn floor(&self) -> u64 {
        self.floor.min(self.cap())
    }

    /// The current reorder-buffer size.
    pub fn current(&self) -> u64 {
        self.current
    }

    /// After a round consumed with no premature eviction: grow by 10% of the
    /// available memory, up to the cap.
    pub fn increase(&mut self) {
        let step = percent_of(self.available, STEP_PERCENT);
        self.current = self.current.saturating_add(step.max(1)).min(self.cap());
    }

    /// On premature eviction: halve, down to the floor.
    pub fn decrease(&mut self) {
        self.current = (self.current / 2).max(self.floor());
    }

    /// The memory available for caching changed (e.g. a new cgroup limit):
    /// keep the current size unless it is above the new cap.
    pub fn set_available(&mut self, available: u64) {
        self.available = available;
        self.current = self.current.clamp(self.floor(), self.cap());
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
    }
}
