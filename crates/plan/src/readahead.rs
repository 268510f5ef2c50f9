//! Stepping aside for the kernel's read-ahead: which listed pages the kernel
//! reads ahead by itself, so the planner leaves them to it.
//!
//! The problem: a list of long runs of adjacent pages read in order (a file
//! read from start to end, the paper's Figure 8) is a pattern the kernel
//! already serves. Its read-ahead follows a run in windows of up to the
//! device's `read_ahead_kb`, asynchronously, one window ahead of the
//! reader, in large folios. A `WILLNEED` from the library reads the same
//! pages in page-sized folios and, since the kernel does not mark them as
//! read ahead, stops the kernel's own windows: on this project's test disk
//! a 256 MiB file read in order took 0.114 s through the library against
//! 0.055 s stock (the README's table of both devices has today's rows).
//!
//! The mechanism: the planner scans the list a little ahead of its window
//! as the window grows, keeping the length of the run of adjacent pages
//! (same file, each the page after the entry before) that each entry
//! continues. A page deeper into its run than the kernel's read-ahead
//! window is left to the kernel: it is not advised, and the plan does not
//! keep it (the kernel's read-ahead is the kernel's, as without the
//! library). The pages left are remembered as ranges, by page and by list
//! entry, so that a run costs the plan no memory and no work by the page:
//! the window asks [`ReadAhead::left_from`] at each entry it reaches and
//! indexes a left run as one range ([`crate::Window::slide_skipping`]). The first window of every run is advised as before, so a short
//! run (a tile of a strided pass, a record) and the start of a long one
//! cost no synchronous miss; the kernel picks a long run up where the
//! advice ends, with one synchronous read of its first window, as it
//! starts any run.
//!
//! ```text
//!   list    p0 p1 p2 ... pK-1 | pK pK+1 ...........  q0 q1 q2 (short run)
//!   advice  [-- WILLNEED -----]                      [WILLNEED]
//!   kernel                    [sync][async][async]...
//! ```
//!
//! Interleaved streams (a tiled image read column by column: each row is
//! a stream, continued one tile at a time between the other rows' tiles)
//! are the kernel's too: a read that misses just after pages already
//! cached takes their count as the stream's history and reads that many
//! pages ahead (the kernel's context read-ahead, `page_cache_sync_ra`),
//! when the history is longer than the read. So a segment that continues
//! a stream listed earlier is left to the kernel when the stream's pages
//! so far outnumber its last segment (the read's likely size) and the
//! device's far-request cost (the kernel's request then pays off):
//!
//! ```text
//!   list    r0:t0 r1:t0 r2:t0 | r0:t1 r1:t1 ... | r0:t2 r1:t2 ...
//!   advice  [---- WILLNEED ---][--- WILLNEED ---]
//!   kernel                                        [r0: 3 tiles ahead] ...
//! ```
//!
//! The streams are remembered by where each ends, a bounded number of them
//! (`STREAMS`); a stream forgotten starts again as new, which only advises
//! more.
//!
//! The threshold is the device's own read-ahead window (2,048 pages on the
//! test disk, 32 on a FUSE mount such as the emulated disk), not a tuned
//! constant; with it unknown or zero the planner never steps aside.
//!
//! Only where the kernel's requests pay: the planner steps aside only when
//! the kernel's window holds at least the device's far-request cost in
//! pages of transfer (its break-even size, `PlannerConfig::request_cost_pages`).
//! On the test disk (a request costs about 9 KB of transfer) the kernel's
//! 8 MiB windows do; on the emulated 7200 RPM disk (1.4 MB) its 128 KiB
//! windows do not, and the library's own larger sorted requests are
//! faster: there it advises every page, as before.
//!
//! Observed, not assumed: the kernel may not read ahead for the
//! application's descriptor (`POSIX_FADV_RANDOM`: `page_cache_sync_ra`
//! then reads only the pages asked for; `read_ahead_kb` 0; a device whose
//! window was misread). A page left to the kernel that a read finds
//! missing, less than a window after an earlier read of the same left
//! range, shows that the kernel's read there should have had it in flight
//! when either
//!
//! - that earlier read missed too: the kernel's synchronous read at the
//!   miss brought only the pages asked for, no read-ahead at all. Each
//!   left range remembers its own last read, so interleaved streams (each
//!   continued a page at a time between the others, as a list stepping
//!   down a file by a stride is) are judged each on its own; or
//! - that earlier read was the last read of any left page: a run read
//!   alone, whose read-ahead ended short.
//!
//! The planner then stops stepping aside and advises the pages it had
//! left. A miss after a hit on an interleaved stream does not count: the
//! kernel did read ahead there, only less far than the stream (its context
//! read-ahead reads as far as the stream's cached history), and picks the
//! stream up again at the miss.
//!
//! Measured (`scripts/fadvise_random_ab.py FILE 12 273 MAIN.so NEW.so`:
//! 1,024 cold single-page reads stepping down 273 pages around an 8 MiB
//! file on this project's test disk, 15 interleaved streams; load 5): on a
//! `POSIX_FADV_RANDOM` descriptor the library's pass took 16.1 ms against
//! stock's 86.2 ms, with 17 misses and 1,007 pages advised; judged by the
//! last read of any left page alone, every left page missed (994 misses,
//! 30 pages advised: 111.2 ms, slower than stock). On a normal descriptor
//! the streams stay the kernel's (24 misses, 30 pages advised, as before).
//! Stepping 17 pages up: 243 misses against 542 (random), 242 either way
//! (normal). `crates/libprefetch/tests/kernel_readahead.rs` counts both.
//!
//! Deviations: libprefetch (ATC 2009) advises every page of its window; it
//! predates the kernel's large-folio read-ahead.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use crate::access_list::{AccessList, PageKey};

