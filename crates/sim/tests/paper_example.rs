//! The worked example of Cao et al. section 1.1 (Figures 1 and 2), exactly: reference string
//! ABCA, a cache of two blocks holding A and B, fetch time F = 4.

use sim::{find, run_future, Future, Metrics, RunSetup};

const A: u64 = 0;
const B: u64 = 1;
const C: u64 = 2;

/// `policy` on the example.
fn run(policy: &str) -> Metrics {
    let future = Future::from_blocks(&[A, B, C, A]);
    let setup = RunSetup {
        initial: vec![A, B],
        ..RunSetup::simplified(2, 4)
    };
    run_future(find(policy).unwrap(), &future, &setup).unwrap()
}

#[test]
fn no_prefetch_with_optimal_replacement_takes_eight_units() {
    let m = run("opt-demand");
    assert_eq!(
        (m.elapsed, m.stall, m.fetches(), m.hits, m.misses),
        (8, 4, 1, 3, 1)
    );
}

#[test]
fn always_prefetch_takes_ten_units_with_two_stalls_of_three() {
    let m = run("aggressive");
    assert_eq!(
        (m.elapsed, m.stall, m.prefetches, m.demand_fetches),
        (10, 6, 2, 0)
    );
}

#[test]
fn conservative_cannot_discard_b_before_c_so_matches_demand_paging() {
    let m = run("conservative");
    assert_eq!((m.elapsed, m.fetches()), (8, 1));
}

#[test]
fn the_exact_optimum_is_eight_units() {
    assert_eq!(run("optimal").elapsed, 8);
}

#[test]
fn lru_demand_discards_a_then_b_and_takes_twelve_units() {
    let m = run("lru-demand");
    assert_eq!((m.elapsed, m.demand_fetches), (12, 2));
}
