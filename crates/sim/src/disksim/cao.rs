//! Runs of Cao et al.'s policies on the disk-timed loop, the one event loop of the simulator
//! ([`crate::runner`] builds every run of a Cao policy here): the program of a reference
//! string or of a streamed trace, and Cao's fetch device.
//!
//! Cao, Felten, Karlin and Li, SIGMETRICS'95, sections 2.1-2.2: one program, one fetch at a
//! time (or a few, the device serving as many at once), and the fetch and its victim decided
//! when the disk is idle (rule 4: at each reference and each completion). The loop drives the
//! policy itself ([`crate::policy::AtIdle`]), numbering the blocks densely: the loop's
//! disk blocks are the policy's dense ids, so a block passes between the two without a
//! lookup; the device is given the trace's block number of each fetch (OBL's "next block" is
//! the next trace number).
//!
//! A trace is read in place, as a reference string in memory ([`crate::runner::run_string`])
//! or streamed from its reader a few references ahead of the loop
//! ([`crate::runner::run_stream`]: memory proportional to the distinct blocks, not to the
//! trace).
//!
//! Worked example (Figures 1 and 2, string ABCA, cache {A, B}, F = 4): demand paging with MIN
//! stalls 4 at C and takes 8 units; prefetching at every opportunity starts C at time 1
//! (evicting A), stalls 3 at C, starts A at time 5 (evicting B), stalls 3 at A: 10 units.
//!
//! Deviations: on a string in memory, a policy that names more new blocks than the string has
//! distinct ones is refused the prefetches past them (OBL names at most one a block); the
//! policy's view of the cache does not tell when a fetch in flight will complete (no policy
//! asks); the loop checks that a fetch starts only with a fetch slot free.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::engine::{file_block, run_program, EngineConfig, Parts, Program, Sight, LOOKAHEAD};
use super::schedulers::io_scheduler_from_name;
use super::workload::{FileBlock, Layout, Step};
use crate::cache::{Block, Interner};
use crate::disksim::paired::Policy;
use crate::future::{Future, Oracle, Pos};
use crate::metrics::{nanos, Metrics, Requests};
use crate::policy::AtIdle;
use crate::refstring::RefString;
use crate::time::{FetchDevice, ReferenceTime, Time, Timing};
use crate::trace::Reference;
use crate::{SimError, TraceError};

/// The settings of one run.
#[derive(Clone, Debug)]
pub struct RunSetup {
    /// Cache size in blocks (at least 1).
    pub capacity: usize,
    /// The time model.
    pub timing: Timing,
    /// Trace block numbers in the cache at the start, least recently used first.
    pub initial: Vec<u64>,
    /// Fetches in flight at most: 1 in the paper's model (one disk, one fetch at a time).
    pub depth: usize,
}

impl RunSetup {
    /// The simplified model with an empty cache of `capacity` blocks and fetch time `fetch`.
    pub fn simplified(capacity: usize, fetch: Time) -> Self {
        RunSetup {
            capacity,
            timing: Timing::simplified(fetch),
            initial: Vec::new(),
            depth: 1,
        }
    }

    /// Checks the cache size, the time model and the initial contents.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.capacity == 0 {
            return Err(SimError::Config("cache must hold at least 1 block".into()));
        }
        if self.capacity >= Pos::MAX as usize {
            return Err(SimError::Config(format!(
                "cache of {} blocks is too large",
                self.capacity
            )));
        }
        if !(1..=self.capacity).contains(&self.depth) {
            return Err(SimError::Config(format!(
                "fetches in flight must be between 1 and the cache size, not {}",
                self.depth
            )));
        }
        if self.initial.len() > self.capacity {
            return Err(SimError::Config(
                "more initial blocks than cache slots".into(),
            ));
        }
        self.timing.validate()
    }
}

