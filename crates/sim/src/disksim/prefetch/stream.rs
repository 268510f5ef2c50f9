//! Competitive prefetching as the live library runs it (`prefetch run --competitive`): the
//! kernel's own read-ahead stays on ([`super::readahead`], Linux's 16 -> 32 blocks), and each
//! stream's reads of each file go through the live code, `plan::stream::Stream` (TR840 s3
//! windows by slow start up to `S_p`, s4's thrash cap), whose advice is fetched as the
//! kernel would fetch a `WILLNEED`. The simulator's `cp` is this prefetcher, so what it
//! predicts is what the library does.
//!
//! As the live library: `S_p` is the device's break-even gap (its average switch, a seek and
//! half a turn, times its mean transfer rate; the profile's `break_even_gap_bytes`), slow start
//! skips the depths the kernel's window already covers (its largest, 32 blocks), and a page
//! advised but evicted before the read reaches it is "missing" and halves the stream's cap.
//!
//! Deviations: the live library follows one stream per open descriptor; here one per
//! (stream, file) of the workload. The live probe of the device's queue (advice waiting for
//! room) has no counterpart: the engine queues every request at once, so the queue always has
//! room. A fixed-time device has no transfer rate: there the depth is given (`depth=BYTES`).

use std::collections::VecDeque;
use std::ops::Range;

use plan::stream::{Probes, Stream};
use plan::stream_memory::MemoryShare;
use rustc_hash::{FxHashMap, FxHashSet};

use super::readahead::{self, ReadAhead};
use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::{FileBlock, Layout};
use crate::SimError;

/// The live library's competitive prefetching over the kernel's read-ahead.
#[derive(Debug)]
pub struct LiveCompetitive {
    layout: Layout,
    /// `S_p` in blocks.
    target: u64,
    kernel: ReadAhead,
    streams: FxHashMap<(usize, u32), Stream>,
    /// Blocks prefetched and evicted before any reference (the live probe's "not cached").
    evicted_unused: FxHashSet<FileBlock>,
    /// The cache's size, blocks: the memory the streams share.
    cache_blocks: u64,
    /// The (stream, file) pairs of the last [`OPEN_REFERENCES`] references, oldest first, and
    /// how often each occurs among them: the files open, the paper's `N_stream`.
    recent: VecDeque<(usize, u32)>,
    recent_counts: FxHashMap<(usize, u32), u32>,
}

/// A file counts as open while it was read within this many references (as in `competitive`).
const OPEN_REFERENCES: usize = 64;

/// The live probes, simulated: the advised pages evicted unused, a queue with room, and the
/// cache shared by the open files.
struct Evicted<'a> {
    file: u32,
    evicted_unused: &'a mut FxHashSet<FileBlock>,
    memory: MemoryShare,
}

impl Probes for Evicted<'_> {
    fn missing(&mut self, pages: Range<u64>) -> u64 {
        let file = self.file;
        pages
            .filter(|&block| self.evicted_unused.remove(&FileBlock { file, block }))
            .count() as u64
    }

    fn queue_has_room(&mut self) -> bool {
        true
    }

    fn memory(&mut self) -> Option<MemoryShare> {
        Some(self.memory)
    }
}

impl LiveCompetitive {
    /// Counts a reference to `key`'s file; returns the files read within the last
    /// [`OPEN_REFERENCES`] references.
    fn open_files(&mut self, key: (usize, u32)) -> u64 {
        self.recent.push_back(key);
        *self.recent_counts.entry(key).or_insert(0) += 1;
        if self.recent.len() > OPEN_REFERENCES {
            if let Some(old) = self.recent.pop_front() {
                if let Some(count) = self.recent_counts.get_mut(&old) {
                    *count -= 1;
                    if *count == 0 {
                        self.recent_counts.remove(&old);
                    }
                }
            }
        }
        self.recent_counts.len() as u64
    }
}

