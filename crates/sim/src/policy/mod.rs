//! The one policy interface of the simulator, [`Policy`], which the loop
//! ([`crate::disksim::engine`]) drives for every policy, and Cao et al.'s policies, one file
//! each, listed once in the [`catalog`](crate::catalog) (the one table of every policy).
//!
//! A policy answers the questions of Cao et al. section 2.1: *when* to fetch, *which* block,
//! and *which* block to replace. The loop owns the cache, the clock, the program's position,
//! the block numbering and, for offline policies, the future, and calls the policy in one of
//! two ways, which the policy chooses ([`Policy::decides_at_idle`]):
//!
//! - **Decisions at idle** (Cao's model, rule 4; every policy of this module): the loop offers
//!   the idle device and asks for each victim, giving a [`Ctx`] (cache view, time, cursor,
//!   pinned block, future, numbering) and speaking dense block ids:
//!   - [`Policy::on_request`] when the program reaches a reference, before it is served (what
//!     a file system sees on a read: sequential-access detectors such as OBL watch this);
//!   - [`Policy::on_reference`] after each reference is served (recency, next-use keys);
//!   - [`Policy::on_arrival`] when a fetched block becomes available (also for the initial
//!     contents, least recently used first);
//!   - [`Policy::demand_victim`] when the program waits for an absent block and a fetch slot
//!     is free (the disk is idle, in the paper's one-fetch-at-a-time model);
//!   - [`Policy::prefetch`] at every other opportunity with a fetch slot free (the offer on
//!     idle); called again after each fetch it starts while slots remain.
//!   - [`Policy::warm`] a few references ahead of a block's reference: a hint to load the
//!     block's state into the processor's cache (speed only).
//! - **Decisions at each reference** (DULO, Linux read-ahead, TR840's AP, CP and CPEM,
//!   libprefetch's reorder buffer and planner): the loop tells the policy of every hit and
//!   insertion in disk blocks, asks it for a victim when the cache is full
//!   ([`Policy::evict`]), and on every reference for the file ranges to queue
//!   ([`Policy::on_access`]). Those policies are a replacement order and a prefetcher built
//!   apart, joined by one pairing type, [`crate::disksim::Paired`].
//!
//! Why one trait with two halves rather than two traits: the loop drives one object per run,
//! so a run of any policy is built the same way, and each half has defaults that do nothing,
//! so a policy implements only the hooks of its way of deciding.
//!
//! The loop rejects decisions Cao's model forbids (two fetches at once, evicting a block that
//! is not cached, overfilling the cache). Adding a policy: write `policy/NAME.rs` with a
//! `pub const INFO: PolicyInfo`, declare the module below and give it its line in
//! [`crate::catalog::CATALOG`]. A policy that is a replacement order plus a prefetch rule (the
//! LRU and MIN families) is a `compose::Composed` of the two.

use std::time::Duration;

use crate::cache::{Block, Interner};
use crate::disksim::{Access, DiskBlock, FetchRange, FileBlock, Touch};
use crate::future::{Future, Pos};
use crate::time::Timing;
use crate::SimError;
pub use ctx::Ctx;

pub(crate) mod compose;
mod ctx;
pub(crate) mod furthest;
pub(crate) mod lru_list;
pub(crate) mod obl;
pub(crate) mod schedule;

/// A fetch decision: bring `block` in, in place of `victim` (or into a free slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fetch {
    /// The block to fetch; must be absent.
    pub block: Block,
    /// The cached block to discard when the fetch starts; `None` uses a free slot.
    pub victim: Option<Block>,
}

/// A prefetching and caching policy: the one interface the loop drives. Calls are made from
/// one thread, in simulated time order; none may block or fail.
///
/// A minimal policy, demand paging that discards the block that arrived first (FIFO), run
/// outside the registry:
///
/// ```
/// use std::collections::VecDeque;
/// use sim::cache::Block;
/// use sim::policy::Ctx;
/// use sim::policy::{Policy, PolicyInfo};
/// use sim::trace::Reference;
/// use sim::{run_stream, RunSetup};
///
/// #[derive(Default)]
/// struct Fifo(VecDeque<Block>);
///
/// impl Policy for Fifo {
///     fn on_arrival(&mut self, block: Block, _: &mut Ctx<'_>) {
///         self.0.push_back(block);
///     }
///     fn demand_victim(&mut self, _: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
///         (ctx.cache().free_slots() == 0).then(|| self.0.pop_front()).flatten()
///     }
/// }
///
/// const FIFO: PolicyInfo = PolicyInfo {
///     name: "fifo",
///     summary: "demand paging, first in first out",
///     needs_future: false,
///     build: |_| Ok(Box::new(Fifo::default())),
/// };
///
/// // A B C A with two slots: A, B, C miss; C evicts A (first in), so A misses again.
/// let refs = [0, 1, 2, 0].map(|block| Ok(Reference { block, think: None }));
/// let metrics = run_stream(&FIFO, refs.into_iter(), &RunSetup::simplified(2, 4)).unwrap();
/// assert_eq!((metrics.demand_fetches, metrics.elapsed), (4, 4 + 4 * 4));
/// ```
pub trait Policy {
    /// Whether the loop asks it for every fetch when the device is idle (Cao et al.'s model,
    /// rule 4: the hooks taking a [`Ctx`]) rather than for ranges to queue on each reference
    /// ([`Policy::on_access`] and the replacement hooks). The default, `true`, is Cao's.
    fn decides_at_idle(&self) -> bool {
        true
    }

