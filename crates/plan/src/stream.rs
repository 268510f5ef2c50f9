//! Live competitive prefetching for one open file: is its reader sequential (or strided), and
//! which pages to advise ahead of it, how far, and how to back off when prefetched pages are
//! evicted before use.
//!
//! Follows Li, Papathanasiou and Shen, "Competitive Prefetching for Data-Intensive Online
//! Servers" (TR840): section 3 (depth `S_p = C_switch x R_tr`, slow start from 16 pages,
//! doubling) and section 4 (prefetching-incurred page thrashing: a stream whose prefetched
//! pages are evicted unused prefetches less).
//!
//! # Regimes
//! * **idle**: no pattern yet; nothing is advised. A read that breaks the pattern returns here
//!   (slow start restarts, as the paper's "non-sequential access").
//! * **sequential**: a read starts exactly where the previous one ended.
//! * **strided**: three reads of the same length whose starts are the same distance apart,
//!   wider than the length (a column of a row-major table).
//!
//! # Windows (the Linux 2.6 read-ahead windows TR840 builds on)
//! Once a pattern is seen, the stream advises a first window of `next_depth` pages right after
//! the read; whenever a read reaches into the last window advised, the next window, of the
//! next depth, is advised right after it. The advice thus stays between one and two windows
//! ahead of the reader, and each window is one request of `S_p` to the disk:
//!
//! ```text
//!   reads  |r0|r1|                 r1 ends where r0 did: sequential, window 1 (16 pages)
//!                |== w1 ==|        r2 reaches w1: window 2 (32 pages) after it
//!                         |===== w2 =====|   ... 64, 128, then S_p pages each
//!   depth  16, 32, 64, 128, S_p, S_p, ...   (capped by S_p, and by the thrash cap)
//! ```
//! For a strided stream a window holds records whose bytes add up to the depth, at most
//! [`MAX_RECORDS_PER_WINDOW`], each advised as its own range (or one range over them, below).
//!
//! **The kernel's own read-ahead.** TR840's slow start replaces the kernel's read-ahead, whose
//! windows it starts from (16 pages). Here the kernel's read-ahead stays on: a sequential reader
//! already gets windows of the device's `read_ahead_kb` (32 pages on FUSE and by default) from
//! the kernel. Advice of a slow-start depth up to that window ([`Stream::with_kernel_window`])
//! would only cut the kernel's requests into fragments and cost a switch of its own, so those
//! windows are left to the kernel: the stream lays them from the run's first read, as TR840's
//! slow start would have issued them, advises none, and the first window it advises (twice the
//! kernel's) is due when the reader reaches the start of the last of them, which is where slow
//! start would issue it. Slow start thus still grows on what the reader consumed: one-page reads
//! get their first advice at page 16 of the run, 64 KiB reads at their second read. That window
//! starts right after the read, so that it takes in the kernel's next window instead of
//! fragmenting it (live, the kernel starts that window at the same read).
//!
//! **Strided readers.** The kernel reads nothing ahead of a strided reader, so its slow start
//! begins at 16 pages. Where the gap between two records is shorter than `S_p` (the bytes the
//! device transfers in one switch's time, TR840 equation 5), reading the gap costs less than a
//! request of its own: the window is one range over the records and their gaps, of the
//! slow-start depth. Otherwise each record is advised as its own range.
//!
//! **A full device queue.** A window goes out only while the device's queue has room for it
//! ([`Probes::queue_has_room`]: the stream's last advice did not wait for room, and no advice is
//! waiting now). While it is full the stream advises nothing and the kernel's own read-ahead
//! serves the reader, as without the library; advice resumes from the reader's position once
//! there is room. A window queued behind a full queue reaches the device cut up between other
//! streams' requests, each piece paying a switch, and deepens the queue every stream waits in:
//! with 64 readers on the emulated IBM drive, advice into a full queue made them 10-15% slower
//! than stock under both `fifo` and `deadline`. Advice merely not yet picked up by the library's
//! advice thread says nothing about the device: it goes out in order behind what was advised
//! before.
//!
//! # Protection against prefetch thrashing
//! When a read reaches pages this stream advised, the caller counts those that are no longer
//! cached (evicted before use). Any such page halves the stream's cap on its depth (not below
//! the 16 pages of slow start); each window advised afterwards with no eviction seen raises the
//! cap by 16 pages, until it no longer binds. A memory-starved stream thus reads ahead about
//! what memory holds, as TR840 section 4.2's `P_mem / N_stream` cap intends. The advice
//! already given past the read is taken as lost with them: the next window, of the halved
//! depth, is advised at once from the reader's position. (Left to the old windows, the reader
//! met their evicted pages one by one, each a one-page request: the kernel reads nothing ahead
//! of pages it finds cached, and the advised pages had been. In simulation this was most of
//! `cp`'s requests on `cs`, `gli` and `ps` at caches of 130-1,705 blocks.)
//!
//! # The memory cap
//! A window also stays within half the stream's share of the process's prefetch memory, TR840
//! section 4.2's `P_mem / N_stream` ([`crate::stream_memory`]; half, as the advice spans up to
//! two windows), which the caller's probes report ([`Probes::memory`]): where the thrash cap
//! reacts to losses, this cap keeps the streams' windows together within memory before any
//! is lost.
//!
//! Deviations: TR840 section 4 changes the kernel (a prefetch cache with second-chance
//! reclamation and a global cap `P_mem / N_stream`); from user space pages cannot be protected,
//! so each stream measures its own losses and lowers its own depth (additive increase,
//! multiplicative decrease, as libprefetch's AIMD). Holding the second window back while the
//! device queue is full is ours: it plays for requests in flight the part `P_mem / N_stream`
//! plays for memory. Strided streams are ours (the paper's streams are sequential).

