//! The optimal prefetching and caching schedule, by exhaustive search: the reference point for
//! the bounds of Cao et al. section 3 (aggressive within min(1 + F/k, 2), conservative within 2).
//!
//! Section 3.2 notes that the optimum "is computable in a straightforward manner via dynamic
//! programming" but infeasible for large k and n. We search the simplified model (unit
//! references, constant integer F) breadth-first in time over states
//! `(cursor, cached blocks, fetch in flight and its remaining time)`. The dynamics do not depend
//! on the absolute time, so the first time a state is reached is the best, and the first state
//! with the cursor past the end gives the minimum elapsed time. At each integer time with the
//! disk idle, the choices are: no fetch, or fetch any absent block still to be referenced, in
//! place of any cached block or into a free slot. The schedule found is then replayed through
//! the engine, which checks it against the model and reports the metrics.
//!
//! Pruning, each safe by an exchange argument: when the program waits for an absent block and
//! the disk is idle, that block is fetched first (fetching another first only delays it); no
//! block is discarded while a slot is free; blocks never referenced again are not fetched; the
//! block about to be referenced is not discarded.
//!
//! Deviations: small instances only (at most 24 distinct blocks and 2,000,000 states); larger
//! ones are refused with an error rather than searched for hours.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::cache::{Block, Interner};
use crate::future::{Future, Pos};
use crate::policy::Ctx;
use crate::policy::{AtIdle, Build, Fetch, PolicyInfo};
use crate::time::Time;
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "optimal",
    summary: "exact optimum by breadth-first search (small traces, simplified model only)",
    needs_future: true,
    build,
};

const MAX_BLOCKS: usize = 24;
const MAX_STATES: usize = 2_000_000;

fn build(b: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    let future = b.future(INFO.name)?;
    if b.depth != 1 {
        return Err(SimError::Config(
            "optimal searches one fetch at a time (depth 1)".into(),
        ));
    }
    let fetch = b.timing.unit_constant().ok_or_else(|| {
        SimError::Config("optimal needs the simplified model (unit references, constant F)".into())
    })?;
    let plan = search(future, b.capacity, b.initial, b.ids.len(), fetch)?;
    Ok(Box::new(Replay {
        steps: plan.steps,
        next: 0,
    }))
}

/// The result of the search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The minimum elapsed time.
    pub elapsed: Time,
    steps: Vec<(Time, Fetch)>,
}

/// A search state: the cursor, the cached blocks, and the fetch in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct State {
    cursor: Pos,
    cached: u32,
    flight: Option<(Block, Time)>,
}

/// The optimal schedule for `future` with a cache of `capacity` blocks holding `initial`, with
/// `blocks` block ids in use and fetch time `fetch` (simplified model).
pub fn search(
    future: &Future,
    capacity: usize,
    initial: &[Block],
    blocks: usize,
    fetch: Time,
) -> Result<Plan, SimError> {
    if blocks > MAX_BLOCKS {
        return Err(SimError::Config(format!(
            "optimal: {blocks} distinct blocks, at most {MAX_BLOCKS}"
        )));
    }
    Search::new(future, capacity, fetch).run(initial)
}

struct Search<'f> {
    future: &'f Future,
    capacity: usize,
    fetch: Time,
    /// For each position, the blocks referenced at or after it.
    ahead: Vec<u32>,
    /// Every state reached: its parent and the fetch that led to it.
    seen: FxHashMap<State, (State, Option<Fetch>)>,
}

impl<'f> Search<'f> {
    fn new(future: &'f Future, capacity: usize, fetch: Time) -> Self {
        let mut ahead = vec![0u32; future.len() + 1];
        for pos in (0..future.len()).rev() {
            ahead[pos] = ahead[pos + 1] | 1 << future.block_at(pos as Pos);
        }
        Search {
            future,
            capacity,
            fetch,
            ahead,
            seen: FxHashMap::default(),
        }
    }

