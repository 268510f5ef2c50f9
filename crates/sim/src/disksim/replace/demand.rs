//! Any demand-paging policy of the catalog (a [`crate::policy::AtIdle`] policy that never
//! prefetches: LRU, FIFO, CLOCK, and every eviction policy registered the same way) as a
//! [`Replacement`], so that it pairs with any prefetcher (`--policy fifo+obl`).
//!
//! The policy keeps its own order and answers the loop's calls as it does under Cao's model
//! (section 2.1's *which block to replace*): a block entering the cache *arrives*
//! ([`AtIdle::on_arrival`]), and when it was demanded it is *referenced* at once (the reference
//! that missed is served by it); a hit is a reference; a victim is its
//! [`AtIdle::demand_victim`] with a full cache. It sees a cache of its own holding exactly the
//! blocks the loop holds (the loop counts blocks in flight as cached), with dense ids handed out
//! in order of first sight.
//! The victim is chosen for the block about to enter, as under Cao's model, so a policy whose
//! choice depends on it (ARC's and 2Q's history) decides as it does there. Policies that need
//! the whole trace (OPT) or prefetch by themselves (Cao's integrated policies) do not pair: they
//! decide replacement and prefetching together.

use std::time::Duration;

use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::cache::{Block, CacheState, CacheView, Interner, Residency};
use crate::disksim::workload::DiskBlock;
use crate::future::Pos;
use crate::policy::{AtIdle, Build, Ctx, PolicyInfo};
use crate::time::{FetchTime, ReferenceTime, Timing};
use crate::SimError;

/// The blocks the policy holds, as a cache it can look at.
struct Held {
    capacity: usize,
    resident: Vec<bool>,
    /// Blocks inserted as prefetched and not referenced since.
    unreferenced: Vec<bool>,
    count: usize,
    unreferenced_count: usize,
}

impl Held {
    fn set(flags: &mut Vec<bool>, block: Block, value: bool) -> bool {
        let index = block as usize;
        if index >= flags.len() {
            flags.resize(index + 1, false);
        }
        std::mem::replace(&mut flags[index], value)
    }

    fn insert(&mut self, block: Block, prefetched: bool) {
        self.count += usize::from(!Held::set(&mut self.resident, block, true));
        if prefetched && !Held::set(&mut self.unreferenced, block, true) {
            self.unreferenced_count += 1;
        }
    }

    fn referenced(&mut self, block: Block) {
        self.unreferenced_count -= usize::from(Held::set(&mut self.unreferenced, block, false));
    }

    fn forget(&mut self, block: Block) {
        self.count -= usize::from(Held::set(&mut self.resident, block, false));
        self.referenced(block);
    }
}

impl CacheState for Held {
    fn residency(&self, block: Block) -> Residency {
        match self.resident.get(block as usize) {
            Some(true) => Residency::Resident,
            _ => Residency::Absent,
        }
    }

    fn free_slots(&self) -> usize {
        self.capacity.saturating_sub(self.count)
    }

    fn unreferenced_prefetches(&self) -> usize {
        self.unreferenced_count
    }

    fn is_unreferenced_prefetch(&self, block: Block) -> bool {
        self.unreferenced.get(block as usize) == Some(&true)
    }
}

/// A demand-paging policy answering as a replacement order.
pub struct Demand {
    policy: Box<dyn AtIdle>,
    held: Held,
    ids: Interner,
    /// References served so far (the policy's cursor; demand policies read no future, so it
    /// may wrap on traces of over 2^32 references).
    served: Pos,
}

impl Demand {
    /// Calls `f` with the policy and the view it decides with.
    fn with<T>(&mut self, f: impl FnOnce(&mut dyn AtIdle, &mut Ctx<'_>) -> T) -> T {
        let now = u64::from(self.served);
        let mut ctx = Ctx::new(
            CacheView::new(&self.held),
            None,
            &mut self.ids,
            (now, self.served),
            None,
        );
        f(self.policy.as_mut(), &mut ctx)
    }

    /// The reference to `block` is served.
    fn reference(&mut self, block: Block) {
        self.held.referenced(block);
        let pos = self.served;
        self.served = self.served.wrapping_add(1);
        self.with(|policy, ctx| policy.on_reference(block, pos, ctx));
    }
}

impl Replacement for Demand {
    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        let id = self.ids.intern(block);
        self.reference(id);
    }

    /// A demand policy hears a block when it arrives (`on_insert`) and chooses its victim
    /// knowing the incoming block (`evict`): it has nothing to look up before.
    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, how: Touch) {
        let id = self.ids.intern(block);
        self.held.insert(id, how.prefetched);
        self.with(|policy, ctx| policy.on_arrival(id, ctx));
        if !how.prefetched {
            self.reference(id);
        }
    }

    fn evict(&mut self, _now: Duration, incoming: DiskBlock) -> Option<DiskBlock> {
        let incoming = self.ids.intern(incoming);
        let victim = self.with(|policy, ctx| policy.demand_victim(incoming, ctx))?;
        self.held.forget(victim);
        Some(self.ids.raw(victim))
    }

    /// A demand policy keeps its order to itself: the held blocks, in no promised order.
    fn order(&self) -> Vec<DiskBlock> {
        let held = self.held.resident.iter().enumerate().filter(|(_, &r)| r);
        held.map(|(id, _)| self.ids.raw(id as Block)).collect()
    }

    /// A demand policy cannot forget an arbitrary block (Cao's policies never drop one).
    fn remove(&mut self, _block: DiskBlock) -> bool {
        false
    }

    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    /// Cao's demand policies make one slot per eviction and never evict on a hit.
    fn owes_eviction(&self) -> bool {
        false
    }
}

