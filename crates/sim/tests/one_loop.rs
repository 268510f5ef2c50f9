//! Cao's policies on the simulator's one loop (the disk-timed loop), on many random reference
//! strings: demand paging with Cao's LRU on the simplified model (`unit:F`, a fixed-time device
//! at depth 1) gives the same hits, misses, fetches, elapsed and stall time as the loop's own
//! LRU replacement with one stream (two implementations of one policy); and every online
//! policy of Cao's gives the same counts and times streamed from its trace as from the trace
//! in memory, cold or warm, one fetch at a time or up to three, fetch times constant or drawn
//! around F or timed by a disk model, references taking one tick or the compute times of the
//! realistic model.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use sim::disksim::prefetch::none;
use sim::disksim::replace::lru;
use sim::disksim::run::disk_named;
use sim::disksim::{run_pair, EngineConfig, Layout, MakeReplacement, Pair, Step, Workload};
use sim::metrics::nanos;
use sim::refstring::Times;
use sim::time::DiskFetch;
use sim::trace::Reference;
use sim::{find, run_stream, run_string, FetchTime, Metrics, RefString, ReferenceTime, RunSetup};

/// Cao's `policy` streamed over `blocks` with `capacity` blocks and fetch time `fetch`.
fn cao_policy(policy: &str, blocks: &[u64], capacity: usize, fetch: u64) -> Metrics {
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

/// Demand paging with the loop's own `replacement`, one stream over one file, a reference
/// taking 1 ms and every request `fetch` ms; times back in milliseconds.
fn loop_replacement(
    replacement: impl MakeReplacement + 'static,
    blocks: &[u64],
    capacity: usize,
    fetch: u64,
) -> Metrics {
    let file_blocks = blocks.iter().max().map_or(1, |&b| b + 1);
    let workload = Workload {
        layout: Layout::contiguous(&[file_blocks], 0, 4096),
        streams: vec![blocks.iter().map(|&b| Step::at(0, b)).collect()],
    };
    let tick = Duration::from_millis(1);
    let pair = Pair::new(replacement, none::Options);
    let disk = disk_named(&format!("fixed:{fetch}")).unwrap();
    let config = EngineConfig {
        hit_time: tick,
        ..EngineConfig::with_cache(capacity)
    };
    let metrics = run_pair(&pair, &workload, (&disk, "fifo"), config).unwrap();
    metrics.in_ticks_of(nanos(tick))
}

/// The counters both runs define the same way.
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

/// Cao's online policies (those that do not need the future, so run streamed too).
const ONLINE_POLICIES: [&str; 4] = ["lru-demand", "lru-obl", "fifo", "clock"];

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
    fn cao_lru_is_the_loops_lru(
        blocks in prop::collection::vec(0u64..16, 1..120),
        capacity in 1usize..10,
        fetch in 1u64..20,
    ) {
        prop_assert_eq!(
            common(&cao_policy("lru-demand", &blocks, capacity, fetch)),
            common(&loop_replacement(lru::Options, &blocks, capacity, fetch))
        );
    }

    #[test]
    fn streamed_runs_equal_runs_in_memory(
        blocks in prop::collection::vec(0u64..24, 1..160),
        capacity in 1usize..12,
        fetch in 1u64..20,
        warm in 0usize..4,
        depth in 1usize..4,
        spread in 0u64..6,
        computes in prop::collection::vec(1u64..30, 0..5),
        on_disk in any::<bool>(),
        policy in prop::sample::select(ONLINE_POLICIES.to_vec()),
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
        let info = find(policy).unwrap();
        let in_memory = run_string(info, &string, &setup).unwrap();
        let streamed = run_stream(info, string.references(), &setup).unwrap();
        prop_assert_eq!(streamed, in_memory, "{}", policy);
    }
}
