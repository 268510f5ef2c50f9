//! Slow start under the paper's window (libprefetch, ATC 2009, section 4.6,
//! with the slow start of `aimd.rs`): the window doubles after each clean
//! round, and while it grows the next round is planned once half the window
//! has been read, so the doubled window's reads overlap the reading of the
//! rest of this one.
//!
//! Worked example: 16 distinct pages listed in order, a first window of 2
//! pages, room for 64, no infill:
//!
//! ```text
//!   when              window (pages)   WILLNEED
//!   PF_DONE           0 1              0 1
//!   after seq 0       1 2 3 4          2 3 4          half of 2 read; 4 pages
//!   after seq 2       3 .. 10          5 .. 10        half of 4 read; 8 pages
//!   after seq 6       7 .. 15          11 .. 15       half of 8 read; 16 pages (the list ends)
//! ```
//!
//! Slow start limits how far ahead the plan reads, not what it keeps: with
//! room for 64 pages nothing is dropped. With room for only 4, pages that
//! left the window are dropped as their room is wanted, oldest first.

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, Schedule};

const PAGE: u64 = 4096;

fn pages(ranges: &[plan::PageRange]) -> Vec<u64> {
    ranges.iter().flat_map(|r| r.start..r.end()).collect()
}

/// (seq read before the round, None for PF_DONE's; pages dropped; pages fetched).
type Advice = (Option<usize>, Vec<u64>, Vec<u64>);

/// Reads pages 0..`count` in order, all resident, with a first window of 2
/// pages and room for `room` pages; returns the rounds' advice.
fn replay(count: u64, room: u64) -> Vec<Advice> {
    let mut planner = Planner::new(PlannerConfig {
        page_size: PAGE,
        infill_bytes: 0,
        // AIMD's cap is 90% of this: `room` pages.
        available_bytes: room * PAGE * 10 / 9 + 1,
        floor_bytes: PAGE,
        start_bytes: Some(2 * PAGE),
        schedule: Schedule::Window,
        ..PlannerConfig::default()
    });
    let list: Vec<Entry> = (0..count)
        .map(|page| Entry {
            key: PageKey { fd: 1, page },
            mark: false,
        })
        .collect();
    planner.request(&list, Mode::SET | Mode::DONE);
    let first = planner.plan_round();
    let mut rounds = vec![(None, pages(&first.evict), pages(&first.fetch))];
    for (seq, entry) in list.iter().enumerate() {
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
fn a_growing_window_plans_the_next_round_at_half_its_reads() {
    assert_eq!(
        replay(16, 64),
        vec![
            (None, vec![], vec![0, 1]),
            (Some(0), vec![], vec![2, 3, 4]),
            (Some(2), vec![], (5..=10).collect()),
            (Some(6), vec![], (11..=15).collect()),
        ]
    );
}

#[test]
fn pages_read_are_dropped_only_when_the_room_is_wanted() {
    // The window reaches the 4 pages of room after the first round; then
    // it moves on only once read, dropping the pages it has left.
    assert_eq!(
        replay(8, 4),
        vec![
            (None, vec![], vec![0, 1]),
            (Some(0), vec![0], vec![2, 3, 4]),
            (Some(4), vec![1, 2, 3], vec![5, 6, 7]),
        ]
    );
}

/// One read of many pages (a 32 KiB read of a window of 2 pages, then 6
/// more) makes one round due: the window ends and AIMD doubles once, not
/// once per page.
#[test]
fn a_read_of_many_pages_grows_the_window_once() {
    let mut planner = Planner::new(PlannerConfig {
        page_size: PAGE,
        infill_bytes: 0,
        available_bytes: 64 * PAGE * 10 / 9 + 1,
        floor_bytes: PAGE,
        start_bytes: Some(2 * PAGE),
        schedule: Schedule::Window,
        ..PlannerConfig::default()
    });
    let key = |page| PageKey { fd: 1, page };
    let list: Vec<Entry> = (0..16)
        .map(|page| Entry {
            key: key(page),
            mark: false,
        })
        .collect();
    planner.request(&list, Mode::SET | Mode::DONE);
    planner.plan_round();
    let (_, first) = planner.on_read(key(0), true);
    let mut due = first.start_round;
    for page in 1..8 {
        due |= planner.on_read_continued(key(page)).start_round;
    }
    assert!(due, "the read used the window up");
    assert_eq!(planner.budget_bytes(), 4 * PAGE, "doubled once");
    let plan = planner.plan_round();
    assert_eq!(pages(&plan.fetch), (8..=11).collect::<Vec<_>>());
}
