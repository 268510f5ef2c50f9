//! Linux-style read-ahead (2.6 era), the prefetcher of DULO's simulations (FAST'05 s4.1.1,
//! "Linux prefetching policy", its reference 28) and the baseline of competitive prefetching
//! (TR840 s2.2).
//!
//! Each stream keeps, per file, a *current* window (being read) and an *ahead* window (being
//! fetched in the background):
//!
//! ```text
//!   read at block 0, or a sequential read with no windows:  current = [b, b + init)
//!   first read inside current, no ahead yet:              ahead = [end of current, + 2 x size)
//!   read crosses into ahead:                              current = ahead; new ahead, doubled
//!   read of the block just read (prev):                    nothing changes
//!   non-sequential read (not block 0, not prev or prev + 1): windows dropped, no read-ahead
//!   window sizes: init (16 blocks), then doubling, capped at max (32 blocks)
//! ```
//!
//! A read at block 0 always starts a fresh window, as Linux's `ondemand_readahead` does
//! ("start of file"); this is how DULO's Table 1 prefetches all four blocks of X at its 5th and
//! 13th references. Windows past the end of the file are clipped by the engine.
//!
//! A read of the block just read is a hit that changes nothing, as in 2.6's
//! `page_cache_readahead` (a one-page read at `prev_page` advises nothing) and today's kernel
//! (read-ahead runs on a miss or on a page marked for it): so a trace of isolated blocks, none
//! adjacent to another, is read with no read-ahead at all but at block 0, and DULO over it
//! degenerates to its base (`linux-readahead`) exactly.
//!
//! Deviations: sizes are in blocks, not derived from the read size (2.6's `get_init_ra_size`
//! starts at 4 pages for one-page reads; the papers' traces have one-block references and the
//! issue asks for 16 -> 32); the "all pages already cached" shut-off is not modelled.

use rustc_hash::FxHashMap;

use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::FileBlock;
use crate::SimError;

/// A window `[start, start + len)` of file blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    start: u64,
    len: u64,
}

impl Window {
    fn end(&self) -> u64 {
        self.start + self.len
    }

    fn holds(&self, block: u64) -> bool {
        (self.start..self.end()).contains(&block)
    }
}

/// Read-ahead state of one stream on one file.
#[derive(Clone, Copy, Debug, Default)]
struct FileState {
    prev: Option<u64>,
    current: Option<Window>,
    ahead: Option<Window>,
}

/// Linux-style read-ahead with current and ahead windows.
#[derive(Debug)]
pub struct ReadAhead {
    init: u64,
    max: u64,
    files: FxHashMap<(usize, u32), FileState>,
}

impl ReadAhead {
    /// Windows starting at `init` blocks and doubling up to `max` blocks.
    pub fn new(init: u64, max: u64) -> ReadAhead {
        ReadAhead {
            init: init.max(1),
            max: max.max(init).max(1),
            files: FxHashMap::default(),
        }
    }

    fn next_size(&self, len: u64) -> u64 {
        (len * 2).min(self.max)
    }
}

impl Prefetcher for ReadAhead {
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let block = access.block.block;
        let file = access.block.file;
        let init = self.init;
        let mut state = self
            .files
            .get(&(access.stream, file))
            .copied()
            .unwrap_or_default();
        if state.prev == Some(block) {
            return Vec::new();
        }
        let sequential = state.prev.is_some_and(|p| block == p + 1);
        state.prev = Some(block);
        let mut fetch = Vec::new();
        let in_windows = state.current.is_some_and(|w| w.holds(block))
            || state.ahead.is_some_and(|w| w.holds(block));
        if block == 0 || (sequential && !in_windows) {
            let window = Window {
                start: block,
                len: init,
            };
            state.current = Some(window);
            state.ahead = None;
            fetch.push(window);
        } else if !sequential && !in_windows {
            state.current = None;
            state.ahead = None;
        } else {
            if let Some(ahead) = state.ahead.filter(|w| w.holds(block)) {
                state.current = Some(ahead);
                state.ahead = None;
            }
            if let (Some(current), None) = (state.current, state.ahead) {
                let ahead = Window {
                    start: current.end(),
                    len: self.next_size(current.len),
                };
                state.ahead = Some(ahead);
                fetch.push(ahead);
            }
        }
        self.files.insert((access.stream, file), state);
        fetch
            .into_iter()
            .map(|w| FetchRange {
                file,
                start: w.start,
                len: w.len,
            })
            .collect()
    }

    fn on_stream_end(&mut self, stream: usize) {
        self.files.retain(|&(s, _), _| s != stream);
    }

    fn demand_only(&self) -> bool {
        false
    }
}

/// Read-ahead's configuration: options `init` (blocks, default 16) and `max` (blocks, default
/// 32).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The first window, in blocks.
    pub init: u64,
    /// The largest window, in blocks.
    pub max: u64,
}

impl Options {
    /// Linux 2.6's windows, 16 then 32 blocks: the defaults.
    pub const LINUX: Options = Options { init: 16, max: 32 };

    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["init", "max"])?;
        Ok(Options {
            init: given.count("init", Options::LINUX.init)?,
            max: given.count("max", Options::LINUX.max)?,
        })
    }
}

impl MakePrefetcher for Options {
    fn build(&self, _setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        Ok(Box::new(ReadAhead::new(self.init, self.max)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(ra: &mut ReadAhead, block: u64) -> Vec<(u64, u64)> {
        ra.on_access(&Access::miss(block))
            .iter()
            .map(|r| (r.start, r.start + r.len))
            .collect()
    }

    #[test]
    fn windows_grow_from_16_to_32_and_stop_on_random_reads() {
        let mut ra = ReadAhead::new(16, 32);
        assert_eq!(read(&mut ra, 0), vec![(0, 16)]);
        assert_eq!(read(&mut ra, 1), vec![(16, 48)]);
        assert!((2..16).all(|b| read(&mut ra, b).is_empty()));
        assert_eq!(read(&mut ra, 16), vec![(48, 80)]);
        assert_eq!(read(&mut ra, 500), vec![]);
        assert_eq!(read(&mut ra, 900), vec![]);
        assert_eq!(read(&mut ra, 900), vec![]);
        assert_eq!(read(&mut ra, 901), vec![(901, 917)]);
        assert_eq!(read(&mut ra, 0), vec![(0, 16)]);
    }
}
