//! The reorder buffer of a prefetching round: the entries from the
//! application's position onward until the number of unique pages reaches
//! the byte budget.
//!
//! Follows libprefetch (ATC 2009) section 4.5: "it walks the access list
//! until it has seen the appropriate number of unique pages". A page that
//! repeats inside the window costs nothing more; the walk stops before the
//! first entry whose page would exceed the budget.
//!
//! The window is kept from round to round and slid along the list rather
//! than selected anew, so that a round costs what changed, not the window's
//! size (a SQLite index scan's window holds 1.6 M entries over 262 K pages,
//! and rounds start on every miss). The entries that were read leave at the
//! front; the window then grows at the back up to the budget (or shrinks
//! from the back when the budget fell). A count of entries per page tells
//! which pages left the window (count down to 0) and which entered it
//! (count up from 0):
//!
//! ```text
//!   list       ...  a .......... P ................ b ......... E  ...
//!   previous        [-------------------------------)
//!   next                         [----------------------------)
//!   [a, P) leave: a page whose count drops to 0 has left
//!   [b, E) enter: a page whose count rises from 0 has entered
//! ```
//!
//! Both are net changes: a page that leaves at the front and comes back at
//! the back is in neither. When the list was replaced (`PF_SET`,
//! `PF_SET_FROM_MARK`) or the position moved past the window, every old
//! page leaves and the window is selected from scratch.
//!
//! The window also answers "where on the list is this read?" in O(1)
//! expected plus a binary search among the page's entries.
//!
//! Deviations: none in what is selected; the paper selects each round's
//! window from scratch, the sliding is an equivalent, cheaper computation.

use std::collections::hash_map::Entry;
use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::access_list::{AccessList, PageKey};

/// The entries and unique pages of one round.
#[derive(Clone, Debug, Default)]
pub struct Window {
    /// Sequence number of the first entry of the round.
    pub start: u64,
    /// Sequence number one past the last entry of the round.
    pub end: u64,
    /// Sequence number of the first indexed entry (`indexed[0]`). The index
    /// holds the entries last selected, even once the round has ended, so
    /// that reads can still be placed until the next round.
    first: u64,
    /// The pages of the indexed entries, in access order.
    indexed: VecDeque<PageKey>,
    /// Every indexed page with the sequence numbers of its entries,
    /// ascending (entries leave at the front and enter at the back). FxHash:
    /// the keys come from the application's own list, and SipHash made a
    /// full selection 1.6x slower.
    seqs: FxHashMap<PageKey, VecDeque<u64>>,
}

/// How the window's pages changed when it slid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slide {
    /// Pages in the window now that were not in it before, sorted.
    pub entered: Vec<PageKey>,
    /// Pages in the window before that are not in it now, sorted.
    pub left: Vec<PageKey>,
}

impl Window {
    /// Walks `list` from its position until `budget_pages` unique pages.
    pub fn select(list: &AccessList, budget_pages: u64) -> Window {
        let mut window = Window::default();
        window.slide(list, budget_pages, true);
        window
    }

    /// Moves the window to start at the list's position and hold as many
    /// entries as `budget_pages` unique pages allow, as [`Window::select`]
    /// would; returns the pages that entered and left. `list_replaced` says
    /// the list was replaced since the last slide (the indexed entries no
    /// longer match it), which forces a selection from scratch.
    pub fn slide(&mut self, list: &AccessList, budget_pages: u64, list_replaced: bool) -> Slide {
        let position = list.position();
        let overlaps = !list_replaced
            && self.first <= position
            && position < self.indexed_end()
            && self.indexed_end() <= list.end_seq();
        let mut left = Vec::new();
        if overlaps {
            while self.first < position {
                self.pop_front(&mut left);
            }
        } else {
            self.clear(position, &mut left);
        }
        let mut entered = Vec::new();
        if self.seqs.len() as u64 > budget_pages {
            self.shrink_to(budget_pages, &mut left);
        } else {
            self.extend(list, budget_pages, &mut entered);
        }
        self.start = position;
        self.end = self.indexed_end();
        self.net_changes(entered, left)
    }

    /// The unique pages of the window, sorted by (fd, page): a sort of all
    /// of them, for the rounds that advise the whole window again.
    pub fn pages(&self) -> Vec<PageKey> {
        let mut pages: Vec<PageKey> = self.seqs.keys().copied().collect();
        pages.sort_unstable();
        pages
    }

    /// Number of unique pages in the window.
    pub fn page_count(&self) -> usize {
        self.seqs.len()
    }

