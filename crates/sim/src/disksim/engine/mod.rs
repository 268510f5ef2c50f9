//! The event loop of the disk-timed simulator (contract in the module doc of [`super`]).
//!
//! The loop drives one [`Policy`] per run, in the way of its kind: ranges queued on each
//! reference (a replacement policy and a prefetcher, [`super::Paired`]), or every fetch decided when
//! the device is idle (Cao's model, [`AtIdle`](crate::policy::AtIdle)), the
//! loop then owning the program's position, its block numbering and its future,
//! handed to the policy in a [`Ctx`](crate::policy::Ctx) with each call, and checking each decision against Cao's
//! rules.
//!
//! Events are stream wake-ups (a stream issues its next reference), request completions and
//! scheduler timers, taken in time order; at equal times completions come first, then timers,
//! then streams by index, so runs are deterministic.
//!
//! One stream deciding at idle on a device of depth 1 (Cao's model) fetches each demand block
//! inline when nothing else is in flight or due: the request is served and completed at once,
//! with the times and counts the queue, the scheduler and the event heap would give.
//!
//! Deviations: the papers' simulators (DULO's DiskSim coupling, TR840's kernel) are not
//! replicated; CPU time is only [`EngineConfig::hit_time`] per reference plus the streams'
//! think times; a device with parallelism above 1 (SSD models) is offered that many requests at
//! once, the papers' disks have one actuator.

mod at_idle;

pub(crate) use super::program::Program;

use std::time::Duration;

use disk::{DiskModel, Request};
use rustc_hash::FxHashMap;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::iosched::{Dispatch, IoScheduler};
use super::paired::Policy;
use super::prefetch::{Access, FetchRange};
use super::replace::Touch;
use super::state::{BlockTable, Entry, Events, FileIndex};
use super::workload::{DiskBlock, FileBlock, Layout, Step, Workload};
use crate::cache::{Block, Interner};
use crate::future::{Oracle, Pos};
use crate::metrics::{nanos, Metrics, Requests};
use crate::SimError;

/// Settings of the engine itself (policies and disk are passed separately).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// Cache capacity in blocks (at least 1).
    pub cache_blocks: usize,
    /// Longest disk request in blocks; longer runs are split.
    pub max_request_blocks: u64,
    /// CPU time of every reference (0: only the disk and think times cost time).
    pub hit_time: Duration,
    /// Stop at this simulated time (steady-state throughput of closed loops): references
    /// issued before it count, `elapsed` is the limit. `None` runs every stream to its end.
    pub time_limit: Option<Duration>,
}

impl EngineConfig {
    /// A cache of `cache_blocks` blocks, requests up to 1 MiB of 4 KiB blocks, free hits.
    pub fn with_cache(cache_blocks: usize) -> EngineConfig {
        EngineConfig {
            cache_blocks,
            max_request_blocks: 256,
            hit_time: Duration::ZERO,
            time_limit: None,
        }
    }
}

/// The pluggable parts of one run.
pub struct Parts<'a> {
    /// The policy: replacement and prefetching.
    pub policy: Policy<'a>,
    /// The disk queue.
    pub scheduler: &'a mut dyn IoScheduler,
    /// The disk.
    pub model: &'a mut dyn DiskModel,
}

/// One served reference, as shown to an observer (after the fetches it caused were queued).
pub struct Observed<'a, 'p> {
    /// The stream.
    pub stream: usize,
    /// Position of the reference in its stream.
    pub index: usize,
    /// The block.
    pub block: FileBlock,
    /// No demand fetch was needed.
    pub found: bool,
    /// When the reference was issued.
    pub now: Duration,
    /// The policy, to look at its order.
    pub policy: &'a Policy<'p>,
}

/// Runs `workload` to the end; `observe` sees every reference right after it was issued.
pub fn run(
    workload: &Workload,
    config: EngineConfig,
    parts: Parts<'_>,
    observe: &mut dyn FnMut(Observed<'_, '_>),
) -> Result<Metrics, SimError> {
    run_from(workload, config, parts, &[], observe)
}

/// [`run`] with `cached` in the cache at the start (arrived, least recently used first). The
/// policy must decide at each reference: one deciding at idle runs on a reference string
/// ([`crate::runner`]), whose blocks the loop numbers for it.
pub fn run_from(
    workload: &Workload,
    config: EngineConfig,
    parts: Parts<'_>,
    cached: &[FileBlock],
    observe: &mut dyn FnMut(Observed<'_, '_>),
) -> Result<Metrics, SimError> {
    workload.validate()?;
    if parts.policy.at_idle() {
        return Err(SimError::Config(
            "a policy deciding at idle runs on a reference string (sim::runner), not a workload"
                .into(),
        ));
    }
    run_program(workload, config, parts, Sight::none(), cached, observe)
}

