//! The planner steps aside for the kernel's read-ahead (`plan::readahead`):
//! what it advises for runs longer than the kernel's window, for short
//! runs, and once reads show the kernel is not reading ahead.

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig};

const FD: i32 = 3;

fn key(page: u64) -> PageKey {
    PageKey { fd: FD, page }
}

/// A `by-shape` planner with the kernel's window of `readahead` pages and
/// `pages` listed (the whole list, so the window holds it at once).
fn planner(readahead: u64, pages: &[u64]) -> Planner {
    let mut planner = Planner::new(PlannerConfig::default());
    planner.raise_readahead_pages(readahead);
    let entries: Vec<Entry> = pages
        .iter()
        .map(|&page| Entry {
            key: key(page),
            mark: false,
        })
        .collect();
    planner.request(&entries, Mode::SET | Mode::WHOLE_LIST);
    planner
}

/// Reads `pages` in order, each found `resident(page)`, planning a round
/// first and whenever a read asks; returns every page advised.
fn advised(planner: &mut Planner, pages: &[u64], resident: impl Fn(u64) -> bool) -> Vec<u64> {
    let mut advised = Vec::new();
    let mut take = |planner: &mut Planner| {
        for range in planner.plan_round().fetch {
            advised.extend(range.start..range.start + range.len);
        }
    };
    take(planner);
    for &page in pages {
        if planner.on_read(key(page), resident(page)).1.start_round {
            take(planner);
        }
    }
    advised.sort_unstable();
    advised
}

/// A file read in order with a kernel window of 8 pages: the first 8 pages
/// are advised, the rest is the kernel's.
#[test]
fn a_long_run_is_advised_up_to_the_kernels_window() {
    let pages: Vec<u64> = (0..200).collect();
    let mut planner = planner(8, &pages);
    assert_eq!(
        advised(&mut planner, &pages, |_| true),
        (0..8).collect::<Vec<_>>()
    );
}

/// Tiles of 4 pages 100 pages apart (a strided pass): every page is advised.
#[test]
fn short_runs_are_all_advised() {
    let pages: Vec<u64> = (0..50)
        .flat_map(|tile| tile * 100..tile * 100 + 4)
        .collect();
    let mut planner = planner(8, &pages);
    assert_eq!(advised(&mut planner, &pages, |_| true), pages);
}

/// Without the kernel's window the planner advises everything, as the paper does.
#[test]
fn an_unknown_window_advises_every_page() {
    let pages: Vec<u64> = (0..200).collect();
    let mut planner = planner(0, &pages);
    assert_eq!(advised(&mut planner, &pages, |_| true), pages);
}

/// The kernel's first read of a run (page 8) may miss; a second miss on
/// the same run (page 9, within a window) shows the kernel is not reading
/// ahead: the next round advises every page from there on.
#[test]
fn misses_the_kernel_should_have_prevented_take_the_run_back() {
    let pages: Vec<u64> = (0..200).collect();
    let mut planner = planner(8, &pages);
    let got = advised(&mut planner, &pages, |page| page < 8);
    let expected: Vec<u64> = (0..8).chain(10..200).collect();
    assert_eq!(got, expected);
}
