//! The table lookups SQLite's own page cache will serve, left off the access list (libprefetch ATC'09
//! s4.2: the list is what the application will read from the file, and s5.4's callback lists the table
//! pages an index points to; a lookup SQLite's cache serves never reaches the file).
//!
//! An index scan whose keys repeat in table order (neighbouring keys' rows share table pages) looks up
//! each table page many times a stretch. Listed every time, a page takes several of the list's
//! entries, so libprefetch's window, counted in distinct pages, stays far below its budget when the
//! list's capacity (a share of the memory) is what bounds it: each round (a C-LOOK sweep of the
//! table) then covers only a few hundred pages. Left off, the list holds only the lookups that reach
//! the file, as a recording of the reads would.
//!
//! SQLite keeps recently used pages (an LRU of `cache_size` pages, 2,000 KiB by default), so a page
//! looked up again within fewer distinct pages than that is served from it. Counting lookups rather
//! than distinct pages (never fewer), a lookup within [`OwnCache::reach`] lookups of the page's last
//! is left off the list; the reach is half of the cache's pages, for the index and interior pages that
//! share it (and for the bytes SQLite keeps beside each page, which make its cache of a size in KiB a
//! few percent fewer pages than the size divided by the page size). A lookup the cache does not serve
//! after all is read while its page is in libprefetch's window (a reread) or fetched on demand; the
//! list never holds fewer entries than this predicts.
//!
//! The pragma's value is read as SQLite reads it ([`parse_cache_size`], a 32-bit integer, 0 when it is
//! not one), so a value SQLite takes for another gives the same pages. The reach is at most a
//! stretch's entries, so the pages remembered stay within two stretches' worth whatever the pragma
//! says: a shorter reach lists more lookups, never fewer.
//!
//! Only under libprefetch's window schedule (the extension caps its stretches then): the window is
//! what the list's capacity limits, while the conservative schedule, for a database at most eight
//! times the memory, runs Belady's MIN over the list and keeps a page looked up again soon in memory
//! anyway: leaving its repeats off reads the same pages and saves nothing.

use rustc_hash::FxHashMap;

/// SQLite's default page cache (`SQLITE_DEFAULT_CACHE_SIZE`): -2000, 2,000 KiB.
pub const DEFAULT_CACHE_SIZE: i64 = -2000;

/// The most pages a cache given in KiB holds (SQLite's `numberOfCachePages` clamps there).
const MAX_KIB_PAGES: u64 = 1_000_000_000;

/// The remembered pages are trimmed to the reach once they pass this many (or twice the reach).
const MIN_TRIM: usize = 64;

/// `PRAGMA cache_size`'s argument as SQLite reads it (`sqlite3Atoi`): an optional sign, then decimal
/// digits (leading zeros skipped, anything after them ignored), or `0x` and at most eight hexadecimal
/// digits (none after them) without a sign; a value outside a 32-bit `int`, or no number, is 0.
pub fn parse_cache_size(value: &[u8]) -> i32 {
    let (negative, rest) = match value {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        [b'0', b'x' | b'X', rest @ ..] if rest.first().is_some_and(u8::is_ascii_hexdigit) => {
            return parse_hex(rest).unwrap_or(0);
        }
        _ => (false, value),
    };
    if !rest.first().is_some_and(u8::is_ascii_digit) {
        return 0;
    }
    let rest = &rest[rest.iter().take_while(|&&c| c == b'0').count()..];
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).take(11);
    if digits.clone().count() > 10 {
        return 0;
    }
    let magnitude = digits.fold(0i64, |v, &c| v * 10 + i64::from(c - b'0'));
    let value = if negative { -magnitude } else { magnitude };
    i32::try_from(value).unwrap_or(0)
}

/// The hexadecimal digits after `0x` (`sqlite3GetInt32`): at most eight after leading zeros, none
/// after them, the top bit clear.
fn parse_hex(digits: &[u8]) -> Option<i32> {
    let digits = &digits[digits.iter().take_while(|&&c| c == b'0').count()..];
    let len = digits
        .iter()
        .take(8)
        .take_while(|c| c.is_ascii_hexdigit())
        .count();
    if digits.get(len).is_some_and(u8::is_ascii_hexdigit) {
        return None;
    }
    let text = std::str::from_utf8(&digits[..len]).ok()?;
    let value = if text.is_empty() {
        0
    } else {
        u32::from_str_radix(text, 16).ok()?
    };
    i32::try_from(value).ok()
}

/// The pages SQLite's cache of `cache_size` holds (its `numberOfCachePages`): `cache_size` pages, or
/// if negative that many KiB over the page size, at most [`MAX_KIB_PAGES`].
fn cache_pages(cache_size: i32, page_size: u32) -> u64 {
    match u64::try_from(cache_size) {
        Ok(pages) => pages,
        Err(_) => (u64::from(cache_size.unsigned_abs()) * 1024 / u64::from(page_size.max(1)))
            .min(MAX_KIB_PAGES),
    }
}

/// Lookups SQLite's cache serves, predicted over the lookups listed in index order.
#[derive(Debug)]
pub struct OwnCache {
    /// SQLite's cache as `PRAGMA cache_size` gives it: pages, or KiB if negative.
    cache_size: i32,
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
    /// The bytes SQLite's cache holds, in pages of `page_size` bytes.
    pub fn bytes(&self, page_size: u32) -> u64 {
        cache_pages(self.cache_size, page_size) * u64::from(page_size)
    }

