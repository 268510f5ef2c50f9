//! Competitive prefetching (CP): Linux-style read-ahead windows whose depth grows by slow start
//! from 16 blocks, doubling, up to the competitive depth `S_p = C_switch x R_tr` of the disk
//! model (TR840 s3; the depth itself is `plan::competitive`, shared with the live library).
//!
//! # Windows (shared with AP, [`super::ap`])
//! Each stream keeps, for each of the files it reads, a *current* and an *ahead* window, as
//! Linux 2.6.3 does (TR840 s2.2):
//!
//! ```text
//!   miss at b, not sequential:        cur = [b, b+16)                     (slow start restarts)
//!   sequential access inside cur:     ahead = [cur.end, cur.end + next)   (once per window)
//!   sequential access reaches ahead:  cur = ahead; ahead = [cur.end, cur.end + next)
//!   next = min(2 x previous, target, P_mem / N_stream)
//! ```
//! `target` is the competitive depth of the window's disk location (CP) or a fixed number of
//! blocks (AP). When the replacement policy keeps a prefetch cache (CPEM, [`super::cpem`]),
//! each window is also capped at `P_mem / N_stream` (TR840 s4.2), where `N_stream` counts the
//! files streams are reading (the paper approximates it by the number of open files).
//!
//! A block evicted before its window is reached comes back as a one-block demand fetch: the
//! "single page read" of TR840 s2.3 that makes page thrashing costly.
//!
//! Deviations: a stream remembers its two most recent files (Two-Rand-0 reads two at once) and
//! counts a file as open while it was read within its last 64 references. A non-sequential
//! access that hits the cache starts no window. Until the first request is served the switch
//! cost uses the disk's average random seek; then `f_seek` of the average distance between
//! consecutive requests (0 for back-to-back sequential ones), as `plan::competitive` explains.
//! Transfer rate is the model's measured sequential rate at the window's first block
//! ([`ModelCurves`]); for an SSD the "switch" is its per-command latency. A fixed-time device
//! has no transfer rate: there the depth is given (`depth=BYTES`), the same everywhere.

use plan::competitive::{CompetitiveDepth, SlowStart};
use plan::stream_memory::MemoryShare;
use rustc_hash::FxHashMap;

use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::{FileBlock, Layout};
use crate::SimError;

mod curves;
pub use curves::ModelCurves;

/// Files per stream whose windows are remembered.
const FILES_PER_STREAM: usize = 2;
/// A file counts as open while its stream read it within this many references.
const OPEN_REFERENCES: u64 = 64;

/// Blocks `start .. start + len` of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: u64,
    len: u64,
}

impl Span {
    fn end(self) -> u64 {
        self.start + self.len
    }
}

/// Read-ahead state of one stream in one file.
#[derive(Clone, Debug)]
struct FileWindows {
    file: u32,
    prev: u64,
    cur: Span,
    ahead: Option<Span>,
    slow: SlowStart,
    last_reference: u64,
}

/// The files one stream is reading, most recent last.
#[derive(Clone, Debug, Default)]
struct StreamWindows {
    references: u64,
    files: Vec<FileWindows>,
}

/// Current and ahead windows of every stream, grown by slow start up to a target depth.
#[derive(Clone, Debug)]
pub struct Windows {
    layout: Layout,
    streams: FxHashMap<usize, StreamWindows>,
}

impl Windows {
    /// Windows over the files of `layout`.
    pub fn new(layout: Layout) -> Windows {
        Windows {
            layout,
            streams: FxHashMap::default(),
        }
    }

    /// The files' layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Files read by some stream within its last 64 references (the paper's `N_stream`).
    pub fn open_files(&self) -> usize {
        self.streams
            .values()
            .map(|s| {
                s.files
                    .iter()
                    .filter(|f| f.last_reference + OPEN_REFERENCES >= s.references)
                    .count()
            })
            .sum()
    }

