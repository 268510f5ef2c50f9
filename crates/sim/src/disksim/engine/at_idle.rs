//! The loop's decisions at idle (Cao et al.'s model, rule 4): how a stream deciding at idle
//! settles its reference (serve it, fetch it on demand when the device is idle, or wait), how
//! the idle device is offered to the policy, and the checks of each fetch against Cao's rules.
//! The loop itself, and the contract, are in [`super`].

use std::sync::atomic::Ordering;
use std::time::Duration;

use disk::Request;

use super::{dense, file_block, Engine, Program};
use crate::cache::{Block, CacheView};
use crate::disksim::paired::Policy;
use crate::disksim::replace::Touch;
use crate::disksim::state::{Entry, LoopCache};
use crate::disksim::workload::{DiskBlock, FileBlock, Step};
use crate::metrics::nanos;
use crate::policy::{AtIdle, Ctx, Fetch};
use crate::time::Time;
use crate::SimError;

impl<P: Program> Engine<'_, '_, '_, P> {
    /// Calls the policy deciding at idle with what it sees at `now`: the loop's cache, the
    /// future, the numbering, the cursor, the block `pinned` (which must not be evicted). A
    /// pair is asked nothing: the answer is `R`'s default (no victim, no fetch).
    pub(super) fn decide<R: Default>(
        &mut self,
        now: Duration,
        pinned: Option<Block>,
        call: impl FnOnce(&mut dyn AtIdle, &mut Ctx<'_>) -> R,
    ) -> R {
        let Policy::AtIdle(policy) = &mut self.parts.policy else {
            return R::default();
        };
        let cache = LoopCache::new(&self.cache, self.config.cache_blocks, self.unreferenced);
        let sight = &mut self.sight;
        let mut ctx = Ctx::new(
            CacheView::new(&cache),
            sight.oracle.as_ref(),
            &mut sight.ids,
            (now.as_nanos() as Time, sight.cursor),
            pinned,
        );
        call(&mut **policy, &mut ctx)
    }

    /// Decisions at idle: tells the policy that the reference at the cursor, to `served`, was
    /// served at `now`, the future moving past it.
    pub(super) fn tell_served(&mut self, now: Duration, served: FileBlock) {
        let pos = self.sight.cursor;
        if let Some(oracle) = self.sight.oracle.as_mut() {
            oracle.advance(pos);
        }
        self.sight.cursor += 1;
        self.decide(now, None, |p, ctx| p.on_reference(dense(served), pos, ctx));
    }

    /// Decisions at idle: the reference to `block` was served, so a prefetched block counts
    /// as used (as in Cao's model, after the offers made while it was awaited).
    pub(super) fn use_prefetch(&mut self, block: FileBlock) {
        if self.unreferenced == 0 {
            return;
        }
        let entry = self
            .layout
            .disk_block(block)
            .and_then(|disk_block| self.cache.get_mut(disk_block));
        if let Some(entry) = entry.filter(|e| e.unused_prefetch()) {
            entry.referenced();
            self.unreferenced -= 1;
        }
    }

    /// Decisions at idle (Cao's model): prefetched blocks still cached unreferenced at the end
    /// were unused too, except those of cancelled prefetches (every prefetch that arrives
    /// once the program has ended is cancelled, and none is referenced or evicted after it).
    pub(super) fn count_unused_at_end(&mut self) {
        let still_cached = self.unreferenced as u64;
        self.metrics.unused_prefetches +=
            still_cached.saturating_sub(self.metrics.cancelled_prefetches);
    }

    /// Whether the device can start another request now.
    pub(super) fn device_idle(&self) -> bool {
        self.busy_slots < self.slots
    }

    /// Decisions at idle (Cao's model, for the reference `stream` is at, at `now`): serve it
    /// if its block is available, after offering the idle device to the prefetcher with the
    /// block pinned; fetch it on demand if it is absent and the device idle; otherwise (in
    /// flight, the idle device offered first; or absent and the device busy) wait for the
    /// next completion and decide again.
    pub(super) fn settle(&mut self, stream: usize, now: Duration) {
        let next = self.streams[stream].next;
        let Some(Step { block, .. }) = self.program.step(stream, next, &mut self.sight.ids) else {
            return;
        };
        if let Some(disk_block) = self.layout.disk_block(block) {
            self.settle_on(stream, now, (block, disk_block));
        }
    }

    /// [`Engine::settle`] for `stream`'s reference to `block` (at disk block `disk_block`).
    pub(super) fn settle_on(
        &mut self,
        stream: usize,
        mut now: Duration,
        (block, disk_block): (FileBlock, DiskBlock),
    ) {
        self.streams[stream].blocked = false;
        loop {
            match self.cache.get(disk_block).map(|e| e.pending()) {
                Some(None) => {
                    if let Some(since) = self.streams[stream].waiting_since.take() {
                        self.metrics.stall += nanos(now - since);
                    }
                    self.offer_at_idle(stream, now, Some(dense(block)));
                    self.advance_past(stream, now, block);
                    return;
                }
                Some(Some(_)) => {
                    if self.device_idle() {
                        self.offer_at_idle(stream, now, None);
                    }
                    break;
                }
                None if self.device_idle() => {
                    let demand = dense(block);
                    let victim = self.decide(now, None, |p, ctx| p.demand_victim(demand, ctx));
                    let fetch = Fetch {
                        block: demand,
                        victim,
                    };
                    self.start_fetch(fetch, None);
                    if self.alone() {
                        self.streams[stream].waiting_since.get_or_insert(now);
                        now = self.fetch_alone(stream, now, (block, disk_block));
                        continue;
                    }
                    self.queue_run(stream, now, &[(block, disk_block)], Some(disk_block));
                    self.kick_disk(now);
                }
                None => break,
            }
        }
        let state = &mut self.streams[stream];
        state.waiting_since.get_or_insert(now);
        state.blocked = true;
    }

    /// Whether a demand fetch starting now would be the only thing to happen until it
    /// completes: one stream, a device serving one request at a time through a scheduler
    /// that serves a lone request at once, nothing in flight or due (no timer, no event, no
    /// time limit). The request is then served the moment it is queued and nothing else
    /// happens before it completes, so a scheduler's choice never matters. (A pair checks
    /// besides that its prefetcher named no range for the reference.)
    pub(super) fn alone(&self) -> bool {
        self.streams.len() == 1
            && self.in_flight.is_empty()
            && self.events.is_empty()
            && self.timer.is_none()
            && self.config.time_limit.is_none()
            && self.slots == 1
            && self.parts.scheduler.serves_at_once()
    }

    /// Demand-fetches `block` at `now` when the loop is [`Engine::alone`] (either kind of
    /// policy): exactly what queueing the one-block request, serving it and completing it would
    /// do, with no request queued, kept in flight or waited for through the event queue;
    /// returns when it arrived.
    pub(super) fn fetch_alone(
        &mut self,
        stream: usize,
        now: Duration,
        (block, disk_block): (FileBlock, DiskBlock),
    ) -> Duration {
        let id = self.next_request;
        self.next_request += 1;
        let touch = Touch {
            stream,
            now,
            prefetched: false,
        };
        self.parts.policy.on_miss(disk_block, touch);
        self.make_room(now, disk_block);
        self.cache.insert(disk_block, Entry::arrived());
        self.parts.policy.on_insert(disk_block, touch);
        let block_size = self.layout.block_size;
        let request = Request {
            id,
            addr: disk_block * block_size,
            len: block_size,
            arrival: now,
        };
        let service = self.parts.model.service(now, &request);
        let seek = self.last_end.map(|end| end.abs_diff(request.addr));
        self.last_end = Some(request.end());
        self.metrics.disk.note(1, seek, nanos(service));
        if !self.demand_only {
            self.parts.policy.on_served(&request, seek);
        }
        let done = now + service;
        if self.at_idle {
            self.decide(done, None, |p, ctx| p.on_arrival(dense(block), ctx));
        }
        self.parts.scheduler.completed(&request, stream, done);
        done
    }

    /// Offers the idle device to the policy until it declines or the device is busy
    /// (`pinned` must not be evicted).
    pub(super) fn offer_at_idle(&mut self, stream: usize, now: Duration, pinned: Option<Block>) {
        while !self.demand_only && self.device_idle() {
            let Some(fetch) = self.decide(now, pinned, |p, ctx| p.prefetch(ctx)) else {
                return;
            };
            let block = file_block(fetch.block);
            let Some(disk_block) = self.layout.disk_block(block) else {
                return;
            };
            if !self.start_fetch(fetch, pinned) || self.cache.contains(disk_block) {
                return;
            }
            self.queue_run(stream, now, &[(block, disk_block)], None);
            self.kick_disk(now);
        }
    }

    /// Decisions at idle: accepts `fetch` if Cao's model allows it (its victim evicted next,
    /// its block's trace number left for the device), or notes the policy's error.
    pub(super) fn start_fetch(&mut self, fetch: Fetch, pinned: Option<Block>) -> bool {
        let cache = LoopCache::new(&self.cache, self.config.cache_blocks, self.unreferenced);
        if let Err(message) = check(fetch, CacheView::new(&cache), pinned) {
            let policy = self.sight.name;
            self.sight
                .error
                .get_or_insert(SimError::Policy { policy, message });
            return false;
        }
        if let Some(started) = &self.sight.started {
            started.store(self.sight.ids.raw(fetch.block), Ordering::Relaxed);
        }
        self.sight.victim = fetch.victim;
        true
    }

    /// Decisions at idle, a request completed at `now`: the streams waiting decide again, and
    /// a stream in the middle of its compute time (or of its last) offers the idle device to
    /// the prefetcher.
    pub(super) fn resume_at_idle(&mut self, now: Duration) {
        for stream in 0..self.streams.len() {
            let state = &self.streams[stream];
            let computing = state.wake_at.is_some_and(|at| at > now)
                || state.finished_at.is_some_and(|at| at > now);
            if state.blocked {
                self.settle(stream, now);
            } else if computing {
                self.offer_at_idle(stream, now, None);
            }
        }
        self.kick_disk(now);
    }

    /// A prefetched block arrived at `now`: counted as fetched unless the program has ended
    /// (a prefetch completing at or after the end is cancelled, as in Cao's model).
    pub(super) fn count_arrived_prefetch(&mut self, now: Duration) {
        let ended = self.active == 0
            && self
                .streams
                .iter()
                .filter_map(|s| s.finished_at)
                .all(|end| end <= now);
        match ended {
            true => self.metrics.cancelled_prefetches += 1,
            false => self.metrics.prefetches += 1,
        }
    }
}

/// The rules of Cao's model for a fetch into `cache` (the loop asks only with a fetch slot
/// free).
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
