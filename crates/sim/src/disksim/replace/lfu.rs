//! LFU: evict the block referenced least often since it entered the cache; among equals, the
//! one that reached its count first (libCacheSim's `LFU.c`: a block is appended to its new
//! frequency's list at each hit and the head of the smallest frequency's list leaves). A new
//! block starts at count 1. Counts are forgotten on eviction (in-cache LFU).
//!
//! No parameters (libCacheSim's LFU takes none). The classic policy of the caching
//! literature (e.g. as the baseline of Arlitt et al., "Evaluating content management
//! techniques for Web proxy caches", 2000, section 3).
//!
//! The frequency lists are kept as Shah, Mitra and Matani's O(1) LFU ("An O(1) algorithm for
//! implementing the LFU cache eviction scheme", 2010, section 3) keeps them: one list of blocks
//! per frequency held, the lists linked in increasing frequency, so that a hit (count + 1)
//! moves a block to the next list up, creating it beside its own if absent, and the victim is
//! the head of the first list, each in constant time. libCacheSim finds its lists through a
//! hash table of frequencies instead and scans up from the smallest for the next non-empty
//! one; the order of blocks is the same. Hand-written rather than a crate: no maintained crate
//! keeps this order (first to reach the count leaves first) with removal of any block.

use std::time::Duration;

use rustc_hash::FxHashMap;

use super::{NoOptions, Replacement, Touch};
use crate::disksim::workload::DiskBlock;

/// An index into one of the arenas.
type Link = u32;
/// No node.
const NIL: Link = u32::MAX;

/// A held block in its frequency's list (oldest first).
#[derive(Clone, Copy, Debug)]
struct Held {
    block: DiskBlock,
    list: Link,
    older: Link,
    newer: Link,
}

/// The list of the blocks of one count, between the lists of the next smaller and larger
/// counts held.
#[derive(Clone, Copy, Debug)]
struct List {
    count: u64,
    oldest: Link,
    newest: Link,
    smaller: Link,
    larger: Link,
}

/// Held blocks in lists by count, the lists in increasing count.
#[derive(Debug)]
pub struct Lfu {
    held: Vec<Held>,
    free_held: Vec<Link>,
    lists: Vec<List>,
    free_lists: Vec<Link>,
    index: FxHashMap<DiskBlock, Link>,
    smallest: Link,
    largest: Link,
}

impl Default for Lfu {
    fn default() -> Self {
        Lfu {
            held: Vec::new(),
            free_held: Vec::new(),
            lists: Vec::new(),
            free_lists: Vec::new(),
            index: FxHashMap::default(),
            smallest: NIL,
            largest: NIL,
        }
    }
}

impl Lfu {
    /// The list of `count` right after `smaller` (the first list if `smaller` is [`NIL`]):
    /// that list if it holds `count`, else a new empty list linked in there.
    fn list_after(&mut self, smaller: Link, count: u64) -> Link {
        let larger = match smaller {
            NIL => self.smallest,
            s => self.lists[s as usize].larger,
        };
        if larger != NIL && self.lists[larger as usize].count == count {
            return larger;
        }
        let list = List {
            count,
            oldest: NIL,
            newest: NIL,
            smaller,
            larger,
        };
        let at = match self.free_lists.pop() {
            Some(at) => {
                self.lists[at as usize] = list;
                at
            }
            None => {
                self.lists.push(list);
                (self.lists.len() - 1) as Link
            }
        };
        match smaller {
            NIL => self.smallest = at,
            s => self.lists[s as usize].larger = at,
        }
        match larger {
            NIL => self.largest = at,
            l => self.lists[l as usize].smaller = at,
        }
        at
    }

    /// Appends held block `node` to the newest end of `list`.
    fn append(&mut self, node: Link, list: Link) {
        let newest = self.lists[list as usize].newest;
        self.held[node as usize] = Held {
            list,
            older: newest,
            newer: NIL,
            ..self.held[node as usize]
        };
        match newest {
            NIL => self.lists[list as usize].oldest = node,
            n => self.held[n as usize].newer = node,
        }
        self.lists[list as usize].newest = node;
    }

