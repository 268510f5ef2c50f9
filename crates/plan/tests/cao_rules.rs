//! Exact advice of the three schedules on a hand-worked list (Cao, Felten,
//! Karlin and Li, SIGMETRICS 1995, section 2.2 rules 1-4; libprefetch,
//! ATC 2009, section 4.5).
//!
//! Worked example: a budget of 2 pages, one fetch per round (batch 1), no
//! infill, no reserve (Cao's conservative exactly), and the list
//!
//! ```text
//!   seq    0  1  2  3  4  5
//!   page   1  2  3  1  4  3
//! ```
//!
//! Conservative performs MIN's replacements. MIN with 2 pages: 1 and 2
//! fill it (no victim); 3 at seq 2 discards the page next used furthest,
//! 2 (never again; 1 is next used at 3), last used at seq 1; 4 at seq 4
//! discards 1 (never again; 3 is next used at 5), last used at seq 3.
//! Each replacement is issued once the application has read its victim for
//! the last time (do no harm, first opportunity):
//!
//! ```text
//!   when                 DONTNEED   WILLNEED
//!   PF_DONE              -          1 2
//!   after seq 1 (2)      2          3
//!   after seq 3 (1)      1          4          4 fetches, as MIN
//! ```
//!
//! Aggressive fetches the next missing page as soon as a held page is next
//! used after it, discarding the one used furthest:
//!
//! ```text
//!   PF_DONE              -          1 2
//!   after seq 0 (1)      1          3          1 next used at 3 > 3's use at 2
//!   after seq 1 (2)      2          1          2 never used again
//!   after seq 2 (3)      3          4          3 next used at 5 > 4's at 4
//!   after seq 3 (1)      1          3          6 fetches (Cao's ABCA effect)
//! ```
//!
//! The paper's window takes the first 2 unique pages and moves on once
//! they are read:
//!
//! ```text
//!   PF_DONE              -          1 2
//!   after seq 1 (2)      2          3          window 3 1
//!   after seq 3 (1)      1          4          window 4 3
//! ```

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, RoundPlan, Schedule};

const PAGE: u64 = 4096;
const LIST: [u64; 6] = [1, 2, 3, 1, 4, 3];

/// One round's advice: (the seq read before it, or None for PF_DONE's
/// round; pages dropped; pages fetched).
type Advice = (Option<usize>, Vec<u64>, Vec<u64>);

fn pages(ranges: &[plan::PageRange]) -> Vec<u64> {
    let mut pages: Vec<u64> = ranges.iter().flat_map(|r| r.start..r.end()).collect();
    pages.sort_unstable();
    pages
}

fn advice(after: Option<usize>, plan: &RoundPlan) -> Advice {
    (after, pages(&plan.evict), pages(&plan.fetch))
}

/// Reads `pages` in order, every page resident, with a budget of
/// `budget` pages, running each round the planner asks for; returns the
/// rounds' advice.
fn replay_with(
    schedule: Schedule,
    pages: &[u64],
    budget: u64,
    reserve: Option<u64>,
) -> Vec<Advice> {
    let mut planner = Planner::new(PlannerConfig {
        page_size: PAGE,
        infill_bytes: 0,
        // AIMD starts at 90% of this: exactly `budget` pages.
        available_bytes: budget * PAGE * 10 / 9 + 1,
        floor_bytes: PAGE,
        schedule,
        batch_pages: 1,
        reserve_pages: reserve,
        ..PlannerConfig::default()
    });
    let list: Vec<Entry> = pages
        .iter()
        .map(|&page| Entry {
            key: PageKey { fd: 1, page },
            mark: false,
        })
        .collect();
    planner.request(&list, Mode::SET | Mode::DONE);
    let mut rounds = vec![advice(None, &planner.plan_round())];
    for (seq, entry) in list.iter().enumerate() {
        let (_, outcome) = planner.on_read(entry.key, true);
        if outcome.start_round {
            let plan = planner.plan_round();
            if !plan.evict.is_empty() || !plan.fetch.is_empty() {
                rounds.push(advice(Some(seq), &plan));
            }
        }
        assert!(
            planner.held_pages() <= budget,
            "budget exceeded after seq {seq}"
        );
    }
    rounds
}

