//! CLOCK-Pro (Jiang, Chen and Zhang, "CLOCK-Pro: An Effective Improvement of the CLOCK
//! Replacement", USENIX ATC'05, sections 3.2-3.4): one clock of hot pages, resident cold pages
//! and non-resident cold pages still in their test period, and three hands. A hit only sets
//! the page's reference bit. To free a slot, HAND_cold turns a referenced cold page hot and
//! evicts an unreferenced one, which stays in the clock as a test page; HAND_hot turns an
//! unreferenced hot page cold (clearing a set bit and sparing the page otherwise) while the
//! hot pages exceed the memory left to cold ones; HAND_test ends the test periods, dropping
//! test pages, when they exceed the memory size. A missed page found among the test pages
//! enters hot and grows the cold pages' target `m_c` by one; a test page dropped unreferenced
//! shrinks it by one (adaptation, section 3.4). New pages enter cold, behind HAND_hot.
//!
//! No parameters: `m_c` starts at the cache size (all cold) and stays within 1 and the cache
//! size; new and demoted pages start unreferenced (libCacheSim's `init-ref=0`).
//!
//! libCacheSim's `ClockPro.c` (0.3.5) cannot be the reference: its `can_insert` refuses every
//! missed object once its cold share is full, before any eviction has run, so it keeps its
//! first `init-ratio-cold` x cache objects for ever (its miss counts on the shipped traces are
//! exactly those of such a cache). This file follows pyclockpro as ported to Go by Damian
//! Gryski (go-clockpro), whose miss counts it makes, and which libCacheSim's file names as its
//! own reference: a referenced cold page under HAND_cold turns hot at once (the paper's test
//! period of a resident cold page is its whole stay), and a hand meeting another hand runs it
//! first (HAND_hot at HAND_test, HAND_test at HAND_cold).

use std::collections::VecDeque;
use std::time::Duration;

use rustc_hash::FxHashMap;

use super::{CacheGeometry, Empty, NoOptions, Replacement, Touch};
use crate::disksim::workload::DiskBlock;

/// A page's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Hot,
    Cold,
    /// Non-resident, in its test period.
    Test,
}

type Slot = u32;
const NONE: Slot = u32::MAX;

/// One page in the clock; `next` is the direction the hands move.
#[derive(Clone, Copy, Debug)]
struct Page {
    block: DiskBlock,
    kind: Kind,
    referenced: bool,
    prev: Slot,
    next: Slot,
}

/// The clock, its hands and counts, and `m_c` (`cold_target`).
#[derive(Debug)]
pub struct ClockPro {
    pages: Vec<Page>,
    free: Vec<Slot>,
    index: FxHashMap<DiskBlock, Slot>,
    capacity: usize,
    cold_target: usize,
    hand_hot: Slot,
    hand_cold: Slot,
    hand_test: Slot,
    hot: usize,
    cold: usize,
    test: usize,
    /// The status the block being missed enters with (hot if it was a test page).
    entering: Kind,
    /// Pages evicted by the hands, owed to the engine.
    evicted: VecDeque<DiskBlock>,
}

impl ClockPro {
    /// An empty clock for a cache of `capacity` blocks.
    pub fn new(capacity: usize) -> Self {
        ClockPro {
            pages: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            capacity,
            cold_target: capacity,
            hand_hot: NONE,
            hand_cold: NONE,
            hand_test: NONE,
            hot: 0,
            cold: 0,
            test: 0,
            entering: Kind::Cold,
            evicted: VecDeque::new(),
        }
    }

    fn page(&mut self, slot: Slot) -> &mut Page {
        &mut self.pages[slot as usize]
    }

    fn next(&self, slot: Slot) -> Slot {
        self.pages[slot as usize].next
    }

    fn prev(&self, slot: Slot) -> Slot {
        self.pages[slot as usize].prev
    }

