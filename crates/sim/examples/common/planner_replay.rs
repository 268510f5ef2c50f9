//! A helper of the examples and tests on the live planner's schedules, not
//! a simulator loop (policies run on `sim::disksim`'s one engine): the live
//! library's planner ([`plan::Planner`], whichever schedule it is
//! configured with) replayed over one access list against a page cache of
//! a fixed size, counting what it makes the device read. This is what
//! `libprefetch` would do for an application that reads its list in order,
//! with every advice call served at once: the counts measure the plan's
//! decisions (how many pages it reads, whether it stays in its budget,
//! whether a drop ever does harm), not time.
//!
//! The page cache stands for the kernel's: it holds `memory_pages` pages,
//! and when full a new page evicts the least recently used one (the
//! planner's DONTNEED removes pages at once). The planner is told that
//! memory is available, so its budget is AIMD's 90% of it (libprefetch,
//! ATC 2009, section 4.6).
//!
//! Do no harm (Cao et al., SIGMETRICS 1995, section 2.2 rule 3) is checked
//! on every round: its drops, sorted by next use, must each be next used
//! after the fetch of the same rank (a drop that only brings the plan
//! back within a lowered budget has no fetch to harm).
//!
//! Deviations: reads of a page being prefetched cost nothing here (all
//! advice is served at once), so the counts are pages read, not stalls.

use std::collections::{BTreeMap, HashMap};

use plan::{Entry, Mode, PageKey, PageRange, Planner, PlannerConfig};

/// What a replay counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayCounts {
    /// Pages read from the device: prefetched or read on demand.
    pub fetches: u64,
    /// Reads that found their page missing.
    pub demand_misses: u64,
    /// Pages the page cache evicted on its own (not the planner's drops).
    pub cache_evictions: u64,
    /// Rounds planned.
    pub rounds: u64,
    /// The most pages the planner kept after any round.
    pub max_held: u64,
    /// The planner's budget, in pages, at that round.
    pub budget_at_max: u64,
    /// Rounds whose drops did harm (rule 3).
    pub harmful_rounds: u64,
    /// Prefetched pages read within 32 entries of the round that fetched
    /// them: with a device serving 32 requests at once, these are the
    /// reads that may still wait.
    pub short_lead: u64,
}

/// Entries of the list under which a prefetch counts as short-lead.
const SHORT_LEAD: u64 = 32;

/// A page cache of fixed size with least-recently-used eviction.
struct PageCache {
    capacity: usize,
    /// Page -> last touch; `by_age` orders them.
    touched: HashMap<PageKey, u64>,
    by_age: BTreeMap<u64, PageKey>,
    clock: u64,
}

impl PageCache {
    fn new(capacity: usize) -> PageCache {
        PageCache {
            capacity: capacity.max(1),
            touched: HashMap::new(),
            by_age: BTreeMap::new(),
            clock: 0,
        }
    }

    fn contains(&self, key: PageKey) -> bool {
        self.touched.contains_key(&key)
    }

    /// Marks `key` as just used, bringing it in if missing; returns true if
    /// it had to be read, and counts the eviction it caused.
    fn touch(&mut self, key: PageKey, evictions: &mut u64) -> bool {
        self.clock += 1;
        let missing = match self.touched.insert(key, self.clock) {
            Some(old) => {
                self.by_age.remove(&old);
                false
            }
            None => true,
        };
        self.by_age.insert(self.clock, key);
        if self.touched.len() > self.capacity {
            if let Some((_, oldest)) = self.by_age.pop_first() {
                self.touched.remove(&oldest);
                *evictions += 1;
            }
        }
        missing
    }

    fn remove(&mut self, key: PageKey) {
        if let Some(age) = self.touched.remove(&key) {
            self.by_age.remove(&age);
        }
    }
}

/// For every position of `list`, the position of the next use of the same
/// page (`u64::MAX` if none).
fn next_uses(list: &[PageKey]) -> Vec<u64> {
    let mut next = vec![u64::MAX; list.len()];
    let mut seen: HashMap<PageKey, u64> = HashMap::new();
    for (seq, key) in list.iter().enumerate().rev() {
        if let Some(&later) = seen.get(key) {
            next[seq] = later;
        }
        seen.insert(*key, seq as u64);
    }
    next
}

fn pages_of(ranges: &[PageRange]) -> impl Iterator<Item = PageKey> + '_ {
    ranges
        .iter()
        .flat_map(|r| (r.start..r.end()).map(move |page| PageKey { fd: r.fd, page }))
}