/// One run of a Cao policy on the disk-timed loop, with the settings of Cao's model: one
/// program whose references take the same time (simplified model) or their compute times in
/// the trace (realistic model), fetches timed by Cao's device (a constant F, a seeded draw
/// around it, or a disk model given one one-block request a fetch, block numbers wrapping round
/// the disk), at most `depth` at a time (the device serving that many requests at once), the
/// initial contents given as trace block numbers. The trace is one file whose block `b` is the
/// block of dense id `b`; a tick is a nanosecond on the disk-timed loop, and times come back in
/// ticks. [`crate::runner`] builds it for each run.
///
/// Its parts: the policy's name, its block numbering (the trace's and the initial blocks'),
/// the future of offline policies, the settings, the initial contents (dense ids).
pub(crate) struct Run<'r> {
    pub(crate) name: &'static str,
    pub(crate) ids: Interner,
    pub(crate) future: Option<&'r Future>,
    pub(crate) setup: &'r RunSetup,
    pub(crate) initial: &'r [Block],
}

impl<'r> Run<'r> {
    /// Runs `policy` over `string`, in memory and already numbered by `self.ids`.
    pub(crate) fn on_string(
        self,
        policy: &mut dyn AtIdle,
        string: &'r RefString,
    ) -> Result<Metrics, SimError> {
        let realistic = self.realistic();
        if realistic && !string.timed() {
            return Err(no_timestamps());
        }
        let blocks = (string.distinct() as u64 + self.initial.len() as u64) * 2 + 1;
        let program = StringProgram {
            string,
            layout: self.layout(blocks)?,
            realistic,
        };
        self.run(&program, policy)
    }

    /// Runs `policy` over `references`, read as the loop reaches them.
    pub(crate) fn on_stream<I>(
        self,
        policy: &mut dyn AtIdle,
        references: I,
    ) -> Result<Metrics, SimError>
    where
        I: Iterator<Item = Result<Reference, TraceError>>,
    {
        let program = StreamProgram {
            layout: self.layout(u64::from(Block::MAX))?,
            realistic: self.realistic(),
            window: RefCell::new(Window {
                references,
                read: VecDeque::new(),
                first: 0,
                ended: false,
                error: None,
                most_blocks: crate::memory::most_blocks(),
            }),
        };
        let metrics = self.run(&program, policy);
        match program.window.into_inner().error {
            Some(error) => Err(error),
            None => metrics,
        }
    }

    fn realistic(&self) -> bool {
        self.setup.timing.reference == ReferenceTime::FromTrace
    }

    /// One file of `blocks` blocks of the device's size.
    fn layout(&self, blocks: u64) -> Result<Layout, SimError> {
        let block_size = self.setup.timing.device().block_size();
        if blocks > u64::from(Block::MAX) || blocks.checked_mul(block_size).is_none() {
            return Err(SimError::Config(format!(
                "{blocks} blocks are too many for the disk-timed loop's byte addresses"
            )));
        }
        Ok(Layout::contiguous(&[blocks], 0, block_size))
    }

    /// Runs `program` with `policy` deciding, on Cao's device for the setup, the initial
    /// blocks cached at the start.
    fn run<P: Program>(self, program: &P, policy: &mut dyn AtIdle) -> Result<Metrics, SimError> {
        let setup = self.setup;
        let cached: Vec<FileBlock> = self.initial.iter().map(|&id| file_block(id)).collect();
        let device = setup.timing.device();
        let started = Arc::new(AtomicU64::new(0));
        let sight = Sight::new(
            self.name,
            self.ids,
            self.future.map(Oracle::new),
            device.addressed().then(|| Arc::clone(&started)),
        );
        let mut model = Parallel {
            device,
            depth: setup.depth,
            started,
        };
        let mut scheduler = io_scheduler_from_name("fifo")?;
        let parts = Parts {
            policy: Policy::AtIdle(policy),
            scheduler: scheduler.as_mut(),
            model: &mut model,
        };
        let hit_time = match setup.timing.reference {
            ReferenceTime::Uniform(t) => Duration::from_nanos(t),
            ReferenceTime::FromTrace => Duration::ZERO,
        };
        let config = EngineConfig {
            hit_time,
            ..EngineConfig::with_cache(setup.capacity)
        };
        let metrics = run_program(program, config, parts, sight, &cached, &mut |_| {})?;
        // Cao's model has no disk geometry: its one-block requests in dense ids have no seek
        // distances worth reporting (a disk model times them on trace block numbers).
        Ok(Metrics {
            disk: Requests::default(),
            ..metrics.in_ticks_of(nanos(TICK))
        })
    }
}