    /// Takes held block `node` out of its list, and the list out of the lists if it empties.
    fn unlink(&mut self, node: Link) {
        let Held {
            list, older, newer, ..
        } = self.held[node as usize];
        match older {
            NIL => self.lists[list as usize].oldest = newer,
            o => self.held[o as usize].newer = newer,
        }
        match newer {
            NIL => self.lists[list as usize].newest = older,
            n => self.held[n as usize].older = older,
        }
        let List {
            oldest,
            smaller,
            larger,
            ..
        } = self.lists[list as usize];
        if oldest != NIL {
            return;
        }
        match smaller {
            NIL => self.smallest = larger,
            s => self.lists[s as usize].larger = larger,
        }
        match larger {
            NIL => self.largest = smaller,
            l => self.lists[l as usize].smaller = smaller,
        }
        self.free_lists.push(list);
    }

    /// Forgets held block `node`; returns its block.
    fn forget(&mut self, node: Link) -> DiskBlock {
        self.unlink(node);
        let block = self.held[node as usize].block;
        self.index.remove(&block);
        self.free_held.push(node);
        block
    }
}

impl Replacement for Lfu {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        let Some(&node) = self.index.get(&block) else {
            return;
        };
        let list = self.held[node as usize].list;
        let count = self.lists[list as usize].count;
        // The next list is made before the block leaves its own, which may then be freed.
        let next = self.list_after(list, count.saturating_add(1));
        self.unlink(node);
        self.append(node, next);
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        let list = self.list_after(NIL, 1);
        let held = Held {
            block,
            list,
            older: NIL,
            newer: NIL,
        };
        let node = match self.free_held.pop() {
            Some(node) => {
                self.held[node as usize] = held;
                node
            }
            None => {
                self.held.push(held);
                (self.held.len() - 1) as Link
            }
        };
        self.index.insert(block, node);
        self.append(node, list);
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        match self.smallest {
            NIL => None,
            list => Some(self.forget(self.lists[list as usize].oldest)),
        }
    }

    fn order(&self) -> Vec<DiskBlock> {
        let mut out = Vec::with_capacity(self.index.len());
        let mut list = self.largest;
        while list != NIL {
            let mut node = self.lists[list as usize].newest;
            while node != NIL {
                out.push(self.held[node as usize].block);
                node = self.held[node as usize].older;
            }
            list = self.lists[list as usize].smaller;
        }
        out
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        match self.index.get(&block) {
            Some(&node) => {
                self.forget(node);
                true
            }
            None => false,
        }
    }
}

/// LFU's configuration: it takes no options.
pub type Options = NoOptions<Lfu>;

#[cfg(test)]
mod tests {
    use super::super::buckets::Buckets;
    use super::super::testing::replay;
    use super::*;
    use proptest::prelude::*;

    /// Counts decide, and among equal counts the block that reached its count first leaves:
    /// 1 is hit twice, 2 and 3 once each (2 first), so 4 evicts 2, and 5 evicts 4 (count 1).
    #[test]
    fn the_least_counted_leaves_first_come_first_among_equals() {
        let mut lfu = Lfu::default();
        assert_eq!(replay(&mut lfu, 3, &[1, 2, 3, 1, 1, 2, 3, 4, 5]), 5);
        assert_eq!(lfu.order(), vec![1, 3, 5]);
    }

    proptest! {
        /// The lists keep the order of one ordered set keyed by (count, order of reaching it),
        /// as LFU-DA's [`Buckets`] keep it, whatever the hits, insertions, evictions and
        /// removals.
        #[test]
        fn the_lists_order_blocks_as_an_ordered_set(ops in proptest::collection::vec((0u8..4, 0u64..12), 0..200)) {
            let (mut lfu, mut set) = (Lfu::default(), Buckets::default());
            let touch = super::super::testing::touch();
            for (op, block) in ops {
                let held = set.freq(block);
                match (op, held) {
                    (0, Some(freq)) => {
                        lfu.on_hit(block, touch);
                        set.set(block, freq + 1);
                    }
                    (0 | 1, None) => {
                        lfu.on_insert(block, touch);
                        set.set(block, 1);
                    }
                    (2, _) => {
                        let expected = set.first_in(0, u64::MAX).map(|(_, b)| b);
                        if let Some(b) = expected {
                            set.remove(b);
                        }
                        prop_assert_eq!(lfu.evict(Duration::ZERO, block), expected);
                    }
                    _ => prop_assert_eq!(lfu.remove(block), set.remove(block)),
                }
                prop_assert_eq!(lfu.order(), set.order());
            }
        }
    }
}
