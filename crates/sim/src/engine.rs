//! The simulation loop: moves the program's cursor along the reference string, runs at most
//! `depth` fetches at a time (one in the paper's model), and asks the policy for a decision at
//! every opportunity.
//!
//! Cao et al. section 2.1 (the model) and rule 4 of section 2.2 (first opportunity): a new
//! opportunity to fetch arises when a fetch completes (4a) or when the cursor moves, since the
//! block just referenced may now be the best victim (4b). So whenever a fetch slot is free (the
//! disk is idle, in the paper's model) the engine offers the policy a prefetch, at each
//! reference boundary and at each completion:
//!
//! ```text
//! for each reference r_i (cursor i, time now):
//!   complete the fetches done by now; tell the policy r_i is requested
//!   while r_i is not available:            stall
//!     r_i absent and a fetch slot free  -> demand fetch of r_i, victim chosen by the policy
//!     otherwise                         -> (offer free slots,) wait for the first completion
//!   offer free fetch slots (r_i pinned: it must not be the victim)
//!   serve r_i for its compute time; fetches completing meanwhile -> offer again
//! ```
//!
//! Worked example (Figures 1 and 2, string ABCA, cache {A, B}, F = 4): demand paging with MIN
//! stalls 4 at C and takes 8 units; prefetching at every opportunity starts C at time 1
//! (evicting A), stalls 3 at C, starts A at time 5 (evicting B), stalls 3 at A: 10 units.
//!
//! On a trace in memory the engine also looks a few references ahead and has the
//! processor load that block's state (cache slot, and the policy's via [`Policy::warm`]), so
//! that a trace over a million blocks does not wait on memory at every reference.
//!
//! Deviations: in the realistic model a fetch can complete in the middle of a reference's
//! compute time; the next decision is then made at that instant with the cursor already past
//! the reference (its block was consumed at the start of the reference). A prefetch still in
//! flight when the program ends is not counted as a fetch (`cancelled_prefetches`), so the
//! disk time of counted fetches never exceeds the elapsed time.

use crate::cache::{Block, Cache, CacheView, FetchKind, InFlight, Interner, Residency};
use crate::future::{Future, Oracle, Pos};
use crate::metrics::Metrics;
use crate::policy::{Fetch, Policy};
use crate::refstring::RefString;
use crate::time::{FetchDevice, ReferenceTime, Time, Timing};
use crate::trace::Reference;
use crate::{SimError, TraceError};

/// What a policy sees when it is asked for a decision.
pub struct Ctx<'a> {
    cache: CacheView<'a>,
    oracle: Option<&'a Oracle<'a>>,
    ids: &'a mut Interner,
    now: Time,
    cursor: Pos,
    pinned: Option<Block>,
}

impl<'a> Ctx<'a> {
    /// What a policy sees of a run on another loop (the disk-timed engine's adapter).
    pub(crate) fn new(
        cache: CacheView<'a>,
        oracle: Option<&'a Oracle<'a>>,
        ids: &'a mut Interner,
        (now, cursor): (Time, Pos),
        pinned: Option<Block>,
    ) -> Self {
        Ctx {
            cache,
            oracle,
            ids,
            now,
            cursor,
            pinned,
        }
    }

    /// The cache: where each block is, its free slots, its unreferenced prefetches.
    pub fn cache(&self) -> CacheView<'a> {
        self.cache
    }

    /// The current time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Position of the next reference to be served (references before it are done).
    pub fn cursor(&self) -> Pos {
        self.cursor
    }

    /// The block the program is about to reference, which a prefetch must not evict; `None`
    /// when the decision is made in the middle of a reference.
    pub fn pinned(&self) -> Option<Block> {
        self.pinned
    }

    /// The future, for policies registered with `needs_future`.
    ///
    /// # Panics
    /// If the policy was registered without `needs_future` (a programming error: the runner
    /// loads the future for every policy that declares it).
    pub fn oracle(&self) -> &Oracle<'_> {
        self.oracle
            .expect("policy uses the future but is registered without needs_future")
    }

    /// The dense id of trace block number `raw` (given a new id if never seen).
    pub fn block_of(&mut self, raw: u64) -> Block {
        self.ids.intern(raw)
    }

    /// The trace block number of `block`.
    pub fn raw_of(&self, block: Block) -> u64 {
        self.ids.raw(block)
    }
}

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

/// A stream of references as dense blocks with their compute time.
pub(crate) trait Source {
    /// The next reference, interning its block in `ids`.
    fn next(&mut self, ids: &mut Interner) -> Option<Result<(Block, Option<Time>), TraceError>>;

    /// The block referenced [`LOOKAHEAD`] references after the one `next` returned last, when
    /// the source knows it.
    fn ahead(&self) -> Option<Block> {
        None
    }
}

