//! Property tests of the planner's invariants (libprefetch, ATC 2009,
//! sections 3.3, 3.5, 4.5, 4.6) on random access lists. The window itself
//! is checked against a selection from scratch in `window.rs`.

use plan::{Entry, Mode, PageKey, PageRange, Planner, PlannerConfig, Schedule, Verdict};
use proptest::prelude::*;

const PAGE: u64 = 4096;

fn config(infill_pages: u64, budget_pages: u64, advice_pages: u64) -> PlannerConfig {
    PlannerConfig {
        page_size: PAGE,
        infill_bytes: infill_pages * PAGE,
        max_advice_bytes: advice_pages * PAGE,
        capacity: 10_000,
        // AIMD starts at 90% of this: make 90% exactly `budget_pages` pages.
        available_bytes: budget_pages * PAGE * 10 / 9 + 1,
        floor_bytes: PAGE,
        start_bytes: None,
        reverse_pass: false,
        schedule: Schedule::Window,
        ..PlannerConfig::default()
    }
}

fn entries(fds_pages: &[(i32, u64)]) -> Vec<Entry> {
    fds_pages
        .iter()
        .map(|&(fd, page)| Entry {
            key: PageKey { fd, page },
            mark: false,
        })
        .collect()
}

fn access_list() -> impl Strategy<Value = Vec<(i32, u64)>> {
    proptest::collection::vec((1i32..3, 0u64..400), 1..300)
}

fn covers(range: &PageRange, key: PageKey) -> bool {
    range.fd == key.fd && range.start <= key.page && key.page < range.end()
}

proptest! {
    #[test]
    fn every_window_page_is_fetched_exactly_once(list in access_list(), infill in 0u64..12, budget in 1u64..200, advice in 1u64..64) {
        let mut planner = Planner::new(config(infill, budget, advice));
        planner.request(&entries(&list), Mode::SET | Mode::DONE);
        let plan = planner.plan_round();
        let window = planner.window().unwrap();
        for &key in &planner.window_pages() {
            prop_assert_eq!(plan.fetch.iter().filter(|r| covers(r, key)).count(), 1);
        }
        prop_assert_eq!(plan.window_pages, window.page_count() as u64);
    }

    #[test]
    fn budget_is_respected(list in access_list(), budget in 1u64..200) {
        let mut planner = Planner::new(config(0, budget, 1024));
        planner.request(&entries(&list), Mode::SET | Mode::DONE);
        let plan = planner.plan_round();
        prop_assert!(plan.window_pages <= planner.budget_pages());
        let unique: std::collections::HashSet<_> = list.iter().collect();
        prop_assert_eq!(plan.window_pages, (unique.len() as u64).min(planner.budget_pages()));
    }

    #[test]
    fn ranges_are_in_clook_order(list in access_list(), infill in 0u64..12) {
        let mut planner = Planner::new(config(infill, 1000, 1 << 20));
        planner.request(&entries(&list), Mode::SET | Mode::DONE);
        let plan = planner.plan_round();
        let head = PageKey { fd: list[0].0, page: list[0].1 };
        // Ascending from the range holding the head, wrapping once to the lowest.
        let keys: Vec<(i32, u64)> = plan.fetch.iter().map(|r| (r.fd, r.start)).collect();
        let descents = keys.windows(2).filter(|w| w[1] < w[0]).count();
        prop_assert!(descents <= 1);
        prop_assert!(covers(&plan.fetch[0], head));
        if descents == 1 {
            prop_assert!(keys.last() < keys.first());
        }
    }

    #[test]
    fn gaps_are_merged_iff_within_infill(list in access_list(), infill in 0u64..12) {
        let mut planner = Planner::new(config(infill, 1000, 1 << 20));
        planner.request(&entries(&list), Mode::SET | Mode::DONE);
        let plan = planner.plan_round();
        let mut sorted = plan.fetch.clone();
        sorted.sort();
        for pair in sorted.windows(2) {
            if pair[0].fd == pair[1].fd {
                prop_assert!(pair[1].start - pair[0].end() > infill, "unmerged gap within infill: {:?}", pair);
            }
        }
        let pages = planner.window_pages();
        for range in &sorted {
            // Infill only fills gaps: both ends of a range are wanted pages.
            let first = PageKey { fd: range.fd, page: range.start };
            let last = PageKey { fd: range.fd, page: range.end() - 1 };
            prop_assert!(pages.binary_search(&first).is_ok() && pages.binary_search(&last).is_ok());
        }
    }

    #[test]
    fn reading_the_list_in_order_never_diverges(list in access_list(), budget in 1u64..50) {
        let mut planner = Planner::new(config(2, budget, 64));
        planner.request(&entries(&list), Mode::SET | Mode::DONE);
        planner.plan_round();
        for &(fd, page) in &list {
            let (verdict, outcome) = planner.on_read(PageKey { fd, page }, true);
            prop_assert_eq!(verdict, Verdict::Consumed);
            if outcome.start_round {
                planner.plan_round();
            }
        }
        prop_assert_eq!(planner.stats().divergences, 0);
    }

    #[test]
    fn evictions_are_stale_pages_and_only_when_over_budget(list in access_list(), budget in 1u64..50) {
        let mut planner = Planner::new(config(0, budget, 1 << 20));
        planner.request(&entries(&list), Mode::SET | Mode::DONE);
        let mut held: Vec<PageKey> = Vec::new();
        for &(fd, page) in &list {
            if planner.window().is_none() || planner.on_read(PageKey { fd, page }, true).1.start_round {
                let plan = planner.plan_round();
                let current = planner.window_pages();
                let stale: Vec<PageKey> = held.iter().copied().filter(|k| !current.contains(k)).collect();
                let excess = (current.len() + stale.len()).saturating_sub(planner.budget_pages() as usize);
                let dropped: u64 = plan.evict.iter().map(|r| r.len).sum();
                prop_assert_eq!(dropped, excess as u64);
                for range in &plan.evict {
                    for page in range.start..range.end() {
                        let key = PageKey { fd: range.fd, page };
                        prop_assert!(stale.contains(&key));
                    }
                }
                // Only pages not held already are advised (no eviction was reported).
                for range in &plan.fetch {
                    let first = PageKey { fd: range.fd, page: range.start };
                    prop_assert!(!held.contains(&first));
                }
                prop_assert!(plan.held_pages <= planner.budget_pages());
                held.retain(|k| planner.holds(*k));
                held.extend(current.iter().filter(|k| !held.contains(k)).copied().collect::<Vec<_>>());
            }
        }
    }
}