    /// Links a new page just behind HAND_hot (the list head), as go-clockpro's `meta_add`.
    fn link(&mut self, block: DiskBlock, kind: Kind) {
        let page = Page {
            block,
            kind,
            referenced: false,
            prev: NONE,
            next: NONE,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.pages[slot as usize] = page;
                slot
            }
            None => {
                self.pages.push(page);
                (self.pages.len() - 1) as Slot
            }
        };
        self.index.insert(block, slot);
        match self.hand_hot {
            NONE => {
                (self.page(slot).prev, self.page(slot).next) = (slot, slot);
                (self.hand_hot, self.hand_cold, self.hand_test) = (slot, slot, slot);
            }
            hot => {
                let before = self.prev(hot);
                (self.page(slot).prev, self.page(slot).next) = (before, hot);
                self.page(before).next = slot;
                self.page(hot).prev = slot;
            }
        }
        if self.hand_cold == self.hand_hot {
            self.hand_cold = self.prev(self.hand_cold);
        }
    }

    /// Unlinks a page; a hand on it steps back (go-clockpro's `meta_del`).
    fn unlink(&mut self, slot: Slot) {
        let Page {
            block, prev, next, ..
        } = self.pages[slot as usize];
        self.index.remove(&block);
        let alone = next == slot;
        for hand in [&mut self.hand_hot, &mut self.hand_cold, &mut self.hand_test] {
            if *hand == slot {
                *hand = if alone { NONE } else { prev };
            }
        }
        self.page(prev).next = next;
        self.page(next).prev = prev;
        self.free.push(slot);
    }

    /// HAND_cold's step: a referenced cold page turns hot, an unreferenced one is evicted
    /// into a test page; then HAND_hot runs while the hot pages exceed their share.
    fn run_hand_cold(&mut self) {
        let slot = self.hand_cold;
        let page = self.pages[slot as usize];
        if page.kind == Kind::Cold {
            self.cold -= 1;
            if page.referenced {
                (self.page(slot).kind, self.page(slot).referenced) = (Kind::Hot, false);
                self.hot += 1;
            } else {
                self.page(slot).kind = Kind::Test;
                self.test += 1;
                self.evicted.push_back(page.block);
                while self.capacity < self.test {
                    self.run_hand_test();
                }
            }
        }
        self.hand_cold = self.next(self.hand_cold);
        while self.capacity - self.cold_target < self.hot {
            self.run_hand_hot();
        }
    }

    /// HAND_hot's step: an unreferenced hot page turns cold, a referenced one loses its bit.
    fn run_hand_hot(&mut self) {
        if self.hand_hot == self.hand_test {
            self.run_hand_test();
        }
        let slot = self.hand_hot;
        let page = self.page(slot);
        match (page.kind, page.referenced) {
            (Kind::Hot, true) => page.referenced = false,
            (Kind::Hot, false) => {
                page.kind = Kind::Cold;
                self.hot -= 1;
                self.cold += 1;
            }
            _ => {}
        }
        self.hand_hot = self.next(self.hand_hot);
    }

    /// HAND_test's step: a test page's period ends, it leaves the clock and `m_c` shrinks.
    fn run_hand_test(&mut self) {
        if self.hand_test == self.hand_cold {
            self.run_hand_cold();
        }
        let slot = self.hand_test;
        if self.pages[slot as usize].kind == Kind::Test {
            let prev = self.prev(slot);
            self.unlink(slot);
            self.hand_test = prev;
            self.test -= 1;
            if self.cold_target > 1 {
                self.cold_target -= 1;
            }
        }
        self.hand_test = self.next(self.hand_test);
    }
}