/// How many references ahead the engine warms the processor's cache for a block's state
/// (traces in memory only): far enough for memory to answer, near enough to stay cached.
const LOOKAHEAD: Pos = 8;

/// References read from a whole trace in memory, already dense.
pub(crate) struct StringSource<'s> {
    string: &'s RefString,
    pos: Pos,
}

impl<'s> StringSource<'s> {
    pub(crate) fn new(string: &'s RefString) -> Self {
        StringSource { string, pos: 0 }
    }
}

impl Source for StringSource<'_> {
    fn next(&mut self, _ids: &mut Interner) -> Option<Result<(Block, Option<Time>), TraceError>> {
        if self.pos as usize >= self.string.len() {
            return None;
        }
        let pos = self.pos;
        self.pos += 1;
        Some(Ok((self.string.block_at(pos), self.string.think(pos))))
    }

    fn ahead(&self) -> Option<Block> {
        let pos = self.pos.checked_add(LOOKAHEAD - 1)?;
        ((pos as usize) < self.string.len()).then(|| self.string.block_at(pos))
    }
}

/// References streamed from a trace reader.
pub(crate) struct StreamSource<I>(pub(crate) I);

impl<I: Iterator<Item = Result<Reference, TraceError>>> Source for StreamSource<I> {
    fn next(&mut self, ids: &mut Interner) -> Option<Result<(Block, Option<Time>), TraceError>> {
        Some(self.0.next()?.map(|r| (ids.intern(r.block), r.think)))
    }
}

/// One run in progress.
pub(crate) struct Engine<'f> {
    name: &'static str,
    cache: Cache,
    ids: Interner,
    oracle: Option<Oracle<'f>>,
    device: FetchDevice,
    reference_time: ReferenceTime,
    now: Time,
    cursor: Pos,
    metrics: Metrics,
    /// Most distinct blocks the run may meet: what the memory available holds (and block ids
    /// can number). A streamed trace with more is refused when it gets there.
    most_blocks: usize,
}

impl<'f> Engine<'f> {
    /// A run of policy `name` with the given block ids and, for offline policies, the future.
    pub(crate) fn new(
        name: &'static str,
        setup: &RunSetup,
        ids: Interner,
        future: Option<&'f Future>,
    ) -> Self {
        Engine {
            name,
            cache: Cache::new(setup.capacity, setup.depth),
            ids,
            oracle: future.map(Oracle::new),
            device: setup.timing.device(),
            reference_time: setup.timing.reference.clone(),
            now: 0,
            cursor: 0,
            metrics: Metrics::default(),
            most_blocks: crate::memory::most_blocks(),
        }
    }

    /// Runs `policy` over `source` starting with `initial` cached; returns the counters.
    pub(crate) fn run(
        mut self,
        policy: &mut dyn Policy,
        source: &mut impl Source,
        initial: &[Block],
    ) -> Result<Metrics, SimError> {
        for &block in initial {
            self.cache.insert_initial(block);
            policy.on_arrival(block, &mut self.ctx(None));
        }
        while let Some(next) = source.next(&mut self.ids) {
            let (block, think) = next?;
            if let Some(ahead) = source.ahead() {
                self.cache.warm(ahead);
                policy.warm(ahead, &self.ids);
            }
            if self.ids.len() > self.most_blocks {
                return Err(SimError::TooLarge(format!(
                    "the trace references more than {} distinct blocks, more than the memory \
                     available ({}) can simulate; simulate a part of it or use a larger --block-size",
                    self.most_blocks,
                    crate::memory::human(crate::memory::available())
                )));
            }
            let compute = match self.reference_time {
                ReferenceTime::Uniform(t) => t,
                ReferenceTime::FromTrace => think.ok_or_else(|| {
                    SimError::Config("the realistic model needs a trace with timestamps".into())
                })?,
            };
            self.reference(policy, block, compute)?;
        }
        Ok(self.finish())
    }

