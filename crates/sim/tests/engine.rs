//! The engine's time model and rule checks, on cases small enough to follow by hand.

use sim::cache::{Block, Interner};
use sim::future::Pos;
use sim::policy::Ctx;
use sim::policy::{optimal, AtIdle, Fetch, PolicyInfo};
use sim::trace::Reference;
use sim::{find, run_future, Future, ReferenceTime, RunSetup, SimError, Timing};

fn timed(blocks: &[(u64, u64)]) -> Future {
    Future::load(blocks.iter().map(|&(block, think)| {
        Ok(Reference {
            block,
            think: Some(think),
        })
    }))
    .unwrap()
}

fn realistic(capacity: usize, fetch: u64) -> RunSetup {
    let timing = Timing {
        reference: ReferenceTime::FromTrace,
        ..Timing::simplified(fetch)
    };
    RunSetup {
        timing,
        ..RunSetup::simplified(capacity, fetch)
    }
}

/// Realistic model: A then B, 10 units of compute each, F = 4. Aggressive stalls 4 for A,
/// prefetches B at 4 while A computes, so B is ready at 14: 24 in all. LRU-demand: 28.
#[test]
fn realistic_model_overlaps_a_prefetch_with_compute_time() {
    let future = timed(&[(0, 10), (1, 10)]);
    let aggressive = run_future(find("aggressive").unwrap(), &future, &realistic(2, 4)).unwrap();
    assert_eq!(
        (aggressive.elapsed, aggressive.stall, aggressive.prefetches),
        (24, 4, 1)
    );
    let demand = run_future(find("lru-demand").unwrap(), &future, &realistic(2, 4)).unwrap();
    assert_eq!((demand.elapsed, demand.stall), (28, 8));
}

/// A fetch that completes in the middle of a reference's compute time frees the disk at once:
/// with F = 3 and 10 units per reference, aggressive fetches C while A computes, right after B.
#[test]
fn a_fetch_completing_mid_reference_starts_the_next_one_at_once() {
    let future = timed(&[(0, 10), (1, 10), (2, 10)]);
    let m = run_future(find("aggressive").unwrap(), &future, &realistic(3, 3)).unwrap();
    assert_eq!((m.elapsed, m.stall, m.fetches()), (33, 3, 3));
}

#[test]
fn the_realistic_model_needs_timestamps() {
    let future = Future::from_blocks(&[0, 1]);
    let error = run_future(find("lru-demand").unwrap(), &future, &realistic(1, 1)).unwrap_err();
    assert!(error.to_string().contains("timestamps"), "{error}");
}

#[test]
fn absurd_settings_are_rejected() {
    let future = Future::from_blocks(&[0, 1]);
    let lru = find("lru-demand").unwrap();
    for setup in [
        RunSetup::simplified(0, 1),
        RunSetup::simplified(1, 0),
        RunSetup {
            initial: vec![1, 2],
            ..RunSetup::simplified(1, 1)
        },
        RunSetup {
            depth: 0,
            ..RunSetup::simplified(1, 1)
        },
        RunSetup {
            depth: 3,
            ..RunSetup::simplified(2, 1)
        },
    ] {
        assert!(matches!(
            run_future(lru, &future, &setup),
            Err(SimError::Config(_))
        ));
    }
}

/// Section 3.4.3's example: with F dividing k, the cycle b1..bk, b(k+1)..b(k+k/F) repeated
/// defeats conservative, which stalls the full F on every fetch, while the optimum, once past
/// the start, overlaps every fetch: its stall does not grow with passes. (With k = 6, F = 2;
/// at k = 4, F = 2 or k = 6, F = 3 even the optimum stalls 1 or 2 units per pass.)
#[test]
fn conservative_never_overlaps_on_the_papers_cyclic_example() {
    let (k, f) = (6usize, 2u64);
    let stalls = |passes: usize| {
        let cycle: Vec<u64> = (0..(k as u64 + k as u64 / f)).collect();
        let string: Vec<u64> = cycle
            .iter()
            .copied()
            .cycle()
            .take(cycle.len() * passes)
            .collect();
        let future = Future::from_blocks(&string);
        let initial: Vec<u64> = (0..k as u64).collect();
        let setup = RunSetup {
            initial: initial.clone(),
            ..RunSetup::simplified(k, f)
        };
        let conservative = run_future(find("conservative").unwrap(), &future, &setup).unwrap();
        assert_eq!(
            conservative.stall,
            f * conservative.fetches(),
            "never overlaps"
        );
        let best = optimal::search(&future, k, &[0, 1, 2, 3, 4, 5], future.distinct(), f).unwrap();
        (conservative.stall, best.elapsed - string.len() as u64)
    };
    let (short, long) = (stalls(3), stalls(5));
    assert!(
        long.0 >= short.0 + 2 * k as u64,
        "conservative {short:?} -> {long:?}"
    );
    assert_eq!(long.1, short.1, "optimum stall {short:?} -> {long:?}");
}

#[test]
fn the_exact_search_refuses_large_instances() {
    let future = Future::from_blocks(&(0..40).collect::<Vec<u64>>());
    let error = run_future(
        find("optimal").unwrap(),
        &future,
        &RunSetup::simplified(4, 2),
    )
    .unwrap_err();
    assert!(error.to_string().contains("at most"), "{error}");
}

/// A policy that breaks the model: it evicts a block that is not cached.
struct Cheat;

