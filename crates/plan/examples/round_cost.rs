//! CPU cost of one prefetching round (`Planner::plan_round`) with a list as
//! large as the SQLite extension's index scan of a 1 GiB table: 1.6 M list
//! entries over ~262 K distinct 4 KiB pages in random order, repeats
//! included, with an AIMD budget covering the whole list or an eighth of it
//! (libprefetch, ATC 2009, section 4.5; Cao et al. 1995, section 2.2, for
//! the aggressive and conservative schedules).
//!
//! Between two timed rounds the application reads the next 1000 entries of
//! the list (and, in the second scenario, appends 1000 more), which is what
//! makes rounds frequent and nearly identical when the window is large.
//! Pure CPU: no file is read or advised.
//!
//! Run: `cargo run --release -p plan --example round_cost`
//!
//! The window's results before and after it slid (median of 21 rounds,
//! three runs each; before = commit 3acb835, which always computed the
//! reverse ranges):
//!
//! ```text
//!   scenario                         first round (full)    later round (median)
//!                                    before     after      before      after
//!   position +1000                   390-418    248-257    404-430 ms  0.041-0.044 ms
//!   position +1000, append +1000     399-406    244-334    405-419 ms  0.200-0.203 ms
//!   position +1000, reverse pass on  (always)   273-295    (always)    22.7-24.0 ms
//! ```
//!
//! The schedules side by side (two runs for conservative, one for the
//! others, this machine shared with other builds, so the absolute times
//! are noisy; "1/8": a budget of an eighth of
//! the list's pages, so that rounds drop and fetch):
//!
//! ```text
//!   schedule      budget  scenario                       first round   later round (median)
//!   window        all     position +1000                 295 ms        0.069 ms
//!   window        all     position +1000, append +1000   277 ms        0.193 ms
//!   window        all     reverse pass on                254 ms        31.6 ms
//!   conservative  all     position +1000                 915-1451 ms   0.061-0.073 ms
//!   conservative  all     position +1000, append +1000   930-1566 ms   0.532-0.982 ms
//!   window        1/8     position +1000                 5.0 ms        0.327 ms
//!   aggressive    1/8     position +1000                 4.7 ms        0.302 ms
//!   conservative  1/8     position +1000                 278-494 ms    0.743-0.803 ms
//!   conservative  1/8     position +1000, append +1000   267-470 ms    0.918-1.015 ms
//! ```
//!
//! With the compact window index (a page as {first, last, count}, an entry
//! as a link to its page's next entry; one run each, machine shared):
//!
//! ```text
//!   schedule      budget  scenario                       first round   later round (median)
//!   window        all     position +1000                 140 ms        0.049 ms
//!   window        all     position +1000, append +1000   135 ms        0.146 ms
//!   window        all     reverse pass on                136 ms        21.9 ms
//!   conservative  all     position +1000                 466 ms        0.052 ms
//!   conservative  all     position +1000, append +1000   464 ms        1.039 ms
//!   window        1/8     position +1000                 2.7 ms        0.157 ms
//!   aggressive    1/8     position +1000                 2.8 ms        0.142 ms
//!   conservative  1/8     position +1000                 89 ms         0.473 ms
//!   conservative  1/8     position +1000, append +1000   69 ms         0.453 ms
//! ```
//!
//! (conservative appending to the whole list walks each new entry's page
//! chain, about 6 links, from MIN's position: the one later round that got
//! slower, and still proportional to the entries added.)
//!
//! Conservative's first round indexes eight budgets of the list (MIN needs each
//! page's next use however far) and runs MIN two budgets ahead; its later
//! rounds cost what the reads changed, as the window's do.

use std::time::{Duration, Instant};

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, Schedule};
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

/// How one scenario configures its planner.
#[derive(Clone, Copy)]
struct Setup {
    schedule: Schedule,
    reverse_pass: bool,
    /// Memory the planner is told about; AIMD's budget is 90% of it.
    available_bytes: u64,
}

/// Far more than the list's pages.
const EVERYTHING: u64 = 64 << 30;
/// 32 768 pages (a budget of 29 491): an eighth of the list's pages.
const AN_EIGHTH: u64 = PAGES / 8 * 4096;

fn planner(setup: Setup) -> Planner {
    Planner::new(PlannerConfig {
        capacity: 4 * ENTRIES,
        reverse_pass: setup.reverse_pass,
        available_bytes: setup.available_bytes,
        schedule: setup.schedule,
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

/// Times the first round and then `ROUNDS` rounds, each after `STEP` reads
/// (and `STEP` appended entries if `append`); returns the first round's
/// time, the median of the others and the pages held after the first.
fn scenario(append: bool, setup: Setup) -> (Duration, Duration, u64) {
    let mut rng = StdRng::seed_from_u64(42);
    let mut list = random_entries(&mut rng, ENTRIES);
    let mut planner = planner(setup);
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
    // ROUNDS is odd: the median is one measured time (`units::median_by`), not a mean of two.
    let later = units::median_by(&times, Duration::as_secs_f64).expect("ROUNDS is above 0");
    (first_time, later, first.held_pages)
}

fn main() {
    println!("plan_round CPU time on this machine (pure CPU, no I/O), release build");
    println!(
        "list {ENTRIES} entries over {PAGES} pages in random order, budget covering all or 1/8, \
         {STEP} entries read between rounds, median of {ROUNDS} rounds"
    );
    println!("| schedule | budget | scenario | held pages | first round (full selection) | later round (median) |");
    println!("|---|---|---|---|---|---|");
    let all = |schedule| Setup {
        schedule,
        reverse_pass: false,
        available_bytes: EVERYTHING,
    };
    let eighth = |schedule| Setup {
        available_bytes: AN_EIGHTH,
        ..all(schedule)
    };
    let reverse = Setup {
        reverse_pass: true,
        ..all(Schedule::Window)
    };
    for (budget, name, append, setup) in [
        ("all", "position +1000", false, all(Schedule::Window)),
        (
            "all",
            "position +1000, append +1000",
            true,
            all(Schedule::Window),
        ),
        ("all", "position +1000, reverse pass on", false, reverse),
        ("all", "position +1000", false, all(Schedule::Conservative)),
        (
            "all",
            "position +1000, append +1000",
            true,
            all(Schedule::Conservative),
        ),
        ("1/8", "position +1000", false, eighth(Schedule::Window)),
        ("1/8", "position +1000", false, eighth(Schedule::Aggressive)),
        (
            "1/8",
            "position +1000",
            false,
            eighth(Schedule::Conservative),
        ),
        (
            "1/8",
            "position +1000, append +1000",
            true,
            eighth(Schedule::Conservative),
        ),
    ] {
        let (first, later, pages) = scenario(append, setup);
        println!(
            "| {} | {budget} | {name} | {pages} | {:.1} ms | {:.3} ms |",
            setup.schedule.name(),
            first.as_secs_f64() * 1e3,
            later.as_secs_f64() * 1e3
        );
    }
}