/// Replays `list` through a planner configured by `config` (its
/// `available_bytes` set to `memory_pages` pages) over a page cache of
/// `memory_pages` pages, the planner's list holding at most `list_capacity`
/// entries: it takes what fits, and each callback hands it more, as the
/// live library's list does when full (short counts, libprefetch section
/// 4.2); `list.len()` hands it the whole list at once.
pub fn replay(
    config: PlannerConfig,
    list: &[PageKey],
    memory_pages: usize,
    list_capacity: usize,
) -> ReplayCounts {
    let mut planner = Planner::new(PlannerConfig {
        capacity: list_capacity.max(1),
        available_bytes: memory_pages as u64 * config.page_size,
        ..config
    });
    let entries: Vec<Entry> = list.iter().map(|&key| Entry { key, mark: false }).collect();
    let mut handed = hand_over(&mut planner, &entries, 0, Mode::SET);
    let after = next_uses(list);
    // Next use of each page at or after the position.
    let mut upcoming: HashMap<PageKey, u64> = HashMap::new();
    for (seq, key) in list.iter().enumerate().rev() {
        upcoming.insert(*key, seq as u64);
    }
    let mut cache = PageCache::new(memory_pages);
    let mut counts = ReplayCounts::default();
    round(&mut planner, &mut cache, &upcoming, 0, &mut counts);
    for (seq, &key) in list.iter().enumerate() {
        let resident = cache.contains(key);
        if cache.touch(key, &mut counts.cache_evictions) {
            counts.fetches += 1;
            counts.demand_misses += 1;
        }
        match after[seq] {
            u64::MAX => upcoming.remove(&key),
            next => upcoming.insert(key, next),
        };
        let (_, outcome) = planner.on_read(key, resident);
        if outcome.call_back {
            let end = planner.list_end();
            handed = hand_over(&mut planner, &entries, handed, Mode::APPEND);
            planner.callback_returned(end);
        }
        if outcome.start_round {
            round(
                &mut planner,
                &mut cache,
                &upcoming,
                seq as u64 + 1,
                &mut counts,
            );
        }
    }
    counts
}

/// Hands the planner the entries from `handed` on, as many as it takes.
/// Returns the entries handed so far.
fn hand_over(planner: &mut Planner, entries: &[Entry], handed: usize, mode: Mode) -> usize {
    handed + planner.request(&entries[handed..], mode)
}

/// Plans a round at list position `position` and applies it: drops
/// first, then fetches.
fn round(
    planner: &mut Planner,
    cache: &mut PageCache,
    upcoming: &HashMap<PageKey, u64>,
    position: u64,
    counts: &mut ReplayCounts,
) {
    let plan = planner.plan_round();
    counts.rounds += 1;
    if plan.held_pages > counts.max_held {
        counts.max_held = plan.held_pages;
        counts.budget_at_max = planner.budget_pages();
    }
    let next_use = |key: PageKey| upcoming.get(&key).copied().unwrap_or(u64::MAX);
    let mut dropped: Vec<u64> = pages_of(&plan.evict).map(next_use).collect();
    let mut fetched: Vec<u64> = pages_of(&plan.fetch)
        .filter(|&key| planner.holds(key) && next_use(key) != u64::MAX)
        .map(next_use)
        .collect();
    dropped.sort_unstable();
    fetched.sort_unstable();
    if dropped
        .iter()
        .zip(&fetched)
        .any(|(drop, fetch)| drop <= fetch)
    {
        counts.harmful_rounds += 1;
    }
    for key in pages_of(&plan.evict) {
        cache.remove(key);
    }
    for key in pages_of(&plan.fetch) {
        if !cache.contains(key) {
            cache.touch(key, &mut counts.cache_evictions);
            counts.fetches += 1;
            if next_use(key) < position + SHORT_LEAD {
                counts.short_lead += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plan::Schedule;

    fn keys(pages: &[u64]) -> Vec<PageKey> {
        pages.iter().map(|&page| PageKey { fd: 1, page }).collect()
    }

    #[test]
    fn next_uses_point_at_the_following_reference() {
        assert_eq!(
            next_uses(&keys(&[1, 2, 1, 3])),
            vec![2, u64::MAX, u64::MAX, u64::MAX]
        );
    }

    /// A loop over 4 pages in a cache of 10: each page is read once.
    #[test]
    fn a_list_that_fits_is_read_once() {
        let list = keys(&[1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4]);
        for schedule in Schedule::ALL {
            let config = PlannerConfig {
                schedule,
                infill_bytes: 0,
                ..PlannerConfig::default()
            };
            let counts = replay(config, &list, 10, list.len());
            assert_eq!(counts.fetches, 4, "{}", schedule.name());
            assert_eq!(counts.demand_misses, 0, "{}", schedule.name());
            assert_eq!(counts.harmful_rounds, 0, "{}", schedule.name());
        }
    }
}
