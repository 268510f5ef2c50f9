//! Invariants of the disk-timed engine for every replacement policy and prefetcher of ours, on
//! random small workloads: the cache never holds more than its capacity nor a block twice,
//! every reference is a hit, an in-flight hit or a miss, and the request-size histogram adds up
//! to the blocks fetched. And for any replacement of the catalog paired with any prefetcher
//! (`REPLACEMENT+PREFETCHER`): a prefetcher never displaces more of the replacement's blocks in
//! one reference than the replacement's prefetch ceiling allows, and every block leaves the
//! cache only as the replacement's own victim (or a removal it accepted).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use sim::catalog::{prefetcher_names, replacement_names};
use sim::choice::Choice;
use sim::disksim::engine::{run, Parts};
use sim::disksim::iosched::Plain;
use sim::disksim::prefetch::{none, planner, readahead, reorder, Disk, PrefetchSetup};
use sim::disksim::replace::{clock, dulo, lru, CacheGeometry};
use sim::disksim::{
    DiskBlock, EngineConfig, Layout, MakePrefetcher, MakeReplacement, Pair, Paired, PolicySpec,
    Replacement, Step, Touch, Workload,
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

/// What the watched replacement saw: the blocks it holds, contract breaches (including more
/// blocks inserted as prefetched in one reference than the ceiling it gave that reference).
#[derive(Default)]
struct Seen {
    held: BTreeSet<DiskBlock>,
    breaches: Vec<String>,
    prefetched_now: u64,
    ceiling_now: u64,
}

/// A replacement under watch, advertising `ceiling` when it keeps none of its own.
struct Watched {
    inner: Box<dyn Replacement>,
    ceiling: usize,
    seen: Rc<RefCell<Seen>>,
}

impl Replacement for Watched {
    fn on_hit(&mut self, block: DiskBlock, how: Touch) {
        let mut seen = self.seen.borrow_mut();
        if !seen.held.contains(&block) {
            seen.breaches
                .push(format!("hit on {block}, which it does not hold"));
        }
        self.inner.on_hit(block, how);
    }

    fn on_miss(&mut self, block: DiskBlock, how: Touch) {
        if self.seen.borrow().held.contains(&block) {
            let breach = format!("miss on {block}, which it holds");
            self.seen.borrow_mut().breaches.push(breach);
        }
        self.inner.on_miss(block, how);
    }

    fn on_insert(&mut self, block: DiskBlock, how: Touch) {
        let mut seen = self.seen.borrow_mut();
        if !seen.held.insert(block) {
            seen.breaches.push(format!(
                "{block} inserted while held: it left without being the victim"
            ));
        }
        seen.prefetched_now += u64::from(how.prefetched);
        if seen.prefetched_now > seen.ceiling_now {
            let breach = format!(
                "{} blocks prefetched in one reference, ceiling {}",
                seen.prefetched_now, seen.ceiling_now
            );
            seen.breaches.push(breach);
        }
        self.inner.on_insert(block, how);
    }

    fn evict(&mut self, now: Duration, incoming: DiskBlock) -> Option<DiskBlock> {
        let victim = self.inner.evict(now, incoming)?;
        if !self.seen.borrow_mut().held.remove(&victim) {
            let breach = format!("victim {victim} was not held");
            self.seen.borrow_mut().breaches.push(breach);
        }
        Some(victim)
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.inner.order()
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        let removed = self.inner.remove(block);
        if removed {
            self.seen.borrow_mut().held.remove(&block);
        }
        removed
    }

    /// Asked once per reference, before the prefetcher's ranges: a new reference begins.
    fn prefetch_ceiling(&self) -> Option<usize> {
        let ceiling = self.inner.prefetch_ceiling().unwrap_or(self.ceiling);
        let mut seen = self.seen.borrow_mut();
        seen.prefetched_now = 0;
        seen.ceiling_now = ceiling as u64;
        Some(ceiling)
    }

    fn owes_eviction(&self) -> bool {
        self.inner.owes_eviction()
    }
}

/// Runs `pair` with its replacement watched; what it saw.
fn watch(pair: &Pair, workload: &Workload, cache: usize, ceiling: usize) -> Seen {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let geometry = CacheGeometry {
        capacity: cache,
        block_size: 4096,
    };
    let mut replacement = Watched {
        inner: pair.replacement.build(geometry),
        ceiling,
        seen: Rc::clone(&seen),
    };
    let disk = Disk::new(disk::spec_from_name("hitachi-18zx").unwrap().into());
    let setup = PrefetchSetup {
        workload,
        cache_blocks: cache,
        disk: &disk,
    };
    let mut prefetcher = pair.prefetcher.build(&setup).unwrap();
    let mut scheduler = Plain(disk::scheduler_from_name("clook").unwrap());
    let mut model = disk.spec.build().unwrap();
    let parts = Parts {
        policy: sim::Policy::Pair(Paired {
            replacement: &mut replacement,
            prefetcher: prefetcher.as_mut(),
        }),
        scheduler: &mut scheduler,
        model: model.as_mut(),
    };
    run(
        workload,
        EngineConfig::with_cache(cache),
        parts,
        &mut |_| {},
    )
    .unwrap();
    drop(replacement);
    Rc::try_unwrap(seen).ok().unwrap().into_inner()
}

#[test]
fn every_demand_policy_and_pair_of_the_catalog_gives_a_replacement() {
    let names = replacement_names();
    for name in [
        "lru",
        "fifo",
        "clock",
        "dulo",
        "linux-readahead",
        "obl",
        "cpem",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for name in ["opt-demand", "lru-obl", "aggressive"] {
        assert!(
            !names.contains(&name),
            "{name} prefetches or needs the future"
        );
    }
    let refused = "lru-obl+obl".parse::<Choice>().unwrap_err().to_string();
    assert!(refused.contains("integrated"), "{refused}");
    let refused = "lru+fifo".parse::<Choice>().unwrap_err().to_string();
    assert!(refused.contains("not a prefetcher"), "{refused}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn a_prefetcher_displaces_at_most_its_replacements_ceiling(
        streams in prop::collection::vec(
            prop::collection::vec((0u32..3, 0u64..64), 1..60), 1..4),
        cache in 4usize..40,
        ceiling in 0usize..12,
        replacement in any::<prop::sample::Index>(),
        prefetcher in any::<prop::sample::Index>(),
    ) {
        let names = replacement_names();
        let prefetchers = prefetcher_names();
        let name = format!(
            "{}+{}",
            replacement.get(&names),
            prefetcher.get(&prefetchers)
        );
        let choice: Choice = name.parse().unwrap();
        let pair = choice.configured.pair().unwrap();
        let workload = workload(streams);
        let seen = watch(pair, &workload, cache, ceiling);
        prop_assert!(seen.breaches.is_empty(), "{}: {:?}", name, seen.breaches);
    }
}