/// A demand-paging policy of the catalog, as a replacement: checked when the pair is named.
#[derive(Clone, Copy, Debug)]
pub struct Options(&'static PolicyInfo);

impl Options {
    /// `info` as a replacement, or why it cannot be one: it needs the whole trace, or it
    /// prefetches by itself.
    pub fn of(info: &'static PolicyInfo) -> Result<Options, SimError> {
        if info.needs_future {
            return Err(SimError::Config(format!(
                "{} needs the whole trace in memory and does not pair with a prefetcher",
                info.name
            )));
        }
        match build(info, 1)?.demand_only() {
            true => Ok(Options(info)),
            false => Err(SimError::Config(format!(
                "{} is one of Cao's integrated policies (it prefetches by itself); pair a \
                 replacement such as lru, fifo or clock",
                info.name
            ))),
        }
    }
}

/// A fresh instance of `info` for a cache of `capacity` blocks, empty.
fn build(info: &'static PolicyInfo, capacity: usize) -> Result<Box<dyn AtIdle>, SimError> {
    let timing = Timing {
        reference: ReferenceTime::Uniform(1),
        fetch: FetchTime::Constant(1),
    };
    (info.build)(&Build {
        capacity,
        timing: &timing,
        future: None,
        initial: &[],
        ids: &Interner::default(),
        depth: 1,
    })
}

impl MakeReplacement for Options {
    fn build(&self, geometry: CacheGeometry) -> Box<dyn Replacement> {
        let policy = build(self.0, geometry.capacity)
            .expect("a demand policy that built when it was named builds again");
        Box::new(Demand {
            policy,
            held: Held {
                capacity: geometry.capacity,
                resident: Vec::new(),
                unreferenced: Vec::new(),
                count: 0,
                unreferenced_count: 0,
            },
            ids: Interner::default(),
            served: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::future::Pos;
    use crate::policy::{fifo, Fetch};

    thread_local! {
        static ASKED: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
    }

    /// FIFO that remembers the incoming block of every victim it is asked for.
    struct Asked(Box<dyn AtIdle>);

    impl AtIdle for Asked {
        fn on_request(&mut self, block: Block, pos: Pos, ctx: &mut Ctx<'_>) {
            self.0.on_request(block, pos, ctx);
        }
        fn on_reference(&mut self, block: Block, pos: Pos, ctx: &mut Ctx<'_>) {
            self.0.on_reference(block, pos, ctx);
        }
        fn on_arrival(&mut self, block: Block, ctx: &mut Ctx<'_>) {
            self.0.on_arrival(block, ctx);
        }
        fn demand_victim(&mut self, block: Block, ctx: &mut Ctx<'_>) -> Option<Block> {
            ASKED.with(|asked| asked.borrow_mut().push(block));
            self.0.demand_victim(block, ctx)
        }
        fn prefetch(&mut self, ctx: &mut Ctx<'_>) -> Option<Fetch> {
            self.0.prefetch(ctx)
        }
        fn demand_only(&self) -> bool {
            true
        }
        fn warm(&self, _: Block, _: &Interner) {}
        fn likely_victim(&self) -> Option<Block> {
            None
        }
    }

    static ASKED_FIFO: PolicyInfo = PolicyInfo {
        name: "asked-fifo",
        summary: "FIFO remembering each incoming block",
        needs_future: false,
        build: |b| Ok(Box::new(Asked((fifo::INFO.build)(b)?))),
    };

    #[test]
    fn a_demand_policy_chooses_its_victim_for_the_incoming_block() {
        let options = Options::of(&ASKED_FIFO).unwrap();
        let mut fifo = options.build(CacheGeometry {
            capacity: 2,
            block_size: 4096,
        });
        let touch = |prefetched| Touch {
            stream: 0,
            now: Duration::ZERO,
            prefetched,
        };
        fifo.on_insert(100, touch(false));
        fifo.on_insert(200, touch(true));
        fifo.on_hit(100, touch(false));
        assert_eq!(fifo.evict(Duration::ZERO, 300), Some(100));
        fifo.on_insert(300, touch(false));
        assert_eq!(fifo.evict(Duration::ZERO, 100), Some(200));
        // Dense ids in order of first sight: 100 -> 0, 200 -> 1, 300 -> 2.
        assert_eq!(ASKED.with(|asked| asked.borrow().clone()), [2, 0]);
        assert!(
            !fifo.remove(300),
            "a demand policy forgets no block on request"
        );
    }
}
