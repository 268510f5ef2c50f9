//! Carrying out a demand-paging schedule early: the shared mechanism of `conservative` and
//! `lru-sensible`.
//!
//! Conservative (Cao et al. section 2.4) "performs exactly the same replacements as the optimal
//! offline demand paging strategy MIN, except that each fetch is performed at the earliest
//! opportunity consistent with the four rules". So we first run the demand policy (MIN) over
//! the trace and record its fetches `(position j, block r_j, victim v)`. During the real run the
//! recorded fetches are issued in order, each at the first moment that a fetch slot is free and
//! discarding `v` does no harm (rule 3: `v` is next referenced after `j`). By induction the
//! cache after the m-th fetch equals MIN's after its m-th miss, so the fetch counts are equal.
//!
//! LRU-sensible (section 4.1) fetches the next missing block at the earliest moment allowed by
//! rule 3 and discards the least recently used among the blocks it may discard. Those are the
//! cached blocks not referenced before the missing block at `j`; the least recent of them is
//! exactly LRU-demand's victim at `j`, and such a block exists exactly when LRU-demand's victim
//! is not referenced before `j`. So LRU-sensible is LRU-demand's schedule issued early, the
//! same mechanism (and the same fetch count as LRU-demand, as the paper states).
//!
//! Cost: one demand run to record the schedule (O(n log k) for MIN, O(n) for LRU), then O(1)
//! per decision.
//!
//! Deviations: the equivalence for LRU-sensible is our reading of section 4.1, and a test
//! checks it against a naive implementation of the paper's wording.

use crate::cache::{Block, Interner};
use crate::disksim::cao::Run;
use crate::future::Pos;
use crate::policy::Ctx;
use crate::policy::{AtIdle, Build, Fetch, PolicyInfo};
use crate::runner::RunSetup;
use crate::time::Timing;
use crate::SimError;

/// One fetch of a demand schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Step {
    /// Position of the miss.
    pos: Pos,
    /// The missing block.
    block: Block,
    /// The block the demand policy discarded (`None`: a free slot).
    victim: Option<Block>,
}

/// Wraps a demand policy and writes down its fetches.
struct Recorder {
    inner: Box<dyn AtIdle>,
    steps: Vec<Step>,
}

impl AtIdle for Recorder {
    fn on_request(&mut self, _: Block, _: Pos, _: &mut Ctx<'_>) {}

    fn prefetch(&mut self, _: &mut Ctx<'_>) -> Option<Fetch> {
        None
    }

    fn demand_only(&self) -> bool {
        false
    }

    fn warm(&self, _: Block, _: &Interner) {}

    fn likely_victim(&self) -> Option<Block> {
        None
    }

    fn on_reference(&mut self, block: Block, pos: Pos, ctx: &mut Ctx<'_>) {
        self.inner.on_reference(block, pos, ctx);
    }

    fn on_arrival(&mut self, block: Block, ctx: &mut Ctx<'_>) {
        self.inner.on_arrival(block, ctx);
    }

    fn demand_victim(&mut self, block: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
        let victim = self.inner.demand_victim(block, ctx);
        self.steps.push(Step {
            pos: ctx.cursor(),
            block,
            victim,
        });
        victim
    }
}

/// Issues a demand policy's recorded fetches at their earliest harmless opportunity.
pub(crate) struct EarlySchedule {
    steps: Vec<Step>,
    next: usize,
}

impl EarlySchedule {
    /// Records the fetches of demand policy `demand` on the run's trace and initial contents.
    pub(crate) fn record(demand: &PolicyInfo, build: &Build<'_>) -> Result<Self, SimError> {
        let future = build.future(demand.name)?;
        let setup = RunSetup {
            capacity: build.capacity,
            timing: Timing::simplified(1),
            initial: Vec::new(),
            depth: 1,
        };
        let mut recorder = Recorder {
            inner: (demand.build)(build)?,
            steps: Vec::new(),
        };
        let run = Run {
            name: demand.name,
            ids: build.ids.clone(),
            future: Some(future),
            setup: &setup,
            initial: build.initial,
        };
        run.on_string(&mut recorder, future.string())?;
        Ok(EarlySchedule {
            steps: recorder.steps,
            next: 0,
        })
    }
}

impl AtIdle for EarlySchedule {
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

    fn demand_victim(&mut self, block: Block, _ctx: &mut Ctx<'_>) -> Option<Block> {
        let step = self.steps.get(self.next)?;
        debug_assert_eq!(step.block, block, "schedule out of step with the run");
        self.next += 1;
        step.victim
    }

    fn prefetch(&mut self, ctx: &mut Ctx<'_>) -> Option<Fetch> {
        // Rules 1 and 2 hold by construction (the demand policy's next miss and its victim);
        // rule 3 is checked here; rule 4: the engine asks at every opportunity.
        let step = self.steps.get(self.next)?;
        let harmless = match step.victim {
            None => ctx.cache().free_slots() > 0,
            Some(v) => ctx.oracle().next_ref(v) > step.pos && Some(v) != ctx.pinned(),
        };
        harmless.then(|| {
            self.next += 1;
            Fetch {
                block: step.block,
                victim: step.victim,
            }
        })
    }
}
