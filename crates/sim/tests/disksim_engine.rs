//! The disk-timed engine's timing rules, each checked on a case small enough to work by hand:
//! streams share one disk in FIFO order, think time delays the next reference, a reference to a
//! block still in flight waits for that request, and a time limit cuts a closed loop.

use std::time::Duration;

use sim::disksim::engine::{simulate, EngineError, RunSpec};
use sim::disksim::{DiskMetrics, EngineConfig, Layout, PolicySpec, Step, Workload};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn spec(prefetcher: &str, cache: usize) -> RunSpec {
    RunSpec {
        replacement: PolicySpec::named("clock"),
        prefetcher: PolicySpec::parse(prefetcher).unwrap(),
        scheduler: "fifo".into(),
        disk: "fixed:10".into(),
        config: EngineConfig::with_cache(cache),
    }
}

fn two_files(streams: Vec<Vec<Step>>) -> Workload {
    Workload {
        layout: Layout::contiguous(&[4, 4], 100, 4096),
        streams,
    }
}

fn run(workload: &Workload, spec: &RunSpec) -> DiskMetrics {
    simulate(workload, spec).unwrap()
}

#[test]
fn two_streams_take_turns_on_one_disk() {
    let workload = two_files(vec![
        vec![Step::at(0, 0), Step::at(0, 1)],
        vec![Step::at(1, 0), Step::at(1, 1)],
    ]);
    let m = run(&workload, &spec("none", 16));
    assert_eq!(m.requests, 4);
    assert_eq!(m.elapsed, ms(40));
    assert_eq!(m.disk_busy, ms(40));
    assert_eq!(m.stall, ms(30 + 40));
    assert_eq!(m.misses, 4);
}

#[test]
fn think_time_comes_before_the_reference() {
    let mut second = Step::at(0, 1);
    second.think = ms(5);
    let workload = two_files(vec![vec![Step::at(0, 0), second]]);
    let m = run(&workload, &spec("none", 16));
    assert_eq!(m.elapsed, ms(25));
    assert_eq!(m.stall, ms(20));
}

#[test]
fn a_block_in_flight_is_waited_for_not_fetched_again() {
    let workload = two_files(vec![vec![Step::at(0, 0)], vec![Step::at(0, 2)]]);
    let m = run(&workload, &spec("readahead:init=4", 16));
    assert_eq!(m.requests, 1);
    assert_eq!(m.blocks_fetched, 4);
    assert_eq!(m.inflight_hits, 1);
    assert_eq!(m.elapsed, ms(10));
    assert_eq!(m.hit_ratio(), 0.5);
}

#[test]
fn a_time_limit_cuts_a_closed_loop() {
    let steps = (0..4)
        .flat_map(|b| [Step::at(0, b), Step::at(1, b)])
        .collect();
    let workload = two_files(vec![steps]);
    let mut limited = spec("none", 16);
    limited.config.time_limit = Some(ms(35));
    let m = run(&workload, &limited);
    assert_eq!(m.elapsed, ms(35));
    assert_eq!(m.references, 4);
}

#[test]
fn prefetched_blocks_evicted_unused_are_counted() {
    let workload = two_files(vec![vec![Step::at(0, 0), Step::at(1, 0), Step::at(1, 1)]]);
    let m = run(&workload, &spec("readahead:init=4", 4));
    assert_eq!(m.prefetched_unused, 3);
}

#[test]
fn bad_settings_and_references_are_errors() {
    let workload = two_files(vec![vec![Step::at(0, 9)]]);
    let err = simulate(&workload, &spec("none", 16)).unwrap_err();
    assert!(matches!(err, EngineError::Layout(_)), "{err}");
    let fine = two_files(vec![vec![Step::at(0, 0)]]);
    assert!(matches!(
        simulate(&fine, &spec("none", 0)),
        Err(EngineError::Config(_))
    ));
    assert!(matches!(
        simulate(&fine, &spec("nonesuch", 4)),
        Err(EngineError::Spec(_))
    ));
}