use std::ops::Range;

use crate::competitive::{SlowStart, SLOW_START_PAGES};
use crate::stream_memory::MemoryShare;

/// Most records one window of a strided stream advises (each record is one advice call).
pub const MAX_RECORDS_PER_WINDOW: u64 = 64;

/// The access pattern a stream follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Each read starts where the previous ended.
    Sequential,
    /// Reads of `len` bytes, `stride` bytes apart (start to start), `stride > len`.
    Strided {
        /// Bytes from one read's start to the next one's.
        stride: u64,
        /// Bytes per read.
        len: u64,
    },
}

/// What a stream asks about its file's pages and device (the library probes; tests fake it).
pub trait Probes {
    /// How many of `pages` (pages this stream advised, which the read reaches) are not cached.
    fn missing(&mut self, pages: Range<u64>) -> u64;
    /// False if the device's queue is full: the stream's last advice had to wait for room in
    /// it, or advice is waiting for room now.
    fn queue_has_room(&mut self) -> bool;
    /// The process's prefetch memory and the streams sharing it (`None`: not known, no cap).
    /// Asked only when a window is due and the target exceeds 16 pages (no cap is lower).
    fn memory(&mut self) -> Option<MemoryShare>;
}

/// Probes of a device that takes every piece of advice at once and never loses a page.
#[derive(Clone, Copy, Debug, Default)]
pub struct Roomy;

impl Probes for Roomy {
    fn missing(&mut self, _pages: Range<u64>) -> u64 {
        0
    }
    fn queue_has_room(&mut self) -> bool {
        true
    }
    fn memory(&mut self) -> Option<MemoryShare> {
        None
    }
}

/// What a read decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Page ranges to advise (`WILLNEED`), in file order.
    pub advise: Vec<Range<u64>>,
    /// Pages found evicted before use in this read.
    pub evicted: u64,
}

/// One reader of one open file.
#[derive(Clone, Debug)]
pub struct Stream {
    page_size: u64,
    /// The previous read: byte offset and length.
    last: Option<(u64, u64)>,
    /// Distance between the starts of the two previous reads.
    last_delta: Option<u64>,
    pattern: Option<Pattern>,
    slow: SlowStart,
    ahead: Option<Ahead>,
    /// Cap on the depth after an eviction (pages); `None` while no eviction limits it.
    cap: Option<u64>,
    /// Evictions seen since the last window was advised.
    evicted_since_window: bool,
    /// Pages found evicted before use, in total.
    evicted_total: u64,
    /// The kernel's own read-ahead window on the file's device, pages (0: not known).
    kernel_window: u64,
    /// Byte offset of the first read of the current pattern.
    run_start: u64,
}

/// Where the advice stands, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ahead {
    /// First byte of the first window advised since the pattern was seen (while none was, the
    /// end of the kernel's windows followed so far: only advised pages are probed).
    from: u64,
    /// Some window was advised since the pattern was seen (else all were the kernel's).
    advised: bool,
    /// First byte of the last window (advised or the kernel's): a read reaching it makes the
    /// next window due.
    trigger: u64,
    /// One past the last byte advised (for a strided stream: the next record's start).
    end: u64,
}

