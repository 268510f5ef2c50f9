//! Pages read by the live planner's schedules (`window`, `aggressive`,
//! `conservative`) against Belady's optimum (`opt-demand`, Cao et al.
//! 1995) on two reuse-heavy lists larger than memory, replayed by
//! `sim::planner_replay` (every advice served at once, an LRU page cache of
//! the memory's size; the planner's budget is 90% of it). Simulated: the
//! counts are pages read, not time.
//!
//! - random: 400 000 reads of random 4 KiB pages of a 512 MiB file, 64 MiB
//!   of memory (each page is read about 3 times).
//! - sqlite-like: an index scan over a 304 MiB table of 800 000 rows (10
//!   rows a page) in random order of the indexed column, the index's leaf
//!   pages (130 entries each) after the table, 124 MiB of memory.
//!
//! A second table times the same lists in the disk-timed simulator
//! (`sim::disksim`: the `planner` prefetcher, an LRU cache of the memory's
//! size, one FIFO queue) on a disk model, to see what the schedules' round
//! sizes cost in seeks.
//!
//! Run: `cargo run --release -p sim --example nextuse_fetches`

use common::planner_replay::replay;
use plan::{PageKey, PlannerConfig, Schedule};
use rand::rngs::StdRng;
use rand::SeedableRng;
use sim::disksim::prefetch::planner;
use sim::disksim::replace::lru;
use sim::disksim::run::disk_named;
use sim::disksim::{run_pair, EngineConfig, Layout, Pair, Step, Workload};
use sim::metrics::seconds;

mod common;
use common::{optimum, random_list, sqlite_like_list, PAGE};

/// The simulator's planner with `schedule` and `reserve`, and the replay's infill
/// (PlannerConfig's default), not the disk's break-even gap.
fn simulated(schedule: Schedule, reserve: Option<u64>) -> planner::Options {
    planner::Options {
        buffer: None,
        infill: Some(32 << 10),
        schedule,
        batch: 0,
        reserve,
    }
}

/// The planners compared: a label, the configuration, the simulator's.
fn planners() -> Vec<(&'static str, PlannerConfig, planner::Options)> {
    let mut planners: Vec<(&'static str, PlannerConfig, planner::Options)> = Schedule::ALL
        .into_iter()
        .map(|schedule| {
            let config = PlannerConfig {
                schedule,
                ..PlannerConfig::default()
            };
            (schedule.name(), config, simulated(schedule, None))
        })
        .collect();
    let cao = PlannerConfig {
        schedule: Schedule::Conservative,
        reserve_pages: Some(0),
        ..PlannerConfig::default()
    };
    planners.push((
        "conservative, no reserve",
        cao,
        simulated(Schedule::Conservative, Some(0)),
    ));
    planners
}

/// Elapsed time, blocks fetched, requests and average seek of `list` with the
/// prefetcher `planner` on `disk`, in the disk-timed simulator.
fn timed(list: &[PageKey], memory_pages: usize, planner: planner::Options, disk: &str) -> String {
    let file_pages = list.iter().map(|k| k.page + 1).max().unwrap_or(1);
    let workload = Workload {
        layout: Layout::contiguous(&[file_pages], 0, PAGE),
        streams: vec![list.iter().map(|k| Step::at(0, k.page)).collect()],
    };
    let pair = Pair::new(lru::Options, planner);
    let disk = disk_named(disk).expect("a disk model");
    let config = EngineConfig::with_cache(memory_pages);
    let m = run_pair(&pair, &workload, (&disk, "fifo"), config).expect("the disk simulator runs");
    format!(
        "{:.1} s | {} | {} | {:.1}",
        seconds(m.elapsed),
        m.disk.blocks_fetched,
        m.disk.requests,
        m.disk.avg_seek_bytes() / 1024.0
    )
}

fn main() {
    let mut rng = StdRng::seed_from_u64(13);
    let scenarios = [
        ("random", random_list(&mut rng), (64 << 20) / PAGE as usize),
        (
            "sqlite-like",
            sqlite_like_list(&mut rng),
            (124 << 20) / PAGE as usize,
        ),
    ];
    println!("| list | entries | memory pages | schedule | pages read | x optimum | demand misses | cache evictions | rounds | max held / budget | harmful rounds | read within 32 entries |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, list, memory) in &scenarios {
        let best = optimum(list, *memory);
        println!(
            "| {name} | {} | {memory} | opt-demand | {best} | 1.00 | | | | | | |",
            list.len()
        );
        let budget = *memory * 9 / 10;
        let at_budget = optimum(list, budget);
        println!(
            "| {name} | {} | {budget} | opt-demand (90%) | {at_budget} | {:.2} | | | | | | |",
            list.len(),
            at_budget as f64 / best as f64
        );
        for (label, config, _) in planners() {
            let c = replay(config, list, *memory, list.len());
            println!(
                "| {name} | {} | {memory} | {label} | {} | {:.2} | {} | {} | {} | {} / {} | {} | {} |",
                list.len(),
                c.fetches,
                c.fetches as f64 / best as f64,
                c.demand_misses,
                c.cache_evictions,
                c.rounds,
                c.max_held,
                c.budget_at_max,
                c.harmful_rounds,
                c.short_lead
            );
        }
    }
    println!();
    println!("| list | disk | schedule | elapsed | blocks fetched | requests | avg seek (KiB) |");
    println!("|---|---|---|---|---|---|---|");
    for (name, list, memory) in &scenarios {
        for disk in ["nvme", "ibm-36z15"] {
            for (label, _, spec) in planners() {
                println!(
                    "| {name} | {disk} | {label} | {} |",
                    timed(list, *memory, spec, disk)
                );
            }
        }
    }
}