/// The interleaved streams remembered at most (a tiled image of 4,096 rows);
/// past that the map starts afresh.
pub const STREAMS: usize = 4096;

/// Entries scanned at a time ahead of the window's walk: the walk asks
/// entry by entry, the scan answers with runs as long as it has seen.
const SCAN_AHEAD: u64 = 4096;

/// Entries `[start, end)` of the list left to the kernel, each the page
/// after the entry before (`last` is the last one's page).
#[derive(Clone, Copy, Debug)]
struct LeftEntries {
    start: u64,
    end: u64,
    last: PageKey,
}

/// A stream of adjacent pages: its pages so far and its last segment's.
#[derive(Clone, Copy, Debug, Default)]
struct Stream {
    pages: u64,
    segment: u64,
}

/// Where the scan of the list stands and what the reads showed.
#[derive(Clone, Debug, Default)]
pub struct ReadAhead {
    /// The kernel's read-ahead window, pages; 0: unknown, never step aside.
    window_pages: u64,
    /// The device's far-request cost in pages of transfer (0: unknown).
    request_cost_pages: u64,
    /// The list was scanned up to this sequence number (exclusive).
    scanned_to: u64,
    /// The last page scanned, and the pages of the run it ends.
    last: Option<PageKey>,
    run: u64,
    /// The current segment's pages (the run since the list last jumped), and
    /// whether the segment continues an earlier stream the kernel serves.
    segment: u64,
    kernel_stream: bool,
    /// Streams interrupted by other pages, by (fd, the page that continues them).
    streams: FxHashMap<(i32, u64), Stream>,
    /// The pages left to the kernel: (fd, first page) to one past the last.
    left: BTreeMap<(i32, u64), u64>,
    /// The same, by the entries of the list that hold them, ascending from
    /// the window's start: what the window skips.
    left_entries: VecDeque<LeftEntries>,
    /// Index into `left_entries` of the last [`ReadAhead::left_from`]
    /// answer: the window asks for ascending entries, so the next answer
    /// is this run or the one after, found without a binary search.
    found: usize,
    /// The last page read of each left range and whether it missed, by the
    /// range's start (a range only grows at its end, so its start names
    /// it); at most `STREAMS` ranges, past that the map starts afresh.
    left_reads: FxHashMap<(i32, u64), (u64, bool)>,
    /// The range of the last read of any left page.
    last_left_range: Option<(i32, u64)>,
    /// A read showed that the kernel does not read ahead for this client.
    refused: bool,
}