/// The worked example: `LIST` with a budget of 2 pages.
fn replay(schedule: Schedule) -> Vec<Advice> {
    replay_with(schedule, &LIST, 2, Some(0))
}

/// With a budget of 8 pages and a reserve of 1, MIN plans with 7: pages
/// 1-7 fill it, and 8 (seq 7) replaces the page next used furthest, 2
/// (never again, and the least recently used of those), last used at
/// seq 1. PF_DONE's round fetches 1-7 and, into the reserve, 8, ahead of
/// 2's last use; 2 is dropped once it has been read.
#[test]
fn the_reserve_fetches_ahead_and_drops_the_victim_after_its_last_use() {
    assert_eq!(
        replay_with(
            Schedule::Conservative,
            &[1, 2, 3, 4, 5, 6, 7, 8, 1],
            8,
            Some(1)
        ),
        vec![
            (None, vec![], vec![1, 2, 3, 4, 5, 6, 7, 8]),
            (Some(1), vec![2], vec![]),
        ]
    );
}

#[test]
fn conservative_issues_mins_replacements_after_each_victims_last_use() {
    assert_eq!(
        replay(Schedule::Conservative),
        vec![
            (None, vec![], vec![1, 2]),
            (Some(1), vec![2], vec![3]),
            (Some(3), vec![1], vec![4]),
        ]
    );
}

#[test]
fn aggressive_fetches_the_next_missing_page_at_the_first_harmless_opportunity() {
    assert_eq!(
        replay(Schedule::Aggressive),
        vec![
            (None, vec![], vec![1, 2]),
            (Some(0), vec![1], vec![3]),
            (Some(1), vec![2], vec![1]),
            (Some(2), vec![3], vec![4]),
            (Some(3), vec![1], vec![3]),
        ]
    );
}

#[test]
fn the_window_moves_on_once_its_pages_are_read() {
    assert_eq!(
        replay(Schedule::Window),
        vec![
            (None, vec![], vec![1, 2]),
            (Some(1), vec![2], vec![3]),
            (Some(3), vec![1], vec![4]),
        ]
    );
}

/// The reads after which the window schedule plans a round, reading 40 distinct pages with a budget
/// of 8 and no slow start, on a device whose far request costs `request_cost_pages` (0: no profile).
fn window_rounds(request_cost_pages: u64) -> Vec<usize> {
    let budget = 8;
    let mut planner = Planner::new(PlannerConfig {
        page_size: PAGE,
        infill_bytes: 0,
        available_bytes: budget * PAGE * 10 / 9 + 1,
        floor_bytes: PAGE,
        schedule: Schedule::Window,
        request_cost_pages,
        ..PlannerConfig::default()
    });
    let list: Vec<Entry> = (0..40)
        .map(|page| Entry {
            key: PageKey { fd: 1, page },
            mark: false,
        })
        .collect();
    planner.request(&list, Mode::SET | Mode::DONE);
    planner.plan_round();
    let mut rounds = Vec::new();
    for (seq, entry) in list.iter().enumerate() {
        if planner.on_read(entry.key, true).1.start_round {
            planner.plan_round();
            rounds.push(seq);
        }
        assert!(
            planner.held_pages() <= budget,
            "budget exceeded after seq {seq}"
        );
    }
    rounds
}

/// On a device whose profile says it has no seek cost (a far request of 2 pages), the next window is
/// planned while the last 1/g of this one is still to be read, so that its fetches overlap the reads;
/// on a seek-bound device (a far request of 339 pages: the emulated disk) and on one without a
/// profile, once the whole window has been read.
#[test]
fn the_window_plans_its_next_round_early_only_on_a_device_without_seek_cost() {
    let late = window_rounds(0);
    assert_eq!(
        late,
        window_rounds(339),
        "a seek-bound device as one without a profile"
    );
    assert_eq!(
        late.first(),
        Some(&7),
        "the first window (8 pages) read whole: {late:?}"
    );
    let early = window_rounds(2);
    assert_eq!(
        early.first(),
        Some(&3),
        "half of the first window read: {early:?}"
    );
    assert!(early.len() > late.len(), "{early:?} against {late:?}");
}
