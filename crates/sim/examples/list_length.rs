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

use std::collections::HashMap;

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, Schedule};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use sim::{policy, run_future, Future, RunSetup};

const PAGE: u64 = 4096;

fn key(page: u64) -> PageKey {
    PageKey { fd: 3, page }
}

/// The index scan of `nextuse_fetches`: rows in random order of the indexed column, ten a page, a
/// leaf of the index every 130 rows.
fn sqlite_like_list(rng: &mut StdRng) -> Vec<PageKey> {
    const ROWS: u64 = 800_000;
    let table_pages = ROWS / 10;
    let mut rows: Vec<u64> = (0..ROWS).collect();
    rows.shuffle(rng);
    let mut list = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if (i as u64).is_multiple_of(130) {
            list.push(key(table_pages + i as u64 / 130));
        }
        list.push(key(row / 10));
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

/// An LRU page cache of `capacity` pages: pages read in (prefetched or on demand) and dropped.
struct Cache {
    capacity: usize,
    touched: HashMap<PageKey, u64>,
    by_age: std::collections::BTreeMap<u64, PageKey>,
    clock: u64,
}

impl Cache {
    /// Touches `key`; true if it was missing (a read from the device).
    fn touch(&mut self, key: PageKey) -> bool {
        self.clock += 1;
        let missing = match self.touched.insert(key, self.clock) {
            Some(age) => {
                self.by_age.remove(&age);
                false
            }
            None => true,
        };
        self.by_age.insert(self.clock, key);
        if self.touched.len() > self.capacity {
            if let Some((_, old)) = self.by_age.pop_first() {
                self.touched.remove(&old);
            }
        }
        missing
    }

    fn remove(&mut self, key: PageKey) {
        if let Some(age) = self.touched.remove(&key) {
            self.by_age.remove(&age);
        }
    }
}

/// Pages read with the list capped at `cap` entries and refilled on callbacks.
fn replay_capped(schedule: Schedule, list: &[PageKey], memory_pages: usize, cap: usize) -> u64 {
    let mut planner = Planner::new(PlannerConfig {
        schedule,
        capacity: cap,
        available_bytes: memory_pages as u64 * PAGE,
        ..PlannerConfig::default()
    });
    let entries: Vec<Entry> = list.iter().map(|&key| Entry { key, mark: false }).collect();
    let mut handed = planner.request(&entries, Mode::SET);
    let mut cache = Cache {
        capacity: memory_pages,
        touched: HashMap::new(),
        by_age: Default::default(),
        clock: 0,
    };
    let mut reads = 0;
    let apply = |planner: &mut Planner, cache: &mut Cache, reads: &mut u64| {
        let plan = planner.plan_round();
        for range in &plan.evict {
            (range.start..range.end())
                .for_each(|page| cache.remove(PageKey { fd: range.fd, page }));
        }
        for range in &plan.fetch {
            for page in range.start..range.end() {
                *reads += u64::from(cache.touch(PageKey { fd: range.fd, page }));
            }
        }
    };
    apply(&mut planner, &mut cache, &mut reads);
    for &key in list {
        let resident = cache.touched.contains_key(&key);
        reads += u64::from(cache.touch(key));
        let (_, outcome) = planner.on_read(key, resident);
        if outcome.call_back {
            let end = planner.list_end();
            let mode = if handed == entries.len() {
                Mode::APPEND | Mode::DONE
            } else {
                Mode::APPEND
            };
            handed += planner.request(&entries[handed..], mode);
            planner.callback_returned(end);
        }
        if outcome.start_round {
            apply(&mut planner, &mut cache, &mut reads);
        }
    }
    reads
}

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
            let reads = replay_capped(schedule, &list, memory, cap);
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