    /// For a cache of `cache_size` (`PRAGMA cache_size`: pages, or KiB if negative; outside a 32-bit
    /// `int`, 0, as SQLite reads it).
    pub fn new(cache_size: i64) -> OwnCache {
        OwnCache {
            cache_size: i32::try_from(cache_size).unwrap_or(0),
            reach: 0,
            next: None,
            seq: 0,
            last: FxHashMap::default(),
        }
    }

    /// Starts listing index `root` of a file of `page_size`-byte pages from leaf `from`, a stretch
    /// listing at most `stretch` entries: what was counted is kept only if the listing continues where
    /// the last stopped (a new list, or a stretch re-listed after libprefetch took part of one, starts
    /// with an empty cache: it lists more, never less).
    pub fn begin(&mut self, root: u32, from: usize, page_size: u32, stretch: usize) {
        let stretch = u64::try_from(stretch).unwrap_or(u64::MAX);
        self.reach = (cache_pages(self.cache_size, page_size) / 2).min(stretch);
        if self.next != Some((root, from)) {
            self.last.clear();
        }
        self.next = None;
    }

    /// Counts a lookup of table page `page`; true if SQLite's cache still holds it.
    pub fn serves(&mut self, page: u32) -> bool {
        self.seq += 1;
        let previous = self.last.insert(page, self.seq);
        let bound = usize::try_from(self.reach.saturating_mul(2)).unwrap_or(usize::MAX);
        if self.last.len() > bound.max(MIN_TRIM) {
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
        cache.begin(7, 0, 4096, usize::MAX);
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
        cache.begin(7, 0, 4096, usize::MAX);
        assert!(!cache.serves(100));
        cache.end(7, 3);
        cache.begin(7, 3, 4096, usize::MAX);
        assert!(cache.serves(100), "the next stretch continues the listing");
        cache.end(7, 5);
        cache.begin(7, 4, 4096, usize::MAX);
        assert!(!cache.serves(100), "re-listed from an earlier leaf");
        cache.end(7, 6);
        cache.begin(9, 6, 4096, usize::MAX);
        assert!(!cache.serves(100), "another index");
    }

    fn reach(size: i64, page_size: u32, stretch: usize) -> u64 {
        let mut cache = OwnCache::new(size);
        cache.begin(1, 0, page_size, stretch);
        cache.reach
    }

    #[test]
    fn the_cache_size_counts_pages_or_kib_as_sqlite_does() {
        assert_eq!(reach(DEFAULT_CACHE_SIZE, 4096, usize::MAX), 250);
        assert_eq!(reach(DEFAULT_CACHE_SIZE, 1024, usize::MAX), 1000);
        assert_eq!(reach(100, 4096, usize::MAX), 50);
        assert_eq!(reach(0, 4096, usize::MAX), 0);
        let most_kib = i64::from(i32::MIN);
        assert_eq!(reach(most_kib, 512, usize::MAX), MAX_KIB_PAGES / 2);
    }

    #[test]
    fn a_size_outside_sqlites_int_is_no_cache() {
        assert_eq!(reach(3_000_000_000, 4096, usize::MAX), 0);
        assert_eq!(reach(-3_000_000_000, 4096, usize::MAX), 0);
    }

    #[test]
    fn the_pragma_is_read_as_sqlite3atoi_reads_it() {
        let cases: [(&str, i32); 16] = [
            ("-2000", -2000),
            ("0", 0),
            ("+100", 100),
            ("100abc", 100),
            ("000123", 123),
            ("2147483647", i32::MAX),
            ("-2147483648", i32::MIN),
            ("2147483648", 0),
            ("3000000000", 0),
            ("-3000000000", 0),
            ("-99999999999999999999", 0),
            ("0x10", 16),
            ("0x7fffffff", i32::MAX),
            ("0x80000000", 0),
            ("abc", 0),
            (" 100", 0),
        ];
        for (text, value) in cases {
            assert_eq!(parse_cache_size(text.as_bytes()), value, "{text:?}");
        }
        assert_eq!(parse_cache_size(b"0x000000010"), 16, "leading zeros");
        assert_eq!(parse_cache_size(b"0x123456789"), 0, "nine hex digits");
        assert_eq!(parse_cache_size(b"-0x10"), 0, "no sign before hex");
        assert_eq!(parse_cache_size(b"0x"), 0);
    }

    #[test]
    fn the_reach_stays_within_a_stretch_and_the_memory_within_two() {
        assert_eq!(reach(i64::from(i32::MAX), 4096, 1000), 1000);
        let mut cache = OwnCache::new(i64::from(i32::MAX));
        cache.begin(1, 0, 4096, 1000);
        for page in 0..100_000 {
            cache.serves(page);
            assert!(cache.last.len() <= 2 * 1000 + 1, "{}", cache.last.len());
        }
        assert!(cache.serves(99_500), "within the reach");
        assert!(!cache.serves(98_000), "past the reach: listed");
    }

    #[test]
    fn the_memory_stays_within_a_few_reaches() {
        let mut cache = OwnCache::new(8);
        cache.begin(1, 0, 4096, usize::MAX);
        for page in 0..10_000 {
            cache.serves(page);
        }
        assert!(cache.last.len() <= MIN_TRIM + 1, "{}", cache.last.len());
    }
}