#[test]
fn premature_eviction_halves_the_budget_once_per_round() {
    // The plan keeps 4 pages of a budget of 5: memory is short.
    let mut planner = Planner::new(config(0, 5, 1024));
    planner.request(
        &entries(&[(1, 1), (1, 2), (1, 3), (1, 4)]),
        Mode::SET | Mode::DONE,
    );
    planner.plan_round();
    let before = planner.budget_bytes();
    for page in [1, 2] {
        planner.confirm_cached(PageKey { fd: 1, page });
        planner.on_read(PageKey { fd: 1, page }, false);
    }
    assert_eq!(planner.budget_bytes(), before / 2);
    assert_eq!(planner.stats().premature_evictions, 2);
}

#[test]
fn an_eviction_while_the_plan_keeps_little_memory_does_not_halve() {
    // The plan keeps 4 pages of a budget of 100: the page was pushed out by
    // something else, and a smaller buffer would not have kept it.
    let mut planner = Planner::new(config(0, 100, 1024));
    planner.request(
        &entries(&[(1, 1), (1, 2), (1, 3), (1, 4)]),
        Mode::SET | Mode::DONE,
    );
    planner.plan_round();
    let before = planner.budget_bytes();
    planner.confirm_cached(PageKey { fd: 1, page: 1 });
    let (_, outcome) = planner.on_read(PageKey { fd: 1, page: 1 }, false);
    assert!(outcome.start_round, "the round fetches the page again");
    assert_eq!(planner.budget_bytes(), before);
    assert_eq!(planner.stats().premature_evictions, 1);
}

#[test]
fn a_page_not_yet_brought_in_is_not_a_premature_eviction() {
    let mut planner = Planner::new(config(0, 100, 1024));
    planner.request(&entries(&[(1, 1), (1, 2)]), Mode::SET | Mode::DONE);
    planner.plan_round();
    let before = planner.budget_bytes();
    let (_, outcome) = planner.on_read(PageKey { fd: 1, page: 1 }, false);
    assert!(outcome.start_round, "a miss still starts a round");
    assert_eq!(planner.budget_bytes(), before);
    assert_eq!(planner.stats().premature_evictions, 0);
}