    /// Reacts to one reference; `target(addr)` is the depth limit in blocks of a window
    /// starting at disk byte `addr`. Returns the windows to fetch.
    pub fn on_access(
        &mut self,
        access: &Access,
        mut target: impl FnMut(u64) -> u64,
    ) -> Vec<FetchRange> {
        let cap = access.prefetch_ceiling.map(|ceiling| {
            MemoryShare::of_prefetch_memory(ceiling as u64, self.open_files() as u64)
                .per_stream_at_least(1)
        });
        let Windows { layout, streams } = self;
        let file_blocks = layout.file_blocks(access.block.file);
        let stream = streams.entry(access.stream).or_default();
        stream.references += 1;
        let references = stream.references;
        let state = stream.touch(access.block, references);
        let mut open = |state: &mut FileWindows, at: u64| -> Option<Span> {
            let block = FileBlock {
                file: state.file,
                block: at,
            };
            let addr = layout.disk_block(block).unwrap_or(0) * layout.block_size;
            let depth = target(addr);
            let limit = cap.map_or(depth, |c| depth.min(c));
            let len = state
                .slow
                .next_depth(limit)
                .min(file_blocks.saturating_sub(at));
            (len > 0).then_some(Span { start: at, len })
        };
        step(state, access, &mut open)
            .into_iter()
            .map(|w| FetchRange {
                file: access.block.file,
                start: w.start,
                len: w.len,
            })
            .collect()
    }
}

impl StreamWindows {
    /// The windows of `block`'s file, created if new (forgetting the least recent file beyond
    /// two), moved to the most recent place.
    fn touch(&mut self, block: FileBlock, references: u64) -> &mut FileWindows {
        let mut state = match self.files.iter().position(|f| f.file == block.file) {
            Some(i) => self.files.remove(i),
            None => {
                if self.files.len() == FILES_PER_STREAM {
                    self.files.remove(0);
                }
                FileWindows {
                    file: block.file,
                    prev: block.block,
                    cur: Span {
                        start: block.block,
                        len: 0,
                    },
                    ahead: None,
                    slow: SlowStart::default(),
                    last_reference: references,
                }
            }
        };
        state.last_reference = references;
        self.files.push(state);
        let last = self.files.len() - 1;
        &mut self.files[last]
    }
}

/// One reference's effect on a file's windows (see the module diagram).
fn step(
    state: &mut FileWindows,
    access: &Access,
    open: &mut impl FnMut(&mut FileWindows, u64) -> Option<Span>,
) -> Vec<Span> {
    let b = access.block.block;
    let sequential = state.cur.len > 0 && (b == state.prev + 1 || b == state.prev);
    let repeat = state.cur.len > 0 && b == state.prev;
    state.prev = b;
    if repeat {
        return Vec::new();
    }
    if !sequential {
        state.slow.reset();
        state.ahead = None;
        if access.found {
            state.cur = Span { start: b, len: 1 };
            return Vec::new();
        }
        return restart_at(state, b, open);
    }
    match state.ahead {
        Some(ahead) if b >= ahead.start && b < ahead.end() => {
            state.cur = ahead;
            state.ahead = open(state, ahead.end());
            state.ahead.into_iter().collect()
        }
        None if b < state.cur.end() => {
            state.ahead = open(state, state.cur.end());
            state.ahead.into_iter().collect()
        }
        _ if b >= state.cur.end() => {
            state.ahead = None;
            restart_at(state, b, open)
        }
        _ => Vec::new(),
    }
}

fn restart_at(
    state: &mut FileWindows,
    b: u64,
    open: &mut impl FnMut(&mut FileWindows, u64) -> Option<Span>,
) -> Vec<Span> {
    match open(state, b) {
        Some(cur) => {
            state.cur = cur;
            vec![cur]
        }
        None => {
            state.cur = Span { start: b, len: 1 };
            Vec::new()
        }
    }
}

/// The CP prefetcher.
#[derive(Clone, Debug)]
pub struct Competitive {
    windows: Windows,
    depth: Target,
}

/// Where the windows stop growing.
#[derive(Clone, Debug)]
enum Target {
    /// The disk's competitive depth where the window starts (TR840 s3).
    Disk(CompetitiveDepth<ModelCurves>),
    /// A depth given in blocks (`cp:depth=BYTES`), the same everywhere.
    Given(u64),
}

impl Target {
    fn blocks(&self, addr: u64) -> u64 {
        match self {
            Target::Disk(depth) => depth.depth_pages(addr),
            Target::Given(blocks) => *blocks,
        }
    }
}

impl Competitive {
    /// CP over the files of `layout` on a disk with `curves`.
    pub fn new(layout: Layout, curves: ModelCurves) -> Competitive {
        let block_size = layout.block_size;
        Competitive {
            windows: Windows::new(layout),
            depth: Target::Disk(CompetitiveDepth::new(curves, block_size)),
        }
    }

    /// CP over the files of `layout` with a depth of `blocks` (at least 1) whatever the disk.
    pub fn with_depth(layout: Layout, blocks: u64) -> Competitive {
        Competitive {
            windows: Windows::new(layout),
            depth: Target::Given(blocks.max(1)),
        }
    }