    fn ctx(&mut self, pinned: Option<Block>) -> Ctx<'_> {
        Ctx {
            cache: CacheView::new(&self.cache),
            oracle: self.oracle.as_ref(),
            ids: &mut self.ids,
            now: self.now,
            cursor: self.cursor,
            pinned,
        }
    }

    /// Serves the reference at the cursor: stalls until its block is available, then spends
    /// its compute time.
    fn reference(
        &mut self,
        policy: &mut dyn Policy,
        block: Block,
        compute: Time,
    ) -> Result<(), SimError> {
        while self
            .cache
            .next_completion()
            .is_some_and(|f| f.done_at <= self.now)
        {
            self.complete(policy);
        }
        let pos = self.cursor;
        policy.on_request(block, pos, &mut self.ctx(None));
        let reached = self.now;
        match self.cache.residency(block) {
            Residency::Resident => self.metrics.hits += 1,
            Residency::InFlight => {
                self.metrics.misses += 1;
                self.metrics.inflight_hits += 1;
            }
            Residency::Absent => self.metrics.misses += 1,
        }
        loop {
            match self.cache.residency(block) {
                Residency::Resident => break,
                Residency::Absent if self.cache.can_start() => self.demand(policy, block)?,
                Residency::InFlight if self.cache.can_start() => {
                    self.offer(policy, None)?;
                    self.wait_for_fetch(policy);
                }
                _ => self.wait_for_fetch(policy),
            }
        }
        self.metrics.stall += self.now - reached;
        self.offer(policy, Some(block))?;
        self.serve(policy, block, compute)
    }

    fn serve(
        &mut self,
        policy: &mut dyn Policy,
        block: Block,
        compute: Time,
    ) -> Result<(), SimError> {
        self.cache.referenced(block);
        let pos = self.cursor;
        if let Some(oracle) = self.oracle.as_mut() {
            oracle.advance(pos);
        }
        self.cursor += 1;
        self.metrics.references += 1;
        policy.on_reference(block, pos, &mut self.ctx(None));
        let end = self.now.saturating_add(compute);
        while let Some(flight) = self.cache.next_completion().filter(|f| f.done_at < end) {
            self.now = flight.done_at;
            self.complete(policy);
            self.offer(policy, None)?;
        }
        self.now = end;
        Ok(())
    }

    /// Stalls until the first fetch in flight completes.
    fn wait_for_fetch(&mut self, policy: &mut dyn Policy) {
        if let Some(flight) = self.cache.next_completion() {
            self.now = self.now.max(flight.done_at);
            self.complete(policy);
        }
    }

    fn complete(&mut self, policy: &mut dyn Policy) {
        if let Some(flight) = self.cache.complete() {
            match flight.kind {
                FetchKind::Demand => self.metrics.demand_fetches += 1,
                FetchKind::Prefetch => self.metrics.prefetches += 1,
            }
            policy.on_arrival(flight.block, &mut self.ctx(None));
        }
    }

    fn demand(&mut self, policy: &mut dyn Policy, block: Block) -> Result<(), SimError> {
        let victim = policy.demand_victim(block, &mut self.ctx(None));
        self.start(Fetch { block, victim }, FetchKind::Demand, None)
    }

    /// Offers every free fetch slot to the policy (rule 4: first opportunity), until it
    /// declines or the slots are taken.
    fn offer(&mut self, policy: &mut dyn Policy, pinned: Option<Block>) -> Result<(), SimError> {
        while self.cache.can_start() {
            match policy.prefetch(&mut self.ctx(pinned)) {
                Some(fetch) => self.start(fetch, FetchKind::Prefetch, pinned)?,
                None => break,
            }
        }
        Ok(())
    }

    fn start(
        &mut self,
        fetch: Fetch,
        kind: FetchKind,
        pinned: Option<Block>,
    ) -> Result<(), SimError> {
        self.check(fetch, pinned)?;
        let raw = match self.device.addressed() {
            true => self.ids.raw(fetch.block),
            false => 0,
        };
        let duration = self.device.fetch_time(raw, self.now).max(1);
        let flight = InFlight {
            block: fetch.block,
            kind,
            started: self.now,
            done_at: self.now.saturating_add(duration),
        };
        if self.cache.start(fetch.block, fetch.victim, flight) {
            self.metrics.unused_prefetches += 1;
        }
        Ok(())
    }

    /// Rejects decisions the model forbids.
    fn check(&self, fetch: Fetch, pinned: Option<Block>) -> Result<(), SimError> {
        let broken = |message: String| {
            Err(SimError::Policy {
                policy: self.name,
                message,
            })
        };
        if !self.cache.can_start() {
            return broken("started a fetch with every fetch slot in flight".into());
        }
        if !self.cache.is_absent(fetch.block) {
            return broken(format!(
                "fetched block {} which is already cached",
                fetch.block
            ));
        }
        match fetch.victim {
            None if self.cache.free_slots() == 0 => {
                broken("fetched without a victim into a full cache".into())
            }
            Some(v) if !self.cache.is_resident(v) => {
                broken(format!("evicted block {v} which is not cached"))
            }
            Some(v) if Some(v) == pinned => {
                broken(format!("evicted block {v} that is about to be referenced"))
            }
            _ => Ok(()),
        }
    }

    fn finish(mut self) -> Metrics {
        let mut unused = self.cache.unreferenced_prefetches() as u64;
        for flight in self.cache.in_flight() {
            self.metrics.cancelled_prefetches += 1;
            unused -= u64::from(flight.kind == FetchKind::Prefetch);
        }
        self.metrics.unused_prefetches += unused;
        self.metrics.elapsed = self.now;
        self.metrics
    }
}
