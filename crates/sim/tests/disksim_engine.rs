//! The disk-timed engine's timing rules, each checked on a case small enough to work by hand:
//! streams share one disk in FIFO order, think time delays the next reference, a reference to a
//! block still in flight waits for that request, a time limit cuts a closed loop, and a
//! scheduler may hold the disk idle until a time; a policy deciding at idle needs a reference
//! string, not a workload.

use std::time::Duration;

use sim::cache::{Block, Interner};
use sim::disksim::prefetch::{none, readahead};
use sim::disksim::replace::clock;
use sim::disksim::run::disk_named;
use sim::disksim::{run_pair, EngineConfig, Layout, MakePrefetcher, Pair, Step, Workload};
use sim::future::Pos;
use sim::metrics::nanos;
use sim::policy::{Ctx, Fetch};
use sim::Metrics;
use sim::SimError;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// CLOCK with `prefetcher` on a disk of 10 ms per request behind FIFO, with `cache` blocks.
fn spec(prefetcher: impl MakePrefetcher + 'static, cache: usize) -> (Pair, EngineConfig) {
    let pair = Pair::new(clock::Options, prefetcher);
    (pair, EngineConfig::with_cache(cache))
}

fn simulate(
    workload: &Workload,
    (pair, config): &(Pair, EngineConfig),
) -> Result<Metrics, SimError> {
    let disk = disk_named("fixed:10").unwrap();
    run_pair(pair, workload, (&disk, "fifo"), *config)
}

/// Linux read-ahead whose first window is 4 blocks.
fn readahead_4() -> readahead::Options {
    readahead::Options {
        init: 4,
        ..readahead::Options::LINUX
    }
}

fn two_files(streams: Vec<Vec<Step>>) -> Workload {
    Workload {
        layout: Layout::contiguous(&[4, 4], 100, 4096),
        streams,
    }
}

fn run(workload: &Workload, spec: &(Pair, EngineConfig)) -> Metrics {
    simulate(workload, spec).unwrap()
}

#[test]
fn two_streams_take_turns_on_one_disk() {
    let workload = two_files(vec![
        vec![Step::at(0, 0), Step::at(0, 1)],
        vec![Step::at(1, 0), Step::at(1, 1)],
    ]);
    let m = run(&workload, &spec(none::Options, 16));
    assert_eq!(m.disk.requests, 4);
    assert_eq!(m.elapsed, nanos(ms(40)));
    assert_eq!(m.disk.busy, nanos(ms(40)));
    assert_eq!(m.stall, nanos(ms(30 + 40)));
    assert_eq!((m.misses, m.demand_fetches), (4, 4));
}

#[test]
fn think_time_comes_before_the_reference() {
    let mut second = Step::at(0, 1);
    second.think = ms(5);
    let workload = two_files(vec![vec![Step::at(0, 0), second]]);
    let m = run(&workload, &spec(none::Options, 16));
    assert_eq!(m.elapsed, nanos(ms(25)));
    assert_eq!(m.stall, nanos(ms(20)));
}

#[test]
fn a_block_in_flight_is_waited_for_not_fetched_again() {
    let workload = two_files(vec![vec![Step::at(0, 0)], vec![Step::at(0, 2)]]);
    let m = run(&workload, &spec(readahead_4(), 16));
    assert_eq!(m.disk.requests, 1);
    assert_eq!(m.disk.blocks_fetched, 4);
    assert_eq!((m.misses, m.inflight_hits), (2, 1));
    assert_eq!(m.elapsed, nanos(ms(10)));
    assert_eq!(m.found_ratio(), 0.5);
}

#[test]
fn a_time_limit_cuts_a_closed_loop() {
    let steps = (0..4)
        .flat_map(|b| [Step::at(0, b), Step::at(1, b)])
        .collect();
    let workload = two_files(vec![steps]);
    let mut limited = spec(none::Options, 16);
    limited.1.time_limit = Some(ms(35));
    let m = run(&workload, &limited);
    assert_eq!(m.elapsed, nanos(ms(35)));
    assert_eq!(m.references, 4);
}

