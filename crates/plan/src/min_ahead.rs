//! Belady's MIN run ahead of the application on its access list: the
//! replacements of the conservative schedule (Cao, Felten, Karlin and Li,
//! SIGMETRICS 1995, section 2.4).
//!
//! MIN keeps a cache of `capacity` pages and, on a miss, discards the page
//! whose next use is furthest. Run over the list ahead of the position, it
//! yields a queue of replacements "bring page `x` for its use at `s`,
//! discarding `v`". Conservative performs exactly those replacements, each
//! at its first opportunity (rule 4) that does no harm (rule 3): once the
//! application has passed `v`'s last use before `s`. From then on `v` is
//! next used after `s` (MIN chose it as the furthest), so dropping it for
//! `x` cannot hurt. Rules 1 and 2 hold because the replacements are MIN's,
//! in MIN's order.
//!
//! ```text
//!   list      ... v ... position ......... cursor ......... lookahead end
//!   queue     [x1@s1 drop v1] [x2@s2 drop v2] ...   (MIN's misses, in order)
//!   issuable  while the front's victim was last used before the position
//! ```
//!
//! Next uses come from the planner's window, which for this schedule
//! reaches eight budgets of distinct pages ahead: MIN's choice among pages
//! next used far ahead is what keeps it optimal on lists with reuse at long
//! distance (with a window of twice the budget, a random list read 1.41x
//! the optimum's pages: MIN saw most next uses beyond it as ties). MIN runs ahead of the position
//! by a bound the caller sets (how far ahead replacements are known, which
//! sets how early they can be issued, not which they are), or, given a
//! shorter window, until only its capacity in distinct pages is left
//! ahead. A page with no use ahead is next used "never" (after
//! everything); among those, infill pages go first, then the least
//! recently used.
//!
//! A replacement waits for its victim, and on a list with reuse that is
//! larger than memory the victim is most often a page read a moment ago:
//! issued alone, conservative's fetches would come just before their use,
//! one or two at a time, with no queue depth for the device. So the
//! planner runs MIN with a cache smaller than its budget and keeps the
//! difference as a reserve: the pages of the next replacements are fetched
//! ahead into it, and each victim is dropped (freeing its room) once its
//! last use has passed.
//!
//! ```text
//!   pending   [x1 v1][x2 v2][x3 v3] | [x4 v4][x5 v5] ...
//!             fetched ahead (reserve) | not yet fetched
//!   issued    front first, once its victim's last use is behind the position
//! ```
//!
//! Cost: each list entry is stepped over once (a hash lookup, the page's
//! next entry from the window's links, at most 32 of them walked, a heap
//! push); a reset (list replaced, budget lowered below MIN's capacity)
//! starts over from the held pages. A budget lowered by less than the
//! reserve only gives back pages fetched ahead (`give_back`).
//! Memory: the window's index grows with the budget (eight budgets of
//! distinct pages and their entries), the queue with MIN's run ahead.
//!
//! Deviations: MIN sees only the window, and the list may be a prefix of
//! the real future (libprefetch section 4.2); a page used only beyond them
//! is next used "never".

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;

use crate::access_list::{AccessList, PageKey};
use crate::window::Window;

/// A use beyond the window.
const NEVER: u64 = u64::MAX;

/// The heap is rebuilt from the cache when it holds more than this many
/// entries per cached page (the rest are stale).
const STALE_HEAP_FACTOR: usize = 2;

/// ... and more than this many entries, so a small cache is not rebuilt
/// at every step.
const HEAP_FLOOR: usize = 1024;

type HeapKey = (u64, bool, Reverse<Option<u64>>, PageKey);

/// One of MIN's misses: bring `page` for its use at `at`, discarding `victim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// The page MIN misses.
    pub page: PageKey,
    /// The list entry (sequence number) that misses it.
    pub at: u64,
    /// The page MIN discards for it; `None` while MIN's cache had room.
    pub victim: Option<PageKey>,
    /// The victim's last use before `at`, if it had one since MIN started.
    victim_last_use: Option<u64>,
}

impl Replacement {
    /// True once the application's position has passed the victim's last use.
    pub fn issuable(&self, position: u64) -> bool {
        self.victim_last_use.is_none_or(|last| last < position)
    }
}

#[derive(Clone, Copy, Debug)]
struct Cached {
    next_use: u64,
    last_use: Option<u64>,
    infill: bool,
}

