//! Invariants of the disk-timed engine for every replacement policy and prefetcher of ours, on
//! random small workloads: the cache never holds more than its capacity nor a block twice,
//! every reference is a hit, an in-flight hit or a miss, and the request-size histogram adds up
//! to the blocks fetched.

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use sim::disksim::engine::{run, Parts};
use sim::disksim::iosched::Plain;
use sim::disksim::prefetch::{none, planner, readahead, reorder, Disk, PrefetchSetup};
use sim::disksim::replace::{clock, dulo, lru, CacheGeometry};
use sim::disksim::{
    EngineConfig, Layout, MakePrefetcher, MakeReplacement, Paired, PolicySpec, Step, Workload,
};

/// The replacement policies checked: CLOCK, LRU and DULO with a small bank and section.
fn replacements() -> [Arc<dyn MakeReplacement>; 3] {
    let dulo = dulo::Options {
        bank: 16 << 10,
        evict: 32 << 10,
    };
    [
        Arc::new(clock::Options),
        Arc::new(lru::Options),
        Arc::new(dulo),
    ]
}

/// The prefetchers checked: none, small read-ahead windows, the reorder buffer, the planner.
fn prefetchers() -> [Arc<dyn MakePrefetcher>; 4] {
    let readahead = readahead::Options { init: 4, max: 8 };
    let reorder = reorder::Options {
        buffer: Some(32 << 10),
        infill: 8 << 10,
        sweep: reorder::Sweep::Buffer,
    };
    let planner = planner::Options::parse(&PolicySpec::parse("planner:buffer=32K").unwrap());
    [
        Arc::new(none::Options),
        Arc::new(readahead),
        Arc::new(reorder),
        Arc::new(planner.unwrap()),
    ]
}

fn workload(streams: Vec<Vec<(u32, u64)>>) -> Workload {
    Workload {
        layout: Layout::contiguous(&[64, 64, 64], 8, 4096),
        streams: streams
            .into_iter()
            .map(|s| s.into_iter().map(|(f, b)| Step::at(f, b)).collect())
            .collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn engine_keeps_its_books(
        streams in prop::collection::vec(
            prop::collection::vec((0u32..3, 0u64..64), 1..60), 1..4),
        cache in 4usize..40,
        replacement in 0usize..3,
        prefetcher in 0usize..4,
    ) {
        let workload = workload(streams);
        let geometry = CacheGeometry { capacity: cache, block_size: 4096 };
        let mut policy = replacements()[replacement].build(geometry);
        let fixed = Disk::new(disk::spec_from_name("fixed:1").unwrap().into());
        let setup = PrefetchSetup { workload: &workload, cache_blocks: cache, disk: &fixed };
        let mut prefetch = prefetchers()[prefetcher].build(&setup).unwrap();
        let mut scheduler = Plain(disk::scheduler_from_name("clook").unwrap());
        let mut model = disk::model_from_name("hitachi-18zx").unwrap();
        let mut violations = Vec::new();
        let parts = Parts {
            policy: sim::Policy::Pair(Paired { replacement: policy.as_mut(), prefetcher: prefetch.as_mut() }),
            scheduler: &mut scheduler,
            model: model.as_mut(),
        };
        let m = run(&workload, EngineConfig::with_cache(cache), parts, &mut |seen| {
            let order = seen.policy.order();
            let unique: BTreeSet<_> = order.iter().collect();
            if order.len() > cache || unique.len() != order.len() {
                violations.push((seen.stream, seen.index, order.len()));
            }
        }).unwrap();
        prop_assert!(violations.is_empty(), "{:?}", violations);
        let total: usize = workload.streams.iter().map(Vec::len).sum();
        prop_assert_eq!(m.references, total as u64);
        prop_assert_eq!(m.hits + m.misses, m.references);
        prop_assert!(m.inflight_hits + m.demand_fetches == m.misses);
        let histogram: u64 = m.disk.request_sizes.iter().map(|(s, n)| s * n).sum();
        prop_assert_eq!(histogram, m.disk.blocks_fetched);
        prop_assert!(m.disk.requests >= 1 && m.disk.blocks_fetched >= m.demand_fetches);
    }
}