    /// Decisions at idle: the program reaches the reference at position `pos`
    /// (`ctx.cursor()`) to `block`, which may or may not be available; a prefetch offer
    /// follows once it is. Most policies ignore it.
    fn on_request(&mut self, _block: Block, _pos: Pos, _ctx: &mut Ctx<'_>) {}

    /// Decisions at idle: the reference at position `pos` to `block` was served;
    /// `ctx.cursor()` is `pos + 1`.
    fn on_reference(&mut self, _block: Block, _pos: Pos, _ctx: &mut Ctx<'_>) {}

    /// Decisions at idle: `block` became available (a fetch completed, or it is part of the
    /// initial contents).
    fn on_arrival(&mut self, _block: Block, _ctx: &mut Ctx<'_>) {}

    /// Decisions at idle: the program waits for absent `block` and a fetch slot is free: the
    /// cached block to discard, or `None` when the cache has a free slot.
    fn demand_victim(&mut self, _block: Block, _ctx: &mut Ctx<'_>) -> Option<Block> {
        None
    }

    /// Decisions at idle, the offer of the idle device: a fetch slot is free, a prefetch to
    /// start now, if any. Demand-only policies keep the default.
    fn prefetch(&mut self, _ctx: &mut Ctx<'_>) -> Option<Fetch> {
        None
    }

    /// `block` will be referenced a few references from now: a policy may ask the processor
    /// to fetch its per-block state (see `cache::warm`). Speed only; no decision may depend
    /// on it.
    fn warm(&self, _block: Block, _ids: &Interner) {}

    /// The block it would discard next for a demand fetch, if it knows it cheaply (LRU's
    /// least recently used): the loop warms that block's state after an eviction, long
    /// before the next. Speed only; no decision may depend on it.
    fn likely_victim(&self) -> Option<Block> {
        None
    }

    /// Whether it never prefetches and ignores [`Policy::on_request`] (demand paging): the
    /// loop then skips both calls. The default, `false`, is always safe.
    fn demand_only(&self) -> bool {
        false
    }

    /// A cached (or in-flight) block was referenced; told to every policy (a pair's
    /// replacement order keeps recency with it).
    fn on_hit(&mut self, _block: DiskBlock, _how: Touch) {}

    /// A block entered the cache (the loop has made room); told to every policy.
    fn on_insert(&mut self, _block: DiskBlock, _how: Touch) {}

    /// Decisions at each reference: chooses a victim, forgets it and returns it; `None` only
    /// if nothing is cached.
    fn evict(&mut self, _now: Duration) -> Option<DiskBlock> {
        None
    }

    /// Decisions at each reference: forgets a cached block at the loop's request (a drop, see
    /// [`Policy::drops`]); returns false if it cannot remove arbitrary blocks, in which case
    /// the block stays cached.
    fn remove(&mut self, _block: DiskBlock) -> bool {
        false
    }

    /// The cached blocks from the most to the least protected end (the papers' "MRU end on
    /// the left"), for tests and traces; empty if it does not expose its order.
    fn order(&self) -> Vec<DiskBlock> {
        Vec::new()
    }

    /// Decisions at each reference: called on every reference, after the cache lookup and
    /// before any fetch; returns the ranges to fetch besides the demand block, in queue order
    /// (may include the demand block).
    fn on_access(&mut self, _access: &Access) -> Vec<FetchRange> {
        Vec::new()
    }

    /// Called right after [`Policy::on_access`]: blocks no longer needed, to drop from the
    /// cache now (libprefetch's DONTNEED of the previous round), where [`Policy::remove`]
    /// allows it.
    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    /// Decisions at each reference: a block left the cache; `unused` if it was prefetched and
    /// never referenced.
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    /// A stream issued its last reference.
    fn on_stream_end(&mut self, _stream: usize) {}

    /// The disk started serving `request`; `seek_bytes` is its distance from the end of the
    /// previous request (as in [`crate::metrics::Requests`]), `None` for the first.
    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}
}

/// What a policy's constructor gets.
pub struct Build<'a> {
    /// Cache size in blocks.
    pub capacity: usize,
    /// The time model of the run.
    pub timing: &'a Timing,
    /// The whole reference string, for policies registered with `needs_future`.
    pub future: Option<&'a Future>,
    /// The initial cache contents (dense ids), least recently used first.
    pub initial: &'a [Block],
    /// The block numbering of the run (the future's, plus the initial blocks).
    pub ids: &'a Interner,
    /// Fetches in flight at most (1 in the paper's model).
    pub depth: usize,
}

impl<'a> Build<'a> {
    /// The future, or an error naming the policy if the runner did not load it.
    pub fn future(&self, policy: &'static str) -> Result<&'a Future, SimError> {
        self.future
            .ok_or_else(|| SimError::Config(format!("{policy} needs the whole trace in memory")))
    }
}

/// A registered policy.
#[derive(Debug)]
pub struct PolicyInfo {
    /// Name used on the command line.
    pub name: &'static str,
    /// One line: what it does and where it comes from.
    pub summary: &'static str,
    /// Whether it needs the whole reference string (offline policies).
    pub needs_future: bool,
    /// Builds a fresh instance for one run.
    pub build: fn(&Build<'_>) -> Result<Box<dyn Policy>, SimError>,
}

pub mod aggressive;
pub mod clock;
pub mod conservative;
pub mod fifo;
pub mod lru_demand;
pub mod lru_obl;
pub mod lru_sensible;
pub mod lru_throttled;
pub mod opt_demand;
pub mod opt_obl;
pub mod optimal;

/// Cao's policy registered as `name` in the [`catalog`](crate::catalog).
pub fn find(name: &str) -> Result<&'static PolicyInfo, SimError> {
    let entry = crate::catalog::entry(name)?;
    (entry.build)(&[])?.cao_policy().ok_or_else(|| {
        SimError::Config(format!(
            "{name} is a replacement policy and a prefetcher, not a policy of Cao's"
        ))
    })
}
