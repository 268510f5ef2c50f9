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
//! MIN's cache is kept by list position, not by page: a cached page with
//! a use ahead is known by that use, a mark on the entry (whether a cached
//! page is next used there, and how long before it was last used), and the
//! entry's sequence number in a heap whose top is the furthest next use.
//! The page's key is the list's, read back only for a victim. A cached
//! page with no use ahead (next used "never", idle) has no entry to mark:
//! idle pages are kept by key, ordered for discarding (infill first, then
//! pages not used since MIN started, then the least recently used).
//!
//! ```text
//!   entries   cursor ... s ........ t ...... u ...... window end
//!   marks            .   1   ....   9   ...  0   ...       (one per entry)
//!   heap      [t, s]                           furthest on top
//!   idle      {page: rank}, in discarding order
//! ```
//!
//! Cost: each list entry is stepped over once (its mark, the page's next
//! entry from the window's links, a heap push); a reset (list replaced,
//! budget lowered below MIN's capacity) starts over from the held pages. A
//! budget lowered by less than the reserve only gives back pages fetched
//! ahead (`give_back`).
//! Memory: the marks take 4 bytes an entry of the window ahead of the
//! cursor (the window indexes eight budgets of distinct pages ahead, at
//! most the list); a cached page with a use ahead 8 bytes in the heap (at
//! most two entries a page before the heap is rebuilt, in place), an idle
//! one 24 in a hash table and 16 in its order; a replacement 36.
//! The replacements issuable at once (those of a first round, made while
//! MIN's cache had room) are taken as MIN runs, so the queue holds the
//! ones waiting for their victims.
//!
//! Deviations: MIN sees only the window, and the list may be a prefix of
//! the real future (libprefetch section 4.2); a page used only beyond them
//! is next used "never".

use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;

use crate::access_list::{reserve_within, AccessList, PageKey};
use crate::window::Window;

/// A use beyond the window.
const NEVER: u64 = u64::MAX;

/// The heap of next uses is rebuilt when it holds more than this many
/// entries per cached page with a use ahead (the rest are stale); so are
/// the orders of the idle pages.
const STALE_HEAP_FACTOR: usize = 2;

/// ... and more than this many entries, so a small cache is not rebuilt
/// at every step.
const HEAP_FLOOR: usize = 1024;

/// MIN steps over at most this many entries between two drains of the
/// issuable replacements, so that the queue does not hold a whole first
/// round's misses at once (the first `capacity` of them, made while MIN's
/// cache had room, are issuable at once).
const RUN_CHUNK: u64 = 4096;

/// A list entry's mark in [`MinAhead::next_uses`]: no cached page is next
/// used there.
const NOT_CACHED: u32 = 0;

/// ... a cached page is next used there and was not used since MIN
/// started (any other mark: it was, that many entries before).
const NO_LAST_USE: u32 = u32::MAX;

/// The mark of a cached page next used at `next_use` and last used at
/// `last_use`. A last use `u32::MAX` entries or more before is marked as
/// none: it is before the application's position (the window, from the
/// position to beyond `next_use`, holds fewer entries), so the
/// replacement that discards the page is issuable either way.
fn mark_of(next_use: u64, last_use: Option<u64>) -> u32 {
    last_use
        .and_then(|seq| u32::try_from(next_use - seq).ok())
        .filter(|&distance| distance != NO_LAST_USE)
        .unwrap_or(NO_LAST_USE)
}

/// The last use that [`mark_of`] marked at `next_use`.
fn last_use_of(next_use: u64, mark: u32) -> Option<u64> {
    (mark != NO_LAST_USE).then(|| next_use - u64::from(mark))
}

/// A cached page's rank for discarding among pages with the same next
/// use, the largest first: infill pages, then pages not used since MIN
/// started, then the least recently used: one `u64` ordered as the pair
/// `(infill, Reverse(last_use))` of a flag and an `Option`. The infill
/// flag is the top bit; below it, `2^63 - 1` for no use and
/// `2^63 - 2 - last_use` for a use (sequence numbers stay below `2^63 - 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Rank(u64);

impl Rank {
    const INFILL: u64 = 1 << 63;
    const NO_USE: u64 = Rank::INFILL - 1;

