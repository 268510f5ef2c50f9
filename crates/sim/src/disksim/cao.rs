//! Cao et al.'s policies on the disk-timed engine: an adapter that drives a [`Policy`] of the
//! reference engine through the disk-timed loop's replacement and prefetching seams, a step
//! towards one event loop for every policy of the catalog.
//!
//! Cao, Felten, Karlin and Li, SIGMETRICS'95, sections 2.1-2.2: one program, one fetch at a
//! time (or a few, the device serving as many at once), and the fetch and its victim decided
//! when the disk is idle (rule 4: at each reference and each completion). The engine runs the
//! adapter's prefetcher in that mode ([`Prefetcher::decides_at_idle`]); the policy keeps
//! speaking dense block ids and reads the loop's own cache (one copy: where each block is, the
//! free slots, the unreferenced prefetches), handed to each hook. The loop's disk blocks are
//! the policy's dense ids, so a block passes between the two without a lookup; the device is
//! given the trace's block number of each fetch (OBL's "next block" is the next trace
//! number, as on Cao's loop).
//!
//! Deviations: the string is held in memory (streamed traces stay on Cao's loop); the disk
//! counters of a run (`Metrics::disk`: seek distances) are in dense ids, not trace block
//! numbers; a policy that names more new blocks than the string has distinct ones is refused
//! the prefetches past them (OBL names at most one a block); the policy's view of the cache
//! does not tell when a fetch in flight will complete (no policy asks); the loop, not the
//! adapter, checks that a fetch starts only with a fetch slot free.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::engine::{run_program, EngineConfig, Parts, Program};
use super::iosched::io_scheduler_from_name;
use super::prefetch::{Access, FetchRange, Idle, Prefetcher};
use super::replace::{Replacement, Touch};
use super::workload::{DiskBlock, FileBlock, Layout, Step};
use crate::cache::{Block, CacheView, Interner};
use crate::engine::Ctx;
use crate::engine::RunSetup;
use crate::future::{Future, Oracle, Pos};
use crate::metrics::{nanos, Metrics};
use crate::policy::{Build, Fetch, Policy, PolicyInfo};
use crate::refstring::RefString;
use crate::time::{FetchDevice, ReferenceTime, Time};
use crate::SimError;