impl ReadAhead {
    /// Raises the kernel's read-ahead window to `pages` (never lowers it): a
    /// client on several devices leaves a run only when it is longer than
    /// the largest of their windows.
    pub fn raise_window(&mut self, pages: u64) {
        self.window_pages = self.window_pages.max(pages);
    }

    /// Raises the device's far-request cost, in pages of transfer.
    pub fn raise_request_cost(&mut self, pages: u64) {
        self.request_cost_pages = self.request_cost_pages.max(pages);
    }

    /// True while the planner leaves deep run pages to the kernel: the
    /// kernel's window is known and at least the device's far-request cost
    /// in pages of transfer (its requests are then large enough that the
    /// cost of a request is paid off), and no read showed that the kernel
    /// does not read ahead.
    pub fn active(&self) -> bool {
        self.window_pages > 0 && self.window_pages >= self.request_cost_pages && !self.refused
    }

    /// Starts a round whose window begins at entry `start`: a replaced
    /// list, or one whose entries up to `start` were discarded unscanned,
    /// is scanned afresh from `start`; what lies before `start` is forgotten.
    pub fn restart(&mut self, start: u64, list_replaced: bool) {
        if list_replaced || self.scanned_to < start {
            self.scanned_to = start;
            self.last = None;
            self.run = 0;
            self.segment = 0;
            self.streams.clear();
            self.left_entries.clear();
        }
        if list_replaced {
            self.left.clear();
            self.left_reads.clear();
            self.last_left_range = None;
        }
        while self
            .left_entries
            .front()
            .is_some_and(|run| run.end <= start)
        {
            self.left_entries.pop_front();
            self.found = self.found.saturating_sub(1);
        }
    }

    /// The number of entries from `seq` on that are left to the kernel, as
    /// far as the scan has seen (0: entry `seq` is the planner's); their
    /// pages are adjacent pages of one file, each the page after the entry
    /// before. Scans the list on (by [`SCAN_AHEAD`] entries) when `seq` is
    /// past what was scanned. `seq` must not be before the last
    /// [`ReadAhead::restart`]'s start.
    pub fn left_from(&mut self, list: &AccessList, seq: u64) -> u64 {
        if !self.active() {
            return 0;
        }
        if seq >= self.scanned_to {
            let end = seq.saturating_add(SCAN_AHEAD).min(list.end_seq());
            self.scan_to(list, end);
        }
        let at = self.run_from(seq);
        match self.left_entries.get(at) {
            Some(run) if run.start <= seq => run.end - seq,
            _ => 0,
        }
    }

    /// The index of the first run of `left_entries` that ends after `seq`
    /// (their partition point): the last answer or the one after when it
    /// is either, else a binary search. Runs are ascending and disjoint.
    fn run_from(&mut self, seq: u64) -> usize {
        let runs = &self.left_entries;
        let is_first_after = |at: usize| {
            (at == 0 || runs[at - 1].end <= seq) && runs.get(at).is_none_or(|run| run.end > seq)
        };
        let near = self.found.min(runs.len());
        self.found = if is_first_after(near) {
            near
        } else if near < runs.len() && is_first_after(near + 1) {
            near + 1
        } else {
            runs.partition_point(|run| run.end <= seq)
        };
        self.found
    }

