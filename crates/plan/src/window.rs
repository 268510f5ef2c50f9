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
//! The window also answers "where on the list is this read?". Its index
//! is small because the list it indexes can be several budgets long: it
//! stores no page keys, the list has them. Each page keeps its entry count
//! and its first and last entry (12 bytes in a hash table, found by the
//! key at its first entry), and each entry the distance to the next entry
//! of its page (4 bytes), so a page's entries form a chain:
//!
//! ```text
//!   seq      10  11  12  13  14  15
//!   page      a   b   a   c   a   b      a: first 10, last 14
//!   next      2   4   2   0   0   0      b: first 11, last 15
//! ```
//!
//! A lookup walks its page's chain from the first entry; a page with more
//! than `CHAIN_WALKED_AT_MOST` entries (the root of a B-tree, read on
//! every lookup) also keeps its entries in a sorted queue for a binary
//! search, so no walk is longer than that.
//!
//! Runs of adjacent pages that the planner leaves to the kernel's
//! read-ahead ([`crate::readahead`]) are indexed as ranges, not page by
//! page ([`Window::slide_skipping`]): a run is its first entry and its
//! length, its entries keep a link (always 0) so that offsets stay
//! entry-for-entry, and its pages count against the budget but never
//! enter or leave. A 256 MiB file read in order is then 2,048 indexed
//! pages and one range instead of 65,536 pages inserted and removed.
//!
//! ```text
//!   seq      10  11  12  13  14  15  16
//!   page      a   b   p   p+1 p+2 p+3 c     run {seq 12, len 4}
//!   next      0   0   0   0   0   0   0     a, b, c in the page table
//! ```
//!
//! The list keeps the consumed entries the window still indexes until its
//! next slide ([`crate::AccessList::keep_from`]); before the list is
//! replaced, the window keeps its pages' keys instead ([`Window::detach`]).
//!
//! Deviations: none in what is selected, except that a window holds at most
//! `u32::MAX` entries (sequence numbers are kept as their low 32 bits), and
//! a page that is both in a run left to the kernel and listed elsewhere in
//! the window counts twice against the budget;
//! the paper selects each round's window from scratch, the sliding is an
//! equivalent, cheaper computation.

use std::collections::VecDeque;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::access_list::{reserve_within, AccessList, PageKey};
use crate::ranges::stale_pages;

/// Pages with more entries than this in the window keep them sorted in a
/// queue too, so that a lookup walks at most this many links.
const CHAIN_WALKED_AT_MOST: u32 = 32;

/// Most entries a window holds: their distances fit in 32 bits.
const MAX_ENTRIES: usize = u32::MAX as usize;

/// One page of the window: its entry count and the low 32 bits of its
/// first and last entries' sequence numbers; its key is the list's at its
/// first entry. 12 bytes.
#[derive(Clone, Copy, Debug)]
struct Span {
    count: u32,
    first: u32,
    last: u32,
}

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
    /// The indexed entries, in access order, chained per page: each the
    /// distance to the next entry of its page (0: none in the window). The
    /// entries' pages are the list's.
    indexed: VecDeque<u32>,
    /// Every indexed page with its first and last entries. FxHash: the
    /// keys come from the application's own list, and SipHash made a full
    /// selection 1.6x slower.
    pages: HashTable<Span>,
    /// The pages of a window whose list was replaced (sorted): the index
    /// cannot read them from the new list, and they are what leaves at the
    /// next slide.
    detached: Vec<PageKey>,
    /// The sequence numbers of the pages that have had more than
    /// `CHAIN_WALKED_AT_MOST` entries since they entered, ascending.
    hot: FxHashMap<PageKey, VecDeque<u64>>,
    /// Runs of entries left to the kernel's read-ahead, ascending: their
    /// entries have links (always 0) but no page in `pages`; entry
    /// `seq + i` of a run is page `i` after the run's first.
    runs: VecDeque<Run>,
    /// Entries in `runs`, counted as pages against the budget.
    run_entries: u64,
}

/// Entries `[seq, seq + len)` of the list whose pages are adjacent pages of
/// one file, all left to the kernel: indexed as one range.
#[derive(Clone, Copy, Debug)]
struct Run {
    seq: u64,
    len: u64,
}

impl Run {
    fn end(&self) -> u64 {
        self.seq + self.len
    }
}

/// How the window's pages changed when it slid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slide {
    /// Pages in the window now that were not in it before, sorted.
    pub entered: Vec<PageKey>,
    /// Pages in the window before that are not in it now, sorted.
    pub left: Vec<PageKey>,
}

