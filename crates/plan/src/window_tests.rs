//! Tests of the window (`window.rs`): the budget counts unique pages, slides report net
//! changes, replaced lists start afresh, runs left to the kernel are one range, and lookups
//! agree with a scan of the list (property).

use super::*;
use crate::access_list::{Entry, Mode};
use proptest::prelude::*;

fn entries(pages: &[u64]) -> Vec<Entry> {
    pages
        .iter()
        .map(|&page| Entry {
            key: PageKey { fd: 1, page },
            mark: false,
        })
        .collect()
}

fn list_of(pages: &[u64]) -> AccessList {
    let mut list = AccessList::with_capacity(1000);
    list.request(&entries(pages), Mode::SET);
    list
}

fn numbers(keys: &[PageKey]) -> Vec<u64> {
    keys.iter().map(|k| k.page).collect()
}

#[test]
fn repeats_do_not_count_against_the_budget() {
    let list = list_of(&[5, 1, 5, 1, 9, 2]);
    let window = Window::select(&list, 2);
    assert_eq!(window.end, 4);
    assert_eq!(numbers(&window.pages(&list)), vec![1, 5]);
}

#[test]
fn finds_next_occurrence_from_position() {
    let list = list_of(&[5, 1, 5, 1, 9, 2]);
    let window = Window::select(&list, 10);
    let five = PageKey { fd: 1, page: 5 };
    assert_eq!(window.find_from(&list, five, 0), Some(0));
    assert_eq!(window.find_from(&list, five, 1), Some(2));
    assert_eq!(window.find_from(&list, five, 3), None);
}

#[test]
fn sliding_reports_only_net_changes() {
    let mut list = list_of(&[5, 1, 9, 2, 5]);
    let mut window = Window::select(&list, 3);
    assert_eq!((window.start, window.end), (0, 3));
    list.consume_through(1);
    let slide = window.slide(&list, 3, false);
    // [2, 5): 9 2 5; page 5 left at the front and came back: no change.
    assert_eq!((window.start, window.end), (2, 5));
    assert_eq!(numbers(&slide.entered), vec![2]);
    assert_eq!(numbers(&slide.left), vec![1]);
    list.consume_through(2);
    let slide = window.slide(&list, 3, false);
    assert_eq!((window.start, window.end), (3, 5));
    assert!(slide.entered.is_empty());
    assert_eq!(numbers(&slide.left), vec![9]);
}

#[test]
fn a_smaller_budget_shrinks_from_the_back() {
    let list = list_of(&[5, 1, 5, 1, 9, 2, 1]);
    let mut window = Window::select(&list, 4);
    assert_eq!(window.end, 7);
    let slide = window.slide(&list, 2, false);
    assert_eq!(window.end, 4);
    assert!(slide.entered.is_empty());
    assert_eq!(numbers(&slide.left), vec![2, 9]);
}

#[test]
fn a_replaced_list_is_selected_from_scratch() {
    let mut list = list_of(&[5, 1, 9]);
    let mut window = Window::select(&list, 10);
    window.detach(&list);
    assert!(window.contains(&list, PageKey { fd: 1, page: 9 }));
    list.request(&entries(&[1, 4]), Mode::SET);
    assert!(window.contains(&list, PageKey { fd: 1, page: 9 }));
    assert!(!window.contains(&list, PageKey { fd: 1, page: 4 }));
    let slide = window.slide(&list, 10, true);
    assert_eq!(numbers(&window.pages(&list)), vec![1, 4]);
    assert_eq!(numbers(&slide.entered), vec![4]);
    assert_eq!(numbers(&slide.left), vec![5, 9]);
}

/// Entries 2..8 are a run left to the kernel: they are indexed as one
/// range that counts against the budget, are found and contained, and
/// never enter or leave; the run goes on as one range when the window
/// slides over it.
#[test]
fn a_run_left_to_the_kernel_is_one_range_counted_against_the_budget() {
    let mut list = list_of(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101]);
    let mut left_from = |seq: u64| if (2..8).contains(&seq) { 8 - seq } else { 0 };
    let mut window = Window::default();
    let slide = window.slide_skipping(&list, list.position(), 6, false, &mut left_from);
    assert_eq!((window.start, window.end), (0, 6));
    assert_eq!(numbers(&slide.entered), vec![0, 1]);
    assert_eq!(
        window.pages.len(),
        2,
        "pages 2..6 are not indexed one by one"
    );
    assert_eq!(window.page_count(), 6);
    assert_eq!(numbers(&window.pages(&list)), vec![0, 1, 2, 3, 4, 5]);
    let four = PageKey { fd: 1, page: 4 };
    assert_eq!(window.find_from(&list, four, 0), Some(4));
    assert_eq!(window.find_from(&list, four, 5), None);
    assert!(window.contains(&list, PageKey { fd: 1, page: 5 }));
    assert!(!window.contains(&list, PageKey { fd: 1, page: 6 }));
    list.consume_through(3);
    let slide = window.slide_skipping(&list, list.position(), 6, false, &mut left_from);
    assert_eq!((window.start, window.end), (4, 10));
    assert_eq!(numbers(&slide.entered), vec![8, 9]);
    assert_eq!(numbers(&slide.left), vec![0, 1]);
    assert_eq!(window.runs.len(), 1, "4..8 is one range");
    assert_eq!(window.run_entries, 4);
    assert_eq!(
        window.find_from(&list, PageKey { fd: 1, page: 7 }, 4),
        Some(7)
    );
    let slide = window.slide_skipping(&list, list.position(), 3, false, &mut left_from);
    assert_eq!((window.start, window.end), (4, 7));
    assert_eq!(numbers(&slide.left), vec![8, 9]);
    assert!(slide.entered.is_empty());
    assert_eq!(window.run_entries, 3);
    window.detach(&list);
    assert_eq!(
        window.page_count(),
        0,
        "a run's pages are not kept past its list"
    );
}

