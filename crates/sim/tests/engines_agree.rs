//! The two loops agree, the safety net for folding them into one, on many random reference
//! strings: demand paging with LRU on Cao's simplified model (`unit:F`, a fixed-time device at
//! depth 1) gives the same hits, misses, fetches, elapsed and stall time on the
//! reference-by-reference engine as with the disk-timed engine's own LRU and one stream; and
//! every policy of Cao's run on the disk-timed loop through its adapter gives the counts
//! (unused and cancelled prefetches included) and times of Cao's loop, cold or warm, one fetch
//! at a time or up to three, fetch times constant or drawn around F or timed by a disk model,
//! references taking one tick or the compute times of the realistic model.
//!
//! Deviations: the disk-timed engine's CLOCK is not compared with Cao's: they differ on purpose
//! (libCacheSim's inserts a fetched block with its bit clear, DULO's inserts a demand-fetched
//! block young).

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use sim::disksim::engine::{simulate, RunSpec};
use sim::disksim::{EngineConfig, Layout, PolicySpec, Step, Workload};
use sim::metrics::nanos;
use sim::refstring::Times;
use sim::time::DiskFetch;
use sim::trace::Reference;
use sim::{find, run_stream, FetchTime, Metrics, RefString, ReferenceTime, RunSetup};

/// `policy` of Cao's engine over `blocks` with `capacity` blocks and fetch time `fetch`.
fn reference_engine(policy: &str, blocks: &[u64], capacity: usize, fetch: u64) -> Metrics {
    let refs = blocks
        .iter()
        .map(|&block| Ok(Reference { block, think: None }));
    run_stream(
        find(policy).unwrap(),
        refs,
        &RunSetup::simplified(capacity, fetch),
    )
    .unwrap()
}

/// Demand paging with `replacement` on the disk-timed engine, one stream over one file, a
/// reference taking 1 ms and every request `fetch` ms; times back in milliseconds.
fn disk_engine(replacement: &str, blocks: &[u64], capacity: usize, fetch: u64) -> Metrics {
    let file_blocks = blocks.iter().max().map_or(1, |&b| b + 1);
    let workload = Workload {
        layout: Layout::contiguous(&[file_blocks], 0, 4096),
        streams: vec![blocks.iter().map(|&b| Step::at(0, b)).collect()],
    };
    let tick = Duration::from_millis(1);
    let spec = RunSpec {
        replacement: PolicySpec::named(replacement),
        prefetcher: PolicySpec::named("none"),
        scheduler: "fifo".into(),
        disk: format!("fixed:{fetch}"),
        config: EngineConfig {
            hit_time: tick,
            ..EngineConfig::with_cache(capacity)
        },
    };
    simulate(&workload, &spec).unwrap().in_ticks_of(nanos(tick))
}