/// The pages that entered and left the window during a slide, collected
/// only when the caller wants them (conservative does not: at its first
/// round they would be every page of eight budgets ahead, 16 bytes each).
#[derive(Default)]
struct Changes {
    track: bool,
    entered: Vec<PageKey>,
    left: Vec<PageKey>,
}

impl Changes {
    fn entered(&mut self, key: PageKey) {
        if self.track {
            self.entered.push(key);
        }
    }

    fn left(&mut self, keys: impl IntoIterator<Item = PageKey>) {
        if self.track {
            self.left.extend(keys);
        }
    }
}

fn hash(key: PageKey) -> u64 {
    FxBuildHasher.hash_one(key)
}

/// The sequence number whose low 32 bits are `low`, at or after `first`
/// (every indexed entry is less than `u32::MAX` entries after it).
fn widen(first: u64, low: u32) -> u64 {
    first + u64::from(low.wrapping_sub(first as u32))
}

/// The page of `span`, read from `list` at its first entry (`first` is
/// the window's first indexed entry).
fn key_of(list: &AccessList, first: u64, span: &Span) -> Option<PageKey> {
    list.get(widen(first, span.first)).map(|entry| entry.key)
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
    /// longer match it), which forces a selection from scratch. The window
    /// reads its entries' pages from `list`: until the next slide, the list
    /// must keep them ([`AccessList::keep_from`] the
    /// [`Window::first_indexed`] entry).
    pub fn slide(&mut self, list: &AccessList, budget_pages: u64, list_replaced: bool) -> Slide {
        let start = list.position();
        self.slide_tracking(list, start, budget_pages, list_replaced, true, &mut |_| 0)
    }

    /// [`Window::slide`] from entry `start` (at most the list's position:
    /// the slowest of several readers' place, [`crate::readers`]), indexing
    /// as one range each run of entries that
    /// `left_from` says is left to the kernel: `left_from(seq)` is the
    /// number of entries from `seq` on whose pages are adjacent pages of
    /// one file, each the page after the entry before, none to be advised
    /// (0: entry `seq` is indexed as usual). A run's entries count as
    /// pages against the budget and are not in the returned changes.
    pub fn slide_skipping(
        &mut self,
        list: &AccessList,
        start: u64,
        budget_pages: u64,
        list_replaced: bool,
        left_from: &mut dyn FnMut(u64) -> u64,
    ) -> Slide {
        let start = start.min(list.position());
        self.slide_tracking(list, start, budget_pages, list_replaced, true, left_from)
    }

    /// [`Window::slide`] without the pages that entered and left.
    pub fn advance(&mut self, list: &AccessList, budget_pages: u64, list_replaced: bool) {
        let start = list.position();
        self.slide_tracking(list, start, budget_pages, list_replaced, false, &mut |_| 0);
    }

    fn slide_tracking(
        &mut self,
        list: &AccessList,
        position: u64,
        budget_pages: u64,
        list_replaced: bool,
        track: bool,
        left_from: &mut dyn FnMut(u64) -> u64,
    ) -> Slide {
        let overlaps = !list_replaced
            && self.first <= position
            && position < self.indexed_end()
            && self.indexed_end() <= list.end_seq();
        let mut changes = Changes {
            track,
            ..Changes::default()
        };
        if overlaps {
            while self.first < position {
                self.pop_front(list, &mut changes);
            }
        } else {
            self.clear(list, position, &mut changes);
        }
        if self.counted() > budget_pages {
            self.shrink_to(list, budget_pages, &mut changes);
        } else {
            self.extend(list, budget_pages, &mut changes, left_from);
        }
        self.start = position;
        self.end = self.indexed_end();
        if !track {
            return Slide::default();
        }
        Self::net_changes(changes.entered, changes.left)
    }

    /// The unique pages of the window (`list` the one it indexes), sorted
    /// by (fd, page): a sort of all of them, for the rounds that advise the
    /// whole window again.
    pub fn pages(&self, list: &AccessList) -> Vec<PageKey> {
        let mut pages = self.indexed_pages(list);
        if self.runs.is_empty() {
            return pages;
        }
        for run in &self.runs {
            if let Some(first) = list.get(run.seq).map(|entry| entry.key) {
                pages.extend(
                    (first.page..first.page + run.len).map(|page| PageKey { page, ..first }),
                );
            }
        }
        pages.sort_unstable();
        pages.dedup();
        pages
    }

    /// The window's pages but those of its runs left to the kernel, sorted.
    fn indexed_pages(&self, list: &AccessList) -> Vec<PageKey> {
        let mut pages: Vec<PageKey> = self.page_keys(list).collect();
        pages.extend_from_slice(&self.detached);
        pages.sort_unstable();
        pages
    }

    /// Pages counted against the budget: the indexed pages and the entries
    /// of the runs left to the kernel.
    fn counted(&self) -> u64 {
        self.pages.len() as u64 + self.run_entries
    }

    /// The indexed pages, unordered.
    fn page_keys<'a>(&'a self, list: &'a AccessList) -> impl Iterator<Item = PageKey> + 'a {
        self.pages
            .iter()
            .filter_map(|span| key_of(list, self.first, span))
    }

    /// Number of unique pages in the window.
    pub fn page_count(&self) -> usize {
        self.pages.len() + self.detached.len() + self.run_entries as usize
    }

    /// True if `key` is one of the window's pages.
    pub fn contains(&self, list: &AccessList, key: PageKey) -> bool {
        self.span(list, key).is_some()
            || self.detached.binary_search(&key).is_ok()
            || self.find_in_runs(list, key, self.first).is_some()
    }

    /// Forgets the index before `list` is replaced, keeping only the
    /// window's pages (they leave at the next slide, which selects from
    /// scratch, and are still the window's pages until then). The pages of
    /// its runs left to the kernel are not kept: the plan holds none of
    /// them, and a list handed again whole (`PF_SET` at each callback)
    /// would sort them all each time.
    pub fn detach(&mut self, list: &AccessList) {
        let mut pages = self.indexed_pages(list);
        pages.dedup();
        self.detached = pages;
        self.pages = HashTable::new();
        self.hot.clear();
        self.indexed = VecDeque::new();
        self.runs.clear();
        self.run_entries = 0;
        self.first = self.first.max(list.position());
    }

    /// The first entry for `key` at or after sequence number `from`: a
    /// binary search of a hot page's entries or a walk of its chain.
    pub fn find_from(&self, list: &AccessList, key: PageKey, from: u64) -> Option<u64> {
        let chained = self.find_in_chain(list, key, from);
        match (chained, self.find_in_runs(list, key, from)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The first entry of `key` at or after `from` in the runs left to the
    /// kernel: a walk of the runs (few: one per run of the list).
    fn find_in_runs(&self, list: &AccessList, key: PageKey, from: u64) -> Option<u64> {
        let later = self.runs.partition_point(|run| run.end() <= from);
        self.runs.range(later..).find_map(|run| {
            let first = list.get(run.seq)?.key;
            let offset = key.page.checked_sub(first.page)?;
            let seq = run.seq + offset;
            (first.fd == key.fd && offset < run.len && seq >= from).then_some(seq)
        })
    }

    /// The first indexed entry of `key` at or after `from`.
    fn find_in_chain(&self, list: &AccessList, key: PageKey, from: u64) -> Option<u64> {
        let span = self.span(list, key)?;
        if from > widen(self.first, span.last) {
            return None;
        }
        if let Some(seqs) = self.hot.get(&key) {
            return seqs.get(seqs.partition_point(|&seq| seq < from)).copied();
        }
        let mut seq = widen(self.first, span.first);
        while seq < from {
            seq = self.next_of(seq)?;
        }
        Some(seq)
    }

    /// The next entry of the page of the indexed entry `seq` (what
    /// [`Window::find_from`] finds from `seq + 1` for that page), in one step.
    pub fn next_after(&self, seq: u64) -> Option<u64> {
        self.next_of(seq)
    }

    /// Sequence number of the first indexed entry: the list must keep the
    /// entries from here on (their pages are read from it).
    pub fn first_indexed(&self) -> u64 {
        self.first
    }

    /// The pages of the window's entries in access order (for the
    /// reverse-order pass), from `list`, which the window indexes. O(entries).
    pub fn access_order<'a>(&self, list: &'a AccessList) -> impl Iterator<Item = PageKey> + 'a {
        list.iter_from(self.first)
            .take(self.indexed.len())
            .map(|(_, entry)| entry.key)
    }

    /// Sequence number one past the last indexed entry.
    fn indexed_end(&self) -> u64 {
        self.first + self.indexed.len() as u64
    }

    fn span(&self, list: &AccessList, key: PageKey) -> Option<&Span> {
        let first = self.first;
        self.pages
            .find(hash(key), |span| key_of(list, first, span) == Some(key))
    }

    fn span_mut(&mut self, list: &AccessList, key: PageKey) -> Option<&mut Span> {
        let first = self.first;
        self.pages
            .find_mut(hash(key), |span| key_of(list, first, span) == Some(key))
    }

    /// The link of the indexed entry `seq`.
    fn link(&self, seq: u64) -> Option<&u32> {
        let offset = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.indexed.get(offset)
    }

    fn link_mut(&mut self, seq: u64) -> Option<&mut u32> {
        let offset = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.indexed.get_mut(offset)
    }

    /// The next entry of the page of entry `seq`.
    fn next_of(&self, seq: u64) -> Option<u64> {
        let next = *self.link(seq)?;
        (next != 0).then(|| seq + u64::from(next))
    }

    /// Every entry of a page's chain from `first`, ascending.
    fn chain_from(&self, first: u64) -> VecDeque<u64> {
        std::iter::successors(Some(first), |&seq| self.next_of(seq)).collect()
    }

    /// Forgets every entry (all pages leave) and restarts at `position`.
    fn clear(&mut self, list: &AccessList, position: u64, changes: &mut Changes) {
        changes.left(self.page_keys(list));
        changes.left(std::mem::take(&mut self.detached));
        self.pages.clear();
        self.hot.clear();
        self.indexed.clear();
        self.runs.clear();
        self.run_entries = 0;
        self.first = position;
    }

    /// Removes `key`, whose last entry left, and records that it left.
    fn remove_page(&mut self, list: &AccessList, key: PageKey, changes: &mut Changes) {
        let first = self.first;
        let found = self
            .pages
            .find_entry(hash(key), |span| key_of(list, first, span) == Some(key));
        if let Ok(span) = found {
            span.remove();
        }
        self.hot.remove(&key);
        changes.left([key]);
    }

    /// Removes the first indexed entry; its page leaves if it was the last.
    /// The page's first entry moves along its chain.
    fn pop_front(&mut self, list: &AccessList, changes: &mut Changes) {
        let seq = self.first;
        let Some(&next) = self.indexed.front() else {
            return;
        };
        if let Some(run) = self.runs.front_mut().filter(|run| run.seq == seq) {
            run.seq += 1;
            run.len -= 1;
            if run.len == 0 {
                self.runs.pop_front();
            }
            self.run_entries -= 1;
            self.indexed.pop_front();
            self.first += 1;
            return;
        }
        // The page is found (from its first entry, this one) before the
        // entry leaves the index.
        match list.get(seq).map(|entry| entry.key) {
            Some(key) if next == 0 => self.remove_page(list, key, changes),
            Some(key) => {
                if let Some(span) = self.span_mut(list, key) {
                    span.first = (seq + u64::from(next)) as u32;
                    span.count -= 1;
                }
                if let Some(seqs) = self.hot.get_mut(&key) {
                    seqs.pop_front();
                }
            }
            None => debug_assert!(false, "the list keeps the window's entries"),
        }
        self.indexed.pop_front();
        self.first += 1;
    }

    /// Removes the last indexed entry; its page leaves if it was the last.
    /// The page's new last entry is found by walking its chain (or from its
    /// sorted entries when it is hot).
    fn pop_back(&mut self, list: &AccessList, changes: &mut Changes) {
        let end = self.indexed_end();
        if let Some(run) = self.runs.back_mut().filter(|run| run.end() == end) {
            run.len -= 1;
            if run.len == 0 {
                self.runs.pop_back();
            }
            self.run_entries -= 1;
            self.indexed.pop_back();
            return;
        }
        if self.indexed.pop_back().is_none() {
            return;
        }
        let seq = self.indexed_end();
        let Some(key) = list.get(seq).map(|entry| entry.key) else {
            debug_assert!(false, "the list keeps the window's entries");
            return;
        };
        let Some(first) = self
            .span(list, key)
            .map(|span| widen(self.first, span.first))
        else {
            return;
        };
        if first == seq {
            self.remove_page(list, key, changes);
            return;
        }
        let last = match self.hot.get_mut(&key) {
            Some(seqs) => {
                seqs.pop_back();
                seqs.back().copied().unwrap_or(first)
            }
            None => self.entry_before(first, seq),
        };
        if let Some(link) = self.link_mut(last) {
            *link = 0;
        }
        if let Some(span) = self.span_mut(list, key) {
            span.last = last as u32;
            span.count -= 1;
        }
    }

    /// The entry of a chain starting at `first` whose next is `seq`.
    fn entry_before(&self, first: u64, seq: u64) -> u64 {
        let mut at = first;
        while let Some(next) = self.next_of(at).filter(|&next| next < seq) {
            at = next;
        }
        at
    }

    /// Drops entries from the back until the pages fit the budget: the walk
    /// from the front would stop at the entry whose page just left.
    fn shrink_to(&mut self, list: &AccessList, budget_pages: u64, changes: &mut Changes) {
        while self.counted() > budget_pages && !self.indexed.is_empty() {
            self.pop_back(list, changes);
        }
    }

    /// Adds the list's entries after the window until the next one would
    /// bring a page beyond the budget.
    fn extend(
        &mut self,
        list: &AccessList,
        budget_pages: u64,
        changes: &mut Changes,
        left_from: &mut dyn FnMut(u64) -> u64,
    ) {
        let mut seq = self.indexed_end();
        // The window holds at most the list from its first entry on.
        let most = usize::try_from(list.end_seq().saturating_sub(self.first))
            .unwrap_or(MAX_ENTRIES)
            .min(MAX_ENTRIES);
        while let Some(key) = list.get(seq).map(|entry| entry.key) {
            if self.indexed.len() >= MAX_ENTRIES {
                break;
            }
            let run = left_from(seq);
            if run > 0 {
                let room = budget_pages.saturating_sub(self.counted());
                let len = run.min(room).min((MAX_ENTRIES - self.indexed.len()) as u64);
                if len == 0 {
                    break;
                }
                self.push_run(list, key, seq, len, most);
                seq += len;
                continue;
            }
            reserve_within(&mut self.indexed, 1, most);
            if self.span(list, key).is_some() {
                self.append_to_page(list, key, seq);
            } else if self.counted() >= budget_pages {
                break;
            } else {
                self.insert_page(list, key, seq);
                changes.entered(key);
            }
            seq += 1;
        }
    }

    /// Indexes entries `[seq, seq + len)`, a run left to the kernel starting
    /// at page `key`, as one range (joined to the run before when it goes on).
    fn push_run(&mut self, list: &AccessList, key: PageKey, seq: u64, len: u64, most: usize) {
        let len_entries = usize::try_from(len).unwrap_or(MAX_ENTRIES);
        reserve_within(&mut self.indexed, len_entries, most);
        self.indexed.extend(std::iter::repeat_n(0, len_entries));
        self.run_entries += len;
        if let Some(back) = self.runs.back_mut().filter(|back| back.end() == seq) {
            let continues = list.get(back.seq).is_some_and(|first| {
                first.key.fd == key.fd && first.key.page + back.len == key.page
            });
            if continues {
                back.len += len;
                return;
            }
        }
        self.runs.push_back(Run { seq, len });
    }

    /// Indexes entry `seq` of a page new to the window.
    fn insert_page(&mut self, list: &AccessList, key: PageKey, seq: u64) {
        let span = Span {
            count: 1,
            first: seq as u32,
            last: seq as u32,
        };
        let first = self.first;
        self.pages.insert_unique(hash(key), span, |span| {
            hash(key_of(list, first, span).unwrap_or(key))
        });
        self.indexed.push_back(0);
    }

    /// Indexes entry `seq` of a page already in the window: the chain's
    /// last link points to it.
    fn append_to_page(&mut self, list: &AccessList, key: PageKey, seq: u64) {
        let window_first = self.first;
        let Some(span) = self.span_mut(list, key) else {
            return;
        };
        let last = widen(window_first, span.last);
        let first = widen(window_first, span.first);
        span.last = seq as u32;
        span.count += 1;
        let count = span.count;
        if let Some(link) = self.link_mut(last) {
            *link = (seq - last) as u32;
        }
        self.indexed.push_back(0);
        // A hot page stays hot until it leaves, even if entries fell below.
        if let Some(seqs) = self.hot.get_mut(&key) {
            seqs.push_back(seq);
        } else if count > CHAIN_WALKED_AT_MOST {
            let seqs = self.chain_from(first);
            self.hot.insert(key, seqs);
        }
    }

    /// The net change from the pages that rose from and dropped to a count
    /// of 0: a page that did both is in neither. A page that left is in the
    /// window now only if it entered again (leaving removed it from the
    /// index), so the two sorted lists decide it without a lookup.
    fn net_changes(mut entered: Vec<PageKey>, mut left: Vec<PageKey>) -> Slide {
        entered.sort_unstable();
        left.sort_unstable();
        Slide {
            entered: stale_pages(&entered, &left),
            left: stale_pages(&left, &entered),
        }
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
