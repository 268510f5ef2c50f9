//! DULO, dual-locality caching over CLOCK (Jiang, Ding, Chen, Chen, Zhang, FAST'05, s3): the
//! one implementation, called by the simulator's `dulo` replacement and the live page-cache
//! budget.
//!
//! The problem: CLOCK/LRU evicts by recency alone, so a random block (costly to fetch again:
//! one seek for one block) and a block of a long sequential run (cheap: one seek for many
//! blocks) leave alike. DULO keeps random blocks longer and lets long sequences go first.
//!
//! The stack (s3.1, Figure 1), top to bottom, in this file's fields:
//!
//! ```text
//!   top  | correlation buffer | fixed size: capacity - BANK_MAX - evicting size   `staging`
//!        | sequencing bank    | 0 .. BANK_MAX blocks that fell out of the buffer  `bank`
//!   bot  | evicting section   | sequences sorted by H, smallest H at the bottom   `evicting`
//! ```
//!
//! * A hit only marks the block young (CLOCK, s3.4). A miss looks at the bottom block: a young
//!   block loses its flag and goes back to the top; otherwise it is evicted and the inflation
//!   value becomes L = H(its sequence) (Figure 2).
//! * A block entering the top pushes the buffer's bottom block into the bank. When the bank
//!   holds BANK_MAX blocks, it is sequenced (s3.3): the bank clock ticks, every bank block
//!   records the time in the [`block_table::BlockTable`], and the bank's blocks, in disk order
//!   with their entries, are cut into sequences. A developing sequence stops before the next
//!   block when (1) the next block was not stamped now, (2) exactly one of the two has no
//!   earlier time, (3) both have earlier times differing by more than one, or (4) the sequence
//!   has 128 blocks. Each sequence gets H = L + 1/size; they are sorted by H and merged into
//!   the evicting section (s3.4, `refill_evicting_section`).
//!
//! Worked example (Table 1, 8 blocks, bank 4, evicting 4, buffer 0): after A B C D and X1 (with
//! X2-X4 read ahead) the section is, MRU first, `[D C B A X4 X3 X2 X1]` with H(A..D) = 1 and
//! H(X) = 1/4; the miss on Y1 evicts the Xs (L = 1/4) and the Ys come in with H = 1/2, below
//! A-D; the miss on X1 at the 13th reference evicts the Ys, so A-D are still cached at 17-20.
//!
//! Deviations and readings:
//! * Stop rule 1 reads, in the text we have, "was accessed in the current clock time"; a
//!   sequence is made of the blocks stamped now, so we read it as "was *not* accessed".
//! * Rule 3's "last access times" are the times before the current one.
//! * Figure 2 counts evicting-section losses and refills before placing the new block; we
//!   refill when the bank holds BANK_MAX blocks, i.e. after the new block is placed. The count
//!   is the same (every loss pushes one block into the bank), and this order is the one that
//!   reproduces Table 1 (the last Y joins its sequence).
//! * Ties in H (sequences formed together) leave in the bank's recency order, older first, and
//!   after the sequences already in the section; with every sequence of size 1 the policy is
//!   then exactly CLOCK (s3.4: "the algorithm degenerates into the LRU replacement").
//! * Sizes: bank = min(bank, capacity / 2), evicting = min(evicting, capacity - bank), both at
//!   least one block; the buffer gets the rest (possibly 0). While the evicting section is
//!   empty (warm-up with tiny caches) it is refilled from whatever the bank holds.
//! * Demand-fetched blocks enter young (Figure 2), prefetched ones not (as in [`super::clock`]).
//! * Blocks are numbers whose neighbours on disk are one apart: disk blocks in the simulator,
//!   file pages under a per-file prefix in the live budget (file offsets stand in for physical
//!   extents there).
//! * The young flags are kept as ranges of blocks ([`rangemap::RangeSet`]), and a sequence as
//!   the range of its blocks still cached (its blocks are adjacent by stop rule 1): a read of
//!   many pages marks them young in one step, and the bottom of the stack is looked at a run
//!   of young (or not young) blocks at a time. The decisions are the per-block ones.

pub mod block_table;

use std::collections::VecDeque;
use std::ops::Range;

use rangemap::RangeSet;

use super::eviction::{Block, Eviction};
use block_table::{BlockTable, Bte};

/// Longest sequence (stop rule 4).
pub const MAX_SEQUENCE: usize = 128;
/// Default sequencing bank, in bytes (turned into blocks of the cache's block size).
pub const BANK_BYTES: u64 = 8 << 20;
/// Default evicting section, in bytes.
pub const EVICTING_BYTES: u64 = 64 << 20;