impl Replacement for ClockPro {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        !self.evicted.is_empty()
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        if let Some(&slot) = self.index.get(&block) {
            self.page(slot).referenced = true;
        }
    }

    fn on_miss(&mut self, block: DiskBlock, _how: Touch) {
        self.entering = Kind::Cold;
        if let Some(&slot) = self.index.get(&block) {
            self.cold_target = (self.cold_target + 1).min(self.capacity);
            self.test -= 1;
            self.unlink(slot);
            self.entering = Kind::Hot;
        }
    }

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        let kind = std::mem::replace(&mut self.entering, Kind::Cold);
        self.link(block, kind);
        match kind {
            Kind::Hot => self.hot += 1,
            _ => self.cold += 1,
        }
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        while self.evicted.is_empty() && self.hot + self.cold > 0 {
            self.run_hand_cold();
        }
        self.evicted.pop_front()
    }

    /// Hot pages, then cold ones, each from the list head (just behind HAND_hot) backwards.
    fn order(&self) -> Vec<DiskBlock> {
        let mut ring = Vec::with_capacity(self.index.len());
        let mut slot = self.hand_hot;
        while slot != NONE {
            slot = self.prev(slot);
            ring.push(self.pages[slot as usize]);
            if slot == self.hand_hot {
                break;
            }
        }
        [Kind::Hot, Kind::Cold]
            .iter()
            .flat_map(|&kind| ring.iter().filter(move |p| p.kind == kind))
            .map(|p| p.block)
            .collect()
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        let Some(&slot) = self.index.get(&block) else {
            return false;
        };
        match self.pages[slot as usize].kind {
            Kind::Hot => self.hot -= 1,
            Kind::Cold => self.cold -= 1,
            Kind::Test => return false,
        }
        self.unlink(slot);
        true
    }
}

impl Empty for ClockPro {
    fn empty(geometry: CacheGeometry) -> Self {
        ClockPro::new(geometry.capacity)
    }
}

/// Its configuration: it takes no options.
pub type Options = NoOptions<ClockPro>;

#[cfg(test)]
mod tests {
    use super::super::testing::Replay;
    use super::*;

    impl ClockPro {
        /// The adaptive target of cold pages, `m_c`.
        pub fn cold_target(&self) -> usize {
            self.cold_target
        }

        /// The clock from HAND_hot on, each page as `h`/`H` (hot, bit clear/set), `c`/`C` (cold)
        /// or `n` (test page), preceded by `2`, `0`, `1` where HAND_hot, HAND_test, HAND_cold
        /// point (go-clockpro's `dump`).
        pub fn dump(&self) -> String {
            let mut out = String::new();
            let mut slot = self.hand_hot;
            while slot != NONE {
                for (hand, mark) in [
                    (self.hand_hot, '2'),
                    (self.hand_test, '0'),
                    (self.hand_cold, '1'),
                ] {
                    if hand == slot {
                        out.push(mark);
                    }
                }
                let page = self.pages[slot as usize];
                out.push(match (page.kind, page.referenced) {
                    (Kind::Hot, false) => 'h',
                    (Kind::Hot, true) => 'H',
                    (Kind::Cold, false) => 'c',
                    (Kind::Cold, true) => 'C',
                    (Kind::Test, _) => 'n',
                });
                slot = page.next;
                if slot == self.hand_hot {
                    break;
                }
            }
            out
        }
    }

    /// A cache of 3 worked by hand (go-clockpro's `dump` gives the same states). 1 2 3 enter
    /// cold behind HAND_hot; 1 is hit. 4 makes HAND_cold evict 2 into a test page. 2 missed
    /// in its test period enters hot (HAND_cold evicts 3 for it). 5: HAND_cold evicts 4, then
    /// the hot pages exceed the cache less `m_c`, so HAND_hot runs, and meeting HAND_test on
    /// test page 3 ends its period: 3 leaves the clock and `m_c` shrinks to 2.
    #[test]
    fn a_test_page_missed_turns_hot_and_an_expired_one_shrinks_the_cold_target() {
        let mut clock = ClockPro::new(3);
        let mut cache = Replay::new(3);
        let steps: [(u64, usize, &str); 7] = [
            (1, 1, "201c"),
            (2, 1, "20c1c"),
            (3, 1, "20c1cc"),
            (1, 0, "20C1cc"),
            (4, 1, "20Cn1cc"),
            (2, 1, "20Cn1ch"),
            (5, 1, "20n1hCc"),
        ];
        for (block, misses, dump) in steps {
            assert_eq!(cache.run(&mut clock, &[block]), misses, "block {block}");
            assert_eq!(clock.dump(), dump, "after block {block}");
        }
        assert_eq!(clock.cold_target(), 2);
        assert_eq!(clock.order(), vec![2, 5, 1]);
    }
}
