//! Property tests of the planner's invariants (libprefetch, ATC 2009,
//! sections 3.3, 3.5, 4.5, 4.6) on random access lists, and of its
//! equivalence with a from-scratch reference (`reference/mod.rs`) on random
//! sequences of requests, reads and rounds.

mod reference;

use plan::{Entry, Mode, PageKey, PageRange, Planner, PlannerConfig, Verdict};
use proptest::prelude::*;
use reference::ReferencePlanner;

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
        for &key in &window.pages() {
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
        let window = planner.window().unwrap();
        for range in &sorted {
            // Infill only fills gaps: both ends of a range are wanted pages.
            let first = PageKey { fd: range.fd, page: range.start };
            let last = PageKey { fd: range.fd, page: range.end() - 1 };
            prop_assert!(window.contains(first) && window.contains(last));
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
        let mut previous: Vec<PageKey> = Vec::new();
        for &(fd, page) in &list {
            if planner.window().is_none() || planner.on_read(PageKey { fd, page }, true).1.start_round {
                let plan = planner.plan_round();
                let current = planner.window().unwrap().pages();
                let stale: Vec<PageKey> = previous.iter().copied().filter(|k| !current.contains(k)).collect();
                let over_budget = (current.len() + stale.len()) as u64 > planner.budget_pages();
                let dropped: u64 = plan.evict.iter().map(|r| r.len).sum();
                prop_assert_eq!(dropped, if over_budget { stale.len() as u64 } else { 0 });
                for range in &plan.evict {
                    for page in range.start..range.end() {
                        let key = PageKey { fd: range.fd, page };
                        prop_assert!(stale.contains(&key));
                    }
                }
                // Only pages new to the window are advised (no eviction was reported).
                for range in &plan.fetch {
                    let first = PageKey { fd: range.fd, page: range.start };
                    prop_assert!(!previous.contains(&first));
                }
                previous = current;
            }
        }
    }
}

#[test]
fn premature_eviction_halves_the_budget_once_per_round() {
    let mut planner = Planner::new(config(0, 100, 1024));
    planner.request(
        &entries(&[(1, 1), (1, 2), (1, 3), (1, 4)]),
        Mode::SET | Mode::DONE,
    );
    planner.plan_round();
    let before = planner.budget_bytes();
    planner.on_read(PageKey { fd: 1, page: 1 }, false);
    planner.on_read(PageKey { fd: 1, page: 2 }, false);
    assert_eq!(planner.budget_bytes(), before / 2);
    assert_eq!(planner.stats().premature_evictions, 2);
}

#[test]
fn a_consumed_round_without_eviction_grows_the_budget() {
    let mut planner = Planner::new(config(0, 2, 1024));
    planner.request(
        &entries(&[(1, 1), (1, 2), (1, 3), (1, 4)]),
        Mode::SET | Mode::DONE,
    );
    planner.plan_round();
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

/// Which page a generated read asks for.
#[derive(Clone, Debug)]
enum Pick {
    /// The list entry this far past the position (or an off-list page if
    /// the list is shorter).
    Listed(u64),
    /// A page read earlier, by its index in the history of reads.
    Reread(usize),
    /// Any page of the small universe, on the list or not.
    Page(i32, u64),
}

/// One step of a client's life, applied to both planners.
#[derive(Clone, Debug)]
enum Step {
    /// `request_prefetching` with `PF_SET` (0), `PF_APPEND` (1) or
    /// `PF_SET_FROM_MARK` (2), maybe or-ed with `PF_DONE`.
    Request {
        entries: Vec<(i32, u64, bool)>,
        kind: u8,
        done: bool,
    },
    /// A tracked read; `follow` runs the round and the (empty) callback the
    /// outcome asks for, as the library does.
    Read {
        pick: Pick,
        resident: bool,
        follow: bool,
    },
    /// A further page of the previous read.
    Continued(Pick),
    /// A round started by the caller.
    Round,
    /// A callback that added nothing.
    EmptyCallback,
    /// Memory available for caching changed (the budget may shrink).
    Available(u64),
}

fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        4 => (0u64..30).prop_map(Pick::Listed),
        1 => (0usize..64).prop_map(Pick::Reread),
        2 => (1i32..3, 0u64..48).prop_map(|(fd, page)| Pick::Page(fd, page)),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let entries =
        proptest::collection::vec((1i32..3, 0u64..48, proptest::bool::weighted(0.2)), 0..24);
    prop_oneof![
        2 => (entries, 0u8..3, any::<bool>())
            .prop_map(|(entries, kind, done)| Step::Request { entries, kind, done }),
        8 => (pick(), proptest::bool::weighted(0.85), proptest::bool::weighted(0.7))
            .prop_map(|(pick, resident, follow)| Step::Read { pick, resident, follow }),
        1 => pick().prop_map(Step::Continued),
        2 => Just(Step::Round),
        1 => Just(Step::EmptyCallback),
        1 => (1u64..40).prop_map(Step::Available),
    ]
}