    /// The competitive depth in blocks of a window starting at `block`.
    pub fn depth_blocks(&self, block: FileBlock) -> u64 {
        let layout = self.windows.layout();
        let addr = layout.disk_block(block).unwrap_or(0) * layout.block_size;
        self.depth.blocks(addr)
    }

    /// Folds a served request's seek distance into the estimate.
    pub fn observe_seek(&mut self, distance: u64) {
        if let Target::Disk(depth) = &mut self.depth {
            depth.observe_seek(distance);
        }
    }
}

impl Prefetcher for Competitive {
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    fn on_stream_end(&mut self, _stream: usize) {}

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let Competitive { windows, depth } = self;
        windows.on_access(access, |addr| depth.blocks(addr))
    }

    fn on_served(&mut self, _request: &disk::Request, seek_bytes: Option<u64>) {
        if let Some(distance) = seek_bytes {
            self.observe_seek(distance);
        }
    }

    fn demand_only(&self) -> bool {
        false
    }
}

/// CP's configuration: the depth comes from the run's disk model (its curves, built once per
/// device), or from option `depth=BYTES`, which a fixed-time device (`unit:F`, `fixed:MS`)
/// needs: a request costs the same whatever its length, so there is no transfer rate to weigh
/// a switch against.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The depth in bytes; `None`: the disk's competitive depth.
    pub depth: Option<u64>,
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["depth"])?;
        let depth = match given.text("depth", "").is_empty() {
            true => None,
            false => given.bytes_given("depth")?,
        };
        Ok(Options { depth })
    }
}

