//! [`Planner::on_read_rest`] against the planner's page-at-a-time
//! accounting of a read's further pages (libprefetch, ATC 2009, section
//! 4.5), which asks after every consumed page whether a round is due.

use proptest::prelude::*;

use super::*;
use crate::access_list::Entry;
use crate::planner_types::{PlannerConfig, ReadOutcome};

const PAGE: u64 = 4096;

/// The reference: every consumed page asks whether a round is due.
fn continued_page_by_page(planner: &mut Planner, key: PageKey) -> ReadOutcome {
    let position = planner.core.list.position();
    if planner.core.list.get(position).is_none_or(|e| e.key != key) {
        return ReadOutcome::default();
    }
    planner.core.list.consume_through(position);
    planner.core.held.on_read(key, true);
    let mut outcome = ReadOutcome::default();
    let due = planner.round_due();
    if due != Due::No {
        outcome.start_round = true;
        outcome.call_back = due != Due::Early && planner.needs_more_list();
    }
    outcome
}

fn planner(schedule: Schedule, list: &[u64]) -> Planner {
    let mut planner = Planner::new(PlannerConfig {
        page_size: PAGE,
        infill_bytes: 2 * PAGE,
        capacity: 10_000,
        available_bytes: 150 * PAGE * 10 / 9 + 1,
        floor_bytes: PAGE,
        start_bytes: Some(4 * PAGE),
        // Slow start doubles: its early round falls mid-window.
        request_cost_pages: 2,
        schedule,
        ..PlannerConfig::default()
    });
    let entries: Vec<Entry> = list
        .iter()
        .map(|&page| Entry {
            key: PageKey { fd: 1, page },
            mark: page % 7 == 0,
        })
        .collect();
    planner.request(&entries, Mode::SET | Mode::DONE);
    planner.plan_round();
    planner
}

proptest! {
    /// The same outcomes, rounds and counters in every schedule, through
    /// slow start's early rounds and rounds started mid-read.
    #[test]
    fn a_reads_further_pages_together_decide_as_page_by_page(
        runs in proptest::collection::vec((0u64..300, 1u64..40), 1..60),
        read_pages in 1u64..12,
        resident in proptest::collection::vec(any::<bool>(), 1..50),
        schedule in proptest::sample::select(Schedule::ALL.to_vec()),
    ) {
        let list: Vec<u64> = runs.iter().flat_map(|&(start, len)| start..start + len).collect();
        let (mut together, mut apart) = (planner(schedule, &list), planner(schedule, &list));
        for (i, chunk) in list.chunks(read_pages as usize).enumerate() {
            let key = PageKey { fd: 1, page: chunk[0] };
            let is_resident = resident[i % resident.len()];
            let first = (together.on_read(key, is_resident).1, apart.on_read(key, is_resident).1);
            let rest = key.page + 1..key.page + read_pages;
            let a = together.on_read_rest(1, rest.clone());
            let mut b = ReadOutcome::default();
            for page in rest {
                let outcome = continued_page_by_page(&mut apart, PageKey { fd: 1, page });
                b.call_back |= outcome.call_back;
                b.start_round |= outcome.start_round;
            }
            prop_assert_eq!((first.0, a), (first.1, b));
            if first.0.start_round || a.start_round {
                prop_assert_eq!(together.plan_round(), apart.plan_round());
            }
        }
        prop_assert_eq!(together.stats(), apart.stats());
        prop_assert_eq!(together.core.list.position(), apart.core.list.position());
    }
}

/// A caller that stopped following picks up at a read far along the list:
/// the position moves to that read's entry, which is then consumed as the
/// next; a page the list does not hold ahead moves nothing.
#[test]
fn pass_entries_consumes_as_many_entries_as_reads_and_passes_their_last_mark() {
    // Pages 0..20, marked where divisible by 7.
    let list: Vec<u64> = (0..20).collect();
    let mut planner = planner(Schedule::Window, &list);
    let key = |page| PageKey { fd: 1, page };
    assert!(planner.skip_to(key(3)));
    assert_eq!(planner.last_mark(), Some(key(0)));
    planner.pass_entries(6);
    assert_eq!(planner.core.list.position(), 9);
    assert_eq!(planner.last_mark(), Some(key(7)));
    planner.pass_entries(100);
    assert_eq!(
        planner.core.list.position(),
        20,
        "at most to the list's end"
    );
    assert_eq!(planner.last_mark(), Some(key(14)));
    planner.pass_entries(1);
    assert_eq!(planner.core.list.position(), 20, "nothing left to consume");
}

#[test]
fn skip_to_moves_the_position_to_the_entry_of_the_read() {
    let list: Vec<u64> = (0..200).map(|i| i * 3).collect();
    let mut planner = planner(Schedule::Window, &list);
    let key = |page| PageKey { fd: 1, page };
    assert!(planner.skip_to(key(150)));
    assert_eq!(planner.core.list.position(), 50);
    assert_eq!(planner.on_read(key(150), false).0, Verdict::Consumed);
    assert_eq!(planner.core.list.position(), 51);
    assert!(!planner.skip_to(key(3)), "behind the position");
    assert!(!planner.skip_to(key(4)), "not on the list");
    assert_eq!(planner.core.list.position(), 51);
}