fn no_timestamps() -> SimError {
    SimError::Config("the realistic model needs a trace with timestamps".into())
}

/// The program of a reference string, read in place: one stream over one file whose block
/// `b` is the block of dense id `b`, with room for the ids of the blocks cached at the start
/// and of as many new blocks again as a policy may name (OBL's next blocks); with the
/// realistic model, a reference's compute time is the think time before the next one.
struct StringProgram<'s> {
    string: &'s RefString,
    layout: Layout,
    realistic: bool,
}

impl StringProgram<'_> {
    /// The compute time of the reference at `pos` (none on the simplified model).
    fn compute(&self, pos: usize) -> Duration {
        match self.realistic {
            true => Duration::from_nanos(self.string.think(pos as Pos).unwrap_or(0)),
            false => Duration::ZERO,
        }
    }
}

impl Program for StringProgram<'_> {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn streams(&self) -> usize {
        1
    }

    fn references(&self) -> u64 {
        self.string.len() as u64
    }

    fn dense_blocks(&self) -> bool {
        true
    }

    fn step(&self, _stream: usize, index: usize, _ids: &mut Interner) -> Option<Step> {
        if index >= self.string.len() {
            return None;
        }
        Some(Step {
            block: file_block(self.string.block_at(index as Pos)),
            think: index
                .checked_sub(1)
                .map_or(Duration::ZERO, |previous| self.compute(previous)),
        })
    }

    fn last_think(&self, _stream: usize) -> Duration {
        self.string
            .len()
            .checked_sub(1)
            .map_or(Duration::ZERO, |last| self.compute(last))
    }
}

/// The program of a streamed trace: one stream over one file as large as dense ids can number
/// (the distinct blocks are not known ahead), its references read from the trace as the loop
/// asks for them and numbered in the run's block numbering, the loop's.
struct StreamProgram<I> {
    layout: Layout,
    realistic: bool,
    window: RefCell<Window<I>>,
}

/// The references of a streamed trace around the loop's position: dense block and compute
/// time (ticks) of each, from reference `first` on.
struct Window<I> {
    references: I,
    read: VecDeque<(Block, Time)>,
    first: usize,
    /// The trace has no more references (or could not be read: `error`).
    ended: bool,
    error: Option<SimError>,
    /// Most distinct blocks the memory available can simulate.
    most_blocks: usize,
}

/// References kept behind the furthest one asked for: the loop asks for its current reference
/// and the one before (its compute time) after looking [`LOOKAHEAD`] ahead.
const KEPT_BEHIND: usize = 4 * LOOKAHEAD;

/// References read past the one asked for at a time (one borrow of the block numbering).
const READ_AHEAD: usize = 64;

impl<I: Iterator<Item = Result<Reference, TraceError>>> Window<I> {
    /// Reference `index`, reading up to it (and [`READ_AHEAD`] past it); `None` past the
    /// trace's end.
    fn get(&mut self, index: usize, ids: &mut Interner, realistic: bool) -> Option<(Block, Time)> {
        if self.first + self.read.len() <= index && !self.ended {
            while self.first + self.read.len() <= index + READ_AHEAD && !self.ended {
                self.read_one(ids, realistic);
            }
        }
        while self.first + KEPT_BEHIND < index && !self.read.is_empty() {
            self.read.pop_front();
            self.first += 1;
        }
        debug_assert!(index >= self.first, "reference {index} forgotten");
        self.read.get(index.checked_sub(self.first)?).copied()
    }