impl Stream {
    /// A stream of a file with pages of `page_size` bytes (treated as at least 1).
    pub fn new(page_size: u64) -> Stream {
        Stream {
            page_size: page_size.max(1),
            last: None,
            last_delta: None,
            pattern: None,
            slow: SlowStart::default(),
            ahead: None,
            cap: None,
            evicted_since_window: false,
            evicted_total: 0,
            kernel_window: 0,
            run_start: 0,
        }
    }

    /// The same stream on a device whose kernel read-ahead window is `pages` pages: slow-start
    /// depths up to it are skipped (module comment, "The kernel's own read-ahead").
    pub fn with_kernel_window(mut self, pages: u64) -> Stream {
        self.kernel_window = pages;
        self
    }

    /// The pattern seen, if any.
    pub fn pattern(&self) -> Option<Pattern> {
        self.pattern
    }

    /// Depth of the last window advised, in pages.
    pub fn last_depth(&self) -> Option<u64> {
        self.slow.last_depth()
    }

    /// Pages found evicted before use so far.
    pub fn evicted_total(&self) -> u64 {
        self.evicted_total
    }

    /// The cap the evictions put on the depth, pages (`None`: no cap).
    pub fn cap(&self) -> Option<u64> {
        self.cap
    }

    /// A read of `len` bytes at `offset` of a file of `file_size` bytes, whose competitive
    /// depth is `target` pages, is about to go to the kernel; `probes` answer about the pages
    /// and the device (each asked at most once). Returns the pages to advise.
    pub fn on_read(
        &mut self,
        offset: u64,
        len: u64,
        file_size: u64,
        target: u64,
        probes: &mut impl Probes,
    ) -> Step {
        let mut step = Step::default();
        if len == 0 {
            return step;
        }
        let pattern = self.follow(offset, len);
        if pattern.is_none() {
            return step;
        }
        let end = offset.saturating_add(len);
        let next = match pattern {
            Some(Pattern::Strided { stride, .. }) => offset.saturating_add(stride),
            _ => end,
        };
        if let Some(reached) = self.advised_pages_reached(offset, len) {
            step.evicted = probes.missing(reached);
            self.note_evicted(step.evicted, next);
        }
        let next_window_due = match self.ahead {
            None => true,
            Some(ahead) => end.saturating_add(len) > ahead.end || end > ahead.trigger,
        } && probes.queue_has_room();
        if next_window_due {
            // No share is below 16 pages: a target within that needs no memory probed.
            let limit = match target > SLOW_START_PAGES {
                true => probes
                    .memory()
                    .map_or(target, |memory| target.min(memory.window())),
                false => target,
            };
            step.advise = self.advise_next_window(next, file_size, target, limit);
        }
        step
    }

    /// Updates the pattern with this read; returns it (`None`: idle, and the stream restarts).
    fn follow(&mut self, offset: u64, len: u64) -> Option<Pattern> {
        let previous = self.last.replace((offset, len));
        let delta = previous.and_then(|(start, _)| offset.checked_sub(start));
        let last_delta = std::mem::replace(&mut self.last_delta, delta);
        let seen = match previous {
            Some((start, prev_len)) if start.checked_add(prev_len) == Some(offset) => {
                Some(Pattern::Sequential)
            }
            Some((_, prev_len)) => match (delta, last_delta) {
                (Some(stride), Some(before))
                    if stride == before && stride > len && prev_len == len =>
                {
                    Some(Pattern::Strided { stride, len })
                }
                _ => None,
            },
            None => None,
        };
        if seen != self.pattern {
            self.restart();
            self.pattern = seen;
            self.run_start = previous.map_or(offset, |(start, _)| start);
        }
        seen
    }

    /// Forgets the pattern and the windows (the cap stays: memory did not grow).
    fn restart(&mut self) {
        self.pattern = None;
        self.slow.reset();
        self.ahead = None;
    }

    /// The pages of the read `[offset, offset + len)` that this stream advised.
    fn advised_pages_reached(&self, offset: u64, len: u64) -> Option<Range<u64>> {
        let ahead = self.ahead?;
        let start = offset.max(ahead.from);
        let end = offset.saturating_add(len).min(ahead.end);
        (start < end).then(|| start / self.page_size..end.div_ceil(self.page_size))
    }

    /// `pages` of the read were advised and evicted before use: the depth's cap halves, and the
    /// advice past the read, from byte `next` on, is taken as lost too, so the next window is
    /// due now and starts at `next` (module comment, "Protection against prefetch thrashing").
    fn note_evicted(&mut self, pages: u64, next: u64) {
        if pages == 0 {
            return;
        }
        self.evicted_total += pages;
        self.evicted_since_window = true;
        let depth = self.slow.last_depth().unwrap_or(SLOW_START_PAGES);
        let capped = self.cap.unwrap_or(depth).min(depth);
        self.cap = Some((capped / 2).max(SLOW_START_PAGES));
        if let Some(ahead) = &mut self.ahead {
            ahead.end = ahead.end.min(next);
        }
    }

