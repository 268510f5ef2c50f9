//! Property test of the sliding window (libprefetch, ATC 2009, section 4.5)
//! against a from-scratch selection: after any sequence of reads, appends,
//! list replacements and budget changes, `Window::slide` holds exactly the
//! entries and pages that walking the list from the position until the
//! budget's unique pages gives, and reports as entered and left exactly the
//! difference between the previous and the new page sets.

use std::collections::BTreeSet;

use plan::{AccessList, Entry, Mode, PageKey, Window};
use proptest::prelude::*;

/// The window selected from scratch: (end, pages).
fn select_from_scratch(list: &AccessList, budget_pages: u64) -> (u64, BTreeSet<PageKey>) {
    let mut pages = BTreeSet::new();
    let mut end = list.position();
    for (seq, entry) in list.iter_from(list.position()) {
        if !pages.contains(&entry.key) && pages.len() as u64 >= budget_pages {
            break;
        }
        pages.insert(entry.key);
        end = seq + 1;
    }
    (end, pages)
}

#[derive(Clone, Debug)]
enum Step {
    /// The application reads this many entries further.
    Read(u64),
    /// `PF_APPEND` of these pages.
    Append(Vec<u64>),
    /// `PF_SET` of these pages.
    Set(Vec<u64>),
    /// The budget becomes this many pages.
    Budget(u64),
}

fn pages() -> impl Strategy<Value = Vec<u64>> {
    proptest::collection::vec(0u64..40, 0..30)
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u64..12).prop_map(Step::Read),
        2 => pages().prop_map(Step::Append),
        1 => pages().prop_map(Step::Set),
        1 => (1u64..30).prop_map(Step::Budget),
    ]
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn sliding_selects_what_a_walk_from_scratch_selects(
        first in pages(),
        steps in proptest::collection::vec(step(), 1..60),
        budget in 1u64..30,
    ) {
        let mut list = AccessList::with_capacity(60);
        list.request(&entries(&first), Mode::SET);
        let mut budget = budget;
        let mut window = Window::select(&list, budget);
        list.keep_from(window.first_indexed());
        let mut previous: BTreeSet<PageKey> = window.pages(&list).into_iter().collect();
        for step in &steps {
            let mut replaced = false;
            match step {
                Step::Read(ahead) => {
                    let target = (list.position() + ahead).min(list.end_seq());
                    if target > list.position() {
                        list.consume_through(target - 1);
                    }
                }
                Step::Append(pages) => {
                    list.request(&entries(pages), Mode::APPEND);
                }
                Step::Set(pages) => {
                    window.detach(&list);
                    list.request(&entries(pages), Mode::SET);
                    replaced = true;
                }
                Step::Budget(pages) => budget = *pages,
            }
            let slide = window.slide(&list, budget, replaced);
            list.keep_from(window.first_indexed());
            let (end, expected) = select_from_scratch(&list, budget);
            let selected: BTreeSet<PageKey> = window.pages(&list).into_iter().collect();
            prop_assert_eq!((window.start, window.end), (list.position(), end));
            prop_assert_eq!(&selected, &expected);
            let entered: Vec<PageKey> = expected.difference(&previous).copied().collect();
            let left: Vec<PageKey> = previous.difference(&expected).copied().collect();
            prop_assert_eq!(slide.entered, entered);
            prop_assert_eq!(slide.left, left);
            for page in &expected {
                let next = list.iter_from(list.position()).find(|(_, e)| e.key == *page).map(|(s, _)| s);
                prop_assert_eq!(window.find_from(&list, *page, list.position()), next);
            }
            previous = expected;
        }
    }
}