impl Prefetcher for LiveCompetitive {
    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let mut ranges = self.kernel.on_access(access);
        let FileBlock { file, block } = access.block;
        let size = self.layout.block_size;
        let kernel_window = readahead::Options::LINUX.max;
        let open = self.open_files((access.stream, file));
        let memory = MemoryShare::of_memory(self.cache_blocks, open);
        let stream = self
            .streams
            .entry((access.stream, file))
            .or_insert_with(|| Stream::new(size).with_kernel_window(kernel_window));
        let file_bytes = self.layout.file_blocks(file) * size;
        let mut probes = Evicted {
            file,
            evicted_unused: &mut self.evicted_unused,
            memory,
        };
        let step = stream.on_read(block * size, size, file_bytes, self.target, &mut probes);
        ranges.extend(step.advise.into_iter().map(|pages| FetchRange {
            file,
            start: pages.start,
            len: pages.end - pages.start,
        }));
        // A block fetched again is cached (or on its way) when the reader reaches it, as the
        // live probe would find it: no longer "evicted".
        for range in &ranges {
            for block in range.start..range.start + range.len {
                let block = FileBlock {
                    file: range.file,
                    block,
                };
                self.evicted_unused.remove(&block);
            }
        }
        ranges
    }

    fn on_evict(&mut self, block: FileBlock, unused: bool) {
        if unused {
            self.evicted_unused.insert(block);
        }
    }

    fn on_stream_end(&mut self, stream: usize) {
        self.kernel.on_stream_end(stream);
        self.streams.retain(|&(s, _), _| s != stream);
    }

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }
}

/// CP's configuration: option `depth` (bytes; default the device's break-even gap, which a
/// fixed-time device, with no transfer rate, does not have).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// `S_p` in bytes; `None`: the device's break-even gap.
    pub depth: Option<u64>,
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["depth"])?;
        Ok(Options {
            depth: given.bytes_given("depth")?,
        })
    }
}