    /// Scans the list's entries from where the last scan stopped up to
    /// `end`, keeping the run each continues, and remembers the pages
    /// deeper than the kernel's window into their run (by page and by entry).
    ///
    /// Once an entry is left, the entries that continue its run are left
    /// too and only lengthen the same ranges: they are counted in one pass
    /// over the list ([`AccessList::adjacent_after`]) and taken together
    /// ([`ReadAhead::leave_more`]), not one by one.
    fn scan_to(&mut self, list: &AccessList, end: u64) {
        let mut count = usize::try_from(end.saturating_sub(self.scanned_to)).unwrap_or(usize::MAX);
        let mut open: Option<((i32, u64), u64)> = None;
        let mut from = self.scanned_to;
        'chunks: while count > 0 {
            for (seq, entry) in list.iter_from(from).take(count) {
                count -= 1;
                let key = entry.key;
                match self.last {
                    Some(last) if last == key => continue,
                    Some(last) if last.fd == key.fd && last.page + 1 == key.page => {
                        self.run += 1;
                        self.segment += 1;
                    }
                    last => self.jump(last, key),
                }
                self.last = Some(key);
                if self.run > self.window_pages || self.kernel_stream {
                    self.leave(key, &mut open);
                    self.leave_entry(seq, key);
                    let more = list.adjacent_after(seq + 1, key, count as u64);
                    if more > 0 {
                        self.leave_more(more, &mut open);
                        count -= more as usize;
                        from = seq + 1 + more;
                        continue 'chunks;
                    }
                }
            }
            break;
        }
        if let Some((start, end)) = open {
            self.left.insert(start, end);
        }
        self.scanned_to = self.scanned_to.max(end);
    }

    /// Leaves the `more` entries after the one just left, each the page
    /// after the one before: what `more` turns of [`ReadAhead::scan_to`]'s
    /// loop would do, since each extends the run, the `open` range and the
    /// last left entries by one.
    fn leave_more(&mut self, more: u64, open: &mut Option<((i32, u64), u64)>) {
        let last = self.last.as_mut().expect("an entry was just left");
        last.page += more;
        let key = *last;
        self.run += more;
        self.segment += more;
        if let Some((_, end)) = open.as_mut() {
            *end += more;
        }
        if let Some(run) = self.left_entries.back_mut() {
            run.end += more;
            run.last = key;
        }
    }

    /// Records entry `seq` (page `key`) as left, joined to the entries
    /// before when it continues them.
    fn leave_entry(&mut self, seq: u64, key: PageKey) {
        if let Some(run) = self.left_entries.back_mut() {
            if run.end == seq && run.last.fd == key.fd && run.last.page + 1 == key.page {
                run.end += 1;
                run.last = key;
                return;
            }
        }
        self.left_entries.push_back(LeftEntries {
            start: seq,
            end: seq + 1,
            last: key,
        });
    }

    /// The list jumped from `last` to `key`: remembers the stream `last`
    /// ends and starts a segment at `key`, which continues the stream that
    /// ends just before it, if one does.
    fn jump(&mut self, last: Option<PageKey>, key: PageKey) {
        if let Some(last) = last {
            if self.streams.len() >= STREAMS {
                self.streams.clear();
            }
            let stream = Stream {
                pages: self.run,
                segment: self.segment,
            };
            self.streams.insert((last.fd, last.page + 1), stream);
        }
        let stream = self.streams.remove(&(key.fd, key.page)).unwrap_or_default();
        self.run = stream.pages + 1;
        self.segment = 1;
        self.kernel_stream =
            stream.pages > stream.segment && stream.pages >= self.request_cost_pages.max(1);
    }

    /// Records `key` as left: it extends the `open` range (start, end),
    /// which the scan keeps out of `left` while it grows, or the range that
    /// ends just before it (a stream's earlier segment), or starts one.
    fn leave(&mut self, key: PageKey, open: &mut Option<((i32, u64), u64)>) {
        if let Some((start, end)) = open.as_mut() {
            if start.0 == key.fd && *end == key.page {
                *end += 1;
                return;
            }
        }
        if let Some((start, end)) = open.take() {
            self.left.insert(start, end);
        }
        let before = self
            .left
            .range(..=(key.fd, key.page))
            .next_back()
            .filter(|(&(fd, _), &end)| fd == key.fd && end == key.page)
            .map(|(&start, _)| start);
        *open = Some((before.unwrap_or((key.fd, key.page)), key.page + 1));
    }

    /// True if `key` was left to the kernel.
    pub fn is_left(&self, key: PageKey) -> bool {
        !self.left.is_empty() && self.range_of(key).is_some()
    }

    /// The end (exclusive) of the left range that holds `key`, if one does.
    pub fn run_end(&self, key: PageKey) -> Option<u64> {
        if self.left.is_empty() {
            return None;
        }
        self.range_of(key)
            .and_then(|start| self.left.get(&start).copied())
    }

    /// The start of the left range that holds `key`, if one does.
    fn range_of(&self, key: PageKey) -> Option<(i32, u64)> {
        self.left
            .range(..=(key.fd, key.page))
            .next_back()
            .filter(|(&(fd, _), &end)| fd == key.fd && key.page < end)
            .map(|(&start, _)| start)
    }

    /// Accounts a read of `key` that found it `resident` or not; returns
    /// true if the page was left to the kernel and its absence shows that
    /// the kernel does not read ahead (an earlier read of the same left
    /// range, less than a window before, missed too or was the last read of
    /// a left page): the planner then stops stepping aside and takes the
    /// pages back ([`ReadAhead::take_back`]).
    pub fn on_read(&mut self, key: PageKey, resident: bool) -> bool {
        if !self.active() || self.left.is_empty() {
            return false;
        }
        let Some(range) = self.range_of(key) else {
            return false;
        };
        if self.left_reads.len() >= STREAMS && !self.left_reads.contains_key(&range) {
            self.left_reads.clear();
        }
        let previous = self.left_reads.insert(range, (key.page, !resident));
        let alone = self.last_left_range.replace(range) == Some(range);
        let shown = previous.is_some_and(|(before, missed)| {
            before < key.page && key.page - before <= self.window_pages && (missed || alone)
        });
        if !resident && shown {
            self.refused = true;
            return true;
        }
        false
    }

    /// After a refusal: of `pages`, those that were left to the kernel,
    /// which the planner now advises itself; forgets them.
    pub fn take_back(&mut self, pages: Vec<PageKey>) -> Vec<PageKey> {
        let taken = pages.into_iter().filter(|&key| self.is_left(key)).collect();
        self.left.clear();
        self.left_entries.clear();
        self.left_reads.clear();
        self.last_left_range = None;
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_list::{Entry, Mode};

    fn key(page: u64) -> PageKey {
        PageKey { fd: 3, page }
    }

    fn list_of(pages: &[u64]) -> AccessList {
        let mut list = AccessList::with_capacity(1 << 16);
        let entries: Vec<Entry> = pages
            .iter()
            .map(|&p| Entry {
                key: key(p),
                mark: false,
            })
            .collect();
        list.request(&entries, Mode::SET);
        list
    }

    /// The pages of the entries in `[start, end)` left to the kernel, as the
    /// window's walk finds them from `start` (a round's), sorted.
    fn scan(
        readahead: &mut ReadAhead,
        list: &AccessList,
        start: u64,
        end: u64,
        replaced: bool,
    ) -> Vec<PageKey> {
        readahead.restart(start, replaced);
        let mut pages = Vec::new();
        let mut seq = start;
        while seq < end {
            let left = readahead.left_from(list, seq).min(end - seq);
            pages.extend((seq..seq + left).filter_map(|s| list.get(s)).map(|e| e.key));
            seq += left.max(1);
        }
        pages.sort_unstable();
        pages
    }

    /// A run of 10 pages with a window of 4: pages 4..10 are left, also
    /// when the run is walked in two parts; a new run starts afresh.
    #[test]
    fn pages_past_the_window_of_their_run_are_left_to_the_kernel() {
        let pages: Vec<u64> = (0..10).chain([50, 51, 52]).collect();
        let list = list_of(&pages);
        let mut readahead = ReadAhead::default();
        readahead.raise_window(4);
        let first = scan(&mut readahead, &list, 0, 6, false);
        let second = scan(&mut readahead, &list, 0, pages.len() as u64, false);
        assert_eq!(first, vec![key(4), key(5)]);
        assert_eq!(second, (4..10).map(key).collect::<Vec<_>>());
        assert_eq!(readahead.left.len(), 1, "one range for the run");
        assert_eq!(readahead.left_entries.len(), 1, "one run of entries");
        assert_eq!(readahead.left_from(&list, 5), 5, "entries 5..10");
        assert!((0..13).all(|i| readahead.is_left(key(pages[i])) == (4..10).contains(&i)));
    }

    /// Scattered and strided pages (runs of at most the window) are all advised.
    #[test]
    fn short_runs_are_never_left() {
        let pages: Vec<u64> = (0..64)
            .map(|tile| tile * 100)
            .flat_map(|s| s..s + 4)
            .collect();
        let list = list_of(&pages);
        let mut readahead = ReadAhead::default();
        readahead.raise_window(4);
        assert!(scan(&mut readahead, &list, 0, pages.len() as u64, false).is_empty());
    }

    /// The pages of 8 rows of 16 tiles of 4 pages, stored row by row, read column by column.
    fn tiled_column_pass() -> Vec<u64> {
        (0..16)
            .flat_map(|column| (0..8).map(move |row| row * 64 + column * 4))
            .flat_map(|start| start..start + 4)
            .collect()
    }

    /// A tiled image read column by column (8 rows of 16 tiles of 4 pages):
    /// from the third column on, each row's stream holds more pages than a
    /// tile, so its tiles are left to the kernel's context read-ahead; the
    /// first miss of each row, where the kernel starts reading ahead, does
    /// not end stepping aside.
    #[test]
    fn interleaved_streams_longer_than_their_reads_are_left_to_the_kernel() {
        let pages = tiled_column_pass();
        let list = list_of(&pages);
        let mut readahead = ReadAhead::default();
        readahead.raise_window(2048);
        readahead.raise_request_cost(3);
        let left = scan(&mut readahead, &list, 0, pages.len() as u64, false);
        let expected: Vec<PageKey> = (0..8)
            .flat_map(|row| row * 64 + 8..row * 64 + 64)
            .map(key)
            .collect();
        assert_eq!(left, expected);
        for row in 0..8 {
            assert!(!readahead.on_read(key(row * 64 + 8), false), "row {row}");
        }
        assert!(readahead.active());
    }

    /// The same pass where the kernel reads nothing ahead (a descriptor
    /// set to `POSIX_FADV_RANDOM`): a row's second miss in a row, between
    /// the other rows' reads, ends stepping aside; a miss after a hit on
    /// the row (a context read-ahead shorter than the row) does not.
    #[test]
    fn an_interleaved_stream_missed_twice_in_a_row_ends_stepping_aside() {
        let pages = tiled_column_pass();
        let list = list_of(&pages);
        let mut readahead = ReadAhead::default();
        readahead.raise_window(2048);
        readahead.raise_request_cost(3);
        scan(&mut readahead, &list, 0, pages.len() as u64, false);
        for row in 0..8 {
            assert!(
                !readahead.on_read(key(row * 64 + 8), row % 2 == 0),
                "row {row}"
            );
        }
        for row in (0..8).step_by(2) {
            assert!(
                !readahead.on_read(key(row * 64 + 12), false),
                "row {row}: a hit before"
            );
        }
        assert!(readahead.active());
        assert!(
            readahead.on_read(key(64 + 12), false),
            "row 1: missed twice"
        );
        assert!(!readahead.active());
    }

    /// Streams are left only where a request of the stream's pages pays:
    /// with a request worth more than a row, every tile is advised.
    #[test]
    fn interleaved_streams_shorter_than_a_request_are_advised() {
        let pages = tiled_column_pass();
        let mut readahead = ReadAhead::default();
        readahead.raise_window(2048);
        readahead.raise_request_cost(100);
        assert!(scan(
            &mut readahead,
            &list_of(&pages),
            0,
            pages.len() as u64,
            false
        )
        .is_empty());
    }

    /// With the kernel's window unknown nothing is left.
    #[test]
    fn an_unknown_window_leaves_nothing() {
        let pages: Vec<u64> = (0..100).collect();
        let list = list_of(&pages);
        assert!(scan(&mut ReadAhead::default(), &list, 0, 100, false).is_empty());
    }

    /// A device whose far request costs more than the kernel's window
    /// (a seek-bound disk behind a small read-ahead) keeps every page.
    #[test]
    fn a_window_smaller_than_the_request_cost_leaves_nothing() {
        let pages: Vec<u64> = (0..100).collect();
        let list = list_of(&pages);
        let mut readahead = ReadAhead::default();
        readahead.raise_window(32);
        readahead.raise_request_cost(339);
        assert!(scan(&mut readahead, &list, 0, 100, false).is_empty());
        readahead.raise_window(512);
        assert_eq!(
            scan(&mut readahead, &list, 0, 100, true).len(),
            0,
            "512 pages deep: none"
        );
        let long: Vec<u64> = (0..600).collect();
        assert_eq!(
            scan(&mut readahead, &list_of(&long), 0, 600, true).len(),
            88
        );
    }

    /// The expected miss where the kernel picks a run up does not refuse;
    /// a second miss a few pages on, on the same run, does, and from then
    /// on nothing is left; a page never left does not count.
    #[test]
    fn a_miss_the_kernel_should_have_prevented_ends_stepping_aside() {
        let pages: Vec<u64> = (0..100).collect();
        let list = list_of(&pages);
        let mut readahead = ReadAhead::default();
        readahead.raise_window(4);
        assert_eq!(scan(&mut readahead, &list, 0, 100, false).len(), 96);
        assert!(!readahead.on_read(key(0), false), "never left");
        assert!(
            !readahead.on_read(key(4), false),
            "the kernel's first synchronous read"
        );
        assert!(!readahead.on_read(key(8), true));
        assert!(readahead.on_read(key(12), false));
        assert!(!readahead.active());
        assert_eq!(
            readahead.take_back(vec![key(2), key(13), key(99)]),
            vec![key(13), key(99)]
        );
        assert!(scan(&mut readahead, &list, 0, 100, true).is_empty());
    }

    proptest::proptest! {
        /// The scan carries its runs across the ends of what it has seen:
        /// a list handed over in batches, scanned after each, leaves the
        /// same pages as the whole list scanned at once (runs cut by a
        /// batch's end, repeated pages and interleaved streams included).
        #[test]
        fn a_list_scanned_in_batches_leaves_what_it_leaves_whole(
            segments in proptest::collection::vec((0u64..300, 1u64..40, proptest::bool::ANY), 1..40),
            cuts in proptest::collection::vec(0usize..2000, 0..6),
            window in 1u64..8,
            cost in 0u64..4,
        ) {
            let pages: Vec<u64> = segments
                .iter()
                .flat_map(|&(start, len, repeat)| {
                    let last = start + len - 1;
                    (start..=last).chain(repeat.then_some(last))
                })
                .collect();
            let fresh = || {
                let mut readahead = ReadAhead::default();
                readahead.raise_window(window);
                readahead.raise_request_cost(cost);
                readahead
            };
            let whole_list = list_of(&pages);
            let whole = scan(&mut fresh(), &whole_list, 0, pages.len() as u64, false);

            let mut bounds: Vec<usize> = cuts.iter().map(|&cut| cut % pages.len()).collect();
            bounds.push(pages.len());
            bounds.sort_unstable();
            let mut list = AccessList::with_capacity(1 << 16);
            let mut readahead = fresh();
            let mut given = 0;
            let mut in_batches = Vec::new();
            for bound in bounds {
                let entries: Vec<Entry> = pages[given..bound]
                    .iter()
                    .map(|&page| Entry { key: key(page), mark: false })
                    .collect();
                list.request(&entries, if given == 0 { Mode::SET } else { Mode::APPEND });
                given = bound;
                in_batches = scan(&mut readahead, &list, 0, given as u64, false);
            }
            proptest::prop_assert_eq!(in_batches, whole);
        }

        /// The lookup that starts from its last answer gives what a binary
        /// search over the runs gives, for lookups in any order, across
        /// restarts that forget the runs before the window.
        #[test]
        fn a_lookup_from_the_last_answer_equals_the_binary_search(
            segments in proptest::collection::vec((0u64..300, 1u64..40), 1..30),
            lookups in proptest::collection::vec((0u64..1200, proptest::bool::ANY), 1..200),
            window in 1u64..8,
        ) {
            let pages: Vec<u64> = segments
                .iter()
                .flat_map(|&(start, len)| start..start + len)
                .collect();
            let list = list_of(&pages);
            let mut readahead = ReadAhead::default();
            readahead.raise_window(window);
            readahead.raise_request_cost(1);
            let end = pages.len() as u64;
            let mut floor = 0;
            for (seq, restart) in lookups {
                let seq = floor + seq % (end - floor).max(1);
                if restart {
                    floor = seq;
                    readahead.restart(floor, false);
                }
                let got = readahead.left_from(&list, seq);
                let at = readahead.left_entries.partition_point(|run| run.end <= seq);
                let expected = match readahead.left_entries.get(at) {
                    Some(run) if run.start <= seq => run.end - seq,
                    _ => 0,
                };
                proptest::prop_assert_eq!(got, expected);
            }
        }
    }
}