#[test]
fn a_consumed_round_without_eviction_grows_the_budget() {
    let mut planner = Planner::new(config(0, 2, 1024));
    planner.request(
        &entries(&[(1, 1), (1, 2), (1, 3), (1, 4)]),
        Mode::SET | Mode::DONE,
    );
    planner.plan_round();
    planner.confirm_cached(PageKey { fd: 1, page: 1 });
    planner.on_read(PageKey { fd: 1, page: 1 }, false);
    let halved = planner.budget_bytes();
    planner.plan_round();
    planner.on_read(PageKey { fd: 1, page: 2 }, true);
    let (_, outcome) = planner.on_read(PageKey { fd: 1, page: 3 }, true);
    assert!(outcome.start_round);
    assert!(planner.budget_bytes() > halved);
}

#[test]
fn a_read_off_the_list_diverges_and_asks_for_a_callback() {
    let mut planner = Planner::new(config(0, 100, 1024));
    planner.request(&entries(&[(1, 1), (1, 2)]), Mode::SET | Mode::DONE);
    planner.plan_round();
    let (verdict, outcome) = planner.on_read(PageKey { fd: 1, page: 50 }, true);
    assert_eq!(verdict, Verdict::Diverged);
    assert!(outcome.call_back && outcome.start_round);
}

#[test]
fn skipping_ahead_in_the_window_passes_the_mark() {
    let mut planner = Planner::new(config(0, 100, 1024));
    let list = [
        Entry {
            key: PageKey { fd: 1, page: 7 },
            mark: true,
        },
        Entry {
            key: PageKey { fd: 1, page: 8 },
            mark: false,
        },
        Entry {
            key: PageKey { fd: 1, page: 9 },
            mark: false,
        },
    ];
    planner.request(&list, Mode::SET | Mode::DONE);
    planner.plan_round();
    assert_eq!(
        planner.on_read(PageKey { fd: 1, page: 8 }, true).0,
        Verdict::Consumed
    );
    assert_eq!(planner.last_mark(), Some(PageKey { fd: 1, page: 7 }));
}

#[test]
fn further_pages_of_a_read_listed_once_are_not_divergences() {
    let mut planner = Planner::new(config(0, 100, 1024));
    planner.request(&entries(&[(1, 0), (1, 4), (1, 8)]), Mode::SET | Mode::DONE);
    planner.plan_round();
    for tile in [0u64, 4, 8] {
        assert_eq!(
            planner.on_read(PageKey { fd: 1, page: tile }, true).0,
            Verdict::Consumed
        );
        for page in tile + 1..tile + 4 {
            assert_eq!(
                planner.on_read_continued(PageKey { fd: 1, page }),
                plan::ReadOutcome::default()
            );
        }
    }
    assert_eq!(planner.stats().divergences, 0);
}

#[test]
fn further_pages_that_are_listed_are_consumed() {
    let mut planner = Planner::new(config(0, 100, 1024));
    planner.request(
        &entries(&[(1, 0), (1, 1), (1, 2), (1, 9)]),
        Mode::SET | Mode::DONE,
    );
    planner.plan_round();
    planner.on_read(PageKey { fd: 1, page: 0 }, true);
    planner.on_read_continued(PageKey { fd: 1, page: 1 });
    planner.on_read_continued(PageKey { fd: 1, page: 2 });
    assert_eq!(
        planner.on_read(PageKey { fd: 1, page: 9 }, true).0,
        Verdict::Consumed
    );
    assert_eq!(planner.stats().divergences, 0);
}

/// After PF_SET replaces the list while a round is still pending, a read of a
/// page of the old window must not move the position to where that page
/// stood on the old list: the new list's entries there would be skipped.
#[test]
fn a_replaced_list_is_not_matched_against_the_old_windows_positions() {
    let mut planner = Planner::new(config(0, 100, 64));
    planner.request(
        &entries(&[(1, 1), (1, 2), (1, 3), (1, 4), (1, 5)]),
        Mode::SET,
    );
    planner.plan_round();
    let key = |page| PageKey { fd: 1, page };
    assert_eq!(planner.on_read(key(1), true).0, Verdict::Consumed);
    planner.request(&entries(&[(1, 10), (1, 11), (1, 3), (1, 12)]), Mode::SET);
    planner.on_read(key(4), true);
    assert_eq!(planner.on_read(key(10), true).0, Verdict::Consumed);
    assert_eq!(planner.on_read(key(11), true).0, Verdict::Consumed);
}