    fn new(infill: bool, last_use: Option<u64>) -> Rank {
        let used = match last_use {
            None => Rank::NO_USE,
            Some(seq) => {
                debug_assert!(seq < Rank::NO_USE);
                Rank::NO_USE - 1 - seq
            }
        };
        Rank(if infill { Rank::INFILL | used } else { used })
    }

    fn last_use(self) -> Option<u64> {
        match self.0 & Rank::NO_USE {
            Rank::NO_USE => None,
            used => Some(Rank::NO_USE - 1 - used),
        }
    }

    fn infill(self) -> bool {
        self.0 & Rank::INFILL != 0
    }
}

/// An idle page used since MIN started, with the low 32 bits of that last
/// use (its rank has the whole): 16 bytes, a `PageKey`'s.
#[derive(Clone, Copy, Debug)]
struct IdleUse {
    page: u64,
    fd: i32,
    last_use: u32,
}

impl IdleUse {
    fn key(&self) -> PageKey {
        PageKey {
            fd: self.fd,
            page: self.page,
        }
    }
}

/// One of MIN's misses: bring `page` for its use at `at`, discarding
/// `victim`. 36 bytes: the pages and `at` are kept as halves (so that the
/// replacement is aligned to 4 bytes), the victim's last use as a distance
/// back from `at`, and the absent victim and last use as sentinels (see
/// the fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replacement {
    page: [u32; 2],
    victim_page: [u32; 2],
    /// The list entry (sequence number) that misses `page`.
    at: [u32; 2],
    /// `at` minus the first position at which the replacement is issuable
    /// (one past the victim's last use before `at`, 0 if it had none since
    /// MIN started, or there is no victim), [`u32::MAX`] if that is 0 or
    /// further back: a last use that far back is before the application's
    /// position (MIN runs a few budgets ahead of it), so either way the
    /// replacement is issuable.
    issuable_back: u32,
    fd: i32,
    /// `fd` and `victim_page` equal to `fd` and `page` when there is no
    /// victim: MIN never discards the page it misses, which it does not hold.
    victim_fd: i32,
}

fn halves(value: u64) -> [u32; 2] {
    [value as u32, (value >> 32) as u32]
}

fn whole(halves: [u32; 2]) -> u64 {
    u64::from(halves[0]) | (u64::from(halves[1]) << 32)
}

impl Replacement {
    fn new(page: PageKey, at: u64, victim: Option<(PageKey, Option<u64>)>) -> Replacement {
        let (victim_key, last_use) = victim.unwrap_or((page, None));
        let issuable_from = last_use.map_or(0, |seq| seq + 1);
        Replacement {
            page: halves(page.page),
            victim_page: halves(victim_key.page),
            at: halves(at),
            issuable_back: u32::try_from(at - issuable_from)
                .ok()
                .filter(|&back| back != u32::MAX && issuable_from > 0)
                .unwrap_or(u32::MAX),
            fd: page.fd,
            victim_fd: victim_key.fd,
        }
    }

    /// The list entry (sequence number) that misses the page.
    pub fn at(&self) -> u64 {
        whole(self.at)
    }

    /// The page MIN misses.
    pub fn page(&self) -> PageKey {
        PageKey {
            fd: self.fd,
            page: whole(self.page),
        }
    }

    /// The page MIN discards for it; `None` while MIN's cache had room.
    pub fn victim(&self) -> Option<PageKey> {
        let victim = PageKey {
            fd: self.victim_fd,
            page: whole(self.victim_page),
        };
        (victim != self.page()).then_some(victim)
    }

    /// True once the application's position has passed the victim's last use.
    pub fn issuable(&self, position: u64) -> bool {
        self.issuable_back == u32::MAX || self.at() - u64::from(self.issuable_back) <= position
    }
}