impl MakePrefetcher for Options {
    fn build(&self, setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        let layout = setup.workload.layout.clone();
        let depth = match self.depth {
            Some(bytes) => bytes,
            None => setup.disk.break_even_gap_bytes().map_err(|reason| {
                let reason = format!(
                    "{reason}: give one (`depth=512K`) or a disk model (`--device st3500320as`)"
                );
                let spec = "competitive".into();
                SimError::BadOption { spec, reason }
            })?,
        };
        let linux = readahead::Options::LINUX;
        Ok(Box::new(LiveCompetitive {
            target: depth.div_ceil(layout.block_size.max(1)).max(1),
            layout,
            kernel: ReadAhead::new(linux.init, linux.max),
            streams: FxHashMap::default(),
            evicted_unused: FxHashSet::default(),
            cache_blocks: setup.cache_blocks as u64,
            recent: VecDeque::with_capacity(OPEN_REFERENCES + 1),
            recent_counts: FxHashMap::default(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disksim::engine::EngineConfig;
    use crate::disksim::replace::clock;
    use crate::disksim::run::{disk_named, run_pair, Pair};
    use crate::disksim::workload::{Step, Workload};

    const BLOCK: u64 = 4096;

    /// The live probes of a process with `0` as its memory, nothing evicted, room in the queue.
    struct Memory(MemoryShare);

    impl Probes for Memory {
        fn missing(&mut self, _pages: Range<u64>) -> u64 {
            0
        }
        fn queue_has_room(&mut self) -> bool {
            true
        }
        fn memory(&mut self) -> Option<MemoryShare> {
            Some(self.0)
        }
    }

    /// `cp` of depth `depth` blocks, cache 1,024 blocks, built for one stream reading `reads`
    /// blocks of a file of `blocks` from its start.
    fn sequential_cp(blocks: u64, reads: u64, depth: u64) -> Box<dyn Prefetcher> {
        let workload = Workload {
            layout: Layout::contiguous(&[blocks], 0, BLOCK),
            streams: vec![(0..reads).map(|b| Step::at(0, b)).collect()],
        };
        let disk = disk_named("fixed:1").unwrap();
        let setup = PrefetchSetup {
            workload: &workload,
            cache_blocks: 1024,
            disk: &disk,
        };
        Options {
            depth: Some(depth * BLOCK),
        }
        .build(&setup)
        .unwrap()
    }

    /// The advice beyond the kernel's windows is exactly the live `plan::stream::Stream`'s for
    /// the same reads, with the kernel's window of 32 blocks, the same target, and the cache as
    /// the memory of one open file (its cap, 128 blocks, below the target of 132).
    #[test]
    fn the_advice_is_the_live_streams() {
        let mut cp = sequential_cp(4096, 600, 132);
        let mut kernel = ReadAhead::new(16, 32);
        let mut live = Stream::new(BLOCK).with_kernel_window(32);
        for block in 0..600 {
            let ours = cp.on_access(&Access::miss(block));
            let kernels = kernel.on_access(&Access::miss(block));
            let mut probes = Memory(MemoryShare::of_memory(1024, 1));
            let step = live.on_read(block * BLOCK, BLOCK, 4096 * BLOCK, 132, &mut probes);
            let advice: Vec<FetchRange> = step
                .advise
                .iter()
                .map(|p| FetchRange {
                    file: 0,
                    start: p.start,
                    len: p.end - p.start,
                })
                .collect();
            assert_eq!(ours, [kernels, advice].concat(), "at block {block}");
        }
    }

    /// The cache is the memory the open files share: with 1,024 blocks and one file read, a
    /// window holds at most half of a quarter of it (128 blocks), however deep `S_p` is, and
    /// the windows do reach that cap.
    #[test]
    fn windows_stay_within_the_files_share_of_the_cache() {
        let mut cp = sequential_cp(8192, 4000, 512);
        let largest = (0..4000)
            .flat_map(|block| cp.on_access(&Access::miss(block)))
            .map(|range| range.len)
            .max();
        assert_eq!(largest, Some(128));
    }

    /// A sequential stream that stops before slow start's first window beyond the kernel's is
    /// due (16 one-block reads from the run's start) is read exactly as with the kernel's
    /// read-ahead alone: the same requests, the same blocks. (Advising 64 blocks at the second
    /// read, as the stream once did, fetched 112 blocks for a two-block stream.)
    #[test]
    fn a_short_stream_costs_what_the_kernels_read_ahead_costs() {
        let disk = disk_named("ibm-36z15").unwrap();
        let config = EngineConfig::with_cache(16384);
        for blocks in 1..=16 {
            let workload = Workload {
                layout: Layout::contiguous(&[8192], 0, BLOCK),
                streams: vec![(0..blocks).map(|b| Step::at(0, b)).collect()],
            };
            let run = |pair: Pair| run_pair(&pair, &workload, (&disk, "fifo"), config).unwrap();
            let kernel = run(Pair::new(clock::Options, readahead::Options::LINUX));
            let cp = run(Pair::new(clock::Options, Options { depth: None }));
            assert_eq!(cp.disk.requests, kernel.disk.requests, "{blocks} blocks");
            assert_eq!(
                cp.disk.blocks_fetched, kernel.disk.blocks_fetched,
                "{blocks} blocks"
            );
        }
    }

    /// On a disk model, a sequential reader's windows grow past the kernel's to `S_p`, so it
    /// reads in fewer, longer requests than with the kernel's read-ahead alone.
    #[test]
    fn a_sequential_reader_gets_longer_requests_than_the_kernels() {
        let workload = Workload {
            layout: Layout::contiguous(&[8192], 0, BLOCK),
            streams: vec![(0..8192).map(|b| Step::at(0, b)).collect()],
        };
        let disk = disk_named("ibm-36z15").unwrap();
        let config = EngineConfig::with_cache(16384);
        let run = |pair: Pair| run_pair(&pair, &workload, (&disk, "fifo"), config).unwrap();
        let kernel = run(Pair::new(clock::Options, readahead::Options::LINUX));
        let cp = run(Pair::new(clock::Options, Options { depth: None }));
        assert!(
            cp.disk.avg_request_blocks() > 2.0 * kernel.disk.avg_request_blocks(),
            "{} vs {}",
            cp.disk.avg_request_blocks(),
            kernel.disk.avg_request_blocks()
        );
        assert_eq!(cp.references, 8192);
    }
}