/// What the loop knows of the program besides its references, for a policy deciding at idle
/// (Cao's model), handed to the policy in a [`Ctx`] with each call: the run's block numbering
/// (the loop's disk blocks are its dense ids), the future of offline policies, and the
/// program's position.
pub(crate) struct Sight<'f> {
    /// The policy's name, for the errors of decisions Cao's model forbids.
    pub(crate) name: &'static str,
    /// Trace block numbers of the dense ids.
    pub(crate) ids: Interner,
    /// The future, for offline policies.
    pub(crate) oracle: Option<Oracle<'f>>,
    /// Where the loop leaves the trace block number of each fetch it starts, for a device
    /// whose fetch times depend on it (see [`crate::disksim::cao`]); `None` if none does.
    pub(crate) started: Option<Arc<AtomicU64>>,
    /// Position of the next reference to be served.
    cursor: Pos,
    /// The victim of the fetch decided last, evicted next.
    victim: Option<Block>,
    /// The first decision the model forbids.
    error: Option<SimError>,
}

impl<'f> Sight<'f> {
    /// What a policy deciding at idle sees of a run numbered by `ids`.
    pub(crate) fn new(
        name: &'static str,
        ids: Interner,
        oracle: Option<Oracle<'f>>,
        started: Option<Arc<AtomicU64>>,
    ) -> Sight<'f> {
        Sight {
            name,
            ids,
            oracle,
            started,
            cursor: 0,
            victim: None,
            error: None,
        }
    }

    /// Nothing: the policy decides at each reference.
    fn none() -> Sight<'f> {
        Sight::new("", Interner::default(), None, None)
    }
}

/// [`run_from`] over any [`Program`] whose steps lie in its layout, with what `sight` tells a
/// policy deciding at idle (`observe` inlined when it is not a trait object).
pub(crate) fn run_program<P: Program, O: FnMut(Observed<'_, '_>) + ?Sized>(
    program: &P,
    config: EngineConfig,
    parts: Parts<'_>,
    sight: Sight<'_>,
    cached: &[FileBlock],
    observe: &mut O,
) -> Result<Metrics, SimError> {
    if cached.len() > config.cache_blocks {
        return Err(SimError::Config(
            "more initial blocks than cache slots".into(),
        ));
    }
    if config.cache_blocks == 0 || config.max_request_blocks == 0 {
        return Err(SimError::Config(
            "cache and maximum request size must be at least one block".into(),
        ));
    }
    let mut engine = Engine::new(program, config, parts, sight);
    engine.fill(cached);
    engine.start();
    while let Some((now, kind, who)) = engine.events.pop() {
        if let Some(limit) = config.time_limit.filter(|&limit| now >= limit) {
            engine.metrics.elapsed = nanos(limit);
            break;
        }
        match kind {
            COMPLETION => engine.complete(now, who),
            TIMER => engine.timer_fired(now),
            _ => engine.reference(now, who as usize, observe),
        }
    }
    engine.finish()
}

/// How many references ahead of a stream the loop asks the processor for a block's slot (and
/// Cao's adapter for the policy's state of the block).
pub(crate) const LOOKAHEAD: usize = 8;

const COMPLETION: u8 = 0;
const TIMER: u8 = 1;
const STREAM: u8 = 2;

/// A request being queued or served.
struct InFlight {
    issuer: usize,
    request: Request,
    /// Its blocks, consecutive on disk.
    blocks: std::ops::Range<DiskBlock>,
    /// The block fetched on demand, if the request carries one.
    demand: Option<DiskBlock>,
    waiters: Vec<usize>,
}

struct StreamState {
    next: usize,
    waiting_since: Option<Duration>,
    /// When its next reference is due, while it computes (decisions at idle).
    wake_at: Option<Duration>,
    /// When its last reference was served, once it has finished.
    finished_at: Option<Duration>,
    /// It waits for an absent block until the device is idle (decisions at idle).
    blocked: bool,
}