/// A sequence in the evicting section.
#[derive(Clone, Debug, PartialEq)]
struct Sequence {
    /// H = L + 1/size at admission.
    h: f64,
    /// Blocks still cached (adjacent, in disk order); the first leaves first.
    blocks: Range<Block>,
}

/// DULO's state.
#[derive(Debug)]
pub struct Dulo {
    buffer_max: usize,
    bank_max: usize,
    evicting_min: usize,
    /// Correlation buffer; back = top.
    staging: VecDeque<Block>,
    /// Sequencing bank; front = oldest.
    bank: VecDeque<Block>,
    /// Evicting section; front = bottom (smallest H).
    evicting: VecDeque<Sequence>,
    young: RangeSet<Block>,
    /// Blocks known not to be young since the bottom was last looked at (cut short when a
    /// block in it is marked young): the blocks after a victim leave without a look.
    clear: Range<Block>,
    table: BlockTable,
    bank_clock: u32,
    inflation: f64,
}

impl Dulo {
    /// DULO for a cache of `capacity` blocks with the given bank and evicting-section sizes in
    /// blocks (clamped as the module doc says).
    pub fn new(capacity: usize, bank: usize, evicting: usize) -> Dulo {
        let bank_max = bank.min(capacity / 2).max(1);
        let evicting_min = evicting.min(capacity.saturating_sub(bank_max)).max(1);
        Dulo {
            buffer_max: capacity.saturating_sub(bank_max + evicting_min),
            bank_max,
            evicting_min,
            staging: VecDeque::new(),
            bank: VecDeque::new(),
            evicting: VecDeque::new(),
            young: RangeSet::new(),
            clear: 0..0,
            table: BlockTable::default(),
            bank_clock: 0,
            inflation: 0.0,
        }
    }

    /// The current inflation value L.
    pub fn inflation(&self) -> f64 {
        self.inflation
    }

    /// (sequencing bank, evicting section, correlation buffer) sizes in blocks, after clamping.
    pub fn geometry(&self) -> (usize, usize, usize) {
        (self.bank_max, self.evicting_min, self.buffer_max)
    }

    /// Puts `block` at the top of the stack; the buffer's overflow goes to the bank, and a full
    /// bank is sequenced into the evicting section (then returns true).
    fn push_top(&mut self, block: Block) -> bool {
        self.staging.push_back(block);
        while self.staging.len() > self.buffer_max {
            let Some(bottom) = self.staging.pop_front() else {
                break;
            };
            self.bank.push_back(bottom);
        }
        if self.bank.len() >= self.bank_max {
            self.refill();
            return true;
        }
        false
    }

    /// Flags `blocks` young.
    fn mark_young(&mut self, blocks: Range<Block>) {
        if blocks.is_empty() {
            return;
        }
        if blocks.start < self.clear.end && self.clear.start < blocks.end {
            self.clear.end = blocks.start.max(self.clear.start);
        }
        self.young.insert(blocks);
    }

    /// The bottom block `block` is young up to the end of the returned range, or not young up
    /// to its end (false).
    fn look_at(&mut self, block: Block) -> (bool, Block) {
        if self.clear.contains(&block) {
            return (false, self.clear.end);
        }
        if let Some(young) = self.young.get(&block) {
            return (true, young.end);
        }
        // Not young, so the first young range reaching past `block` starts after it.
        let after = block..Block::MAX;
        let next_young = match after.is_empty() {
            true => None,
            false => self.young.overlapping(after).next().map(|r| r.start),
        };
        self.clear = block..next_young.unwrap_or(Block::MAX);
        (false, self.clear.end)
    }

    /// The bottom sequence starts with young blocks up to `end`: each loses its flag and goes
    /// to the top, in order, until a refill may have put another sequence at the bottom.
    fn recycle_young(&mut self, end: Block) {
        let Some(first) = self.evicting.front().map(|s| s.blocks.start) else {
            return;
        };
        let mut at = first;
        while let Some(sequence) = self.evicting.front_mut() {
            if at >= end || sequence.blocks.start != at {
                break;
            }
            sequence.blocks.start += 1;
            if sequence.blocks.is_empty() {
                self.evicting.pop_front();
            }
            at += 1;
            if self.push_top(at - 1) {
                break;
            }
        }
        if first < at {
            self.young.remove(first..at);
        }
    }

