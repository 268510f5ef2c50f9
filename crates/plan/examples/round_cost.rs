//! CPU cost of one prefetching round (`Planner::plan_round`) with a window
//! as large as the SQLite extension's index scan of a 1 GiB table: 1.6 M
//! list entries over ~262 K distinct 4 KiB pages in random order, repeats
//! included, and an AIMD budget covering the whole list (libprefetch, ATC
//! 2009, section 4.5: each round selects the window and advises its pages).
//!
//! Between two timed rounds the application reads the next 1000 entries of
//! the list (and, in the second scenario, appends 1000 more), which is what
//! makes rounds frequent and nearly identical when the window is large.
//! Pure CPU: no file is read or advised.
//!
//! Run: `cargo run --release -p plan --example round_cost`
//!
//! Latest results (this machine, pure CPU, 2 shared cores; median of 21
//! rounds, three runs each, the planner before the sliding window at commit
//! 3acb835, which always computed the reverse ranges, against after it):
//!
//! ```text
//!   scenario                         first round (full)    later round (median)
//!                                    before     after      before      after
//!   position +1000                   390-418    248-257    404-430 ms  0.041-0.044 ms
//!   position +1000, append +1000     399-406    244-334    405-419 ms  0.200-0.203 ms
//!   position +1000, reverse pass on  (always)   273-295    (always)    22.7-24.0 ms
//! ```

use std::time::{Duration, Instant};

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ENTRIES: usize = 1_600_000;
const PAGES: u64 = 262_144;
const STEP: usize = 1000;
const ROUNDS: usize = 21;

fn random_entries(rng: &mut StdRng, count: usize) -> Vec<Entry> {
    (0..count)
        .map(|_| Entry {
            key: PageKey {
                fd: 3,
                page: rng.gen_range(0..PAGES),
            },
            mark: false,
        })
        .collect()
}

fn planner_covering_everything(reverse_pass: bool) -> Planner {
    Planner::new(PlannerConfig {
        capacity: 4 * ENTRIES,
        reverse_pass,
        // AIMD starts at 90% of this: far more than the list's pages.
        available_bytes: 64 << 30,
        ..PlannerConfig::default()
    })
}

/// Reads the next `STEP` entries of `list` from `*next` on, in order.
fn read_ahead(planner: &mut Planner, list: &[Entry], next: &mut usize) {
    for entry in &list[*next..*next + STEP] {
        planner.on_read(entry.key, true);
    }
    *next += STEP;
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// Times the first round and then `ROUNDS` rounds, each after `STEP` reads
/// (and `STEP` appended entries if `append`), with the reverse-order ranges
/// computed if `reverse_pass`; returns the first round's time, the median
/// of the others and the window's pages.
fn scenario(append: bool, reverse_pass: bool) -> (Duration, Duration, u64) {
    let mut rng = StdRng::seed_from_u64(42);
    let mut list = random_entries(&mut rng, ENTRIES);
    let mut planner = planner_covering_everything(reverse_pass);
    planner.request(&list, Mode::SET | Mode::DONE);
    let started = Instant::now();
    let first = planner.plan_round();
    let first_time = started.elapsed();
    let mut next = 0;
    let mut times = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        read_ahead(&mut planner, &list, &mut next);
        if append {
            let more = random_entries(&mut rng, STEP);
            planner.request(&more, Mode::APPEND);
            list.extend(more);
        }
        let started = Instant::now();
        let plan = planner.plan_round();
        times.push(started.elapsed());
        std::hint::black_box(plan);
    }
    (first_time, median(times), first.window_pages)
}

fn main() {
    println!("plan_round CPU time on this machine (pure CPU, no I/O), release build");
    println!(
        "list {ENTRIES} entries over {PAGES} pages in random order, budget covering all, \
         {STEP} entries read between rounds, median of {ROUNDS} rounds"
    );
    println!("| scenario | window pages | first round (full selection) | later round (median) |");
    println!("|---|---|---|---|");
    for (name, append, reverse_pass) in [
        ("position +1000", false, false),
        ("position +1000, append +1000", true, false),
        ("position +1000, reverse pass on", false, true),
    ] {
        let (first, later, pages) = scenario(append, reverse_pass);
        println!(
            "| {name} | {pages} | {:.1} ms | {:.3} ms |",
            first.as_secs_f64() * 1e3,
            later.as_secs_f64() * 1e3
        );
    }
}