/// MIN's cache at its cursor and the replacements not yet issued.
#[derive(Debug, Default)]
pub struct MinAhead {
    /// The next list entry MIN will step over.
    cursor: u64,
    /// Entries of the window before this one have been seen.
    indexed_to: u64,
    /// Distinct pages with a use in `[cursor, indexed_to)`.
    ahead: u64,
    cache: FxHashMap<PageKey, Cached>,
    /// Pages MIN's cache holds at most.
    capacity: usize,
    /// (next use, infill, least recently used, page): the top is the page
    /// to discard. Stale entries (the page left, or its next use changed)
    /// are skipped.
    furthest: BinaryHeap<HeapKey>,
    /// Replacements not yet issued, in MIN's order.
    pending: VecDeque<Replacement>,
    /// The first this many of `pending` had their page fetched ahead.
    ahead_fetched: usize,
}

impl MinAhead {
    /// Starts MIN at `position` with the pages now held (`(page, infill)`)
    /// as its cache; returns the pages to discard at once when more than
    /// `capacity` are held (the furthest first).
    pub fn reset(
        &mut self,
        position: u64,
        held: impl Iterator<Item = (PageKey, bool)>,
        window: &Window,
        capacity: usize,
    ) -> Vec<PageKey> {
        self.capacity = capacity;
        self.cursor = position;
        self.indexed_to = position;
        self.ahead = 0;
        self.cache.clear();
        self.furthest.clear();
        self.pending.clear();
        self.ahead_fetched = 0;
        for (key, infill) in held {
            let next_use = window.find_from(key, position).unwrap_or(NEVER);
            self.insert(key, next_use, None, infill);
        }
        let mut forced = Vec::new();
        while self.cache.len() > capacity {
            match self.pop_furthest() {
                Some((key, _)) => forced.push(key),
                None => break,
            }
        }
        forced
    }

    /// The next entry MIN will step over.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// Entries of the window seen so far (one past the last).
    pub fn indexed_to(&self) -> u64 {
        self.indexed_to
    }

    /// Pages in MIN's cache.
    pub fn cache_len(&self) -> usize {
        self.cache.len()
    }

    /// True if `key` is in MIN's cache.
    pub fn caches(&self, key: PageKey) -> bool {
        self.cache.contains_key(&key)
    }

    /// Takes in the window's entries added since the last call: a cached
    /// page that was next used "never" now has a use.
    pub fn extend(&mut self, list: &AccessList, window: &Window) {
        while self.indexed_to < window.end {
            let seq = self.indexed_to;
            self.indexed_to += 1;
            let Some(key) = list.get(seq).map(|e| e.key) else {
                continue;
            };
            if window.find_from(key, self.cursor) != Some(seq) {
                continue;
            }
            self.ahead += 1;
            if let Some(cached) = self.cache.get_mut(&key) {
                if cached.next_use == NEVER {
                    cached.next_use = seq;
                    self.furthest
                        .push((seq, cached.infill, Reverse(cached.last_use), key));
                }
            }
        }
    }

    /// MIN's capacity in pages.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Raises MIN's capacity from its cursor on (lowering it takes a
    /// reset, which discards pages).
    pub fn grow_to(&mut self, capacity: usize) {
        self.capacity = self.capacity.max(capacity);
    }

    /// Steps MIN over the list up to entry `until` while more than its
    /// capacity in distinct pages is left ahead of it in the window (or to
    /// the window's end when the window reaches the list's end).
    pub fn run(&mut self, list: &AccessList, window: &Window, until: u64) {
        let whole_list = window.end >= list.end_seq();
        while self.cursor < self.indexed_to.min(until)
            && (whole_list || self.ahead > self.capacity as u64)
        {
            let seq = self.cursor;
            self.cursor += 1;
            let Some(key) = list.get(seq).map(|e| e.key) else {
                continue;
            };
            let next_use = window.find_from(key, seq + 1).unwrap_or(NEVER);
            if next_use == NEVER {
                self.ahead = self.ahead.saturating_sub(1);
            }
            self.step(key, seq, next_use);
        }
    }

    /// MIN at entry `seq` reading `key`, next used at `next_use`.
    fn step(&mut self, key: PageKey, seq: u64, next_use: u64) {
        if self.cache.contains_key(&key) {
            self.insert(key, next_use, Some(seq), false);
            return;
        }
        let victim = if self.cache.len() >= self.capacity {
            self.pop_furthest()
        } else {
            None
        };
        self.pending.push_back(Replacement {
            page: key,
            at: seq,
            victim: victim.map(|(key, _)| key),
            victim_last_use: victim.and_then(|(_, last)| last),
        });
        self.insert(key, next_use, Some(seq), false);
    }