    /// Sequences the bank and merges the sequences into the evicting section (Figure 2,
    /// `refill_evicting_section`).
    fn refill(&mut self) {
        if self.bank.is_empty() {
            return;
        }
        self.bank_clock += 1;
        let now = self.bank_clock;
        // The bank's blocks in disk order, each with its newest position in the bank (a stable
        // sort, which merges the bank's ascending runs of sequential blocks).
        let mut bank: Vec<(Block, usize)> = self
            .bank
            .drain(..)
            .enumerate()
            .map(|(i, b)| (b, i))
            .collect();
        bank.sort_by_key(|&(block, _)| block);
        bank.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1 = later.1;
            }
            same
        });
        let (blocks, newest): (Vec<Block>, Vec<usize>) = bank.into_iter().unzip();
        let entries = self.table.record(&blocks, now);
        let stamped: Vec<(Block, Bte)> = blocks.into_iter().zip(entries).collect();
        let mut formed: Vec<(f64, usize, Sequence)> = form_sequences(&stamped)
            .map(|run| {
                let h = self.inflation + 1.0 / run.len() as f64;
                let newest = newest[run.clone()].iter().max();
                let blocks = stamped[run.start].0..stamped[run.end - 1].0 + 1;
                (h, newest.copied().unwrap_or(0), Sequence { h, blocks })
            })
            .collect();
        formed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let old = std::mem::take(&mut self.evicting);
        self.evicting = merge_by_h(old, formed.into_iter().map(|(_, _, s)| s));
    }
}

/// Cuts blocks stamped now (disk order, with their entries) into sequences by the four stop
/// rules of s3.3: the index ranges of `stamped` they cover, in order.
fn form_sequences(stamped: &[(u64, Bte)]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    (1..=stamped.len()).filter_map(move |end| {
        let joins = stamped.get(end).is_some_and(|&(block, bte)| {
            let (prev_block, prev_bte) = stamped[end - 1];
            block == prev_block + 1 && same_history(prev_bte, bte) && end - start < MAX_SEQUENCE
        });
        if joins {
            return None;
        }
        let run = start..end;
        start = end;
        Some(run)
    })
}

/// Stop rules 2 and 3: both blocks are new, or both were seen before at times at most one
/// bank tick apart.
fn same_history(a: Bte, b: Bte) -> bool {
    match (a.previous, b.previous) {
        (0, 0) => true,
        (0, _) | (_, 0) => false,
        (x, y) => x.abs_diff(y) <= 1,
    }
}

/// Stable merge by H: on ties the sequences already in the section stay below the new ones.
fn merge_by_h(old: VecDeque<Sequence>, new: impl Iterator<Item = Sequence>) -> VecDeque<Sequence> {
    let mut merged = VecDeque::with_capacity(old.len());
    let mut old = old.into_iter().peekable();
    for sequence in new {
        while let Some(o) = old.next_if(|o| o.h <= sequence.h) {
            merged.push_back(o);
        }
        merged.push_back(sequence);
    }
    merged.extend(old);
    merged
}

impl Eviction for Dulo {
    fn hit(&mut self, block: Block) {
        self.hit_range(block..block + 1);
    }

    fn hit_range(&mut self, blocks: Range<Block>) {
        self.mark_young(blocks);
    }

    fn insert(&mut self, block: Block, young: bool) {
        self.insert_range(block..block + 1, young);
    }

    fn insert_range(&mut self, blocks: Range<Block>, young: bool) {
        if young {
            self.mark_young(blocks.clone());
        }
        for block in blocks {
            self.push_top(block);
        }
    }

    fn evict(&mut self) -> Option<Block> {
        loop {
            if self.evicting.is_empty() {
                if self.bank.is_empty() {
                    let bottom = self.staging.pop_front()?;
                    self.bank.push_back(bottom);
                }
                self.refill();
            }
            let sequence = self.evicting.front()?;
            let block = sequence.blocks.start;
            if sequence.blocks.is_empty() {
                self.evicting.pop_front();
                continue;
            }
            let (young, end) = self.look_at(block);
            if young {
                self.recycle_young(end);
                continue;
            }
            let sequence = self.evicting.front_mut()?;
            self.inflation = sequence.h;
            sequence.blocks.start += 1;
            if sequence.blocks.is_empty() {
                self.evicting.pop_front();
            }
            return Some(block);
        }
    }