/// Runs Cao's policy `info` over reference string `string` on the disk-timed engine with the
/// settings of Cao's loop: one program whose references take the same time (simplified model)
/// or their compute times in the string (realistic model), fetches timed by Cao's device (a
/// constant F, a seeded draw around it, or a disk model given one one-block request a fetch,
/// block numbers wrapping round the disk), at most `depth` at a time (the device serving that
/// many requests at once), the initial contents given as trace block numbers. The string is
/// one file whose block `b` is the block of dense id `b`; a tick is a nanosecond on the disk-timed loop,
/// and times come back in ticks.
pub fn run_cao(
    info: &'static PolicyInfo,
    string: &RefString,
    setup: &RunSetup,
) -> Result<Metrics, SimError> {
    setup.validate()?;
    let device = setup.timing.device();
    let realistic = setup.timing.reference == ReferenceTime::FromTrace;
    if realistic && !string.timed() {
        return Err(SimError::Config(
            "the realistic model needs a trace with timestamps".into(),
        ));
    }
    let program = StringProgram::new(string, setup.initial.len(), realistic, device.block_size())?;
    let future = info.needs_future.then(|| Future::link(string.clone()));
    let mut ids = string.ids().clone();
    let initial: Vec<Block> = setup.initial.iter().map(|&b| ids.intern(b)).collect();
    let cached: Vec<FileBlock> = initial.iter().map(|&id| file_block(id)).collect();
    let policy = (info.build)(&Build {
        capacity: setup.capacity,
        timing: &setup.timing,
        future: future.as_ref(),
        initial: &initial,
        ids: &ids,
        depth: setup.depth,
    })?;
    let demand_only = policy.demand_only();
    let started = Arc::new(AtomicU64::new(0));
    let state = Rc::new(RefCell::new(State {
        started: Arc::clone(&started),
        addressed: device.addressed(),
        name: info.name,
        policy,
        ids,
        oracle: future.as_ref().map(Oracle::new),
        layout_blocks: program.layout.file_blocks(0),
        demand_only,
        string,
        now: 0,
        cursor: 0,
        victim: None,
        error: None,
    }));
    let mut model = Parallel {
        device,
        depth: setup.depth,
        started: Arc::clone(&started),
    };
    let mut scheduler = io_scheduler_from_name("fifo")?;
    let parts = Parts {
        replacement: &mut Victims(Rc::clone(&state)),
        prefetcher: &mut Decisions(Rc::clone(&state)),
        scheduler: scheduler.as_mut(),
        model: &mut model,
    };
    let hit_time = match setup.timing.reference {
        ReferenceTime::Uniform(t) => Duration::from_nanos(t),
        ReferenceTime::FromTrace => Duration::ZERO,
    };
    let config = EngineConfig {
        hit_time,
        last_think: program.last_think(),
        ..EngineConfig::with_cache(setup.capacity)
    };
    let metrics = run_program(&program, config, parts, &cached, &mut |_| {})?;
    if let Some(error) = state.borrow_mut().error.take() {
        return Err(error);
    }
    Ok(metrics.in_ticks_of(nanos(TICK)))
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

impl<'s> StringProgram<'s> {
    fn new(
        string: &'s RefString,
        cached: usize,
        realistic: bool,
        block_size: u64,
    ) -> Result<StringProgram<'s>, SimError> {
        let blocks = (string.distinct() as u64 + cached as u64) * 2 + 1;
        if blocks > u64::from(Block::MAX) || blocks.checked_mul(block_size).is_none() {
            return Err(SimError::Config(format!(
                "{blocks} blocks are too many for the disk-timed loop's byte addresses"
            )));
        }
        Ok(StringProgram {
            string,
            layout: Layout::contiguous(&[blocks], 0, block_size),
            realistic,
        })
    }

    /// The compute time of the reference at `pos` (none on the simplified model).
    fn compute(&self, pos: usize) -> Duration {
        match self.realistic {
            true => Duration::from_nanos(self.string.think(pos as Pos).unwrap_or(0)),
            false => Duration::ZERO,
        }
    }

    /// The last reference's compute time, a think time after the stream's end.
    fn last_think(&self) -> Duration {
        self.string
            .len()
            .checked_sub(1)
            .map_or(Duration::ZERO, |last| self.compute(last))
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

    fn step(&self, _stream: usize, index: usize) -> Option<Step> {
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
}

/// The loop's block of the policy's dense id `id`.
fn file_block(id: Block) -> FileBlock {
    FileBlock {
        file: 0,
        block: u64::from(id),
    }
}

/// How many references ahead the adapter warms the processor's cache for a block's state.
const LOOKAHEAD: usize = 8;

/// One tick of Cao's loop on the disk-timed one (the fetch devices' tick).
const TICK: Duration = Duration::from_nanos(1);

/// Cao's fetch device serving up to `depth` requests at once (Cao's fetches in flight at once),
/// each timed as on Cao's loop on the trace block number of the fetch: the adapter starts a
/// fetch only when a fetch slot is free and the loop serves it at once, so the fetch served is
/// the one started last, whose number the adapter leaves in `started`.
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

/// The policy and what it sees, shared by the two seams.
struct State<'f> {
    name: &'static str,
    policy: Box<dyn Policy>,
    ids: Interner,
    oracle: Option<Oracle<'f>>,
    /// The trace block number of the fetch started last, for the device (if `addressed`).
    started: Arc<AtomicU64>,
    addressed: bool,
    /// The policy never prefetches and ignores requests ([`Policy::demand_only`]).
    demand_only: bool,
    /// Blocks of the loop's one file: ids from here on have no block.
    layout_blocks: u64,
    /// The program's references, numbered (the block at the cursor is the one referenced).
    string: &'f RefString,
    now: Time,
    cursor: Pos,
    /// The victim of the fetch decided last, which the engine evicts next.
    victim: Option<Block>,
    /// The first decision the model forbids.
    error: Option<SimError>,
}

impl State<'_> {
    /// Calls the policy with what it sees now, the loop's `cache` (`pinned` must not be
    /// evicted).
    fn call<R>(
        &mut self,
        cache: CacheView<'_>,
        pinned: Option<Block>,
        f: impl FnOnce(&mut dyn Policy, &mut Ctx) -> R,
    ) -> R {
        let oracle = self.oracle.as_ref();
        let mut ctx = Ctx::new(
            cache,
            oracle,
            &mut self.ids,
            (self.now, self.cursor),
            pinned,
        );
        f(self.policy.as_mut(), &mut ctx)
    }

    /// Warms the processor's cache for the policy's state of the block referenced
    /// [`LOOKAHEAD`] references after the cursor, as Cao's loop does (the loop warms its own).
    fn warm_ahead(&self) {
        let ahead = self.cursor as usize + LOOKAHEAD;
        if ahead < self.string.len() {
            let block = self.string.block_at(ahead as Pos);
            self.policy.warm(block, &self.ids);
        }
    }

    fn set_now(&mut self, now: Duration) {
        self.now = now.as_nanos() as Time;
    }

    /// Hands `fetch` to the loop if the model allows it in `cache`.
    fn start(&mut self, fetch: Fetch, cache: CacheView<'_>, pinned: Option<Block>) -> bool {
        if let Err(message) = check(fetch, cache, pinned) {
            self.error.get_or_insert(SimError::Policy {
                policy: self.name,
                message,
            });
            return false;
        }
        if self.addressed {
            self.started
                .store(self.ids.raw(fetch.block), Ordering::Relaxed);
        }
        self.victim = fetch.victim;
        true
    }
}

