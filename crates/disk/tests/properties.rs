//! Property tests of the public API: schedulers lose and duplicate nothing, and every model's
//! service time stays within physical bounds whatever the request.

use disk::{model_from_name, scheduler_from_name, Request};
use proptest::prelude::*;
use std::time::Duration;

fn requests() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((0u64..1 << 30, 0u64..1000), 0..64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every scheduler returns each pushed request exactly once, whatever the head and time.
    #[test]
    fn schedulers_serve_each_request_once(reqs in requests(), head in 0u64..1 << 30) {
        for name in ["fifo", "clook", "sstf", "deadline", "deadline:0"] {
            let mut sched = scheduler_from_name(name).unwrap();
            for (id, &(addr, arrival_ms)) in reqs.iter().enumerate() {
                sched.push(Request { id: id as u64, addr, len: 4096, arrival: Duration::from_millis(arrival_ms) });
            }
            prop_assert_eq!(sched.len(), reqs.len());
            let mut ids = Vec::new();
            while let Some(r) = sched.pop(head, Duration::from_secs(1)) {
                ids.push(r.id);
            }
            prop_assert!(sched.is_empty());
            ids.sort_unstable();
            prop_assert_eq!(ids, (0..reqs.len() as u64).collect::<Vec<_>>(), "{}", name);
        }
    }

    /// An HDD read of at most 64 KiB never takes longer than overhead + full stroke + one
    /// revolution + the transfer at the innermost rate with a switch per track (< 60 ms on the
    /// 7200 RPM preset), and never less than nothing; garbage addresses do not panic.
    #[test]
    fn hdd_service_is_bounded(reads in prop::collection::vec((any::<u64>(), 1u64..65_536, 0u64..50_000), 1..40)) {
        for name in ["st3500320as", "st3500320as:nocache", "hitachi-18zx"] {
            let mut model = model_from_name(name).unwrap();
            let mut now = Duration::ZERO;
            for &(addr, len, think_us) in &reads {
                now += Duration::from_micros(think_us);
                let took = model.service(now, &Request { id: 0, addr, len, arrival: now });
                prop_assert!(took < Duration::from_millis(60), "{} took {:?}", name, took);
                now += took;
                prop_assert!(model.head() <= model.capacity());
            }
        }
    }
}
