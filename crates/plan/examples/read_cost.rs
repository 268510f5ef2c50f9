//! The planner's work per read in the reader's thread, for the live
//! benchmark's `sequential` and `strided` rows on this machine's disk (a
//! 256 MiB file, nothing under memory pressure): the same reads and rounds
//! as `prefetch bench sequential|strided --file-size 256M`, without the
//! file, so that an instruction count (callgrind) is exact and free of the
//! kernel's timing. libprefetch (ATC 2009) section 4.5; the runs the kernel
//! reads ahead are left to it (`plan::readahead`).
//!
//! - `sequential`: 65,536 pages in order, 128 KiB (32-page) reads.
//! - `strided`: 128 x 128 tiles of 16 KiB (4 pages) stored row by row,
//!   read column by column, one read per tile.
//!
//! The device is this machine's disk as the library sees it: a read-ahead
//! window of 2,048 pages (`read_ahead_kb` 8192) and a far request worth 3
//! pages of transfer; the window starts at 128 KiB, as the library's does.
//! Every read finds its pages cached except the first (the kernel keeps
//! its read-ahead), so no read ends stepping aside.
//!
//! Run: `valgrind --tool=callgrind cargo run --release -p plan --example
//! read_cost -- sequential` (or `strided`); it prints the rounds and the
//! pages advised, which must not change when only the cost does.

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, Schedule};

/// The kernel's read-ahead window on this machine's disk, in pages.
const READ_AHEAD_PAGES: u64 = 2048;
/// A far request's cost on this machine's disk, in pages of transfer.
const REQUEST_COST_PAGES: u64 = 3;
/// Tiles per side of the strided array, and pages per tile.
const SIDE: u64 = 128;
const TILE_PAGES: u64 = 4;

/// The pages of the row, in access order, and the pages per read.
fn workload(name: &str) -> Option<(Vec<u64>, usize)> {
    match name {
        "sequential" => Some(((0..SIDE * SIDE * TILE_PAGES).collect(), 32)),
        "strided" => {
            let pages = (0..SIDE)
                .flat_map(|column| (0..SIDE).map(move |row| (row * SIDE + column) * TILE_PAGES))
                .flat_map(|start| start..start + TILE_PAGES)
                .collect();
            Some((pages, TILE_PAGES as usize))
        }
        _ => None,
    }
}

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some((pages, read_pages)) = workload(&name) else {
        eprintln!("usage: read_cost sequential|strided");
        std::process::exit(2);
    };
    let mut planner = Planner::new(PlannerConfig {
        available_bytes: 6 << 30,
        start_bytes: Some(128 << 10),
        request_cost_pages: REQUEST_COST_PAGES,
        schedule: Schedule::ByShape,
        ..PlannerConfig::default()
    });
    planner.raise_readahead_pages(READ_AHEAD_PAGES);
    let key = |page| PageKey { fd: 3, page };
    let entries: Vec<Entry> = pages
        .iter()
        .map(|&page| Entry {
            key: key(page),
            mark: false,
        })
        .collect();
    planner.request(&entries, Mode::SET);
    let mut advised: u64 = planner.plan_round().fetch.iter().map(|r| r.len).sum();
    let mut rounds = 1;
    for (i, read) in pages.chunks(read_pages).enumerate() {
        let (_, outcome) = planner.on_read(key(read[0]), i > 0);
        let rest = planner.on_read_rest(3, read[0] + 1..read[0] + read.len() as u64);
        if outcome.start_round || rest.start_round {
            advised += planner
                .plan_round()
                .fetch
                .iter()
                .map(|r| r.len)
                .sum::<u64>();
            rounds += 1;
        }
    }
    println!("{name}: {rounds} rounds, {advised} pages advised");
}