#[test]
fn prefetched_blocks_evicted_unused_are_counted() {
    let workload = two_files(vec![vec![Step::at(0, 0), Step::at(1, 0), Step::at(1, 1)]]);
    let m = run(&workload, &spec(readahead_4(), 4));
    assert_eq!(m.unused_prefetches, 3);
}

#[test]
fn bad_settings_and_references_are_errors() {
    let workload = two_files(vec![vec![Step::at(0, 9)]]);
    let err = simulate(&workload, &spec(none::Options, 16)).unwrap_err();
    assert!(matches!(err, SimError::Layout(_)), "{err}");
    let fine = two_files(vec![vec![Step::at(0, 0)]]);
    assert!(matches!(
        simulate(&fine, &spec(none::Options, 0)),
        Err(SimError::Config(_))
    ));
}

/// A FIFO that keeps the disk idle until `hold_until` (as anticipatory scheduling does).
struct HoldUntil {
    hold_until: Duration,
    queue: std::collections::VecDeque<disk::Request>,
}

impl sim::disksim::IoScheduler for HoldUntil {
    fn push(&mut self, req: disk::Request, _stream: usize) {
        self.queue.push_back(req);
    }

    fn dispatch(&mut self, _head: u64, now: Duration) -> sim::disksim::Dispatch {
        use sim::disksim::Dispatch;
        match self.queue.front() {
            None => Dispatch::Idle,
            Some(_) if now < self.hold_until => Dispatch::WaitUntil(self.hold_until),
            Some(_) => Dispatch::Serve(self.queue.pop_front().unwrap()),
        }
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

#[test]
fn a_scheduler_may_keep_the_disk_idle_until_a_time() {
    use sim::disksim::engine::{run, Parts};
    use sim::disksim::prefetch::none::NoPrefetch;
    use sim::disksim::replace::clock::Clock;
    use sim::disksim::Paired;
    let workload = two_files(vec![vec![Step::at(0, 0)]]);
    let mut model = disk::model_from_name("fixed:10").unwrap();
    let mut scheduler = HoldUntil {
        hold_until: ms(5),
        queue: Default::default(),
    };
    let parts = Parts {
        policy: sim::Policy::Pair(Paired {
            replacement: &mut Clock::default(),
            prefetcher: &mut NoPrefetch,
        }),
        scheduler: &mut scheduler,
        model: model.as_mut(),
    };
    let m = run(&workload, EngineConfig::with_cache(4), parts, &mut |_| {}).unwrap();
    assert_eq!(m.elapsed, nanos(ms(15)));
    assert_eq!(m.disk.busy, nanos(ms(10)));
}

/// A policy deciding at idle, as Cao's do, that never fetches anything.
struct DemandAtIdle;

impl sim::AtIdle for DemandAtIdle {
    fn on_request(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}
    fn on_reference(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}
    fn on_arrival(&mut self, _: Block, _: &mut Ctx<'_>) {}
    fn demand_victim(&mut self, _: Block, _: &mut Ctx<'_>) -> Option<Block> {
        None
    }
    fn prefetch(&mut self, _: &mut Ctx<'_>) -> Option<Fetch> {
        None
    }
    fn demand_only(&self) -> bool {
        true
    }
    fn warm(&self, _: Block, _: &Interner) {}
    fn likely_victim(&self) -> Option<Block> {
        None
    }
}

#[test]
fn a_policy_deciding_at_idle_is_refused_a_workload() {
    use sim::disksim::engine::{run, Parts};
    let workload = two_files(vec![vec![Step::at(0, 0)]]);
    let mut model = disk::model_from_name("fixed:10").unwrap();
    let mut scheduler = sim::disksim::Plain(disk::scheduler_from_name("fifo").unwrap());
    let parts = Parts {
        policy: sim::Policy::AtIdle(&mut DemandAtIdle),
        scheduler: &mut scheduler,
        model: model.as_mut(),
    };
    let refused = run(&workload, EngineConfig::with_cache(4), parts, &mut |_| {});
    assert!(
        matches!(&refused, Err(SimError::Config(m)) if m.contains("reference string")),
        "{refused:?}"
    );
}

/// Anticipatory scheduling in the engine: two streams reading far-apart files block by
/// block. FIFO alternates between them (a seek per block); anticipation keeps serving the
/// stream that just completed, whose next block arrives at once.
#[test]
fn anticipation_keeps_two_sequential_readers_apart() {
    let workload = Workload {
        layout: Layout::contiguous(&[256, 256], 2_000_000, 4096),
        streams: (0..2)
            .map(|file| (0..256).map(|b| Step::at(file, b)).collect())
            .collect(),
    };
    let time = |scheduler: &str| {
        let pair = Pair::new(clock::Options, none::Options);
        let disk = disk_named("ibm-36z15").unwrap();
        let config = EngineConfig::with_cache(1024);
        run_pair(&pair, &workload, (&disk, scheduler), config).unwrap()
    };
    let (fifo, antic) = (time("fifo"), time("anticipatory"));
    assert!(antic.disk.avg_seek_bytes() < fifo.disk.avg_seek_bytes() / 50.0);
    assert!(
        antic.elapsed * 3 < fifo.elapsed,
        "{:?} vs {:?}",
        antic.elapsed,
        fifo.elapsed
    );
}

/// A prefetcher that says it only demand-fetches and fails if any hook is called.
struct Silent;

impl sim::disksim::Prefetcher for Silent {
    fn on_access(&mut self, _: &sim::disksim::Access) -> Vec<sim::disksim::FetchRange> {
        panic!("on_access called on a demand-only prefetcher")
    }
    fn on_evict(&mut self, _: sim::disksim::FileBlock, _: bool) {
        panic!("on_evict called on a demand-only prefetcher")
    }
    fn on_stream_end(&mut self, _: usize) {}
    fn on_served(&mut self, _: &disk::Request, _: Option<u64>) {
        panic!("on_served called on a demand-only prefetcher")
    }
    fn drops(&mut self) -> Vec<sim::disksim::FetchRange> {
        panic!("drops called on a demand-only prefetcher")
    }
    fn demand_only(&self) -> bool {
        true
    }
}

/// The loop calls none of a demand-only prefetcher's per-reference hooks, queued requests and
/// evictions included, and runs as with no prefetcher.
#[test]
fn a_demand_only_prefetcher_hears_nothing_and_changes_nothing() {
    use sim::disksim::engine::{run, Parts};
    use sim::disksim::prefetch::none::NoPrefetch;
    use sim::disksim::replace::clock::Clock;
    use sim::disksim::{Paired, Prefetcher};
    let streams = vec![
        (0..4)
            .flat_map(|b| [Step::at(0, b), Step::at(1, b)])
            .collect(),
        (0..4).rev().map(|b| Step::at(1, b)).collect(),
    ];
    let workload = two_files(streams);
    let mut metrics = Vec::new();
    let prefetchers: [&mut dyn Prefetcher; 2] = [&mut Silent, &mut NoPrefetch];
    for prefetcher in prefetchers {
        let mut model = disk::model_from_name("fixed:10").unwrap();
        let mut scheduler = sim::disksim::schedulers::io_scheduler_from_name("fifo").unwrap();
        let parts = Parts {
            policy: sim::Policy::Pair(Paired {
                replacement: &mut Clock::default(),
                prefetcher,
            }),
            scheduler: scheduler.as_mut(),
            model: model.as_mut(),
        };
        let m = run(&workload, EngineConfig::with_cache(3), parts, &mut |_| {}).unwrap();
        metrics.push(m);
    }
    assert_eq!(metrics[0], metrics[1]);
    assert!(metrics[0].disk.requests > 3, "{:?}", metrics[0]);
}