    fn order(&self) -> Vec<Block> {
        let staging = self.staging.iter().rev();
        let bank = self.bank.iter().rev();
        let evicting = self
            .evicting
            .iter()
            .rev()
            .flat_map(|s| s.blocks.clone().rev());
        staging.chain(bank).copied().chain(evicting).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evict::clock::Clock;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn bte(previous: u32) -> Bte {
        Bte { last: 9, previous }
    }

    #[test]
    fn stop_rules_cut_sequences() {
        let stamped = [
            (10, bte(0)),
            (11, bte(0)),
            (12, bte(5)),
            (13, bte(6)),
            (14, bte(8)),
            (16, bte(8)),
        ];
        let cut: Vec<Vec<u64>> = form_sequences(&stamped)
            .map(|run| stamped[run].iter().map(|&(b, _)| b).collect())
            .collect();
        assert_eq!(cut, vec![vec![10, 11], vec![12, 13], vec![14], vec![16]]);
    }

    #[test]
    fn sequences_stop_at_128_blocks() {
        let stamped: Vec<(u64, Bte)> = (0..300).map(|b| (b, bte(0))).collect();
        let sizes: Vec<usize> = form_sequences(&stamped).map(|run| run.len()).collect();
        assert_eq!(sizes, vec![128, 128, 44]);
    }

    #[test]
    fn sizes_are_clamped_to_the_cache() {
        assert_eq!(Dulo::new(8, 100, 100).geometry(), (4, 4, 0));
        assert_eq!(Dulo::new(100, 8, 64).geometry(), (8, 64, 28));
        assert_eq!(Dulo::new(1, 8, 64).geometry(), (1, 1, 0));
    }

    #[test]
    fn long_sequences_sink_below_random_blocks() {
        let mut dulo = Dulo::new(8, 4, 4);
        for block in [100, 200, 300, 400, 0, 1, 2, 3] {
            dulo.insert(block, true);
        }
        assert_eq!(dulo.order(), vec![400, 300, 200, 100, 3, 2, 1, 0]);
        assert_eq!(dulo.evict(), Some(0));
        assert_eq!(dulo.inflation(), 0.25);
    }

    /// Table 1 of the paper (8 blocks, bank 4, evicting section 4): A B C D are single blocks,
    /// X and Y four adjacent blocks each, read ahead whole at their first block. DULO fetches
    /// at references 1-5, 9 and 13 only, and ends holding A-D and X.
    #[test]
    fn table_1_fetches_seven_times() {
        let (a, b, c, d, x, y) = (100, 200, 300, 400, 500, 600);
        let references = [
            a,
            b,
            c,
            d,
            x,
            x + 1,
            x + 2,
            x + 3,
            y,
            y + 1,
            y + 2,
            y + 3,
            x,
            x + 1,
            x + 2,
            x + 3,
            a,
            b,
            c,
            d,
        ];
        let mut dulo = Dulo::new(8, 4, 4);
        let mut cached = BTreeSet::new();
        let mut fetched = Vec::new();
        for (i, &block) in references.iter().enumerate() {
            if cached.contains(&block) {
                dulo.hit(block);
                continue;
            }
            fetched.push(i + 1);
            let ahead = if block == x || block == y { 4 } else { 1 };
            for (k, page) in (block..block + ahead).enumerate() {
                if cached.len() == 8 {
                    cached.remove(&dulo.evict().unwrap());
                }
                dulo.insert(page, k == 0);
                cached.insert(page);
            }
        }
        assert_eq!(fetched, vec![1, 2, 3, 4, 5, 9, 13]);
        let end: BTreeSet<Block> = [a, b, c, d, x, x + 1, x + 2, x + 3].into();
        assert_eq!(cached, end);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// With every sequence of one block DULO is exactly its base, CLOCK (s3.4: "when all
        /// sequences are random blocks, the algorithm degenerates into the LRU replacement"):
        /// on references to blocks no two of which are adjacent, the same stack after every
        /// reference and the same victims, for any cache, bank and evicting-section size.
        #[test]
        fn without_sequences_dulo_is_clock(
            capacity in 2usize..40,
            bank in 1usize..20,
            evicting in 1usize..40,
            references in prop::collection::vec((0u64..60, any::<bool>()), 1..400),
        ) {
            let mut dulo = Dulo::new(capacity, bank, evicting);
            let mut clock = Clock::default();
            let mut cached = BTreeSet::new();
            for (i, &(id, demanded)) in references.iter().enumerate() {
                let block = id * 2;
                if cached.contains(&block) {
                    dulo.hit(block);
                    clock.hit(block);
                } else {
                    if cached.len() == capacity {
                        let victim = clock.evict();
                        prop_assert_eq!(dulo.evict(), victim, "reference {}", i);
                        cached.remove(&victim.unwrap());
                    }
                    dulo.insert(block, demanded);
                    clock.insert(block, demanded);
                    cached.insert(block);
                }
                prop_assert_eq!(dulo.order(), clock.order(), "reference {}", i);
            }
        }
    }
}