/// The entries from `seq` that continue its page one by one, when there
/// are two or more and the first page is even; else 0.
fn run_from(list: &AccessList, seq: u64) -> u64 {
    let Some(first) = list.get(seq).map(|entry| entry.key) else {
        return 0;
    };
    let continues = |n: u64| list.get(seq + n).map(|e| e.key.page) == Some(first.page + n);
    let len = (1..).find(|&n| !continues(n)).unwrap_or(1);
    if first.page % 2 == 0 && len >= 2 {
        len
    } else {
        0
    }
}

/// The first entry of `key` at or after `from` in the window, by a scan
/// of the list.
fn scan_from(list: &AccessList, window: &Window, key: PageKey, from: u64) -> Option<u64> {
    (from.max(window.start)..window.end).find(|&seq| list.get(seq).map(|e| e.key) == Some(key))
}

#[test]
fn a_hot_page_is_found_from_anywhere_and_shrinks_back() {
    let pages: Vec<u64> = (0..200)
        .map(|i| if i % 3 == 0 { 1000 } else { i })
        .collect();
    let list = list_of(&pages);
    let mut window = Window::select(&list, 1000);
    let hot = PageKey { fd: 1, page: 1000 };
    assert!(window.hot.contains_key(&hot));
    assert_eq!(window.find_from(&list, hot, 0), Some(0));
    assert_eq!(window.find_from(&list, hot, 100), Some(102));
    assert_eq!(window.find_from(&list, hot, 199), None);
    window.slide(&list, 20, false);
    assert_eq!(window.end, 29);
    assert_eq!(window.find_from(&list, hot, 28), None);
    assert_eq!(window.find_from(&list, hot, 27), Some(27));
}

/// Reads, appends and budget changes, then after each: `find_from` from any
/// sequence number (and, with runs, `contains`) agrees with a scan of the
/// list, and with runs the window's count stays within the budget. With
/// `with_runs`, every run of adjacent pages from an even page is left to
/// the kernel.
fn lookups_agree_with_a_scan(
    steps: Vec<(u64, Vec<u64>, u64)>,
    with_runs: bool,
) -> Result<(), TestCaseError> {
    let mut list = AccessList::with_capacity(100_000);
    let mut window = Window::default();
    for (reads, appended, budget) in steps {
        let target = list.position() + reads;
        if target > 0 && target <= list.end_seq() {
            list.consume_through(target - 1);
        }
        list.request(&entries(&appended), Mode::APPEND);
        if with_runs {
            let runs_of = &list;
            window.slide_skipping(&list, list.position(), budget, false, &mut |seq| {
                run_from(runs_of, seq)
            });
        } else {
            window.slide(&list, budget, false);
        }
        list.keep_from(window.first_indexed());
        if with_runs {
            prop_assert!(window.counted() <= budget);
        }
        for page in 0..5 {
            let key = PageKey { fd: 1, page };
            for from in window.start.saturating_sub(2)..window.end + 2 {
                prop_assert_eq!(
                    window.find_from(&list, key, from),
                    scan_from(&list, &window, key, from)
                );
            }
            if with_runs {
                prop_assert_eq!(
                    window.contains(&list, key),
                    scan_from(&list, &window, key, window.start).is_some()
                );
            }
        }
    }
    Ok(())
}

proptest! {
    /// Few distinct pages, so chains grow long and pages turn hot.
    #[test]
    fn find_from_agrees_with_a_scan(
        steps in proptest::collection::vec(
            (0u64..3, proptest::collection::vec(0u64..4, 0..60), 1u64..5),
            1..20,
        ),
    ) {
        lookups_agree_with_a_scan(steps, false)?;
    }

    /// The same with runs left to the kernel.
    #[test]
    fn find_from_agrees_with_a_scan_with_runs(
        steps in proptest::collection::vec(
            (0u64..3, proptest::collection::vec(0u64..4, 0..60), 1u64..6),
            1..20,
        ),
    ) {
        lookups_agree_with_a_scan(steps, true)?;
    }
}