    /// Adds an infill page to MIN's cache (it must not be cached).
    pub fn insert_infill(&mut self, key: PageKey, window: &Window) {
        let next_use = window.find_from(key, self.cursor).unwrap_or(NEVER);
        self.insert(key, next_use, None, true);
    }

    fn insert(&mut self, key: PageKey, next_use: u64, last_use: Option<u64>, infill: bool) {
        let cached = self.cache.entry(key).or_insert(Cached {
            next_use,
            last_use,
            infill,
        });
        cached.next_use = next_use;
        if last_use.is_some() {
            cached.last_use = last_use;
            cached.infill = false;
        }
        self.furthest
            .push((next_use, cached.infill, Reverse(cached.last_use), key));
        self.compact_if_stale();
    }

    /// Rebuilds the heap from the cache once most of its entries are
    /// stale: every hit pushes a page's new next use and leaves the old
    /// one, so without this the heap grows by one entry per list entry
    /// stepped over instead of staying within MIN's cache. Amortised: a
    /// rebuild of `n` pages follows at least `n` pushes.
    fn compact_if_stale(&mut self) {
        if self.furthest.len() <= STALE_HEAP_FACTOR * self.cache.len().max(HEAP_FLOOR) {
            return;
        }
        let live = self
            .cache
            .iter()
            .map(|(&key, c)| (c.next_use, c.infill, Reverse(c.last_use), key));
        self.furthest = live.collect();
    }

    /// Removes the cached page next used furthest: (page, its last use).
    fn pop_furthest(&mut self) -> Option<(PageKey, Option<u64>)> {
        while let Some((next_use, infill, Reverse(last_use), key)) = self.furthest.pop() {
            let current = self.cache.get(&key).is_some_and(|c| {
                c.next_use == next_use && c.infill == infill && c.last_use == last_use
            });
            if current {
                let cached = self.cache.remove(&key)?;
                return Some((key, cached.last_use));
            }
        }
        None
    }

    /// The front replacement, if any.
    pub fn front(&self) -> Option<&Replacement> {
        self.pending.front()
    }

    /// True if the `n`-th replacement not yet issued (0 the front), or the
    /// last one if fewer are waiting, is issuable now.
    pub fn nth_issuable(&self, n: usize, position: u64) -> bool {
        let last = n.min(self.pending.len().saturating_sub(1));
        self.pending.get(last).is_some_and(|r| r.issuable(position))
    }

    /// Replacements whose page was fetched ahead (their victim still to
    /// be dropped): the pages they take from the reserve.
    pub fn fetched_ahead(&self) -> usize {
        self.ahead_fetched
    }

    /// Removes the front replacement if it is issuable now; says whether
    /// its page was already fetched ahead.
    pub fn take_issuable(&mut self, position: u64) -> Option<(Replacement, bool)> {
        if !self.pending.front()?.issuable(position) {
            return None;
        }
        let replacement = self.pending.pop_front()?;
        let was_ahead = self.ahead_fetched > 0;
        self.ahead_fetched = self.ahead_fetched.saturating_sub(1);
        Some((replacement, was_ahead))
    }

    /// Gives back up to `pages` of the reserve when the budget fell: the
    /// replacements fetched ahead last (their pages needed latest) count
    /// as not fetched again, and their pages are returned to be dropped.
    /// MIN's plan stands; each of those pages is fetched again when its
    /// replacement is issued. (A page fetched ahead twice, for two uses,
    /// and given back for the later one, is dropped for both: its first
    /// use then misses. MIN rarely plans that within one reserve.)
    pub fn give_back(&mut self, pages: usize) -> Vec<PageKey> {
        let start = self.ahead_fetched.saturating_sub(pages);
        let given = self
            .pending
            .range(start..self.ahead_fetched)
            .map(|r| r.page)
            .collect();
        self.ahead_fetched = start;
        given
    }

    /// The pages of the next replacements not yet fetched, up to `room`
    /// of them, to fetch ahead of their victims' last uses (into the
    /// reserve); they are marked as fetched.
    pub fn fetch_ahead(&mut self, room: usize) -> Vec<PageKey> {
        let end = (self.ahead_fetched + room).min(self.pending.len());
        let pages = self
            .pending
            .range(self.ahead_fetched..end)
            .map(|r| r.page)
            .collect();
        self.ahead_fetched = end;
        pages
    }
}