impl AtIdle for Cheat {
    fn on_request(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}
    fn demand_only(&self) -> bool {
        false
    }
    fn warm(&self, _: Block, _: &Interner) {}
    fn likely_victim(&self) -> Option<Block> {
        None
    }

    fn on_reference(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}
    fn on_arrival(&mut self, _: Block, _: &mut Ctx<'_>) {}
    fn demand_victim(&mut self, block: Block, _: &mut Ctx<'_>) -> Option<Block> {
        Some(block + 1)
    }
    fn prefetch(&mut self, _: &mut Ctx<'_>) -> Option<Fetch> {
        None
    }
}

const CHEAT: PolicyInfo = PolicyInfo {
    name: "cheat",
    summary: "breaks the model",
    needs_future: false,
    build: |_| Ok(Box::new(Cheat)),
};

#[test]
fn decisions_that_break_the_model_are_errors_not_panics() {
    let future = Future::from_blocks(&[0, 1, 2]);
    let error = run_future(&CHEAT, &future, &RunSetup::simplified(1, 1)).unwrap_err();
    assert!(
        matches!(
            error,
            SimError::Policy {
                policy: "cheat",
                ..
            }
        ),
        "{error}"
    );
}

/// Section 4.1: LRU-throttled ignores rule 3. On A B C A B D with k = 3 (throttle 1) and F = 1,
/// its walk refreshes C, A, B, then discards the least recent of them, A (needed at position 3),
/// to prefetch D (needed at 5); A's demand fetch then discards B. Six fetches where LRU-demand
/// makes four.
#[test]
fn lru_throttled_breaks_do_no_harm_and_fetches_more_than_lru_demand() {
    let future = Future::from_blocks(&[0, 1, 2, 0, 1, 3]);
    let setup = RunSetup::simplified(3, 1);
    let throttled = run_future(find("lru-throttled").unwrap(), &future, &setup).unwrap();
    let demand = run_future(find("lru-demand").unwrap(), &future, &setup).unwrap();
    assert_eq!(
        (throttled.fetches(), throttled.prefetches, demand.fetches()),
        (6, 2, 4)
    );
    let sensible = run_future(find("lru-sensible").unwrap(), &future, &setup).unwrap();
    assert_eq!(sensible.fetches(), 4);
}

/// Section 3.4.1's example (F = k - 2): from a cache holding b1..bk, on b1 b2 .. bk b' b1
/// aggressive prefetches b' right after b1 (discarding b1, the only block it may), so b1's
/// prefetch starts late and stalls F - 2; the optimum waits one reference to discard b2, never
/// needed again, and does not stall.
#[test]
fn aggressive_stalls_f_minus_2_on_the_papers_lower_bound_example() {
    let (k, f) = (6usize, 4u64);
    let mut string: Vec<u64> = (0..k as u64).collect();
    string.extend([k as u64, 0]);
    let future = Future::from_blocks(&string);
    let setup = RunSetup {
        initial: (0..k as u64).collect(),
        ..RunSetup::simplified(k, f)
    };
    let aggressive = run_future(find("aggressive").unwrap(), &future, &setup).unwrap();
    assert_eq!(
        (aggressive.elapsed, aggressive.stall, aggressive.prefetches),
        (10, f - 2, 2)
    );
    let initial: Vec<Block> = (0..k as Block).collect();
    let best = optimal::search(&future, k, &initial, future.distinct(), f).unwrap();
    assert_eq!(best.elapsed, string.len() as u64);
}

/// One-block lookahead on 0 1 2 3 (cold cache of 4, F = 2): requesting 1 after 0 arms 2,
/// fetched while 1 is referenced; likewise 3 while 2 is; 4 is still in flight at the end and
/// is not counted. Stalls 2 + 2 + 1 + 1: 10 units where LRU-demand takes 12.
#[test]
fn one_block_lookahead_overlaps_the_next_block_with_the_current_reference() {
    let future = Future::from_blocks(&[0, 1, 2, 3]);
    let m = run_future(
        find("lru-obl").unwrap(),
        &future,
        &RunSetup::simplified(4, 2),
    )
    .unwrap();
    assert_eq!(
        (
            m.elapsed,
            m.stall,
            m.demand_fetches,
            m.prefetches,
            m.cancelled_prefetches
        ),
        (10, 6, 2, 2, 1)
    );
    let demand = run_future(
        find("lru-demand").unwrap(),
        &future,
        &RunSetup::simplified(4, 2),
    )
    .unwrap();
    assert_eq!(demand.elapsed, 12);
}

/// Two fetches in flight (two disks): aggressive on 0 1 2 3 (cold cache of 4, F = 4) fetches
/// 0 and 1 together, then 2 and 3: 10 units, where one fetch at a time (the paper's model)
/// takes 17 (4 + 1, then three stalls of 3, then 1).
#[test]
fn a_second_fetch_in_flight_overlaps_fetches() {
    let future = Future::from_blocks(&[0, 1, 2, 3]);
    let run = |depth| {
        let setup = RunSetup {
            depth,
            ..RunSetup::simplified(4, 4)
        };
        run_future(find("aggressive").unwrap(), &future, &setup).unwrap()
    };
    assert_eq!((run(1).elapsed, run(1).stall), (17, 13));
    assert_eq!((run(2).elapsed, run(2).stall, run(2).fetches()), (10, 6, 4));
    let setup = RunSetup {
        depth: 2,
        ..RunSetup::simplified(4, 4)
    };
    assert!(run_future(find("optimal").unwrap(), &future, &setup).is_err());
}