    fn run(mut self, initial: &[Block]) -> Result<Plan, SimError> {
        let start = State {
            cursor: 0,
            cached: initial.iter().fold(0, |m, &b| m | 1 << b),
            flight: None,
        };
        if self.future.is_empty() {
            return Ok(Plan {
                elapsed: 0,
                steps: Vec::new(),
            });
        }
        self.seen.insert(start, (start, None));
        let mut layer = VecDeque::from([start]);
        let mut time: Time = 0;
        loop {
            let mut next_layer = VecDeque::new();
            for state in layer {
                for (fetch, after) in self.moves(state) {
                    if self.seen.contains_key(&after) {
                        continue;
                    }
                    self.seen.insert(after, (state, fetch));
                    if after.cursor as usize == self.future.len() {
                        return Ok(self.plan(after, time + 1));
                    }
                    next_layer.push_back(after);
                }
            }
            if self.seen.len() > MAX_STATES {
                return Err(SimError::Config(format!(
                    "optimal: more than {MAX_STATES} states"
                )));
            }
            layer = next_layer;
            time += 1;
        }
    }

    /// Every (decision, state one time unit later) from `state`.
    fn moves(&self, mut state: State) -> Vec<(Option<Fetch>, State)> {
        if let Some((block, 0)) = state.flight {
            state.cached |= 1 << block;
            state.flight = None;
        }
        let wanted = self.future.block_at(state.cursor);
        let decisions = match state.flight {
            Some(_) => vec![None],
            None if state.cached & 1 << wanted == 0 => self.fetches(state, 1 << wanted, wanted),
            None => {
                let mut all = vec![None];
                let candidates = self.ahead[state.cursor as usize] & !state.cached;
                all.extend(self.fetches(state, candidates, wanted));
                all
            }
        };
        decisions
            .into_iter()
            .map(|fetch| (fetch, self.advance(state, fetch)))
            .collect()
    }

    /// Every fetch of a block in `candidates`, with every allowed victim.
    fn fetches(&self, state: State, candidates: u32, pinned: Block) -> Vec<Option<Fetch>> {
        let free = (state.cached.count_ones() as usize) < self.capacity;
        let victims = state.cached & !(1 << pinned);
        let mut out = Vec::new();
        for block in bits(candidates) {
            if free {
                out.push(Some(Fetch {
                    block,
                    victim: None,
                }));
            } else {
                out.extend(bits(victims).map(|v| {
                    Some(Fetch {
                        block,
                        victim: Some(v),
                    })
                }));
            }
        }
        out
    }

    /// Applies `fetch` and lets one time unit pass.
    fn advance(&self, mut state: State, fetch: Option<Fetch>) -> State {
        if let Some(f) = fetch {
            if let Some(v) = f.victim {
                state.cached &= !(1 << v);
            }
            state.flight = Some((f.block, self.fetch));
        }
        if state.cached & 1 << self.future.block_at(state.cursor) != 0 {
            state.cursor += 1;
        }
        if let Some((block, left)) = state.flight {
            state.flight = Some((block, left - 1));
        }
        state
    }

    /// The fetches on the path to `goal`, with their start times.
    fn plan(&self, goal: State, elapsed: Time) -> Plan {
        let mut steps = Vec::new();
        let mut state = goal;
        let mut time = elapsed;
        while let Some(&(parent, fetch)) = self.seen.get(&state).filter(|(p, _)| *p != state) {
            time -= 1;
            if let Some(f) = fetch {
                steps.push((time, f));
            }
            state = parent;
        }
        steps.reverse();
        Plan { elapsed, steps }
    }
}

/// The set bits of `mask`, lowest first.
fn bits(mask: u32) -> impl Iterator<Item = Block> {
    (0..32).filter(move |b| mask & 1 << b != 0)
}

/// Issues a precomputed schedule at its recorded times.
struct Replay {
    steps: Vec<(Time, Fetch)>,
    next: usize,
}

impl Replay {
    fn due(&mut self, ctx: &Ctx<'_>) -> Option<Fetch> {
        let &(time, fetch) = self.steps.get(self.next)?;
        (time == ctx.now()).then(|| {
            self.next += 1;
            fetch
        })
    }
}

impl AtIdle for Replay {
    fn on_request(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}

    fn demand_only(&self) -> bool {
        false
    }

    fn warm(&self, _: Block, _: &Interner) {}

    fn likely_victim(&self) -> Option<Block> {
        None
    }

    fn on_reference(&mut self, _block: Block, _pos: Pos, _ctx: &mut Ctx<'_>) {}

    fn on_arrival(&mut self, _block: Block, _ctx: &mut Ctx<'_>) {}

    fn demand_victim(&mut self, block: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
        let fetch = self.due(ctx)?;
        debug_assert_eq!(fetch.block, block, "replay out of step with the search");
        fetch.victim
    }

    fn prefetch(&mut self, ctx: &mut Ctx<'_>) -> Option<Fetch> {
        self.due(ctx)
    }
}
