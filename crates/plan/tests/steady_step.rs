//! The window's next round in steady state (libprefetch, ATC 2009, section
//! 4.5, with the step of `schedule/window.rs`): on a seek-bound device,
//! once all but 1/g of the window has been read (g, the device's growth
//! factor), the next round is planned, so its sweep overlaps the reading of
//! the rest; it fetches only the pages the reads have made room for, and
//! drops only pages already read that the new window does not need. On a
//! device without seek cost the next round waits for the window's end.
//!
//! Worked example: 384 distinct pages listed in order, a budget of 128
//! pages from the start (no slow start), a far request of 64 pages (g = 64,
//! 256 KiB: seek-bound), no infill:
//!
//! ```text
//!   when              window (pages)   DONTNEED   WILLNEED
//!   PF_DONE           0 .. 127         -          0 .. 127
//!   after seq 125     126 .. 253       0 .. 125   128 .. 253     2 (1/64) left
//!   after seq 251     252 .. 379       126 .. 251 254 .. 379
//! ```

use std::collections::BTreeSet;

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, Schedule};
use proptest::prelude::*;

const PAGE: u64 = 4096;

fn pages(ranges: &[plan::PageRange]) -> Vec<u64> {
    let mut pages: Vec<u64> = ranges.iter().flat_map(|r| r.start..r.end()).collect();
    pages.sort_unstable();
    pages
}

fn entries(pages: &[u64]) -> Vec<Entry> {
    pages
        .iter()
        .map(|&page| Entry {
            key: PageKey { fd: 1, page },
            mark: false,
        })
        .collect()
}

/// A window planner with room for `budget` pages from the start, on a
/// device whose far request costs `request_cost` pages (its growth factor).
fn planner(budget: u64, request_cost: u64) -> Planner {
    let mut planner = Planner::new(PlannerConfig {
        page_size: PAGE,
        infill_bytes: 0,
        // AIMD's cap is 90% of this: `budget` pages.
        available_bytes: budget * PAGE * 10 / 9 + 1,
        floor_bytes: PAGE,
        schedule: Schedule::Window,
        ..PlannerConfig::default()
    });
    planner.raise_request_cost_pages(request_cost);
    planner
}

/// (seq read before the round, None for PF_DONE's; pages dropped; pages fetched).
type Advice = (Option<usize>, Vec<u64>, Vec<u64>);

/// Reads `list` in order, all resident; returns the rounds' advice.
fn replay(list: &[u64], budget: u64, request_cost: u64) -> Vec<Advice> {
    let mut planner = planner(budget, request_cost);
    planner.request(&entries(list), Mode::SET | Mode::DONE);
    let first = planner.plan_round();
    let mut rounds = vec![(None, pages(&first.evict), pages(&first.fetch))];
    for (seq, entry) in entries(list).iter().enumerate() {
        let (_, outcome) = planner.on_read(entry.key, true);
        if outcome.start_round {
            let plan = planner.plan_round();
            if !plan.evict.is_empty() || !plan.fetch.is_empty() {
                rounds.push((Some(seq), pages(&plan.evict), pages(&plan.fetch)));
            }
        }
    }
    rounds
}

#[test]
fn on_a_seek_bound_device_the_next_round_comes_when_1_in_g_of_the_window_is_left() {
    let list: Vec<u64> = (0..384).collect();
    let rounds = replay(&list, 128, 64);
    assert_eq!(rounds[0], (None, vec![], (0..128).collect()));
    assert_eq!(
        rounds[1],
        (Some(125), (0..126).collect(), (128..254).collect())
    );
    assert_eq!(
        rounds[2],
        (Some(251), (126..252).collect(), (254..380).collect())
    );
}

#[test]
fn without_seek_cost_the_next_round_comes_once_the_window_is_read() {
    let list: Vec<u64> = (0..12).collect();
    assert_eq!(
        replay(&list, 4, 2),
        vec![
            (None, vec![], vec![0, 1, 2, 3]),
            (Some(3), vec![0, 1, 2, 3], vec![4, 5, 6, 7]),
            (Some(7), vec![4, 5, 6, 7], vec![8, 9, 10, 11]),
        ]
    );
}

/// A list of pages drawn from `distinct`, with repeats.
fn list() -> impl Strategy<Value = Vec<u64>> {
    (2u64..400).prop_flat_map(|distinct| proptest::collection::vec(0..distinct, 1..600))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the list, budget and device: on a seek-bound device every
    /// round is planned before its window has been read (when the window
    /// holds at least g entries), the plan never keeps more than the
    /// budget, and no round drops a page the window still needs.
    #[test]
    fn the_next_round_comes_before_the_window_is_read_and_within_the_budget(
        list in list(),
        budget in 2u64..200,
        request_cost in prop_oneof![Just(0u64), Just(3), Just(64), Just(100)],
    ) {
        // The growth factor: the far request's cost, at least 2
        // (`planner_growth.rs`); seek-bound from 256 KiB a far request.
        let growth = request_cost.max(2);
        let seek_bound = request_cost * PAGE >= plan::planner::SEEK_BOUND_GAP_BYTES;
        let mut planner = planner(budget, request_cost);
        let listed = entries(&list);
        planner.request(&listed, Mode::SET | Mode::DONE);
        let plan = planner.plan_round();
        prop_assert!(plan.held_pages <= budget);
        let mut window = planner.window().map(|w| (w.start, w.end)).unwrap();
        for entry in &listed {
            let (_, outcome) = planner.on_read(entry.key, true);
            if !outcome.start_round {
                continue;
            }
            let position = planner.list_end() - planner.list_remaining();
            let (start, end) = window;
            if seek_bound && end - start >= growth {
                prop_assert!(position < end, "round at {} with the window {:?}", position, window);
            }
            let plan = planner.plan_round();
            prop_assert!(plan.held_pages <= budget, "{} held, budget {}", plan.held_pages, budget);
            let needed: BTreeSet<u64> = planner.window_pages().iter().map(|k| k.page).collect();
            for dropped in pages(&plan.evict) {
                prop_assert!(!needed.contains(&dropped), "dropped {} still needed", dropped);
            }
            window = planner.window().map(|w| (w.start, w.end)).unwrap();
        }
    }
}
