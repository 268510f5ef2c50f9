//! LIRS (Jiang and Zhang, "LIRS: An Efficient Low Inter-reference Recency Set Replacement
//! Policy to Improve Buffer Cache Performance", SIGMETRICS'02, section 3.3): blocks of low
//! inter-reference recency (LIR) hold most of the cache, the rest (resident HIR blocks) a
//! small list Q. Stack S keeps recency order over LIR blocks, resident HIR blocks and
//! non-resident HIR blocks (history), and is pruned so that its bottom is always a LIR block.
//! A hit on a LIR block moves it to S's top; a hit on a HIR block found in S makes it LIR and
//! the bottom LIR block of S becomes a resident HIR block in Q; a HIR block not in S only
//! moves to S's top (and Q's end). A miss evicts Q's front block (kept in S as non-resident);
//! a missed block found in S becomes LIR, any other enters as resident HIR.
//!
//! No parameters (libCacheSim's `LIRS.c`): Q holds `max(1, floor(0.01 * cache))` blocks,
//! the LIR set the rest; S keeps at most twice the cache size of entries, dropping the oldest
//! non-resident ones beyond it.
//!
//! Follows libCacheSim's `LIRS.c`, which departs from the paper in three ways kept here: while
//! the LIR set has room, every new block enters it; a hit on a resident HIR block not in S
//! demotes S's bottom LIR block into Q (pushing Q's front block out, an eviction during a hit,
//! owed through [`Replacement::owes_eviction`]) though the block hit stays HIR; and Q's
//! evictions are in Q's recency order, hits moving a block to Q's end.
//! Deviations: when that demotion pushes out the very block hit (Q holds one block: caches
//! under 200 blocks), libCacheSim re-enters it in S as resident without counting it, so its
//! cache holds one block over its size until the block leaves S or is hit again (a hit there);
//! here it leaves the cache, stays in S as non-resident, and its next reference misses. On the
//! shipped traces this costs 2 or 3 more misses in 3 of 18 runs.

use std::collections::VecDeque;
use std::time::Duration;

use super::queues::{Node, Queues, NIL};
use super::{CacheGeometry, Empty, NoOptions, Replacement, Touch};
use crate::disksim::workload::DiskBlock;

/// The one list of each [`Queues`] here.
const LIST: u8 = 0;

/// Stack S, list Q, the non-resident history (oldest at the tail) and the two sets' sizes.
///
/// In S a node's `flag` marks a LIR block and a `freq` of 1 a resident one.
#[derive(Debug)]
pub struct Lirs {
    stack: Queues,
    hirs: Queues,
    nonresident: Queues,
    capacity: usize,
    lir_limit: usize,
    hir_limit: usize,
    lir_count: usize,
    /// Blocks evicted while serving a reference, owed to the engine.
    evicted: VecDeque<DiskBlock>,
}

impl Lirs {
    /// Empty sets for a cache of `capacity` blocks, Q taking 1% of it (at least one block).
    pub fn new(capacity: usize) -> Self {
        let hir_limit = ((0.01 * capacity as f64) as usize).max(1);
        Lirs {
            stack: Queues::new(1),
            hirs: Queues::new(1),
            nonresident: Queues::new(1),
            capacity,
            lir_limit: capacity.saturating_sub(hir_limit),
            hir_limit,
            lir_count: 0,
            evicted: VecDeque::new(),
        }
    }

    /// Stack S from top to bottom: (block, LIR, resident).
    pub fn stack(&self) -> Vec<(DiskBlock, bool, bool)> {
        let mut out = Vec::new();
        let mut node = self.stack.tail(LIST);
        while node != NIL {
            let entry = self.stack.get(node);
            out.push((entry.block, entry.flag, entry.freq == 1));
            node = self.stack.newer(node);
        }
        out.reverse();
        out
    }

    /// List Q from its end (last hit or entered) to its front (next to leave).
    pub fn list_q(&self) -> Vec<DiskBlock> {
        self.hirs.blocks(LIST)
    }

    fn held(&self) -> usize {
        self.lir_count + self.hirs.len(LIST)
    }

    /// Pushes a block into S's top with the given status.
    fn push_stack(&mut self, block: DiskBlock, lir: bool, resident: bool) {
        let node = self.stack.push(LIST, block);
        let entry = self.stack.get_mut(node);
        entry.flag = lir;
        entry.freq = u32::from(resident);
    }

