//! Pages a reader read only part of: forgotten, not dropped, once the plan no longer needs them.
//!
//! A page holding the end of one record and the start of the next is on the lists of both
//! records' readers; with records shuffled among DataLoader workers, the other record is
//! usually another process's. A plan that drops such a page (`POSIX_FADV_DONTNEED`) behind its
//! reader takes it from the other reader too: from under its prefetch if the other's turn is
//! near (a miss, or a premature eviction that halves its budget), and from the page cache,
//! where the kernel's LRU might have kept it until then, if it is further. So on a list given
//! with `PF_SHARED_EDGES` a page that a followed read covered only in part leaves the plan
//! without advice: the kernel reclaims it with the other unreferenced pages, and every other
//! page is dropped as before. Not by default: one reader whose own records share the pages
//! drops them once read, or they crowd its prefetched pages in a small cgroup. Libprefetch
//! (ATC 2009, section 4.5) drops the previous round's pages the new window does not need;
//! its application was one reader of whole pages.
//!
//! Deviations: a page is "partly read" per read, not per list: two adjacent records on the
//! same list also leave their shared page to the kernel (the application decides, by the flag,
//! whether its edges are shared).

use rustc_hash::FxHashSet;

use crate::access_list::PageKey;

/// The held pages a followed read covered only in part.
#[derive(Debug, Default)]
pub struct PartlyRead {
    pages: FxHashSet<PageKey>,
}

impl PartlyRead {
    /// A read covered part of `key`, a page the plan holds.
    pub fn note(&mut self, key: PageKey) {
        self.pages.insert(key);
    }

    /// Takes the partly read pages out of a round's `drops` (the plan has forgotten them
    /// already). `held_pages` and `held` tell how many and which pages the plan still holds:
    /// pages that left the plan some other way are forgotten here once they are as many as
    /// the held pages (amortised: a pass over the set per doubling).
    pub fn keep_cached(
        &mut self,
        drops: &mut Vec<PageKey>,
        held_pages: usize,
        held: impl Fn(PageKey) -> bool,
    ) {
        if self.pages.is_empty() {
            return;
        }
        drops.retain(|key| !self.pages.remove(key));
        if self.pages.len() > 2 * held_pages + 64 {
            self.pages.retain(|&key| held(key));
        }
    }

    /// Partly read pages noted and not yet forgotten (tests count them).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.pages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(page: u64) -> PageKey {
        PageKey { fd: 3, page }
    }

    #[test]
    fn partly_read_pages_leave_the_drops_and_the_set() {
        let mut partly = PartlyRead::default();
        partly.note(key(2));
        partly.note(key(9));
        let mut drops = vec![key(1), key(2), key(3)];
        partly.keep_cached(&mut drops, 2, |_| true);
        assert_eq!(drops, vec![key(1), key(3)]);
        assert_eq!(partly.len(), 1, "page 9 is still held");
        let mut again = vec![key(2)];
        partly.keep_cached(&mut again, 1, |_| true);
        assert_eq!(
            again,
            vec![key(2)],
            "a page forgotten once is an ordinary page again"
        );
    }

    #[test]
    fn pages_the_plan_no_longer_holds_do_not_pile_up() {
        let mut partly = PartlyRead::default();
        for page in 0..100 {
            partly.note(key(page));
        }
        partly.keep_cached(&mut vec![key(0)], 10, |key| key.page < 10);
        assert_eq!(partly.len(), 9, "only the held pages 1..10 are left");
    }
}
