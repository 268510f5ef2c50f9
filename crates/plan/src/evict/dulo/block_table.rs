//! DULO's block table (FAST'05 s3.2): per disk block, the bank-clock times of its two most
//! recent passes through the sequencing bank, in a multi-level table like a page table.
//!
//! ```text
//!   root map (block >> 36) -> dir (bits 27..36) -> dir (18..27) -> dir (9..18) -> leaf (0..9)
//!   leaf entry (BTE): last, previous
//! ```
//!
//! Deviations: the paper stamps every directory with the latest time below it and finds the
//! bank's blocks in disk order by walking the directories stamped now (s3.3); the caller sorts
//! the bank instead (at most the bank's size of blocks, where the walk visits every 512-entry
//! leaf the bank touched) and [`BlockTable::record`] returns each block's entry: the same
//! blocks with the same entries in the same order. The paper reclaims directories older than
//! a threshold under memory pressure; reclamation is not implemented (a table costs about 8
//! bytes per distinct block ever seen, 16 MiB for a pass over 8 GiB of 4 KiB pages).

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
    Dir(Vec<Option<Node>>),
    Leaf(Vec<Bte>),
}

impl Node {
    fn new(level: u32) -> Node {
        if level == 0 {
            Node::Leaf(vec![Bte::default(); FANOUT])
        } else {
            Node::Dir((0..FANOUT).map(|_| None).collect())
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
    /// Records that `blocks` passed through the bank at time `now` (the oldest of each one's
    /// two times is dropped); returns their new entries, in order. Blocks of one leaf in a row
    /// (a sorted bank's sequential runs) share one descent.
    pub fn record(&mut self, blocks: &[u64], now: u32) -> Vec<Bte> {
        let mut out = Vec::with_capacity(blocks.len());
        for run in blocks.chunk_by(|a, b| a >> BITS == b >> BITS) {
            let leaf = self.leaf(run[0]);
            for &block in run {
                let bte = &mut leaf[(block as usize) & (FANOUT - 1)];
                bte.previous = bte.last;
                bte.last = now;
                out.push(*bte);
            }
        }
        out
    }

    /// The leaf entries of `block`'s 512-block group, made if new.
    fn leaf(&mut self, block: u64) -> &mut [Bte] {
        let mut node = self
            .roots
            .entry(block >> COVERED)
            .or_insert_with(|| Node::new(DIR_LEVELS));
        let mut level = DIR_LEVELS;
        loop {
            let slot = ((block >> (BITS * level)) as usize) & (FANOUT - 1);
            match node {
                Node::Leaf(entries) => return entries,
                Node::Dir(children) => {
                    node = children[slot].get_or_insert_with(|| Node::new(level - 1));
                }
            }
            level -= 1;
        }
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
                Node::Leaf(entries) => return entries[slot],
                Node::Dir(children) => match &children[slot] {
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
        /// The table agrees with a flat map of each block's last two times, and each record
        /// returns the block's new entry.
        #[test]
        fn matches_a_flat_map(rounds in prop::collection::vec(
            prop::collection::btree_set(0u64..1 << 42, 1..20), 1..8)) {
            let mut table = BlockTable::default();
            let mut flat: BTreeMap<u64, Bte> = BTreeMap::new();
            for (i, blocks) in rounds.iter().enumerate() {
                let now = i as u32 + 1;
                let mut expected = Vec::new();
                for &b in blocks {
                    let e = flat.entry(b).or_default();
                    *e = Bte { last: now, previous: e.last };
                    expected.push(*e);
                }
                let blocks: Vec<u64> = blocks.iter().copied().collect();
                prop_assert_eq!(table.record(&blocks, now), expected);
            }
            for (&b, &e) in &flat {
                prop_assert_eq!(table.entry(b), e);
            }
        }
    }

    #[test]
    fn keeps_two_times() {
        let mut table = BlockTable::default();
        table.record(&[1 << 40, 700_000, 3, 2], 1);
        assert_eq!(
            table.record(&[3, 1 << 40], 2),
            vec![
                Bte {
                    last: 2,
                    previous: 1
                };
                2
            ]
        );
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
    }
}
