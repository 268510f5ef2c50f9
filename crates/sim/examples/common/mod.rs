//! The lists and the optimum shared by the examples on the live planner's
//! schedules (`nextuse_fetches`, `list_length`).

use plan::PageKey;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use sim::{run_future, Future, RunSetup};

pub const PAGE: u64 = 4096;

pub fn key(page: u64) -> PageKey {
    PageKey { fd: 3, page }
}

/// 400 000 reads of random 4 KiB pages of a 512 MiB file, with repeats
/// (`prefetch bench random --pages 400000 --file-size 512M`).
pub fn random_list(rng: &mut StdRng) -> Vec<PageKey> {
    let file_pages = (512 << 20) / PAGE;
    (0..400_000)
        .map(|_| key(rng.gen_range(0..file_pages)))
        .collect()
}

/// An index scan over a 304 MiB table of 800 000 rows (10 rows a page) in
/// random order of the indexed column, the index's leaf pages (130 entries
/// each) after the table.
pub fn sqlite_like_list(rng: &mut StdRng) -> Vec<PageKey> {
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

/// Pages Belady's optimum (`opt-demand`) reads for `list` with `memory_pages` of cache.
pub fn optimum(list: &[PageKey], memory_pages: usize) -> u64 {
    let blocks: Vec<u64> = list.iter().map(|k| k.page).collect();
    let opt = sim::find("opt-demand").expect("opt-demand is registered");
    run_future(
        opt,
        &Future::from_blocks(&blocks),
        &RunSetup::simplified(memory_pages, 1),
    )
    .expect("opt-demand runs")
    .fetches()
}
pub mod planner_replay;