    /// Advises the window after the last one, or from byte `next` (after the read: its end, or
    /// the next record's start) if that is further. A sequential stream first follows the
    /// kernel's windows from the run's first read, advising none of them (module comment, "The
    /// kernel's own read-ahead").
    fn advise_next_window(
        &mut self,
        next: u64,
        file_size: u64,
        target: u64,
        memory_limit: u64,
    ) -> Vec<Range<u64>> {
        let advised = self.ahead.is_some_and(|ahead| ahead.advised);
        let follows_kernel = self.pattern == Some(Pattern::Sequential) && !advised;
        let mut start = match self.ahead {
            None if follows_kernel => self.run_start,
            None => next,
            Some(ahead) => ahead.end.max(next),
        };
        if start >= file_size {
            return Vec::new();
        }
        self.relax_cap(memory_limit);
        let limit = self.cap.map_or(memory_limit, |cap| cap.min(memory_limit));
        let mut depth = self.slow.next_depth(limit);
        while follows_kernel && depth <= self.kernel_window && depth < limit {
            let end = start.saturating_add(depth * self.page_size);
            self.ahead = Some(Ahead {
                from: end,
                advised: false,
                trigger: start,
                end,
            });
            if next <= start || end >= file_size {
                return Vec::new();
            }
            start = end;
            depth = self.slow.next_depth(limit);
        }
        let start = match follows_kernel {
            true => next,
            false => start.max(next),
        };
        let (ranges, end) = match self.pattern {
            Some(Pattern::Strided { stride, len }) => {
                self.strided_window(start, stride, len, depth, target)
            }
            _ => {
                let first = start.div_ceil(self.page_size);
                let last = (first + depth).min(file_size.div_ceil(self.page_size));
                (
                    std::iter::once(first..last).collect(),
                    last * self.page_size,
                )
            }
        };
        let from = match self.ahead {
            Some(ahead) if advised => ahead.from,
            _ => start,
        };
        self.ahead = Some(Ahead {
            from,
            advised: true,
            trigger: start,
            end,
        });
        clip(ranges, file_size.div_ceil(self.page_size))
    }

    /// A window advised with no eviction since the previous one raises the cap by 16 pages.
    fn relax_cap(&mut self, target: u64) {
        if std::mem::take(&mut self.evicted_since_window) {
            return;
        }
        self.cap = self
            .cap
            .map(|cap| cap + SLOW_START_PAGES)
            .filter(|&cap| cap < target);
    }

    /// A strided stream's window of `depth` pages from the record at byte `start`, and the next
    /// record's start: the records themselves, each its own range, where the gap between two
    /// is worth a far request (at least `S_p`, `target` pages); else one range over the records
    /// and their gaps, `depth` pages long, which the device reads in one request.
    fn strided_window(
        &self,
        start: u64,
        stride: u64,
        len: u64,
        depth: u64,
        target: u64,
    ) -> (Vec<Range<u64>>, u64) {
        if stride - len >= target.saturating_mul(self.page_size) {
            return self.records(start, stride, len, depth);
        }
        let count = (depth * self.page_size).div_ceil(stride).max(1);
        let last = start + (count - 1) * stride + len;
        (
            std::iter::once(start / self.page_size..last.div_ceil(self.page_size)).collect(),
            start + count * stride,
        )
    }

    /// The records of a strided stream from the one at byte `start` whose bytes add up to
    /// `depth` pages (at least one record), and the next record's start.
    fn records(&self, start: u64, stride: u64, len: u64, depth: u64) -> (Vec<Range<u64>>, u64) {
        let count = (depth * self.page_size)
            .div_ceil(len)
            .clamp(1, MAX_RECORDS_PER_WINDOW);
        let ranges = (0..count)
            .map(|i| start + i * stride)
            .map(|at| at / self.page_size..(at + len).div_ceil(self.page_size))
            .collect();
        (ranges, start + count * stride)
    }
}

/// The ranges cut at page `end` (the end of the file); empty ones dropped.
fn clip(ranges: Vec<Range<u64>>, end: u64) -> Vec<Range<u64>> {
    ranges
        .into_iter()
        .map(|range| range.start..range.end.min(end))
        .filter(|range| range.start < range.end)
        .collect()
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
