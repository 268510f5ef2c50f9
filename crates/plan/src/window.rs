//! The reorder buffer of one prefetching round: the entries from the
//! application's position onward until the number of unique pages reaches
//! the byte budget.
//!
//! Follows libprefetch (ATC 2009) section 4.5: "it walks the access list
//! until it has seen the appropriate number of unique pages". A page that
//! repeats inside the window costs nothing more; the walk stops before the
//! first entry whose page would exceed the budget.
//!
//! The window also answers "where on the list is this read?" in O(log n):
//! its entries are kept sorted by (page, sequence number).

use crate::access_list::{AccessList, PageKey};

/// The entries and unique pages of one round.
#[derive(Clone, Debug, Default)]
pub struct Window {
    /// Sequence number of the first entry in the window.
    pub start: u64,
    /// Sequence number one past the last entry in the window.
    pub end: u64,
    /// Every entry of the window as (page, seq), sorted.
    by_page: Vec<(PageKey, u64)>,
    /// The unique pages, sorted by (fd, page).
    pages: Vec<PageKey>,
}

impl Window {
    /// Walks `list` from its position until `budget_pages` unique pages.
    pub fn select(list: &AccessList, budget_pages: u64) -> Window {
        let start = list.position();
        let mut seen = std::collections::HashSet::new();
        let mut by_page = Vec::new();
        let mut end = start;
        for (seq, entry) in list.iter_from(start) {
            if !seen.contains(&entry.key) {
                if seen.len() as u64 >= budget_pages {
                    break;
                }
                seen.insert(entry.key);
            }
            by_page.push((entry.key, seq));
            end = seq + 1;
        }
        by_page.sort_unstable();
        let mut pages: Vec<PageKey> = seen.into_iter().collect();
        pages.sort_unstable();
        Window {
            start,
            end,
            by_page,
            pages,
        }
    }

    /// The unique pages of the window, sorted by (fd, page).
    pub fn pages(&self) -> &[PageKey] {
        &self.pages
    }

    /// True if `key` is one of the window's pages.
    pub fn contains(&self, key: PageKey) -> bool {
        self.pages.binary_search(&key).is_ok()
    }

    /// The first entry for `key` at or after sequence number `from`.
    pub fn find_from(&self, key: PageKey, from: u64) -> Option<u64> {
        let at = self
            .by_page
            .partition_point(|&(k, seq)| (k, seq) < (key, from));
        match self.by_page.get(at) {
            Some(&(k, seq)) if k == key => Some(seq),
            _ => None,
        }
    }

    /// The entries of the window in access order (for the reverse-order pass).
    pub fn access_order(&self) -> Vec<(u64, PageKey)> {
        let mut order: Vec<(u64, PageKey)> = self.by_page.iter().map(|&(k, s)| (s, k)).collect();
        order.sort_unstable();
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_list::{Entry, Mode};

    fn list_of(pages: &[u64]) -> AccessList {
        let mut list = AccessList::with_capacity(1000);
        let entries: Vec<Entry> = pages
            .iter()
            .map(|&page| Entry {
                key: PageKey { fd: 1, page },
                mark: false,
            })
            .collect();
        list.request(&entries, Mode::SET);
        list
    }

    #[test]
    fn repeats_do_not_count_against_the_budget() {
        let list = list_of(&[5, 1, 5, 1, 9, 2]);
        let window = Window::select(&list, 2);
        assert_eq!(window.end, 4);
        assert_eq!(
            window.pages().iter().map(|k| k.page).collect::<Vec<_>>(),
            vec![1, 5]
        );
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
}