/// The rules of the model for a fetch into `cache`, as Cao's loop checks them (the loop asks
/// only with a fetch slot free).
fn check(fetch: Fetch, cache: CacheView<'_>, pinned: Option<Block>) -> Result<(), String> {
    if !cache.is_absent(fetch.block) {
        return Err(format!(
            "fetched block {} which is already cached",
            fetch.block
        ));
    }
    match fetch.victim {
        None if cache.free_slots() == 0 => Err("fetched without a victim into a full cache".into()),
        Some(v) if !cache.is_resident(v) => Err(format!("evicted block {v} which is not cached")),
        Some(v) if Some(v) == pinned => {
            Err(format!("evicted block {v} that is about to be referenced"))
        }
        _ => Ok(()),
    }
}

/// The policy's dense id of the loop's block `block`.
fn id(block: FileBlock) -> Block {
    block.block as Block
}

/// The prefetching seam: every decision of the policy, made when the device is idle.
struct Decisions<'f>(Rc<RefCell<State<'f>>>);

impl Prefetcher for Decisions<'_> {
    /// Never called: the adapter decides at idle.
    fn on_access(&mut self, _access: &Access) -> Vec<FetchRange> {
        Vec::new()
    }

    fn on_request(
        &mut self,
        _stream: usize,
        block: FileBlock,
        now: Duration,
        cache: CacheView<'_>,
    ) {
        let mut state = self.0.borrow_mut();
        state.set_now(now);
        let pos = state.cursor;
        let block = id(block);
        state.call(cache, None, |p, ctx| p.on_request(block, pos, ctx));
    }

    fn on_reference(&mut self, _stream: usize, block: FileBlock, cache: CacheView<'_>) {
        let mut state = self.0.borrow_mut();
        let block = id(block);
        let pos = state.cursor;
        if let Some(oracle) = state.oracle.as_mut() {
            oracle.advance(pos);
        }
        state.cursor += 1;
        state.warm_ahead();
        state.call(cache, None, |p, ctx| p.on_reference(block, pos, ctx));
    }

    fn on_arrival(&mut self, block: FileBlock, cache: CacheView<'_>) {
        let mut state = self.0.borrow_mut();
        let block = id(block);
        state.call(cache, None, |p, ctx| p.on_arrival(block, ctx));
    }

    fn decides_at_idle(&self) -> bool {
        true
    }

    fn demand_only(&self) -> bool {
        self.0.borrow().demand_only
    }

    fn on_idle(&mut self, idle: &Idle, cache: CacheView<'_>) -> Option<FileBlock> {
        let mut state = self.0.borrow_mut();
        state.set_now(idle.now);
        if let Some(demand) = idle.demand {
            let block = id(demand);
            let victim = state.call(cache, None, |p, ctx| p.demand_victim(block, ctx));
            state.start(Fetch { block, victim }, cache, None);
            return None;
        }
        let pinned = idle.pinned.map(id);
        let fetch = state.call(cache, pinned, |p, ctx| p.prefetch(ctx))?;
        let wanted = Some(file_block(fetch.block)).filter(|b| b.block < state.layout_blocks)?;
        state.start(fetch, cache, pinned).then_some(wanted)
    }
}

/// The replacement seam: evicts the victim the policy chose with its last fetch.
struct Victims<'f>(Rc<RefCell<State<'f>>>);

impl Replacement for Victims<'_> {
    fn on_hit(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, _block: DiskBlock, _how: Touch) {}

    fn evict(&mut self, _now: Duration) -> Option<DiskBlock> {
        let victim = self.0.borrow_mut().victim.take()?;
        Some(u64::from(victim))
    }

    fn likely_victim(&self) -> Option<DiskBlock> {
        self.0.borrow().policy.likely_victim().map(u64::from)
    }

    /// The policy keeps its own order, which it does not expose.
    fn order(&self) -> Vec<DiskBlock> {
        Vec::new()
    }
}
