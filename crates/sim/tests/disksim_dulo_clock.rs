//! DULO with every sequence of size 1 is CLOCK (FAST'05 s3.4: "when all sequences are random
//! blocks, the algorithm degenerates into the LRU replacement algorithm"): on references to
//! blocks no two of which are adjacent on disk, DULO and CLOCK keep the same stack and evict
//! the same blocks, for any cache, bank and evicting-section size.

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;
use sim::disksim::replace::clock::Clock;
use sim::disksim::replace::dulo::Dulo;
use sim::disksim::{Replacement, Touch};

fn touch(prefetched: bool) -> Touch {
    Touch {
        stream: 0,
        now: Duration::ZERO,
        prefetched,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn dulo_without_sequences_is_clock(
        capacity in 2usize..40,
        bank in 1usize..20,
        evicting in 1usize..40,
        references in prop::collection::vec((0u64..60, any::<bool>()), 1..400),
    ) {
        let mut dulo = Dulo::new(capacity, bank, evicting);
        let mut clock = Clock::default();
        let mut cached = BTreeSet::new();
        for (i, &(id, prefetched)) in references.iter().enumerate() {
            let block = id * 2;
            if cached.contains(&block) {
                dulo.on_hit(block, touch(prefetched));
                clock.on_hit(block, touch(prefetched));
            } else {
                if cached.len() == capacity {
                    let victim = clock.evict(Duration::ZERO);
                    prop_assert_eq!(dulo.evict(Duration::ZERO), victim, "reference {}", i);
                    cached.remove(&victim.unwrap());
                }
                dulo.on_insert(block, touch(prefetched));
                clock.on_insert(block, touch(prefetched));
                cached.insert(block);
            }
            prop_assert_eq!(dulo.order(), clock.order(), "reference {}", i);
        }
    }
}