    /// Removes non-LIR entries from S's bottom up to the first LIR one (or S's top).
    fn prune(&mut self) {
        loop {
            let bottom = self.stack.tail(LIST);
            if bottom == NIL || bottom == self.stack.head(LIST) || self.stack.get(bottom).flag {
                return;
            }
            let block = self.stack.remove(bottom);
            if let Some(node) = self.nonresident.find(block) {
                self.nonresident.remove(node);
            }
        }
    }

    /// S's bottom block leaves the LIR set for Q's end; false if S is empty.
    fn demote_lir(&mut self) -> bool {
        let Some(block) = self.stack.pop_tail(LIST) else {
            return false;
        };
        self.lir_count = self.lir_count.saturating_sub(1);
        while self.hirs.len(LIST) >= self.hir_limit && self.evict_hir() {}
        self.hirs.push(LIST, block);
        self.prune();
        true
    }

    /// Demotes LIR blocks until one more fits in the LIR set.
    fn make_lir_room(&mut self) {
        while self.lir_count >= self.lir_limit && self.demote_lir() {}
    }

    /// Q's front block leaves the cache (non-resident if S still has it); false if Q is empty.
    fn evict_hir(&mut self) -> bool {
        let Some(block) = self.hirs.pop_tail(LIST) else {
            return false;
        };
        if let Some(node) = self.stack.find(block) {
            self.stack.get_mut(node).freq = 0;
            self.nonresident.push(LIST, block);
        }
        self.evicted.push_back(block);
        true
    }

    /// Drops the oldest non-resident entries while S holds over twice the cache size.
    fn limit_stack(&mut self) {
        while self.stack.len(LIST) > 2 * self.capacity {
            let Some(block) = self.nonresident.pop_tail(LIST) else {
                return;
            };
            if let Some(node) = self.stack.find(block) {
                self.stack.remove(node);
            }
        }
    }

    /// A hit on a resident HIR block in S: it becomes LIR and leaves Q.
    fn hit_hir_in_stack(&mut self, node: Node) {
        let block = self.stack.get(node).block;
        if let Some(q) = self.hirs.find(block) {
            self.hirs.remove(q);
        }
        self.make_lir_room();
        if let Some(node) = self.stack.find(block) {
            self.stack.get_mut(node).flag = true;
            self.lir_count += 1;
        }
    }

    /// A hit on a resident HIR block not in S: a LIR block is demoted (libCacheSim's
    /// `hit_RD_HIRinQ`) and the block enters S's top, resident if Q still holds it.
    fn hit_hir_outside_stack(&mut self, block: DiskBlock) {
        self.make_lir_room();
        let resident = self.hirs.find(block).is_some();
        self.push_stack(block, false, resident);
        if !resident {
            self.nonresident.push(LIST, block);
        }
    }

    /// Makes room for a block missed: the LIR set for a block found in S, Q otherwise, then
    /// the cache (libCacheSim's `can_insert` and `evict` before its `insert`).
    fn make_room(&mut self, found: Option<Node>) {
        match found {
            Some(node) => {
                self.make_lir_room();
                let block = self.stack.get(node).block;
                if let Some(history) = self.nonresident.find(block) {
                    self.nonresident.remove(history);
                }
                while self.held() >= self.capacity {
                    while self.hirs.len(LIST) >= self.hir_limit && self.evict_hir() {}
                    if !self.demote_lir() {
                        return;
                    }
                }
            }
            None if self.lir_count >= self.lir_limit => {
                while self.hirs.len(LIST) >= self.hir_limit && self.evict_hir() {}
            }
            None => {}
        }
    }

    /// Enters a block missed: LIR if found in S or while the LIR set has room, else HIR in
    /// both S and Q.
    fn enter(&mut self, block: DiskBlock) {
        if let Some(node) = self.stack.find(block) {
            let entry = self.stack.get_mut(node);
            entry.flag = true;
            entry.freq = 1;
            self.lir_count += 1;
        } else if self.lir_count < self.lir_limit {
            self.push_stack(block, true, true);
            self.lir_count += 1;
        } else {
            self.push_stack(block, false, true);
            self.hirs.push(LIST, block);
        }
    }
}