/// Conservative indexes the whole list, but its epoch is a budget's worth
/// of reads: a budget of 4 pages halved by a premature eviction grows back
/// once 4 more entries are read without one, long before the list's end.
#[test]
fn conservative_grows_the_budget_after_a_budgets_worth_of_reads() {
    let mut planner = Planner::new(PlannerConfig {
        schedule: Schedule::Conservative,
        ..config(0, 4, 1024)
    });
    let list: Vec<(i32, u64)> = (0..40).map(|page| (1, page)).collect();
    planner.request(&entries(&list), Mode::SET | Mode::DONE);
    planner.plan_round();
    let full = planner.budget_bytes();
    let key = |page| PageKey { fd: 1, page };
    planner.confirm_cached(key(0));
    planner.on_read(key(0), false);
    assert_eq!(planner.budget_bytes(), full / 2);
    for page in 1..12 {
        if planner.on_read(key(page), true).1.start_round {
            planner.plan_round();
        }
    }
    assert!(planner.budget_bytes() > full / 2);
}

proptest! {
    /// Whatever the schedule, a round leaves the plan within the budget in
    /// force, while the memory available rises and falls between rounds.
    #[test]
    fn rounds_stay_within_a_changing_budget(
        list in access_list(),
        budgets in proptest::collection::vec(1u64..60, 1..40),
        infill in 0u64..4,
        schedule in proptest::sample::select(Schedule::ALL.to_vec()),
    ) {
        let mut planner = Planner::new(PlannerConfig {
            schedule,
            ..config(infill, budgets[0], 1 << 20)
        });
        planner.request(&entries(&list), Mode::SET | Mode::DONE);
        let plan = planner.plan_round();
        prop_assert!(plan.held_pages <= planner.budget_pages());
        for (i, &(fd, page)) in list.iter().enumerate() {
            planner.set_available(budgets[i % budgets.len()] * PAGE * 10 / 9 + 1);
            if planner.on_read(PageKey { fd, page }, true).1.start_round {
                let plan = planner.plan_round();
                prop_assert!(
                    plan.held_pages <= planner.budget_pages(),
                    "{} held, budget {}", plan.held_pages, planner.budget_pages()
                );
            }
        }
    }
}

/// Conservative: a budget lowered by less than the reserve gives back
/// pages fetched ahead, as many as it is over, and keeps MIN's plan; MIN
/// starting over would drop the pages it keeps longest too.
#[test]
fn conservative_absorbs_a_small_budget_cut_in_its_reserve() {
    let budget = 128;
    let list: Vec<(i32, u64)> = (0..3)
        .flat_map(|_| (0..300u64).map(|i| (1, (i * 7919) % 300)))
        .collect();
    let twin = || {
        let mut planner = Planner::new(PlannerConfig {
            schedule: Schedule::Conservative,
            ..config(0, budget, 1024)
        });
        planner.request(&entries(&list), Mode::SET | Mode::DONE);
        planner.plan_round();
        for &(fd, page) in &list[..400] {
            if planner.on_read(PageKey { fd, page }, true).1.start_round {
                planner.plan_round();
            }
        }
        planner
    };
    let pages = |ranges: &[PageRange]| ranges.iter().map(|r| r.len).sum::<u64>();
    let (mut kept, mut cut) = (twin(), twin());
    assert_eq!(kept.held_pages(), budget, "the reserve is full");
    let cut_to = budget - 8;
    cut.set_available(cut_to * PAGE * 10 / 9 + 1);
    let (as_before, after_cut) = (kept.plan_round(), cut.plan_round());
    assert_eq!(pages(&after_cut.evict), pages(&as_before.evict) + 8);
    assert!(after_cut.held_pages <= cut_to);
}

proptest! {
    /// The stale set is `previous` without the pages of `current`, in
    /// order and with `previous`'s repeats, whatever both hold: the walk of
    /// two sorted lists gives what a search of `current` per page gives.
    #[test]
    fn stale_pages_are_the_sorted_difference(
        previous in proptest::collection::vec((0i32..3, 0u64..40), 0..80),
        current in proptest::collection::vec((0i32..3, 0u64..40), 0..80),
    ) {
        let sorted = |pairs: Vec<(i32, u64)>| {
            let mut keys: Vec<PageKey> = pairs.into_iter().map(|(fd, page)| PageKey { fd, page }).collect();
            keys.sort_unstable();
            keys
        };
        let (previous, current) = (sorted(previous), sorted(current));
        let expected: Vec<PageKey> = previous
            .iter()
            .copied()
            .filter(|key| !current.contains(key))
            .collect();
        prop_assert_eq!(plan::ranges::stale_pages(&previous, &current), expected);
    }
}
