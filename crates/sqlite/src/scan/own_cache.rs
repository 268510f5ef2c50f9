//! The table lookups SQLite's own page cache will serve, left off the access list (libprefetch ATC'09
//! s4.2: the list is what the application will read from the file, and s5.4's callback lists the table
//! pages an index points to; a lookup SQLite's cache serves never reaches the file).
//!
//! An index scan whose keys repeat in table order (the 48 copies of each name of the `unicode`
//! database: neighbouring names' copies share table pages) looks up each table page many times a
//! stretch. Listed every time, the 24 MiB cgroup's list (its capacity a share of the memory) held
//! 9-30 entries per distinct page, so libprefetch's window, counted in distinct pages, reached 400-2,000
//! pages where its budget was 2,800-4,600: a round (a C-LOOK sweep of the table) every few hundred
//! pages, 240 a run against the simulator's 61 at the same budget, whose list (the recorded reads)
//! holds only the lookups that reached the file.
//!
//! SQLite keeps recently used pages (an LRU of `cache_size` pages, 2,000 KiB by default), so a page
//! looked up again within fewer distinct pages than that is served from it. Counting lookups rather
//! than distinct pages (never fewer), a lookup within [`OwnCache::reach`] lookups of the page's last
//! is left off the list; the reach is half of the cache's pages, for the index and interior pages that
//! share it. A lookup the cache does not serve after all is read while its page is in libprefetch's
//! window (a reread) or fetched on demand; the list never holds fewer entries than this predicts.
//!
//! Only under libprefetch's window schedule (the extension caps its stretches then): the
//! conservative schedule, for a database at most eight times the memory, runs Belady's MIN over the
//! list; with these lookups left off, the 256 MiB generated table's scan in a quarter cgroup read the
//! same pages (293-305k against 290-307k) in 4.2-6.8 s against main's 4.2-5.1 s.

use rustc_hash::FxHashMap;

/// SQLite's default page cache (`SQLITE_DEFAULT_CACHE_SIZE`): -2000, 2,000 KiB.
pub const DEFAULT_CACHE_SIZE: i64 = -2000;

/// Lookups SQLite's cache serves, predicted over the lookups listed in index order.
#[derive(Debug)]
pub struct OwnCache {
    /// SQLite's cache as `PRAGMA cache_size` gives it: pages, or KiB if negative.
    cache_size: i64,
    /// Lookups within this many of a page's previous one are served by SQLite's cache.
    reach: u64,
    /// The index and leaf the listing stopped before: a stretch listed from there continues it.
    next: Option<(u32, usize)>,
    /// Lookups counted so far.
    seq: u64,
    /// Table page -> the lookup that last touched it.
    last: FxHashMap<u32, u64>,
}

impl Default for OwnCache {
    fn default() -> OwnCache {
        OwnCache::new(DEFAULT_CACHE_SIZE)
    }
}

impl OwnCache {
    /// For a cache of `cache_size` (`PRAGMA cache_size`: pages, or KiB if negative).
    pub fn new(cache_size: i64) -> OwnCache {
        OwnCache {
            cache_size,
            reach: 0,
            next: None,
            seq: 0,
            last: FxHashMap::default(),
        }
    }

    /// Starts listing index `root` of a file of `page_size`-byte pages from leaf `from`: what was
    /// counted is kept only if the listing continues where the last stopped (a new list, or a stretch
    /// re-listed after libprefetch took part of one, starts with an empty cache: it lists more, never
    /// less).
    pub fn begin(&mut self, root: u32, from: usize, page_size: u32) {
        let pages = match u64::try_from(self.cache_size) {
            Ok(pages) => pages,
            Err(_) => {
                self.cache_size.unsigned_abs().saturating_mul(1024) / u64::from(page_size.max(1))
            }
        };
        self.reach = pages / 2;
        if self.next != Some((root, from)) {
            self.last.clear();
        }
        self.next = None;
    }

    /// Counts a lookup of table page `page`; true if SQLite's cache still holds it.
    pub fn serves(&mut self, page: u32) -> bool {
        self.seq += 1;
        let previous = self.last.insert(page, self.seq);
        if self.last.len() as u64 > self.reach.saturating_mul(4).max(64) {
            let (seq, reach) = (self.seq, self.reach);
            self.last.retain(|_, &mut at| seq - at <= reach);
        }
        previous.is_some_and(|at| self.seq - at <= self.reach)
    }

    /// The listing stopped before leaf `next` of index `root`.
    pub fn end(&mut self, root: u32, next: usize) {
        self.next = Some((root, next));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_looked_up_again_within_the_reach_is_served_by_sqlites_cache() {
        let mut cache = OwnCache::new(8);
        cache.begin(7, 0, 4096);
        assert!(!cache.serves(100));
        assert!(!cache.serves(101));
        assert!(
            cache.serves(100),
            "two lookups later, within the reach of 4"
        );
        for page in 200..204 {
            assert!(!cache.serves(page));
        }
        assert!(!cache.serves(101), "five lookups later, past the reach");
    }

    #[test]
    fn a_listing_that_does_not_continue_the_last_starts_with_an_empty_cache() {
        let mut cache = OwnCache::new(8);
        cache.begin(7, 0, 4096);
        assert!(!cache.serves(100));
        cache.end(7, 3);
        cache.begin(7, 3, 4096);
        assert!(cache.serves(100), "the next stretch continues the listing");
        cache.end(7, 5);
        cache.begin(7, 4, 4096);
        assert!(!cache.serves(100), "re-listed from an earlier leaf");
        cache.end(7, 6);
        cache.begin(9, 6, 4096);
        assert!(!cache.serves(100), "another index");
    }

    #[test]
    fn the_cache_size_counts_pages_or_kib_as_sqlite_does() {
        let reach = |size, page_size| {
            let mut cache = OwnCache::new(size);
            cache.begin(1, 0, page_size);
            cache.reach
        };
        assert_eq!(reach(DEFAULT_CACHE_SIZE, 4096), 250);
        assert_eq!(reach(DEFAULT_CACHE_SIZE, 1024), 1000);
        assert_eq!(reach(100, 4096), 50);
        assert_eq!(reach(0, 4096), 0);
    }

    #[test]
    fn the_memory_stays_within_a_few_reaches() {
        let mut cache = OwnCache::new(8);
        cache.begin(1, 0, 4096);
        for page in 0..10_000 {
            cache.serves(page);
        }
        assert!(cache.last.len() <= 64 + 1, "{}", cache.last.len());
    }
}
