//! How the length of the access list the library may hold bounds what the
//! next-use schedules save. Two lists of `nextuse_fetches` are replayed
//! through the live planner with its list capped at a given number of
//! entries and refilled on each callback, as `libprefetch` does when its
//! list is full (short counts, section 4.2):
//!
//! - the SQLite-like index scan (806,154 entries over 90,154 pages) with
//!   124 MiB of memory;
//! - the reuse-heavy random list (400,000 reads of a 512 MiB file) with
//!   40 MiB, what the library's budget finds in a 64 MiB memory cgroup
//!   beside the benchmark's own memory (`prefetch bench random --pages
//!   400000 --file-size 512M --memory-limit 64M`).
//!
//! Pages read against Belady's optimum for the whole list in the same
//! memory. Simulated: every advice is served at once, an LRU page cache of
//! the memory's size (`sim::planner_replay`'s model).
//!
//! Run: `cargo run --release -p sim --example list_length`

use common::planner_replay::replay;
use plan::{PageKey, PlannerConfig, Schedule};
use rand::rngs::StdRng;
use rand::SeedableRng;

mod common;
use common::{optimum, random_list, sqlite_like_list, PAGE};

/// List caps, in budgets of the memory (AIMD's 90% of it).
const CAPS_IN_BUDGETS: [f64; 5] = [1.4, 2.8, 5.6, 11.0, 22.0];

fn main() {
    let mut rng = StdRng::seed_from_u64(13);
    let lists = [
        ("sqlite-like", sqlite_like_list(&mut rng), 124 << 20),
        ("random", random_list(&mut rng), 40 << 20),
    ];
    for (name, list, memory_bytes) in lists {
        table(name, &list, (memory_bytes / PAGE) as usize);
    }
}

fn table(name: &str, list: &[PageKey], memory: usize) {
    let best = optimum(list, memory);
    println!(
        "\n{name}: {} entries, memory {memory} pages, optimum {best} pages",
        list.len()
    );
    println!("| list cap (entries) | cap / budget | window | aggressive | conservative |");
    println!("|---|---|---|---|---|");
    let budget = memory as f64 * 0.9;
    let caps = CAPS_IN_BUDGETS
        .iter()
        .map(|budgets| ((budgets * budget) as usize).min(list.len()))
        .chain([list.len()]);
    for cap in caps {
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
            let reads = replay(config, list, memory, cap).fetches;
            format!("{reads} ({:.2}x)", reads as f64 / best as f64)
        })
        .collect();
        println!(
            "| {cap} | {:.1} | {} |",
            cap as f64 / budget,
            cells.join(" | ")
        );
    }
}
