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
//! # Streams followed
//! The live library follows one stream per open descriptor, from its first read to its close,
//! and shares the memory among those it follows (TR840 s4.2's `N_stream`). A workload has no
//! opens or closes, so here a stream is one (workload stream, file) pair, followed from its
//! first read until its workload stream has made `OPEN_REFERENCES` references without
//! reading the file (or has ended): what a program does with the descriptors of the files it
//! is reading. The workloads' streams read one file at a time (TR840's One-Whole-0,
//! One-Rand-10, Four-64KB-0; the single-file traces) or two interleaved by 64 KiB reads
//! (Two-Rand-0), so each such pair is counted while its reader is on it, whatever the number of
//! concurrent streams: 64 references, four 64 KiB reads of 4 KiB blocks, are more than the 16
//! between Two-Rand-0's reads of one of its files and fewer than the 1,024 a handler makes in
//! one 4 MB file.
//!
//! Deviations: a stream's close is inferred from its reads, as above. The live probe of the
//! device's queue (advice waiting for room) has no counterpart: the engine queues every request
//! at once, so the queue always has room. A fixed-time device has no transfer rate: there the
//! depth is given (`depth=BYTES`).

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
    /// The streams followed, by (workload stream, file): the live library's descriptors.
    streams: FxHashMap<(usize, u32), Followed>,
    /// Each workload stream's references so far and the files of it that are followed.
    readers: FxHashMap<usize, Reader>,
    /// Blocks prefetched and evicted before any reference (the live probe's "not cached").
    evicted_unused: FxHashSet<FileBlock>,
    /// The cache's size, blocks: the memory the streams share.
    cache_blocks: u64,
}

/// A stream followed: the live code's state, and when its reader last read its file.
#[derive(Debug)]
struct Followed {
    stream: Stream,
    /// The workload stream's reference count at its last read of this file.
    last_read: u64,
}

/// A workload stream: how many references it has made, and its files followed.
#[derive(Debug, Default)]
struct Reader {
    references: u64,
    files: Vec<u32>,
}

/// A stream is no longer followed (its descriptor taken as closed) once its workload stream
/// has made this many references without reading its file.
const OPEN_REFERENCES: u64 = 64;

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

/// Counts `stream`'s reference to `file`: ends the following of its files it has not read
/// within its last [`OPEN_REFERENCES`] references, follows `file` (anew, with blocks of
/// `block_size` bytes, if it was not), and returns the stream followed with how many are
/// followed in all (`N_stream`).
fn follow<'a>(
    streams: &'a mut FxHashMap<(usize, u32), Followed>,
    readers: &mut FxHashMap<usize, Reader>,
    (stream, file): (usize, u32),
    block_size: u64,
) -> (&'a mut Stream, u64) {
    let reader = readers.entry(stream).or_default();
    reader.references += 1;
    let now = reader.references;
    reader.files.retain(|&other| {
        let open = other == file
            || streams
                .get(&(stream, other))
                .is_some_and(|f| f.last_read + OPEN_REFERENCES > now);
        if !open {
            streams.remove(&(stream, other));
        }
        open
    });
    if !reader.files.contains(&file) {
        reader.files.push(file);
    }
    let followed = streams.len() as u64 + u64::from(!streams.contains_key(&(stream, file)));
    let kernel_window = readahead::Options::LINUX.max;
    let entry = streams.entry((stream, file)).or_insert_with(|| Followed {
        stream: Stream::new(block_size).with_kernel_window(kernel_window),
        last_read: now,
    });
    entry.last_read = now;
    (&mut entry.stream, followed)
}

