//! How the length of the access list the library may hold bounds what the
//! next-use schedules save: the SQLite-like index scan of `nextuse_fetches`
//! (806,154 entries over 90,154 pages, 124 MiB of memory) replayed through
//! the live planner with its list capped at a given number of entries and
//! refilled on each callback, as `libprefetch` does when its list is full
//! (short counts, section 4.2). Pages read against Belady's optimum for the
//! whole list. Simulated: every advice is served at once, an LRU page cache
//! of the memory's size (`sim::planner_replay`'s model).
//!
//! Run: `cargo run --release -p sim --example list_length`

use plan::{PlannerConfig, Schedule};
use rand::rngs::StdRng;
use rand::SeedableRng;
use sim::planner_replay::replay_refilled;

mod common;
use common::{optimum, sqlite_like_list, PAGE};

fn main() {
    let mut rng = StdRng::seed_from_u64(13);
    let list = sqlite_like_list(&mut rng);
    let memory = (124 << 20) / PAGE as usize;
    let best = optimum(&list, memory);
    println!(
        "sqlite-like: {} entries, memory {memory} pages, optimum {best} pages",
        list.len()
    );
    println!("| list cap (entries) | cap / budget | window | aggressive | conservative |");
    println!("|---|---|---|---|---|");
    let budget = memory * 9 / 10;
    for cap in [40_000, 80_000, 160_000, 320_000, 640_000, list.len()] {
        let cells: Vec<String> = [
            Schedule::Window,
            Schedule::Aggressive,
            Schedule::Conservative,
        ]
        .into_iter()
        .map(|schedule| {
            let config = PlannerConfig {
                schedule,
                ..PlannerConfig::default()
            };
            let reads = replay_refilled(config, &list, memory, cap).fetches;
            format!("{reads} ({:.2}x)", reads as f64 / best as f64)
        })
        .collect();
        println!(
            "| {cap} | {:.1} | {} |",
            cap as f64 / budget as f64,
            cells.join(" | ")
        );
    }
}
