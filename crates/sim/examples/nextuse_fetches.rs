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
//! Run: `cargo run --release -p sim --example nextuse_fetches`

use plan::{PageKey, PlannerConfig, Schedule};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sim::planner_replay::replay;
use sim::{policy, run_future, Future, RunSetup};

const PAGE: u64 = 4096;

fn key(page: u64) -> PageKey {
    PageKey { fd: 3, page }
}

fn random_list(rng: &mut StdRng) -> Vec<PageKey> {
    let file_pages = (512 << 20) / PAGE;
    (0..400_000)
        .map(|_| key(rng.gen_range(0..file_pages)))
        .collect()
}

fn sqlite_like_list(rng: &mut StdRng) -> Vec<PageKey> {
    const ROWS: u64 = 800_000;
    const ROWS_PER_PAGE: u64 = 10;
    const ENTRIES_PER_LEAF: u64 = 130;
    let table_pages = ROWS / ROWS_PER_PAGE;
    let mut rows: Vec<u64> = (0..ROWS).collect();
    rows.shuffle(rng);
    let mut list = Vec::with_capacity(rows.len() * 11 / 10);
    for (i, row) in rows.iter().enumerate() {
        let i = i as u64;
        if i.is_multiple_of(ENTRIES_PER_LEAF) {
            list.push(key(table_pages + i / ENTRIES_PER_LEAF));
        }
        list.push(key(row / ROWS_PER_PAGE));
    }
    list
}

fn optimum(list: &[PageKey], memory_pages: usize) -> u64 {
    let blocks: Vec<u64> = list.iter().map(|k| k.page).collect();
    let opt = policy::find("opt-demand").expect("opt-demand is registered");
    run_future(
        opt,
        &Future::from_blocks(&blocks),
        &RunSetup::simplified(memory_pages, 1),
    )
    .expect("opt-demand runs")
    .fetches()
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
    println!("| list | entries | memory pages | schedule | pages read | x optimum | demand misses | cache evictions | rounds | max held / budget | harmful rounds |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, list, memory) in &scenarios {
        let best = optimum(list, *memory);
        println!(
            "| {name} | {} | {memory} | opt-demand | {best} | 1.00 | | | | | |",
            list.len()
        );
        let budget = *memory * 9 / 10;
        let at_budget = optimum(list, budget);
        println!(
            "| {name} | {} | {budget} | opt-demand (90%) | {at_budget} | {:.2} | | | | | |",
            list.len(),
            at_budget as f64 / best as f64
        );
        for schedule in Schedule::ALL {
            let config = PlannerConfig {
                schedule,
                ..PlannerConfig::default()
            };
            let c = replay(config, list, *memory);
            println!(
                "| {name} | {} | {memory} | {} | {} | {:.2} | {} | {} | {} | {} / {} | {} |",
                list.len(),
                schedule.name(),
                c.fetches,
                c.fetches as f64 / best as f64,
                c.demand_misses,
                c.cache_evictions,
                c.rounds,
                c.max_held,
                c.budget_at_max,
                c.harmful_rounds
            );
        }
    }
}
