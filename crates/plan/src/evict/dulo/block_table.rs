//! DULO's block table (FAST'05 s3.2): per disk block, the bank-clock times of its two most
//! recent passes through the sequencing bank, in a multi-level table like a page table whose
//! directory entries carry the latest time among their children.
//!
//! ```text
//!   root map (block >> 36) -> dir (bits 27..36) -> dir (18..27) -> dir (9..18) -> leaf (0..9)
//!   every dir/leaf: stamp = newest time below it;  leaf entry (BTE): last, previous
//! ```
//!
//! Collecting the blocks stamped with the current time descends only into directories whose
//! stamp is the current time (s3.3, "the traversal goes into only those directories containing
//! the blocks in the bank"), and yields them in disk order.
//!
//! Deviations: the paper reclaims directories older than a threshold under memory pressure;
//! reclamation is not implemented (a table costs about 8 bytes per distinct block ever seen,
//! 16 MiB for a pass over 8 GiB of 4 KiB pages).

use rustc_hash::FxHashMap;

/// Bits of block number resolved per level.
const BITS: u32 = 9;
/// Entries per directory or leaf.
const FANOUT: usize = 1 << BITS;
/// Directory levels under the root map.
const DIR_LEVELS: u32 = 3;
/// Block-number bits covered below the root map.
const COVERED: u32 = BITS * (DIR_LEVELS + 1);

/// One block's entry: the last two bank-clock times (0 = never).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bte {
    /// Most recent time.
    pub last: u32,
    /// The time before it.
    pub previous: u32,
}

enum Node {
    Dir {
        stamp: u32,
        children: Vec<Option<Node>>,
    },
    Leaf {
        stamp: u32,
        entries: Vec<Bte>,
    },
}

impl Node {
    fn new(level: u32) -> Node {
        if level == 0 {
            Node::Leaf {
                stamp: 0,
                entries: vec![Bte::default(); FANOUT],
            }
        } else {
            Node::Dir {
                stamp: 0,
                children: (0..FANOUT).map(|_| None).collect(),
            }
        }
    }

    fn stamp(&self) -> u32 {
        match self {
            Node::Dir { stamp, .. } | Node::Leaf { stamp, .. } => *stamp,
        }
    }

    /// Records time `now` for `block` below this node at `level`.
    fn record(&mut self, level: u32, block: u64, now: u32) {
        let slot = ((block >> (BITS * level)) as usize) & (FANOUT - 1);
        match self {
            Node::Leaf { stamp, entries } => {
                *stamp = now;
                let bte = &mut entries[slot];
                bte.previous = bte.last;
                bte.last = now;
            }
            Node::Dir { stamp, children } => {
                *stamp = now;
                children[slot]
                    .get_or_insert_with(|| Node::new(level - 1))
                    .record(level - 1, block, now);
            }
        }
    }

    /// Appends the blocks stamped `now` under this node (whose first block is `base`).
    fn collect(&self, level: u32, base: u64, now: u32, out: &mut Vec<(u64, Bte)>) {
        if self.stamp() != now {
            return;
        }
        match self {
            Node::Leaf { entries, .. } => out.extend(
                entries
                    .iter()
                    .enumerate()
                    .filter(|(_, bte)| bte.last == now)
                    .map(|(i, bte)| (base + i as u64, *bte)),
            ),
            Node::Dir { children, .. } => {
                for (i, child) in children.iter().enumerate() {
                    if let Some(child) = child {
                        let child_base = base + ((i as u64) << (BITS * level));
                        child.collect(level - 1, child_base, now, out);
                    }
                }
            }
        }
    }
}

/// The block table of one disk.
#[derive(Default)]
pub struct BlockTable {
    roots: FxHashMap<u64, Node>,
}

impl std::fmt::Debug for BlockTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlockTable({} root directories)", self.roots.len())
    }
}

impl BlockTable {
    /// Records that `block` passed through the bank at time `now` (the oldest of its two times
    /// is dropped).
    pub fn record(&mut self, block: u64, now: u32) {
        self.roots
            .entry(block >> COVERED)
            .or_insert_with(|| Node::new(DIR_LEVELS))
            .record(DIR_LEVELS, block, now);
    }

    /// The blocks stamped `now`, in disk order, with their entries. `now` must be the newest
    /// time recorded (directories keep only the newest time below them).
    pub fn stamped(&self, now: u32) -> Vec<(u64, Bte)> {
        let mut tops: Vec<u64> = self
            .roots
            .iter()
            .filter(|(_, node)| node.stamp() == now)
            .map(|(&top, _)| top)
            .collect();
        tops.sort_unstable();
        let mut out = Vec::new();
        for top in tops {
            self.roots[&top].collect(DIR_LEVELS, top << COVERED, now, &mut out);
        }
        out
    }

    /// The entry of `block` (all zero if never recorded).
    pub fn entry(&self, block: u64) -> Bte {
        let Some(mut node) = self.roots.get(&(block >> COVERED)) else {
            return Bte::default();
        };
        let mut level = DIR_LEVELS;
        loop {
            let slot = ((block >> (BITS * level)) as usize) & (FANOUT - 1);
            match node {
                Node::Leaf { entries, .. } => return entries[slot],
                Node::Dir { children, .. } => match &children[slot] {
                    Some(child) => node = child,
                    None => return Bte::default(),
                },
            }
            level -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// The table agrees with a flat map of each block's last two times, and the walk
        /// finds exactly the blocks of the newest time, in order.
        #[test]
        fn matches_a_flat_map(rounds in prop::collection::vec(
            prop::collection::btree_set(0u64..1 << 42, 1..20), 1..8)) {
            let mut table = BlockTable::default();
            let mut flat: BTreeMap<u64, Bte> = BTreeMap::new();
            for (i, blocks) in rounds.iter().enumerate() {
                let now = i as u32 + 1;
                for &b in blocks {
                    table.record(b, now);
                    let e = flat.entry(b).or_default();
                    *e = Bte { last: now, previous: e.last };
                }
                let expected: Vec<(u64, Bte)> = flat
                    .iter()
                    .filter(|(_, e)| e.last == now)
                    .map(|(&b, &e)| (b, e))
                    .collect();
                prop_assert_eq!(table.stamped(now), expected);
            }
            for (&b, &e) in &flat {
                prop_assert_eq!(table.entry(b), e);
            }
        }
    }

    #[test]
    fn keeps_two_times_and_finds_current_blocks_in_disk_order() {
        let mut table = BlockTable::default();
        for block in [1 << 40, 700_000, 3, 2] {
            table.record(block, 1);
        }
        table.record(3, 2);
        table.record(1 << 40, 2);
        assert_eq!(
            table.entry(3),
            Bte {
                last: 2,
                previous: 1
            }
        );
        assert_eq!(
            table.entry(2),
            Bte {
                last: 1,
                previous: 0
            }
        );
        assert_eq!(table.entry(4), Bte::default());
        let now: Vec<u64> = table.stamped(2).iter().map(|&(b, _)| b).collect();
        assert_eq!(now, vec![3, 1 << 40]);
    }
}
