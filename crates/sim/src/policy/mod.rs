//! Cao et al.'s policies, one file each, and the interface they implement, [`AtIdle`]: the
//! policies that decide every fetch when the device is idle. The loop
//! ([`crate::disksim::engine`]) drives one [`crate::Policy`] per run, either such a policy or
//! a replacement order plus a prefetcher ([`crate::disksim::Paired`]); the
//! [`catalog`](crate::catalog) lists every policy of both kinds once.
//!
//! A policy answers the questions of Cao et al. section 2.1: *when* to fetch, *which* block,
//! and *which* block to replace. The loop owns the cache, the clock, the program's position,
//! the block numbering and, for offline policies, the future, and gives a policy deciding at
//! idle a [`Ctx`] (cache view, time, cursor, pinned block, future, numbering) with each call,
//! speaking dense block ids:
//!
//! - [`AtIdle::on_request`] when the program reaches a reference, before it is served;
//! - [`AtIdle::on_reference`] after each reference is served (recency, next-use keys);
//! - [`AtIdle::on_arrival`] when a fetched block becomes available (also for the initial
//!   contents, least recently used first);
//! - [`AtIdle::demand_victim`] when the program waits for an absent block and a fetch slot is
//!   free (the disk is idle, in the paper's one-fetch-at-a-time model);
//! - [`AtIdle::prefetch`] at every other opportunity with a fetch slot free (the offer on
//!   idle); called again after each fetch it starts while slots remain;
//! - [`AtIdle::warm`] and [`AtIdle::likely_victim`]: speed hints, no decision.
//!
//! Why a trait of its own rather than hooks with do-nothing defaults on one trait: every
//! method is required, so the compiler tells the next engineer which hooks a policy must
//! answer, and a policy of the other kind cannot be handed to this loop by mistake.
//!
//! The loop rejects decisions Cao's model forbids (two fetches at once, evicting a block that
//! is not cached, overfilling the cache). Adding a policy: write `policy/NAME.rs` with a
//! `pub const INFO: PolicyInfo` and give it its line in the catalog, `catalog/lines.rs`
//! (`mod policy::NAME (...)`), which also declares the module here. A policy that is a replacement order plus a prefetch rule (the
//! LRU and MIN families) is a `compose::Composed` of the two.

use crate::cache::{Block, Interner};
use crate::catalog::lines::files;
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

/// A policy of Cao et al.'s model, deciding every fetch when the device is idle (rule 4). The
/// loop ([`crate::disksim::engine`]) calls it from one thread, in simulated time order; no call
/// may block or fail. Every method is required: a policy states what it does at each hook,
/// even when that is nothing, so a missing hook is a compile error.
///
/// What the loop guarantees: blocks are the run's dense ids; `ctx` shows the loop's cache at
/// the call (resident blocks have arrived, absent ones are neither cached nor in flight); the
/// reference at `ctx.cursor()` is the program's next; a fetch slot is free whenever
/// [`AtIdle::demand_victim`] or [`AtIdle::prefetch`] is called. What the loop checks: a fetch
/// names an absent block, its victim is resident and not the pinned block, and a fetch without
/// a victim finds a free slot; the first violation ends the run with an error naming the policy.
///
/// A minimal policy, demand paging that discards the block that arrived first (FIFO), run
/// outside the registry:
///
/// ```
/// use std::collections::VecDeque;
/// use sim::cache::{Block, Interner};
/// use sim::future::Pos;
/// use sim::policy::{AtIdle, Ctx, Fetch, PolicyInfo};
/// use sim::trace::Reference;
/// use sim::{run_stream, RunSetup};
///
/// #[derive(Default)]
/// struct Fifo(VecDeque<Block>);
///
/// impl AtIdle for Fifo {
///     fn on_request(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}
///     fn on_reference(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}
///     fn on_arrival(&mut self, block: Block, _: &mut Ctx<'_>) {
///         self.0.push_back(block);
///     }
///     fn demand_victim(&mut self, _: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
///         (ctx.cache().free_slots() == 0).then(|| self.0.pop_front()).flatten()
///     }
///     fn prefetch(&mut self, _: &mut Ctx<'_>) -> Option<Fetch> {
///         None
///     }
///     fn demand_only(&self) -> bool {
///         true
///     }
///     fn warm(&self, _: Block, _: &Interner) {}
///     fn likely_victim(&self) -> Option<Block> {
///         self.0.front().copied()
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
pub trait AtIdle {
    /// The program reaches the reference at position `pos` (`ctx.cursor()`) to `block`, which
    /// may or may not be available; a prefetch offer follows once it is (what a file system
    /// sees on a read: sequential detectors such as OBL watch this). Not called when
    /// [`AtIdle::demand_only`] is true.
    fn on_request(&mut self, block: Block, pos: Pos, ctx: &mut Ctx<'_>);

    /// The reference at position `pos` to `block` was served; `ctx.cursor()` is `pos + 1`.
    /// Recency and next-use keys move here.
    fn on_reference(&mut self, block: Block, pos: Pos, ctx: &mut Ctx<'_>);

    /// `block` became available: a fetch completed, or it is part of the initial contents
    /// (told least recently used first, before the first reference). It MUST now count the
    /// block as resident in its own order.
    fn on_arrival(&mut self, block: Block, ctx: &mut Ctx<'_>);

    /// The program waits for absent `block` and a fetch slot is free: it MUST return a
    /// resident block to discard when the cache is full, and `None` only when it has a free
    /// slot. It forgets the victim it returns.
    fn demand_victim(&mut self, block: Block, ctx: &mut Ctx<'_>) -> Option<Block>;

    /// The offer of the idle device (a fetch slot is free): a prefetch to start now, or `None`
    /// to decline; called again after each fetch it starts while slots remain. The fetch's
    /// victim, if any, is forgotten by the policy as it returns it.
    fn prefetch(&mut self, ctx: &mut Ctx<'_>) -> Option<Fetch>;

    /// Whether it never prefetches and ignores [`AtIdle::on_request`] (demand paging): the loop
    /// then makes neither call. `false` is always correct, `true` only saves the calls.
    fn demand_only(&self) -> bool;

    /// `block` will be referenced a few references from now: a policy may ask the processor to
    /// fetch its per-block state (see `cache::warm`). Speed only: no decision may depend on
    /// it; doing nothing is correct.
    fn warm(&self, block: Block, ids: &Interner);

    /// The block it would discard next for a demand fetch, if it knows it cheaply (LRU's least
    /// recently used): the loop warms that block's state after an eviction, long before the
    /// next. Speed only: no decision may depend on it; `None` is correct.
    fn likely_victim(&self) -> Option<Block>;
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
    pub build: fn(&Build<'_>) -> Result<Box<dyn AtIdle>, SimError>,
}

// Every policy's file, declared from its line in the catalog (`catalog/lines.rs`).
crate::catalog::lines::lines!(files, policy);
