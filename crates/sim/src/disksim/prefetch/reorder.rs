//! libprefetch's basic prefetching algorithm as a simulator policy (ATC'09 s3.2, s3.3, s3.5):
//! walk the access list one reorder buffer at a time, and fetch each buffer's pages in disk
//! order (C-LOOK), merging gaps up to the infill limit.
//!
//! It runs the live library's own planning code from crate `plan`, not a copy:
//! [`plan::AccessList`] holds the stream's future references (the trace is the access list),
//! [`plan::Window::select`] picks the next K unique pages, [`plan::ranges::merge_with_infill`]
//! merges them and [`plan::ranges::clook_from`] orders the ranges.
//!
//! ```text
//!   access list   p17 p3 p90 p3 p41 | p8 p77 ...       K = 4 unique pages per buffer
//!   buffer 1      {3, 17, 41, 90}   -> fetch 3, 17, 41, 90 (ascending from the head)
//!   reads         p17 p3 p90 p3 p41 wait for their pages; the 6th read starts buffer 2
//! ```
//!
//! For uniform random reads of an N-page file this gives an average seek distance of about
//! 2N(K-1)/K(K+1) pages (s3.5).
//!
//! Each new buffer drops (DONTNEED) the pages fetched for the previous one that it does not need,
//! with `plan::ranges::stale_pages`, as the live library does (s4.5); so the cache holds about
//! one buffer, like the paper's Direct-I/O benchmark, which re-reads every page from disk.
//!
//! Deviations: the live `plan::Planner` starts each round's C-LOOK at the *next page the
//! application needs* (to shorten its first wait) and sizes the buffer by AIMD; the paper's
//! Figure 2-3 benchmark, which this policy reproduces, reads each buffer "by increasing disk
//! position" with a fixed buffer, and so do we by default (`sweep=buffer`). Starting at the next
//! needed page adds about one random seek (N/3) per buffer, about 17% over the formula for
//! 64 <= K << N (see [`super::planner`], which does exactly that);
//! `sweep=continuous` starts where the previous buffer left the head (C-LOOK across buffers),
//! about 5% shorter than the formula at K = 16. Rounds start when the application reaches the
//! first entry past the buffer (the paper's benchmark proceeds one buffer at a time). Pages
//! re-read within the next buffer are cache hits here, where Direct I/O would read them again.

use plan::ranges::{clook_from, merge_with_infill, stale_pages, PageRange};
use plan::{AccessList, Mode, PageKey, Window};

use super::{access_list, Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::{FileBlock, Step};
use crate::SimError;

/// One stream's access list and round state.
#[derive(Debug)]
struct StreamPlan {
    list: AccessList,
    /// Sequence number one past the current buffer.
    buffer_end: u64,
    /// Where the disk head was left by the previous buffer.
    head: PageKey,
    /// Pages fetched for the current buffer (infill included), sorted.
    fetched: Vec<PageKey>,
}

/// The reorder buffer prefetcher.
#[derive(Debug)]
pub struct Reorder {
    buffer_pages: u64,
    infill_pages: u64,
    sweep: Sweep,
    streams: Vec<StreamPlan>,
    drops: Vec<FetchRange>,
}

/// Where each buffer's C-LOOK pass starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sweep {
    /// At the lowest page of the buffer: each buffer is read by increasing disk position (the
    /// paper's Figure 2-3 benchmark, and its formula).
    Buffer,
    /// Where the previous buffer left the head, wrapping around (C-LOOK across buffers).
    Continuous,
}

impl Reorder {
    /// A reorder buffer of `buffer_pages` unique pages with infill of gaps up to
    /// `infill_pages`, for streams whose future references are `streams`.
    pub fn new(
        buffer_pages: u64,
        infill_pages: u64,
        sweep: Sweep,
        streams: &[Vec<Step>],
    ) -> Reorder {
        let streams = streams
            .iter()
            .map(|steps| {
                let entries = access_list(steps);
                let mut list = AccessList::with_capacity(entries.len());
                list.request(&entries, Mode::SET);
                StreamPlan {
                    list,
                    buffer_end: 0,
                    head: PageKey { fd: 0, page: 0 },
                    fetched: Vec::new(),
                }
            })
            .collect();
        Reorder {
            buffer_pages: buffer_pages.max(1),
            infill_pages,
            sweep,
            streams,
            drops: Vec::new(),
        }
    }
}

impl Prefetcher for Reorder {
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    fn on_stream_end(&mut self, _stream: usize) {}

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let (buffer_pages, infill_pages, sweep) =
            (self.buffer_pages, self.infill_pages, self.sweep);
        let Some(plan) = self.streams.get_mut(access.stream) else {
            return Vec::new();
        };
        let position = plan.list.position();
        let mut fetch = Vec::new();
        if position >= plan.buffer_end {
            let window = Window::select(&plan.list, buffer_pages);
            let pages = window.pages(&plan.list);
            let head = match sweep {
                Sweep::Buffer => PageKey { fd: 0, page: 0 },
                Sweep::Continuous => plan.head,
            };
            let ranges = clook_from(merge_with_infill(&pages, infill_pages), head);
            if let Some(last) = ranges.last() {
                plan.head = PageKey {
                    fd: last.fd,
                    page: last.end(),
                };
            }
            let mut fetched: Vec<PageKey> = ranges.iter().flat_map(pages_of).collect();
            fetched.sort_unstable();
            let stale = stale_pages(&plan.fetched, &pages);
            self.drops = merge_with_infill(&stale, 0).iter().map(to_fetch).collect();
            plan.fetched = fetched;
            plan.buffer_end = window.end;
            fetch = ranges.iter().map(to_fetch).collect();
        }
        plan.list.consume_through(position);
        fetch
    }

    fn drops(&mut self) -> Vec<FetchRange> {
        std::mem::take(&mut self.drops)
    }

    fn demand_only(&self) -> bool {
        false
    }
}

fn pages_of(range: &PageRange) -> impl Iterator<Item = PageKey> + '_ {
    (range.start..range.end()).map(|page| PageKey { fd: range.fd, page })
}

fn to_fetch(range: &PageRange) -> FetchRange {
    FetchRange {
        file: u32::try_from(range.fd).unwrap_or(0),
        start: range.start,
        len: range.len,
    }
}

/// The reorder buffer's configuration: options `buffer` (bytes, default half the cache),
/// `infill` (bytes, default 0, the paper's Figure 2 setting; the live library uses 32K) and
/// `sweep` (`buffer`, the default, or `continuous`).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The buffer in bytes; `None`: half the cache.
    pub buffer: Option<u64>,
    /// The infill in bytes.
    pub infill: u64,
    /// How the buffer is swept.
    pub sweep: Sweep,
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["buffer", "infill", "sweep"])?;
        let sweep = match given.text("sweep", "buffer").as_str() {
            "buffer" => Sweep::Buffer,
            "continuous" => Sweep::Continuous,
            other => {
                return Err(SimError::BadOption {
                    spec: given.to_string(),
                    reason: format!("sweep `{other}` is not `buffer` or `continuous`"),
                })
            }
        };
        Ok(Options {
            buffer: given.bytes_given("buffer")?,
            infill: given.bytes("infill", 0)?,
            sweep,
        })
    }
}

impl MakePrefetcher for Options {
    fn build(&self, setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        let block = setup.workload.layout.block_size.max(1);
        let half_cache = (setup.cache_blocks as u64 / 2).max(1) * block;
        Ok(Box::new(Reorder::new(
            self.buffer.unwrap_or(half_cache) / block,
            self.infill / block,
            self.sweep,
            &setup.workload.streams,
        )))
    }
}