    fn read_one(&mut self, ids: &mut Interner, realistic: bool) {
        let reference = match self.references.next() {
            None => return self.ended = true,
            Some(Err(error)) => return self.fail(error.into()),
            Some(Ok(reference)) => reference,
        };
        let think = match (realistic, reference.think) {
            (false, _) => 0,
            (true, Some(think)) => think,
            (true, None) => return self.fail(no_timestamps()),
        };
        let block = ids.intern(reference.block);
        if ids.len() > self.most_blocks {
            return self.fail(SimError::TooLarge(format!(
                "the trace references more than {} distinct blocks, more than the memory \
                 available ({}) can simulate; simulate a part of it or use a larger --block-size",
                self.most_blocks,
                crate::memory::human(crate::memory::available())
            )));
        }
        self.read.push_back((block, think));
    }

    fn fail(&mut self, error: SimError) {
        self.error.get_or_insert(error);
        self.ended = true;
    }
}

impl<I: Iterator<Item = Result<Reference, TraceError>>> Program for StreamProgram<I> {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn streams(&self) -> usize {
        1
    }

    /// Not known ahead: none counted.
    fn references(&self) -> u64 {
        0
    }

    fn dense_blocks(&self) -> bool {
        true
    }

    fn step(&self, _stream: usize, index: usize, ids: &mut Interner) -> Option<Step> {
        let mut window = self.window.borrow_mut();
        let (block, _) = window.get(index, ids, self.realistic)?;
        let think = match index.checked_sub(1).filter(|_| self.realistic) {
            Some(previous) => window.get(previous, ids, self.realistic)?.1,
            None => 0,
        };
        Some(Step {
            block: file_block(block),
            think: Duration::from_nanos(think),
        })
    }

    fn last_think(&self, _stream: usize) -> Duration {
        let window = self.window.borrow();
        let last = window.read.back().map_or(0, |&(_, think)| think);
        Duration::from_nanos(last)
    }
}

/// One tick of Cao's model on the disk-timed loop (the fetch devices' tick).
const TICK: Duration = Duration::from_nanos(1);

/// Cao's fetch device serving up to `depth` requests at once (Cao's fetches in flight at once),
/// each timed as Cao's model times it, on the trace block number of the fetch: the loop starts a
/// fetch only when a fetch slot is free and serves it at once, so the fetch served is the one
/// started last, whose number the loop leaves in `started` ([`Sight`]).
struct Parallel {
    device: FetchDevice,
    depth: usize,
    started: Arc<AtomicU64>,
}

impl disk::DiskModel for Parallel {
    fn service(&mut self, now: Duration, _request: &disk::Request) -> Duration {
        let block = self.started.load(Ordering::Relaxed);
        Duration::from_nanos(self.device.fetch_time(block, now.as_nanos() as Time))
    }

    fn head(&self) -> u64 {
        self.device.head()
    }

    fn capacity(&self) -> u64 {
        self.device.capacity()
    }

    fn parallelism(&self) -> usize {
        self.depth
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::find;
    use crate::runner::run_stream;

    fn reference(block: u64, think: Option<Time>) -> Result<Reference, TraceError> {
        Ok(Reference { block, think })
    }

    #[test]
    fn a_stream_that_cannot_be_read_is_an_error_naming_the_line() {
        let broken = TraceError::Parse {
            path: "t.csv".into(),
            line: 3,
            message: "not a number".into(),
        };
        let refs = vec![reference(1, None), reference(2, None), Err(broken)];
        let setup = RunSetup::simplified(4, 2);
        let error = run_stream(find("lru-demand").unwrap(), refs.into_iter(), &setup);
        assert!(
            matches!(
                &error,
                Err(SimError::Trace(TraceError::Parse { line: 3, .. }))
            ),
            "{error:?}"
        );
    }

    #[test]
    fn the_realistic_model_refuses_a_stream_without_times() {
        let refs = vec![reference(1, Some(5)), reference(2, None)];
        let mut setup = RunSetup::simplified(4, 2);
        setup.timing.reference = ReferenceTime::FromTrace;
        let error = run_stream(find("lru-demand").unwrap(), refs.into_iter(), &setup);
        assert!(
            matches!(&error, Err(SimError::Config(m)) if m.contains("timestamps")),
            "{error:?}"
        );
    }
}