impl MakePrefetcher for Options {
    fn build(&self, setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        let layout = setup.workload.layout.clone();
        if let Some(bytes) = self.depth {
            let blocks = bytes.div_ceil(layout.block_size);
            return Ok(Box::new(Competitive::with_depth(layout, blocks)));
        }
        let curves = setup.disk.curves().map_err(|reason| SimError::BadOption {
            spec: "competitive".into(),
            reason: format!(
                "{reason}: give one (`depth=512K`) or a disk model (`--device st3500320as`)"
            ),
        })?;
        Ok(Box::new(Competitive::new(layout, curves.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disksim::engine::EngineConfig;
    use crate::disksim::replace::clock;
    use crate::disksim::run::{disk_named, run_pair, Pair};
    use crate::disksim::workload::{Step, Workload};
    use plan::competitive::DiskCurves as _;
    use proptest::prelude::*;
    use std::time::Duration;

    const PAGE: u64 = 4096;

    fn access(stream: usize, file: u32, block: u64, found: bool, ceiling: Option<usize>) -> Access {
        Access {
            stream,
            block: FileBlock { file, block },
            found,
            now: Duration::ZERO,
            active_streams: 1,
            prefetch_ceiling: ceiling,
        }
    }

    /// The paper's number for its IBM drive: about 540 KB, here averaged over the disk, with a
    /// mean sequential rate of 51.3 MB/s.
    #[test]
    fn ibm_depth_is_about_540_kb() {
        let curves = ModelCurves::from_model_name("ibm-36z15").unwrap();
        assert!(
            (curves.mean_rate() / 51.3e6 - 1.0).abs() < 0.05,
            "{}",
            curves.mean_rate()
        );
        let capacity = 36_400_000_000u64;
        let depth = CompetitiveDepth::new(curves, PAGE);
        let mean = (0..64)
            .map(|i| depth.depth_bytes(i * (capacity / 64)) as f64)
            .sum::<f64>()
            / 64.0;
        assert!((mean / 540e3 - 1.0).abs() < 0.05, "mean depth {mean}");
    }

    /// Models with no transfer rate have no competitive depth: a clear error.
    #[test]
    fn fixed_cost_models_are_refused() {
        let err = ModelCurves::from_model_name("fixed:9.5").unwrap_err();
        assert!(err.contains("fixed:9.5"), "{err}");
    }

    /// One sequential stream: windows of 16, 32, 64 and 128 blocks, then the competitive
    /// depth, each ahead window issued when the stream enters the previous one.
    #[test]
    fn slow_start_windows_on_a_sequential_stream() {
        let layout = Layout::contiguous(&[4096], 0, PAGE);
        let mut cp = Competitive::new(layout, ModelCurves::from_model_name("ibm-36z15").unwrap());
        let target = cp.depth_blocks(FileBlock { file: 0, block: 0 });
        let mut windows = Vec::new();
        for block in 0..1000 {
            let found = block > 0;
            for range in cp.on_access(&access(0, 0, block, found, None)) {
                windows.push((range.start, range.len));
            }
        }
        assert_eq!(
            &windows[..6],
            &[
                (0, 16),
                (16, 32),
                (48, 64),
                (112, 128),
                (240, target),
                (240 + target, target)
            ]
        );
    }

    /// A random access that hits the cache starts nothing; a random miss restarts at 16.
    #[test]
    fn random_accesses_restart_slow_start() {
        let layout = Layout::contiguous(&[4096], 0, PAGE);
        let mut windows = Windows::new(layout);
        let mut ranges =
            |block, found| windows.on_access(&access(0, 0, block, found, None), |_| 100);
        assert_eq!(ranges(0, false).len(), 1);
        assert_eq!(ranges(1, true)[0].len, 32);
        assert!(ranges(500, true).is_empty());
        let restart = ranges(900, false);
        assert_eq!((restart[0].start, restart[0].len), (900, 16));
    }

    /// Length of the file the single-stream tests read a prefix of (the kernel does not know
    /// where the stream stops).
    const FILE_BLOCKS: u64 = 20_000;

    /// Disk time of one stream reading the first `blocks` blocks of a file alone, with
    /// `prefetcher`, on the IBM model, the file placed one third of the disk away from the head
    /// (an average seek); and the bound of equation 5, 2 x (S / R_tr + C_switch).
    fn single_stream(prefetcher: impl MakePrefetcher + 'static, blocks: u64) -> (f64, f64) {
        let pad = 36_400_000_000 / 3 / PAGE;
        let layout = Layout::contiguous(&[pad, FILE_BLOCKS], 0, PAGE);
        let steps = (0..blocks).map(|b| Step::at(1, b)).collect();
        let workload = Workload {
            layout,
            streams: vec![steps],
        };
        let pair = Pair::new(clock::Options, prefetcher);
        let disk = disk_named("ibm-36z15").unwrap();
        let config = EngineConfig::with_cache(FILE_BLOCKS as usize);
        let metrics = run_pair(&pair, &workload, (&disk, "fifo"), config).unwrap();
        let curves = ModelCurves::from_model_name("ibm-36z15").unwrap();
        let rate = curves.transfer_rate(pad * PAGE);
        let switch = curves.average_seek() + curves.rotational_delay();
        let optimum = (blocks * PAGE) as f64 / rate + switch.as_secs_f64();
        (crate::metrics::seconds(metrics.disk.busy), 2.0 * optimum)
    }

    /// The bound can fail: AP's 256-block windows (these windows with a given depth of 256
    /// blocks, as `ap` runs them) waste more than a switch's worth of transfer on a 241-block
    /// stream (it fetches 752 blocks).
    #[test]
    fn aggressive_depth_breaks_the_bound() {
        let (busy, bound) = single_stream(
            Options {
                depth: Some(256 * PAGE),
            },
            241,
        );
        assert!(busy > bound, "{busy} <= {bound}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Equation 5 on the disk model: a single sequential stream of any size costs at most
        /// twice the optimum, S / R_tr + C_switch, in disk time.
        #[test]
        fn single_stream_is_2_competitive(blocks in 1u64..16_384) {
            let (busy, bound) = single_stream(Options { depth: None }, blocks);
            prop_assert!(busy <= bound, "{blocks} blocks: {busy} s > {bound} s");
        }

        /// Under a prefetch cache ceiling, no window exceeds P_mem / N_stream.
        #[test]
        fn windows_respect_the_per_stream_cap(
            ceiling in 1usize..2048,
            refs in proptest::collection::vec(
                (0usize..16, 0u32..4, 0u64..1024, any::<bool>()),
                1..400,
            ),
        ) {
            let mut windows = Windows::new(Layout::contiguous(&[1024; 4], 0, PAGE));
            let mut next: FxHashMap<usize, (u32, u64)> = FxHashMap::default();
            for (stream, file, jump, sequential) in refs {
                let (file, block) = match next.get(&stream) {
                    Some(&(f, b)) if sequential && b < 1024 => (f, b),
                    _ => (file, jump),
                };
                next.insert(stream, (file, block + 1));
                let cap = (ceiling as u64 / windows.open_files().max(1) as u64).max(1);
                let access = access(stream, file, block, false, Some(ceiling));
                for range in windows.on_access(&access, |_| 256) {
                    prop_assert!(range.len <= cap, "{} > {cap}", range.len);
                }
            }
        }
    }
}