    /// True if `key` is one of the window's pages.
    pub fn contains(&self, key: PageKey) -> bool {
        self.seqs.contains_key(&key)
    }

    /// The first entry for `key` at or after sequence number `from`.
    pub fn find_from(&self, key: PageKey, from: u64) -> Option<u64> {
        let seqs = self.seqs.get(&key)?;
        seqs.get(seqs.partition_point(|&seq| seq < from)).copied()
    }

    /// The pages of the window's entries in access order (for the
    /// reverse-order pass). O(entries).
    pub fn access_order(&self) -> impl Iterator<Item = PageKey> + '_ {
        self.indexed.iter().copied()
    }

    /// Sequence number one past the last indexed entry.
    fn indexed_end(&self) -> u64 {
        self.first + self.indexed.len() as u64
    }

    /// Forgets every entry (all pages leave) and restarts at `position`.
    fn clear(&mut self, position: u64, left: &mut Vec<PageKey>) {
        left.extend(self.seqs.keys().copied());
        self.seqs.clear();
        self.indexed.clear();
        self.first = position;
    }

    /// Removes the first indexed entry; its page leaves if it was the last.
    fn pop_front(&mut self, left: &mut Vec<PageKey>) {
        if let Some(key) = self.indexed.pop_front() {
            self.first += 1;
            self.forget(key, left, VecDeque::pop_front);
        }
    }

    /// Removes the last indexed entry; its page leaves if it was the last.
    fn pop_back(&mut self, left: &mut Vec<PageKey>) {
        if let Some(key) = self.indexed.pop_back() {
            self.forget(key, left, VecDeque::pop_back);
        }
    }

    /// Removes one sequence number of `key` (with `pop`); records `key` in
    /// `left` when none remains.
    fn forget(
        &mut self,
        key: PageKey,
        left: &mut Vec<PageKey>,
        pop: fn(&mut VecDeque<u64>) -> Option<u64>,
    ) {
        if let Some(seqs) = self.seqs.get_mut(&key) {
            pop(seqs);
            if seqs.is_empty() {
                self.seqs.remove(&key);
                left.push(key);
            }
        }
    }

    /// Drops entries from the back until the pages fit the budget: the walk
    /// from the front would stop at the entry whose page just left.
    fn shrink_to(&mut self, budget_pages: u64, left: &mut Vec<PageKey>) {
        while self.seqs.len() as u64 > budget_pages {
            self.pop_back(left);
        }
    }

    /// Adds the list's entries after the window until the next one would
    /// bring a page beyond the budget.
    fn extend(&mut self, list: &AccessList, budget_pages: u64, entered: &mut Vec<PageKey>) {
        let mut seq = self.indexed_end();
        while let Some(key) = list.get(seq).map(|entry| entry.key) {
            let pages = self.seqs.len() as u64;
            match self.seqs.entry(key) {
                Entry::Occupied(mut seqs) => seqs.get_mut().push_back(seq),
                Entry::Vacant(_) if pages >= budget_pages => break,
                Entry::Vacant(slot) => {
                    slot.insert(VecDeque::new()).push_back(seq);
                    entered.push(key);
                }
            }
            self.indexed.push_back(key);
            seq += 1;
        }
    }

    /// The net change from the pages that rose from and dropped to a count
    /// of 0: a page that did both is in neither.
    fn net_changes(&self, mut entered: Vec<PageKey>, mut left: Vec<PageKey>) -> Slide {
        entered.sort_unstable();
        left.sort_unstable();
        entered.retain(|key| left.binary_search(key).is_err());
        left.retain(|key| !self.contains(*key));
        Slide { entered, left }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_list::{Entry, Mode};

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
        assert_eq!(numbers(&window.pages()), vec![1, 5]);
    }

    #[test]
    fn finds_next_occurrence_from_position() {
        let list = list_of(&[5, 1, 5, 1, 9, 2]);
        let window = Window::select(&list, 10);
        let five = PageKey { fd: 1, page: 5 };
        assert_eq!(window.find_from(five, 0), Some(0));
        assert_eq!(window.find_from(five, 1), Some(2));
        assert_eq!(window.find_from(five, 3), None);
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
        list.request(&entries(&[1, 4]), Mode::SET);
        let slide = window.slide(&list, 10, true);
        assert_eq!(numbers(&window.pages()), vec![1, 4]);
        assert_eq!(numbers(&slide.entered), vec![4]);
        assert_eq!(numbers(&slide.left), vec![5, 9]);
    }
}