/// The counters both engines define the same way.
fn common(m: &Metrics) -> [u64; 7] {
    [
        m.references,
        m.hits,
        m.misses,
        m.demand_fetches,
        m.prefetches,
        m.elapsed,
        m.stall,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn demand_lru_is_the_same_on_both_engines(
        blocks in prop::collection::vec(0u64..16, 1..120),
        capacity in 1usize..10,
        fetch in 1u64..20,
    ) {
        prop_assert_eq!(
            common(&reference_engine("lru-demand", &blocks, capacity, fetch)),
            common(&disk_engine("lru", &blocks, capacity, fetch))
        );
    }
}

/// Cao's `policy` run on the disk-timed loop through its adapter.
fn on_disk_loop(policy: &str, string: &RefString, setup: &RunSetup) -> Metrics {
    sim::disksim::cao::run_cao(find(policy).unwrap(), string, setup).unwrap()
}

/// Cao's policies that run on large traces (all but the exhaustive `optimal`).
const CAO_POLICIES: [&str; 10] = [
    "lru-demand",
    "opt-demand",
    "lru-obl",
    "opt-obl",
    "lru-sensible",
    "lru-throttled",
    "aggressive",
    "conservative",
    "fifo",
    "clock",
];

/// `policy` of Cao's engine over `string`, through the future for offline policies.
fn reference_engine_any(policy: &str, string: &RefString, setup: &RunSetup) -> Metrics {
    let info = find(policy).unwrap();
    match info.needs_future {
        true => sim::run_future(info, &sim::Future::link(string.clone()), setup).unwrap(),
        false => sim::run_string(info, string, setup).unwrap(),
    }
}

/// `blocks` as a reference string; with `computes`, the realistic model's compute times
/// (cycled over the references).
fn string_of(blocks: &[u64], computes: &[u64]) -> RefString {
    let refs = blocks.iter().enumerate().map(|(i, &block)| {
        let think = (!computes.is_empty()).then(|| computes[i % computes.len()]);
        Ok(Reference { block, think })
    });
    RefString::load(refs, Times::Keep).unwrap()
}

/// Cao's simplified model with the cache holding blocks `0..warm` at the start.
fn setup(capacity: usize, fetch: u64, warm: usize) -> RunSetup {
    RunSetup {
        initial: (0..warm.min(capacity) as u64).collect(),
        ..RunSetup::simplified(capacity, fetch)
    }
}

/// Up to `depth` fetches at once (at most the cache), each drawn from `fetch +- spread`
/// (seeded) when `spread` is below `fetch`.
fn deeper(mut setup: RunSetup, depth: usize, spread: u64) -> RunSetup {
    setup.depth = depth.min(setup.capacity);
    if let (FetchTime::Constant(mean), true) = (setup.timing.fetch.clone(), spread > 0) {
        if spread < mean {
            setup.timing.fetch = FetchTime::Uniform {
                mean,
                spread,
                seed: 7,
            };
        }
    }
    setup
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn cao_policies_give_the_same_counts_on_the_disk_loop(
        blocks in prop::collection::vec(0u64..24, 1..160),
        capacity in 1usize..12,
        fetch in 1u64..20,
        warm in 0usize..4,
        depth in 1usize..4,
        spread in 0u64..6,
        computes in prop::collection::vec(1u64..30, 0..5),
        on_disk in any::<bool>(),
        policy in prop::sample::select(CAO_POLICIES.to_vec()),
    ) {
        let mut setup = deeper(setup(capacity, fetch, warm), depth, spread);
        if on_disk {
            setup.timing.fetch = FetchTime::Disk(DiskFetch {
                spec: Arc::new(disk::spec_from_name("st3500320as").unwrap()),
                block_size: 8192,
            });
        }
        if !computes.is_empty() {
            setup.timing.reference = ReferenceTime::FromTrace;
        }
        let string = string_of(&blocks, &computes);
        let (unit, disk) = (
            reference_engine_any(policy, &string, &setup),
            on_disk_loop(policy, &string, &setup),
        );
        prop_assert_eq!(common(&unit), common(&disk), "{}", policy);
        prop_assert_eq!(
            (unit.inflight_hits, unit.cancelled_prefetches, unit.unused_prefetches),
            (disk.inflight_hits, disk.cancelled_prefetches, disk.unused_prefetches),
            "{}", policy
        );
        if !find(policy).unwrap().needs_future {
            // Streamed, blocks are numbered in another order: seek distances in those numbers
            // differ, every other counter is the same.
            let refs = string.references();
            let streamed = sim::disksim::cao::run_cao_stream(find(policy).unwrap(), refs, &setup).unwrap();
            let without_disk = |m: &Metrics| Metrics { disk: Default::default(), ..m.clone() };
            prop_assert_eq!(without_disk(&streamed), without_disk(&disk), "{} streamed", policy);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// The exhaustive optimum too, on strings short enough for it.
    #[test]
    fn the_exact_optimum_is_the_same_on_the_disk_loop(
        blocks in prop::collection::vec(0u64..5, 1..8),
        capacity in 1usize..4,
        fetch in 1u64..7,
        warm in 0usize..3,
    ) {
        let setup = setup(capacity, fetch, warm);
        let string = RefString::from_blocks(&blocks);
        prop_assert_eq!(
            common(&reference_engine_any("optimal", &string, &setup)),
            common(&on_disk_loop("optimal", &string, &setup))
        );
    }
}