/// Bytes to report available so that AIMD's 90% is `pages` pages.
fn available_for(pages: u64) -> u64 {
    pages * PAGE * 10 / 9 + 1
}

/// The planner under test and the reference, driven in lockstep.
struct Lockstep {
    planner: Planner,
    reference: ReferencePlanner,
    reads: Vec<PageKey>,
}

impl Lockstep {
    fn key(&self, pick: &Pick) -> PageKey {
        match *pick {
            Pick::Listed(ahead) => {
                let seq = self.reference.list.position() + ahead;
                self.reference.list.get(seq).map_or(
                    PageKey {
                        fd: 2,
                        page: 100 + ahead,
                    },
                    |e| e.key,
                )
            }
            Pick::Reread(index) if !self.reads.is_empty() => self.reads[index % self.reads.len()],
            Pick::Reread(index) => PageKey {
                fd: 1,
                page: index as u64,
            },
            Pick::Page(fd, page) => PageKey { fd, page },
        }
    }

    fn round(&mut self) -> Result<(), TestCaseError> {
        prop_assert_eq!(self.planner.plan_round(), self.reference.plan_round());
        Ok(())
    }

    fn empty_callback(&mut self) {
        let end = self.planner.list_end();
        self.planner.callback_returned(end);
        self.reference.callback_returned(end);
    }

    fn apply(&mut self, step: &Step) -> Result<(), TestCaseError> {
        match step {
            Step::Request {
                entries,
                kind,
                done,
            } => {
                let entries: Vec<Entry> = entries
                    .iter()
                    .map(|&(fd, page, mark)| Entry {
                        key: PageKey { fd, page },
                        mark,
                    })
                    .collect();
                let mut mode = [Mode::SET, Mode::APPEND, Mode::SET_FROM_MARK][*kind as usize];
                if *done {
                    mode = mode | Mode::DONE;
                }
                prop_assert_eq!(
                    self.planner.request(&entries, mode),
                    self.reference.request(&entries, mode)
                );
            }
            Step::Read {
                pick,
                resident,
                follow,
            } => {
                let key = self.key(pick);
                self.reads.push(key);
                let answer = self.planner.on_read(key, *resident);
                prop_assert_eq!(answer, self.reference.on_read(key, *resident));
                let outcome = answer.1;
                if *follow && outcome.call_back {
                    self.empty_callback();
                }
                if *follow && outcome.start_round {
                    self.round()?;
                }
            }
            Step::Continued(pick) => {
                let key = self.key(pick);
                prop_assert_eq!(
                    self.planner.on_read_continued(key),
                    self.reference.on_read_continued(key)
                );
            }
            Step::Round => self.round()?,
            Step::EmptyCallback => self.empty_callback(),
            Step::Available(pages) => {
                self.planner.set_available(available_for(*pages));
                self.reference.set_available(available_for(*pages));
            }
        }
        self.same_state()
    }

    fn same_state(&self) -> Result<(), TestCaseError> {
        let (planner, reference) = (&self.planner, &self.reference);
        prop_assert_eq!(planner.stats(), reference.stats);
        prop_assert_eq!(planner.budget_bytes(), reference.budget_bytes());
        prop_assert_eq!(planner.budget_pages(), reference.budget_pages());
        prop_assert_eq!(planner.last_mark(), reference.list.last_mark());
        prop_assert_eq!(planner.list_end(), reference.list.end_seq());
        prop_assert_eq!(planner.list_len(), reference.list.len());
        let window = planner.window().map(|w| (w.start, w.end, w.pages()));
        let expected = reference
            .window
            .as_ref()
            .map(|w| (w.start, w.end, w.pages.clone()));
        prop_assert_eq!(window, expected);
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sliding_planner_decides_as_the_from_scratch_reference(
        steps in proptest::collection::vec(step(), 1..120),
        budget in 1u64..24,
        infill in 0u64..4,
        advice in 1u64..8,
        reverse_pass in any::<bool>(),
    ) {
        let config = PlannerConfig {
            capacity: 40,
            reverse_pass,
            ..config(infill, budget, advice)
        };
        let mut lockstep = Lockstep {
            planner: Planner::new(config),
            reference: ReferencePlanner::new(config),
            reads: Vec::new(),
        };
        for step in &steps {
            lockstep.apply(step)?;
        }
    }
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
