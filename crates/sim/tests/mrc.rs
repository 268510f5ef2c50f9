//! Miss-ratio curves: LRU's one-pass curve (stack distances) equals LRU-demand run at each
//! size, on random strings and on a shipped trace against libCacheSim's counts; OPT's curve
//! never lies above LRU's; a worked example.

use std::path::Path;

use proptest::prelude::*;
use sim::mrc::{curve, default_capacities, StackDistances};
use sim::{find, run_future, Future, RunSetup, TraceFile};

#[test]
fn stack_distances_of_a_small_string() {
    // A B C A B: A, B, C are cold; the second A is at depth 3, the second B at depth 3.
    let future = Future::from_blocks(&[1, 2, 3, 1, 2]);
    let d = StackDistances::of(&future);
    assert_eq!((d.references, d.cold), (5, 3));
    assert_eq!(d.histogram, [0, 0, 0, 2]);
    assert_eq!((d.lru_misses(2), d.lru_misses(3)), (5, 3));
    let points = curve("s", &future, &[1, 2, 3]).unwrap();
    let opt: Vec<u64> = points.iter().map(|p| p.opt_misses).collect();
    // MIN with 2 slots: C evicts B (used after A), A hits, B misses again.
    assert_eq!(opt, [5, 4, 3]);
}

#[test]
fn the_lru_curve_matches_libcachesim_on_a_shipped_trace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let text = std::fs::read_to_string(root.join("libcachesim_expected.json")).unwrap();
    let expected: serde_json::Value = serde_json::from_str(&text).unwrap();
    let future =
        Future::load(TraceFile::new(root.join("multi2.trace.gz")).open().unwrap()).unwrap();
    let d = StackDistances::of(&future);
    let lru = &expected["traces"]["multi2"]["misses"]["oracleGeneral"]["lru"];
    for (size, misses) in lru.as_object().unwrap() {
        assert_eq!(
            d.lru_misses(size.parse().unwrap()),
            misses.as_u64().unwrap(),
            "cache {size}"
        );
    }
    let sizes = default_capacities(&future);
    assert_eq!(*sizes.last().unwrap(), future.distinct());
    assert_eq!(d.lru_misses(future.distinct()), d.cold);
}

proptest! {
    #[test]
    fn one_pass_lru_equals_lru_demand_and_opt_is_never_worse(
        blocks in proptest::collection::vec(0u64..24, 1..200),
        capacity in 1usize..30,
    ) {
        let future = Future::from_blocks(&blocks);
        let lru = run_future(find("lru-demand").unwrap(), &future, &RunSetup::simplified(capacity, 1)).unwrap();
        let d = StackDistances::of(&future);
        prop_assert_eq!(d.lru_misses(capacity), lru.misses);
        let point = &curve("p", &future, &[capacity]).unwrap()[0];
        prop_assert!(point.opt_misses <= point.lru_misses);
        prop_assert!(point.opt_misses >= d.cold);
    }
}