impl Prefetcher for LiveCompetitive {
    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let mut ranges = self.kernel.on_access(access);
        let FileBlock { file, block } = access.block;
        let size = self.layout.block_size;
        let file_bytes = self.layout.file_blocks(file) * size;
        let key = (access.stream, file);
        let (stream, followed) = follow(&mut self.streams, &mut self.readers, key, size);
        let mut probes = Evicted {
            file,
            evicted_unused: &mut self.evicted_unused,
            memory: MemoryShare::of_memory(self.cache_blocks, followed),
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
        let files = self.readers.remove(&stream).map(|r| r.files);
        for file in files.unwrap_or_default() {
            self.streams.remove(&(stream, file));
        }
    }

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    fn demand_only(&self) -> bool {
        false
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
            readers: FxHashMap::default(),
            evicted_unused: FxHashSet::default(),
            cache_blocks: setup.cache_blocks as u64,
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

    /// `cp` of depth `depth` blocks with a cache of `cache` blocks, over `files` files of
    /// `blocks` blocks each.
    fn cp_over(files: usize, blocks: u64, cache: usize, depth: u64) -> Box<dyn Prefetcher> {
        let workload = Workload {
            layout: Layout::contiguous(&vec![blocks; files], 0, BLOCK),
            streams: Vec::new(),
        };
        let disk = disk_named("fixed:1").unwrap();
        let setup = PrefetchSetup {
            workload: &workload,
            cache_blocks: cache,
            disk: &disk,
        };
        Options {
            depth: Some(depth * BLOCK),
        }
        .build(&setup)
        .unwrap()
    }

    /// `cp` of depth `depth` blocks, cache 1,024 blocks, over one file of `blocks` blocks.
    fn sequential_cp(blocks: u64, depth: u64) -> Box<dyn Prefetcher> {
        cp_over(1, blocks, 1024, depth)
    }

    /// Reference `block` of `file` by `stream`, not cached.
    fn read(stream: usize, file: u32, block: u64) -> Access {
        Access {
            stream,
            block: FileBlock { file, block },
            ..Access::miss(block)
        }
    }

    /// The longest range `cp` fetches while `streams` streams each read their own file of
    /// 1,024 blocks from its start, one block each in turn, 400 blocks each, with a cache of
    /// 65,536 blocks and a depth of 512.
    fn longest_range_of_streams_in_turn(streams: usize) -> Option<u64> {
        let mut cp = cp_over(streams, 1024, 65_536, 512);
        let mut longest = None;
        for block in 0..400 {
            for stream in 0..streams {
                let ranges = cp.on_access(&read(stream, stream as u32, block));
                longest = ranges.iter().map(|r| r.len).chain(longest).max();
            }
        }
        longest
    }

    /// Every stream being read counts in `N_stream`, however many are read at once: 512
    /// streams share a quarter of 65,536 blocks, 32 blocks each, so their windows keep to slow
    /// start's 16 and nothing fetched is longer than the kernel's own 32-block windows, where 8
    /// streams' windows grow well past them. (Counting the files of the last 64 references of
    /// all streams together found 64 of the 512 and gave each eight times its share: windows
    /// of 128 blocks.)
    #[test]
    fn every_stream_read_at_once_shares_the_memory() {
        assert_eq!(longest_range_of_streams_in_turn(512), Some(32));
        assert!(longest_range_of_streams_in_turn(8) > Some(32));
    }

    /// A file its stream has not read for 64 of the stream's references is no longer followed:
    /// one stream that read 100 blocks of a file and moved on to another has, once past its
    /// 64th reference of the second, the whole share of the cache (windows of 128 blocks, half
    /// of a quarter of 1,024), not half of it.
    #[test]
    fn a_file_left_for_64_references_is_no_longer_followed() {
        let mut cp = cp_over(2, 4096, 1024, 512);
        for block in 0..100 {
            cp.on_access(&read(0, 0, block));
        }
        let longest = (0..3000)
            .flat_map(|block| cp.on_access(&read(0, 1, block)))
            .map(|range| range.len)
            .max();
        assert_eq!(longest, Some(128));
    }

    /// The advice beyond the kernel's windows is exactly the live `plan::stream::Stream`'s for
    /// the same reads, with the kernel's window of 32 blocks, the same target, and the cache as
    /// the memory of one open file (its cap, 128 blocks, below the target of 132).
    #[test]
    fn the_advice_is_the_live_streams() {
        let mut cp = sequential_cp(4096, 132);
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
        let mut cp = sequential_cp(8192, 512);
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