/// MIN's cache at its cursor and the replacements not yet issued.
///
/// A cached page with a use in the window ahead of the cursor is known by
/// that use: a mark at the list entry (4 bytes an entry), and the entry's
/// sequence number in a heap (the furthest on top; 8 bytes). A cached
/// page with no use ahead (idle) is known by its key, with its rank.
#[derive(Debug, Default)]
pub struct MinAhead {
    /// The next list entry MIN will step over.
    cursor: u64,
    /// Entries of the window before this one have been seen.
    indexed_to: u64,
    /// Distinct pages with a use in `[cursor, indexed_to)`.
    ahead: u64,
    /// Pages MIN's cache holds at most.
    capacity: usize,
    /// One mark per list entry from the cursor on ([`NOT_CACHED`], or a
    /// cached page is next used there: [`mark_of`]).
    next_uses: VecDeque<u32>,
    /// Cached pages with a use ahead (marks set).
    with_use: usize,
    /// Their next uses, the furthest on top. An entry before the cursor is
    /// stale (its page was read there); every other is its page's mark.
    furthest: BinaryHeap<u64>,
    /// Cached pages with no use ahead, with their ranks.
    idle: FxHashMap<PageKey, Rank>,
    /// Idle infill pages, the largest key first (their ranks tie). An
    /// entry whose page is no longer idle with this rank is stale.
    idle_infill: BinaryHeap<PageKey>,
    /// Idle pages not used since MIN started, the largest key first.
    idle_unused: BinaryHeap<PageKey>,
    /// Idle pages used since MIN started, least recently used first (MIN
    /// steps in order, so they come in order).
    idle_used: VecDeque<IdleUse>,
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
        list: &AccessList,
        position: u64,
        held: impl Iterator<Item = (PageKey, bool)>,
        window: &Window,
        capacity: usize,
    ) -> Vec<PageKey> {
        self.capacity = capacity;
        self.cursor = position;
        self.indexed_to = position;
        self.ahead = 0;
        self.next_uses.clear();
        self.with_use = 0;
        self.furthest.clear();
        self.idle.clear();
        self.idle_infill.clear();
        self.idle_unused.clear();
        self.idle_used.clear();
        self.pending.clear();
        self.ahead_fetched = 0;
        self.reserve_marks(window);
        for (key, infill) in held {
            match window.find_from(list, key, position) {
                Some(seq) => self.mark(seq, NO_LAST_USE),
                None => self.insert_idle(key, Rank::new(infill, None)),
            }
        }
        let mut forced = Vec::new();
        while self.cache_len() > capacity {
            match self.pop_furthest(list) {
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
        self.with_use + self.idle.len()
    }

    /// True if `key` is in MIN's cache (`list` and `window` the ones MIN
    /// runs on).
    pub fn caches(&self, list: &AccessList, window: &Window, key: PageKey) -> bool {
        self.idle.contains_key(&key)
            || window
                .find_from(list, key, self.cursor)
                .is_some_and(|seq| self.mark_at(seq) != NOT_CACHED)
    }

    /// Takes in the window's entries added since the last call: a cached
    /// page that was idle (next used "never") now has a use.
    pub fn extend(&mut self, list: &AccessList, window: &Window) {
        self.reserve_marks(window);
        while self.indexed_to < window.end {
            let seq = self.indexed_to;
            self.indexed_to += 1;
            let Some(key) = list.get(seq).map(|e| e.key) else {
                continue;
            };
            if window.find_from(list, key, self.cursor) != Some(seq) {
                continue;
            }
            self.ahead += 1;
            if let Some(rank) = self.idle.remove(&key) {
                self.mark(seq, mark_of(seq, rank.last_use()));
            }
        }
    }

    /// Room for a mark at every entry of the window from the cursor on,
    /// and no more.
    fn reserve_marks(&mut self, window: &Window) {
        let most = usize::try_from(window.end.saturating_sub(self.cursor)).unwrap_or(usize::MAX);
        let more = most.saturating_sub(self.next_uses.len());
        reserve_within(&mut self.next_uses, more, most);
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
    /// the window's end when the window reaches the list's end), and hands
    /// `issue` each replacement issuable at `position` (with whether its
    /// page was fetched ahead), in MIN's order, as
    /// [`MinAhead::take_issuable`] would after the run. They are taken
    /// before the run and every `RUN_CHUNK` entries of it, so the queue
    /// never holds more than that many issuable ones.
    pub fn run(
        &mut self,
        list: &AccessList,
        window: &Window,
        until: u64,
        position: u64,
        mut issue: impl FnMut(Replacement, bool),
    ) {
        // The replacements already issuable go first, before the run adds
        // more behind them.
        let mut more = true;
        loop {
            while let Some((replacement, fetched_ahead)) = self.take_issuable(position) {
                issue(replacement, fetched_ahead);
            }
            if !more {
                return;
            }
            more = self.run_steps(list, window, until, RUN_CHUNK);
        }
    }

    /// [`MinAhead::run`] for at most `steps` entries, issuing nothing;
    /// true if it stopped at that limit.
    fn run_steps(&mut self, list: &AccessList, window: &Window, until: u64, steps: u64) -> bool {
        let whole_list = window.end >= list.end_seq();
        let mut left = steps;
        while self.cursor < self.indexed_to.min(until)
            && (whole_list || self.ahead > self.capacity as u64)
        {
            if left == 0 {
                return true;
            }
            left -= 1;
            let seq = self.cursor;
            self.cursor += 1;
            let mark = self.next_uses.pop_front().unwrap_or(NOT_CACHED);
            let Some(key) = list.get(seq).map(|e| e.key) else {
                continue;
            };
            let next_use = window.next_after(seq).unwrap_or(NEVER);
            if next_use == NEVER {
                self.ahead = self.ahead.saturating_sub(1);
            }
            self.step(list, key, seq, mark != NOT_CACHED, next_use);
        }
        false
    }

    /// MIN at entry `seq` reading `key` (`cached` if its mark was set),
    /// next used at `next_use`.
    fn step(&mut self, list: &AccessList, key: PageKey, seq: u64, cached: bool, next_use: u64) {
        if cached {
            self.with_use -= 1;
        } else {
            let victim = if self.cache_len() >= self.capacity {
                self.pop_furthest(list)
            } else {
                None
            };
            self.pending.push_back(Replacement::new(key, seq, victim));
        }
        if next_use == NEVER {
            self.insert_idle(key, Rank::new(false, Some(seq)));
        } else {
            self.mark(next_use, mark_of(next_use, Some(seq)));
        }
    }

    /// Adds an infill page to MIN's cache (it must not be cached).
    pub fn insert_infill(&mut self, list: &AccessList, window: &Window, key: PageKey) {
        match window.find_from(list, key, self.cursor) {
            Some(seq) => self.mark(seq, NO_LAST_USE),
            None => self.insert_idle(key, Rank::new(true, None)),
        }
    }

    /// The mark at entry `seq` ([`NOT_CACHED`] outside the marks).
    fn mark_at(&self, seq: u64) -> u32 {
        seq.checked_sub(self.cursor)
            .and_then(|offset| usize::try_from(offset).ok())
            .and_then(|offset| self.next_uses.get(offset).copied())
            .unwrap_or(NOT_CACHED)
    }

    /// Caches the page next used at entry `seq` (at or after the cursor).
    fn mark(&mut self, seq: u64, mark: u32) {
        let offset = usize::try_from(seq - self.cursor).unwrap_or(usize::MAX);
        if offset >= self.next_uses.len() {
            self.next_uses.resize(offset + 1, NOT_CACHED);
        }
        self.next_uses[offset] = mark;
        self.with_use += 1;
        self.furthest.push(seq);
        self.compact_if_stale();
    }

    fn insert_idle(&mut self, key: PageKey, rank: Rank) {
        self.idle.insert(key, rank);
        self.order_idle(key, rank);
        self.compact_idle_if_stale();
    }

    fn order_idle(&mut self, key: PageKey, rank: Rank) {
        match rank.last_use() {
            _ if rank.infill() => self.idle_infill.push(key),
            None => self.idle_unused.push(key),
            Some(seq) => self.idle_used.push_back(IdleUse {
                page: key.page,
                fd: key.fd,
                last_use: seq as u32,
            }),
        }
    }

    /// Rebuilds the heap of next uses once most of its entries are stale:
    /// every hit pushes a page's new next use and leaves the old one, so
    /// without this the heap grows by one entry per list entry stepped
    /// over instead of staying within MIN's cache. Amortised: a rebuild of
    /// `n` pages follows at least `n` pushes. In place, in the heap's own
    /// allocation.
    fn compact_if_stale(&mut self) {
        if self.furthest.len() <= STALE_HEAP_FACTOR * self.with_use.max(HEAP_FLOOR) {
            return;
        }
        let cursor = self.cursor;
        let mut seqs = std::mem::take(&mut self.furthest).into_vec();
        seqs.retain(|&seq| seq >= cursor);
        self.furthest = BinaryHeap::from(seqs);
    }

    /// Rebuilds the orders of the idle pages once most of their entries
    /// are stale (pages that gained a use, or were idle again with another
    /// rank), as [`MinAhead::compact_if_stale`] does for the heap.
    fn compact_idle_if_stale(&mut self) {
        let entries = self.idle_infill.len() + self.idle_unused.len() + self.idle_used.len();
        if entries <= STALE_HEAP_FACTOR * self.idle.len().max(HEAP_FLOOR) {
            return;
        }
        self.idle_infill.clear();
        self.idle_unused.clear();
        self.idle_used.clear();
        let mut ranks: Vec<(Rank, PageKey)> = self.idle.iter().map(|(&k, &r)| (r, k)).collect();
        // Largest rank first: the least recently used before the others.
        ranks.sort_unstable_by(|a, b| b.cmp(a));
        for (rank, key) in ranks {
            self.order_idle(key, rank);
        }
    }

    /// Removes the cached page next used furthest: (page, its last use).
    /// Idle pages go first, infill, then unused, then least recently used.
    fn pop_furthest(&mut self, list: &AccessList) -> Option<(PageKey, Option<u64>)> {
        if let Some(idle) = self.pop_idle() {
            return Some(idle);
        }
        let seq = self.furthest.pop()?;
        if seq < self.cursor {
            // The furthest is stale: so is every entry below it.
            self.furthest.clear();
            return None;
        }
        let offset = usize::try_from(seq - self.cursor).ok()?;
        let mark = std::mem::replace(self.next_uses.get_mut(offset)?, NOT_CACHED);
        self.with_use -= 1;
        let key = list.get(seq)?.key;
        Some((key, last_use_of(seq, mark)))
    }

    /// Removes the idle page to discard first, if any.
    fn pop_idle(&mut self) -> Option<(PageKey, Option<u64>)> {
        while let Some(key) = self.idle_infill.pop() {
            if self.idle.get(&key).is_some_and(|rank| rank.infill()) {
                self.idle.remove(&key);
                return Some((key, None));
            }
        }
        let unused = Rank::new(false, None);
        while let Some(key) = self.idle_unused.pop() {
            if self.idle.get(&key) == Some(&unused) {
                self.idle.remove(&key);
                return Some((key, None));
            }
        }
        while let Some(idle) = self.idle_used.pop_front() {
            let key = idle.key();
            let rank = self.idle.get(&key).copied();
            let last_use = rank.filter(|rank| !rank.infill()).and_then(Rank::last_use);
            if last_use.is_some_and(|seq| seq as u32 == idle.last_use) {
                self.idle.remove(&key);
                return Some((key, last_use));
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
            .map(Replacement::page)
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
            .map(Replacement::page)
            .collect();
        self.ahead_fetched = end;
        pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_last_use() -> impl Strategy<Value = Option<u64>> {
        prop_oneof![
            Just(None),
            (0..Rank::NO_USE).prop_map(Some),
            (0..4u64).prop_map(Some)
        ]
    }

    proptest! {
        /// A rank orders as the `(infill, Reverse(last_use))` it packs, and
        /// gives its last use back.
        #[test]
        fn rank_orders_as_the_pair_it_packs(
            a in (any::<bool>(), any_last_use()),
            b in (any::<bool>(), any_last_use()),
        ) {
            let rank = |(infill, last): (bool, Option<u64>)| Rank::new(infill, last);
            let pair = |(infill, last): (bool, Option<u64>)| (infill, std::cmp::Reverse(last));
            prop_assert_eq!(rank(a).cmp(&rank(b)), pair(a).cmp(&pair(b)));
            prop_assert_eq!(rank(a).last_use(), a.1);
        }
    }

    #[test]
    fn a_replacement_without_victim_is_issuable_at_once() {
        let page = PageKey { fd: 3, page: 7 };
        let replacement = Replacement::new(page, 9, None);
        assert_eq!(replacement.victim(), None);
        assert_eq!(replacement.page(), page);
        assert!(replacement.issuable(0));
        let victim = PageKey { fd: 3, page: 8 };
        let replacement = Replacement::new(page, 9, Some((victim, Some(5))));
        assert_eq!(replacement.victim(), Some(victim));
        assert!(!replacement.issuable(5));
        assert!(replacement.issuable(6));
        assert_eq!(std::mem::size_of::<Replacement>(), 36);
        assert_eq!(std::mem::size_of::<IdleUse>(), 16);
    }
}