struct Engine<'w, 'p, 'f, P> {
    program: &'w P,
    layout: &'w Layout,
    config: EngineConfig,
    parts: Parts<'p>,
    sight: Sight<'f>,
    cache: BlockTable<Entry>,
    /// Cached blocks prefetched and not referenced since (flagged in their entries).
    unreferenced: usize,
    files: FileIndex<'w>,
    in_flight: FxHashMap<u64, InFlight>,
    streams: Vec<StreamState>,
    active: usize,
    events: Events,
    /// Requests the device serves at once (its parallelism, at least 1).
    slots: usize,
    busy_slots: usize,
    timer: Option<Duration>,
    last_end: Option<u64>,
    next_request: u64,
    metrics: Metrics,
    /// The prefetcher decides every fetch when the device is idle (Cao's model).
    at_idle: bool,
    /// The policy never prefetches: the idle device is not offered to it (decisions at idle),
    /// or the pair's prefetcher hears of nothing.
    demand_only: bool,
    /// Requests pushed to the scheduler and not yet dispatched.
    queued: usize,
    /// The scheduler serves at once and keeps no timers
    /// ([`IoScheduler::serves_at_once`]): with nothing queued it has nothing to say.
    quiet_queue: bool,
}

impl<'w, 'p, 'f, P: Program> Engine<'w, 'p, 'f, P> {
    fn new(
        program: &'w P,
        config: EngineConfig,
        parts: Parts<'p>,
        sight: Sight<'f>,
    ) -> Engine<'w, 'p, 'f, P> {
        let layout = program.layout();
        let at_idle = parts.policy.at_idle();
        let demand_only = parts.policy.demand_only();
        let quiet_queue = parts.scheduler.serves_at_once();
        let slots = parts.model.parallelism().max(1);
        Engine {
            program,
            layout,
            config,
            parts,
            sight,
            cache: match program.dense_blocks() {
                true => BlockTable::growing(),
                false => BlockTable::for_layout(layout, program.references(), config.cache_blocks),
            },
            unreferenced: 0,
            files: FileIndex::new(layout),
            in_flight: FxHashMap::default(),
            streams: Vec::new(),
            active: 0,
            events: Events::default(),
            slots,
            busy_slots: 0,
            timer: None,
            last_end: None,
            next_request: 0,
            at_idle,
            demand_only,
            queued: 0,
            quiet_queue,
            metrics: Metrics {
                disk: Requests {
                    block_size: layout.block_size,
                    ..Requests::default()
                },
                ..Metrics::default()
            },
        }
    }

    /// Places `cached` in the cache before the run, as if each had just arrived.
    fn fill(&mut self, cached: &[FileBlock]) {
        for &file_block in cached {
            let Some(disk_block) = self.layout.disk_block(file_block) else {
                continue;
            };
            if self.cache.contains(disk_block) {
                continue;
            }
            self.cache.insert(disk_block, Entry::arrived());
            let touch = Touch {
                stream: 0,
                now: Duration::ZERO,
                prefetched: false,
            };
            self.parts.policy.on_miss(disk_block, touch);
            self.parts.policy.on_insert(disk_block, touch);
            if self.at_idle {
                self.decide(Duration::ZERO, None, |p, ctx| {
                    p.on_arrival(dense(file_block), ctx)
                });
            }
        }
    }

    fn start(&mut self) {
        for index in 0..self.program.streams() {
            let first = self.program.step(index, 0, &mut self.sight.ids);
            self.streams.push(StreamState {
                next: 0,
                waiting_since: None,
                wake_at: first.map(|s| s.think),
                finished_at: None,
                blocked: false,
            });
            if let Some(first) = first {
                self.active += 1;
                self.events.push((first.think, STREAM, index as u64));
            }
        }
    }

    /// Stream `stream` issues its next reference at `now`.
    fn reference<O: FnMut(Observed<'_, '_>) + ?Sized>(
        &mut self,
        now: Duration,
        stream: usize,
        observe: &mut O,
    ) {
        let index = self.streams[stream].next;
        let Some(Step { block, .. }) = self.program.step(stream, index, &mut self.sight.ids) else {
            return;
        };
        let Some(disk_block) = self.layout.disk_block(block) else {
            return;
        };
        self.metrics.references += 1;
        let (found, mut wait_on) = self.lookup(disk_block, stream, now);
        // When a pair's lone demand fetch arrived (fetched inline, before the observer looks).
        let mut arrived = None;
        if self.at_idle {
            if !self.demand_only {
                let pos = self.sight.cursor;
                self.decide(now, None, |p, ctx| p.on_request(dense(block), pos, ctx));
            }
            self.streams[stream].wake_at = None;
            self.settle_on(stream, now, (block, disk_block));
        } else {
            let access = Access {
                stream,
                block,
                found,
                now,
                active_streams: self.active,
                // A replacement's own setting: the pair fills it in (`Paired::on_access`).
                prefetch_ceiling: None,
            };
            let (ranges, drops) = match &mut self.parts.policy {
                Policy::Pair(pair) if !self.demand_only => (pair.on_access(&access), pair.drops()),
                _ => (Vec::new(), Vec::new()),
            };
            self.drop_blocks(&drops);
            let demand = (!found).then_some((block, disk_block));
            match demand {
                Some(demand) if ranges.is_empty() && self.alone() => {
                    arrived = Some(self.fetch_alone(stream, now, demand))
                }
                _ => wait_on = self.issue(stream, now, demand, &ranges).or(wait_on),
            }
        }
        observe(Observed {
            stream,
            index,
            block,
            found,
            now,
            policy: &self.parts.policy,
        });
        if self.at_idle {
            return;
        }
        if let Some(done) = arrived {
            self.metrics.stall += nanos(done - now);
            return self.advance(stream, done);
        }
        match wait_on.and_then(|id| self.in_flight.get_mut(&id)) {
            Some(request) => {
                request.waiters.push(stream);
                self.streams[stream].waiting_since = Some(now);
            }
            None => self.advance(stream, now),
        }
        self.kick_disk(now);
    }

    /// Counts a reference to `disk_block` as a hit, an in-flight hit or a miss and tells the
    /// replacement policy; returns whether it was found and the request it must wait for.
    fn lookup(
        &mut self,
        disk_block: DiskBlock,
        stream: usize,
        now: Duration,
    ) -> (bool, Option<u64>) {
        let Some(entry) = self.cache.get_mut(disk_block) else {
            self.metrics.misses += 1;
            self.metrics.demand_fetches += 1;
            return (false, None);
        };
        let touch = Touch {
            stream,
            now,
            prefetched: entry.unused_prefetch(),
        };
        if !self.at_idle {
            self.unreferenced -= usize::from(entry.unused_prefetch());
            entry.referenced();
        }
        match entry.pending() {
            Some(_) => {
                self.metrics.misses += 1;
                self.metrics.inflight_hits += 1;
            }
            None => self.metrics.hits += 1,
        }
        let pending = entry.pending();
        self.parts.policy.on_hit(disk_block, touch);
        while self.parts.policy.owes_eviction() && self.evict_one(now, disk_block) {}
        (true, pending)
    }

    /// Moves `stream` past its current reference, served at `now`.
    fn advance(&mut self, stream: usize, now: Duration) {
        let next = self.streams[stream].next;
        if let Some(served) = self.program.step(stream, next, &mut self.sight.ids) {
            self.advance_past(stream, now, served.block);
        }
    }

    /// [`Engine::advance`] past `stream`'s reference to `served`.
    fn advance_past(&mut self, stream: usize, now: Duration, served: FileBlock) {
        if self.at_idle {
            self.use_prefetch(served);
            self.tell_served(now, served);
        }
        let state = &mut self.streams[stream];
        state.next += 1;
        let next = state.next;
        if let Some(ahead) = self
            .program
            .step(stream, next + LOOKAHEAD, &mut self.sight.ids)
        {
            if let Some(disk_block) = self.layout.disk_block(ahead.block) {
                self.cache.warm(disk_block);
                if let Policy::AtIdle(policy) = &self.parts.policy {
                    policy.warm(dense(ahead.block), &self.sight.ids);
                }
            }
        }
        let ready = now + self.config.hit_time;
        let state = &mut self.streams[stream];
        match self.program.step(stream, next, &mut self.sight.ids) {
            Some(step) => {
                state.wake_at = Some(ready + step.think);
                self.events
                    .push((ready + step.think, STREAM, stream as u64));
            }
            None => {
                let ready = ready + self.program.last_think(stream);
                state.finished_at = Some(ready);
                self.active -= 1;
                self.metrics.elapsed = self.metrics.elapsed.max(nanos(ready));
                self.parts.policy.on_stream_end(stream);
            }
        }
    }

    /// Queues the demand block and the prefetch ranges; returns the request carrying the
    /// demand block.
    fn issue(
        &mut self,
        stream: usize,
        now: Duration,
        demand: Option<(FileBlock, DiskBlock)>,
        ranges: &[FetchRange],
    ) -> Option<u64> {
        let demand_in_range = demand.is_some_and(|(b, _)| ranges.iter().any(|r| covers(r, b)));
        let demand_disk = demand.map(|(_, d)| d);
        let mut carrier = None;
        if let (Some((block, disk_block)), false) = (demand, demand_in_range) {
            carrier = Some(self.queue_run(stream, now, &[(block, disk_block)], demand_disk));
        }
        let layout = self.layout;
        for range in ranges {
            let mut run: Vec<(FileBlock, DiskBlock)> = Vec::new();
            for (block, disk_block) in layout.range_blocks(range.file, range.start, range.len) {
                if self.cache.contains(disk_block) {
                    continue;
                }
                let joins = run.last().is_some_and(|&(_, last)| last + 1 == disk_block)
                    && (run.len() as u64) < self.config.max_request_blocks;
                if !joins && !run.is_empty() {
                    self.queue_carrying(stream, now, &run, demand_disk, &mut carrier);
                    run.clear();
                }
                run.push((block, disk_block));
            }
            if !run.is_empty() {
                self.queue_carrying(stream, now, &run, demand_disk, &mut carrier);
            }
        }
        carrier
    }

    /// Queues `run`, noting its request in `carrier` if it holds the demand block.
    fn queue_carrying(
        &mut self,
        stream: usize,
        now: Duration,
        run: &[(FileBlock, DiskBlock)],
        demand: Option<DiskBlock>,
        carrier: &mut Option<u64>,
    ) {
        let holds_demand = run.iter().any(|&(_, d)| Some(d) == demand);
        let id = self.queue_run(stream, now, run, demand);
        if holds_demand {
            *carrier = Some(id);
        }
    }

    /// Gives the blocks of `run` (consecutive on disk) their cache slots and queues one
    /// request; returns its id.
    fn queue_run(
        &mut self,
        stream: usize,
        now: Duration,
        run: &[(FileBlock, DiskBlock)],
        demand: Option<DiskBlock>,
    ) -> u64 {
        let id = self.next_request;
        self.next_request += 1;
        let block_size = self.layout.block_size;
        for &(_, disk_block) in run {
            let prefetched = Some(disk_block) != demand;
            let touch = Touch {
                stream,
                now,
                prefetched,
            };
            self.parts.policy.on_miss(disk_block, touch);
            self.make_room(now, disk_block);
            self.cache
                .insert(disk_block, Entry::in_flight(id, prefetched));
            self.unreferenced += usize::from(prefetched);
            self.parts.policy.on_insert(disk_block, touch);
        }
        let request = Request {
            id,
            addr: run[0].1 * block_size,
            len: run.len() as u64 * block_size,
            arrival: now,
        };
        self.parts.scheduler.push(request.clone(), stream);
        self.queued += 1;
        let carried = demand.filter(|&d| run.iter().any(|&(_, b)| b == d));
        self.in_flight.insert(
            id,
            InFlight {
                issuer: stream,
                request,
                blocks: run[0].1..run[0].1 + run.len() as u64,
                demand: carried,
                waiters: Vec::new(),
            },
        );
        id
    }

    /// Removes the blocks of `ranges` from the cache, where the policy allows it; a block in
    /// flight is removed when it arrives.
    fn drop_blocks(&mut self, ranges: &[FetchRange]) {
        let layout = self.layout;
        for range in ranges {
            for (_, disk_block) in layout.range_blocks(range.file, range.start, range.len) {
                match self.cache.get_mut(disk_block) {
                    Some(entry) if entry.pending().is_some() => entry.drop_when_arrived(),
                    Some(_) => self.remove_dropped(disk_block),
                    None => {}
                }
            }
        }
    }

    fn remove_dropped(&mut self, disk_block: DiskBlock) {
        if self.parts.policy.remove(disk_block) {
            if let Some(entry) = self.cache.remove(disk_block) {
                let unused = entry.unused_prefetch();
                self.metrics.unused_prefetches += u64::from(unused);
                self.unreferenced -= usize::from(unused);
            }
        }
    }

    /// Evicts until one more block fits and the policy owes no eviction; `incoming` is the
    /// block about to enter (after a hit: the block hit, see `Replacement::evict`).
    fn make_room(&mut self, now: Duration, incoming: DiskBlock) {
        while (self.cache.len() >= self.config.cache_blocks || self.parts.policy.owes_eviction())
            && self.evict_one(now, incoming)
        {}
    }

    /// Evicts one block: the victim of the fetch decided last (decisions at idle), or the
    /// policy's choice; false if there is none.
    fn evict_one(&mut self, now: Duration, incoming: DiskBlock) -> bool {
        let victim = match self.at_idle {
            true => self.sight.victim.take().map(u64::from),
            false => self.parts.policy.evict(now, incoming),
        };
        let Some(victim) = victim else {
            return false;
        };
        if let Some(entry) = self.cache.remove(victim) {
            let unused = entry.unused_prefetch();
            self.metrics.unused_prefetches += u64::from(unused);
            self.unreferenced -= usize::from(unused);
            if let (Policy::Pair(pair), false) = (&mut self.parts.policy, self.demand_only) {
                if let Some(file_block) = self.files.file_block(victim) {
                    pair.on_evict(file_block, unused);
                }
            }
        }
        if let Some(next) = self.parts.policy.likely_victim() {
            self.cache.warm(u64::from(next));
        }
        true
    }

    /// Starts requests while the disk has a free actuator and the scheduler offers one.
    fn kick_disk(&mut self, now: Duration) {
        while self.busy_slots < self.slots && (self.queued > 0 || !self.quiet_queue) {
            match self.parts.scheduler.dispatch(self.parts.model.head(), now) {
                Dispatch::Serve(request) => {
                    self.queued -= 1;
                    self.serve(now, request)
                }
                Dispatch::WaitUntil(at) => {
                    let at = at.max(now + Duration::from_nanos(1));
                    if self.timer.is_none_or(|t| at < t || t <= now) {
                        self.timer = Some(at);
                        self.events.push((at, TIMER, 0));
                    }
                    return;
                }
                Dispatch::Idle => return,
            }
        }
    }

    fn serve(&mut self, now: Duration, request: Request) {
        let service = self.parts.model.service(now, &request);
        let seek = self.last_end.map(|end| end.abs_diff(request.addr));
        self.last_end = Some(request.end());
        let blocks = request.len / self.layout.block_size;
        self.metrics.disk.note(blocks, seek, nanos(service));
        if !self.demand_only {
            self.parts.policy.on_served(&request, seek);
        }
        self.busy_slots += 1;
        self.events.push((now + service, COMPLETION, request.id));
    }

    fn timer_fired(&mut self, now: Duration) {
        if self.timer == Some(now) {
            self.timer = None;
        }
        self.kick_disk(now);
    }

    /// Request `id` finished at `now`: its blocks arrive, its waiters resume.
    fn complete(&mut self, now: Duration, id: u64) {
        self.busy_slots -= 1;
        let Some(done) = self.in_flight.remove(&id) else {
            return;
        };
        for block in done.blocks.clone() {
            let Some(entry) = self
                .cache
                .get_mut(block)
                .filter(|e| e.pending() == Some(id))
            else {
                continue;
            };
            entry.arrive();
            if entry.drop_on_arrival() {
                self.remove_dropped(block);
            }
            if self.at_idle {
                self.decide(now, None, |p, ctx| p.on_arrival(block as Block, ctx));
                if done.demand != Some(block) {
                    self.count_arrived_prefetch(now);
                }
            }
        }
        self.parts
            .scheduler
            .completed(&done.request, done.issuer, now);
        if self.at_idle {
            self.resume_at_idle(now);
            return;
        }
        for stream in done.waiters {
            if let Some(since) = self.streams[stream].waiting_since.take() {
                self.metrics.stall += nanos(now - since);
            }
            self.advance(stream, now);
        }
        self.kick_disk(now);
    }

    /// The counters of the run: every block read that was not a demand block was prefetched
    /// (when decisions are made at idle, prefetches are counted as they arrive).
    fn finish(mut self) -> Result<Metrics, SimError> {
        if let Some(error) = self.sight.error.take() {
            return Err(error);
        }
        match self.at_idle {
            false => {
                self.metrics.prefetches = self
                    .metrics
                    .disk
                    .blocks_fetched
                    .saturating_sub(self.metrics.demand_fetches)
            }
            true => self.count_unused_at_end(),
        }
        Ok(self.metrics)
    }
}

/// Decisions at idle: the policy's dense id of the loop's block `block` (the loop's one file's
/// block `b` is dense id `b`).
fn dense(block: FileBlock) -> Block {
    block.block as Block
}

/// Decisions at idle: the loop's block of the policy's dense id `id`.
pub(crate) fn file_block(id: Block) -> FileBlock {
    FileBlock {
        file: 0,
        block: u64::from(id),
    }
}

fn covers(range: &FetchRange, block: FileBlock) -> bool {
    range.file == block.file && block.block >= range.start && block.block - range.start < range.len
}