impl Replacement for Lirs {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        !self.evicted.is_empty()
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        if let Some(node) = self.hirs.find(block) {
            self.hirs.move_to_head(LIST, node);
        }
        match self.stack.find(block) {
            Some(node) => {
                self.stack.move_to_head(LIST, node);
                match self.stack.get(node).flag {
                    true => self.prune(),
                    false => self.hit_hir_in_stack(node),
                }
            }
            None => self.hit_hir_outside_stack(block),
        }
        self.limit_stack();
    }

    fn on_miss(&mut self, block: DiskBlock, _how: Touch) {
        let found = self.stack.find(block);
        if let Some(node) = found {
            self.stack.move_to_head(LIST, node);
        }
        self.make_room(found);
        self.enter(block);
        self.limit_stack();
    }

    fn on_insert(&mut self, _block: DiskBlock, _how: Touch) {}

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        if self.evicted.is_empty() && !self.evict_hir() && self.demote_lir() {
            self.evict_hir();
        }
        self.evicted.pop_front()
    }

    fn order(&self) -> Vec<DiskBlock> {
        let lir = self.stack().into_iter().filter(|&(_, lir, _)| lir);
        let mut out: Vec<DiskBlock> = lir.map(|(block, _, _)| block).collect();
        out.extend(self.list_q());
        out
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        let in_q = self.hirs.find(block);
        let in_stack = self.stack.find(block);
        if let Some(node) = in_q {
            self.hirs.remove(node);
        }
        match in_stack {
            Some(node) if self.stack.get(node).flag => {
                self.stack.remove(node);
                self.lir_count -= 1;
                self.prune();
                true
            }
            Some(node) if in_q.is_some() => {
                self.stack.remove(node);
                true
            }
            _ => in_q.is_some(),
        }
    }
}

impl Empty for Lirs {
    fn empty(geometry: CacheGeometry) -> Self {
        Lirs::new(geometry.capacity)
    }
}

/// Its configuration: it takes no options.
pub type Options = NoOptions<Lirs>;

#[cfg(test)]
mod tests {
    use super::super::testing::Replay;
    use super::*;

    /// A cache of 3 (a LIR set of 2, Q of 1) worked by hand. 1 and 2 fill the LIR set, 3
    /// enters Q as HIR and is evicted by 4 but stays in S as non-resident. 3 is missed again
    /// while in S: its short inter-reference recency makes it LIR, S's bottom LIR block 1 is
    /// demoted into Q, pushing 4 out.
    #[test]
    fn a_block_missed_while_in_the_stack_becomes_lir() {
        let mut lirs = Lirs::new(3);
        let mut cache = Replay::new(3);
        assert_eq!(cache.run(&mut lirs, &[1, 2, 3, 4]), 4);
        let stack = vec![
            (4, false, true),
            (3, false, false),
            (2, true, true),
            (1, true, true),
        ];
        assert_eq!(lirs.stack(), stack);
        assert_eq!(lirs.list_q(), vec![4]);
        assert_eq!(cache.run(&mut lirs, &[3]), 1);
        assert_eq!(
            lirs.stack(),
            vec![(3, true, true), (4, false, false), (2, true, true)]
        );
        assert_eq!(lirs.list_q(), vec![1]);
        assert_eq!(lirs.order(), vec![3, 2, 1]);
        // A hit on LIR block 2 prunes the non-resident 4 from S's bottom.
        assert_eq!(cache.run(&mut lirs, &[2]), 0);
        assert_eq!(lirs.stack(), vec![(2, true, true), (3, true, true)]);
    }

    /// The deviation from libCacheSim: a hit on 1, in Q (of one block) but not in S, demotes
    /// LIR block 3 into Q, which pushes 1 itself out. libCacheSim keeps 1 as an uncounted
    /// resident (4 blocks in a cache of 3) and hits it next; here it leaves, is non-resident
    /// in S, and its next reference misses and makes it LIR.
    #[test]
    fn a_hit_that_pushes_the_block_hit_out_of_q_evicts_it() {
        let mut lirs = Lirs::new(3);
        let mut cache = Replay::new(3);
        assert_eq!(cache.run(&mut lirs, &[1, 2, 3, 4, 3, 2]), 5);
        assert_eq!(cache.run(&mut lirs, &[1]), 0);
        assert_eq!(lirs.stack(), vec![(1, false, false), (2, true, true)]);
        assert_eq!(lirs.order(), vec![2, 3]);
        assert_eq!(cache.run(&mut lirs, &[1]), 1);
        assert_eq!(lirs.stack()[0], (1, true, true));
    }
}
