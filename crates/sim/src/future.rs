//! Knowledge of the future for the offline policies (OPT, aggressive, conservative, ...).
//!
//! Cao et al. study the offline problem: the whole reference string is known. A [`Future`] is
//! the reference string in memory with, for every position, the position of the next reference
//! to the same block, computed in one backward pass (O(n) time, two `u32` per reference). An
//! [`Oracle`] follows the cursor during a run and answers "when is block b referenced next?"
//! in O(1) for any block, cached or not. The string itself is a [`RefString`].
//!
//! Deviations: positions are `u32`, so a trace is limited to 4,294,967,294 references.

use crate::cache::{Block, Interner};
use crate::error::TraceError;
pub use crate::refstring::{Pos, NEVER};
use crate::refstring::{RefString, Times};
use crate::time::Time;
use crate::trace::Reference;
use crate::SimError;

/// A whole reference string with next-reference links.
#[derive(Clone, Debug)]
pub struct Future {
    string: RefString,
    next_use: Vec<Pos>,
    first_use: Vec<Pos>,
}

impl Future {
    /// Reads a whole trace into memory and links each reference to the next one of its block.
    /// Compute times are kept if every reference has one. A trace longer than the memory
    /// available can hold (or than 2^32 - 2 references) is refused when it gets there.
    pub fn load<I>(references: I) -> Result<Future, SimError>
    where
        I: IntoIterator<Item = Result<Reference, TraceError>>,
    {
        Ok(Future::link(RefString::load(references, Times::Keep)?))
    }

    /// A reference string without timing, from trace block numbers.
    pub fn from_blocks(blocks: &[u64]) -> Future {
        Future::link(RefString::from_blocks(blocks))
    }

    /// Builds the next-reference links of `string` in one backward pass.
    pub fn link(string: RefString) -> Future {
        let mut first_use = vec![NEVER; string.distinct()];
        let mut next_use = vec![NEVER; string.len()];
        for (pos, &block) in string.blocks().iter().enumerate().rev() {
            let slot = &mut first_use[block as usize];
            next_use[pos] = *slot;
            *slot = pos as Pos;
        }
        Future {
            string,
            next_use,
            first_use,
        }
    }

    /// The reference string.
    pub fn string(&self) -> &RefString {
        &self.string
    }

    /// Number of references.
    pub fn len(&self) -> usize {
        self.string.len()
    }

    /// Whether the trace has no reference.
    pub fn is_empty(&self) -> bool {
        self.string.is_empty()
    }

    /// Number of distinct blocks.
    pub fn distinct(&self) -> usize {
        self.string.distinct()
    }

    /// The block referenced at `pos`.
    pub fn block_at(&self, pos: Pos) -> Block {
        self.string.block_at(pos)
    }

    /// The next position after `pos` that references the same block, or [`NEVER`].
    pub fn next_use(&self, pos: Pos) -> Pos {
        self.next_use[pos as usize]
    }

    /// The recorded compute time of the reference at `pos`, if the trace has timestamps.
    pub fn think(&self, pos: Pos) -> Option<Time> {
        self.string.think(pos)
    }

    /// Whether every reference has a recorded compute time.
    pub fn timed(&self) -> bool {
        self.string.timed()
    }

    /// The block-number mapping of this trace.
    pub fn ids(&self) -> &Interner {
        self.string.ids()
    }

    /// The dense block ids in reference order.
    pub fn blocks(&self) -> &[Block] {
        self.string.blocks()
    }

    /// Number of phases for a cache of `capacity` blocks (section 3.4.2): a phase ends right
    /// before the reference to the (capacity+1)-st distinct block since the phase began.
    pub fn phases(&self, capacity: usize) -> usize {
        if self.is_empty() {
            return 0;
        }
        let mut seen_in_phase = vec![0usize; self.distinct()];
        let (mut phase, mut distinct) = (1usize, 0usize);
        for &block in self.blocks() {
            let mark = &mut seen_in_phase[block as usize];
            if *mark != phase {
                if distinct == capacity {
                    phase += 1;
                    distinct = 0;
                }
                seen_in_phase[block as usize] = phase;
                distinct += 1;
            }
        }
        phase
    }
}

/// The next reference of every block, as seen from the cursor of a run.
#[derive(Clone, Debug)]
pub struct Oracle<'a> {
    future: &'a Future,
    next_ref: Vec<Pos>,
}

impl<'a> Oracle<'a> {
    /// An oracle whose cursor is at the start of `future`.
    pub fn new(future: &'a Future) -> Self {
        Oracle {
            future,
            next_ref: future.first_use.clone(),
        }
    }

    /// The position of the next reference to `block` at or after the cursor; [`NEVER`] for
    /// blocks that are not referenced again (including blocks not in the trace).
    pub fn next_ref(&self, block: Block) -> Pos {
        self.next_ref.get(block as usize).copied().unwrap_or(NEVER)
    }

    /// The reference string.
    pub fn future(&self) -> &'a Future {
        self.future
    }

    /// Moves the cursor past position `pos`.
    pub(crate) fn advance(&mut self, pos: Pos) {
        let block = self.future.block_at(pos);
        self.next_ref[block as usize] = self.future.next_use(pos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_each_reference_to_the_next_of_its_block() {
        let future = Future::from_blocks(&[7, 8, 7, 9, 8]);
        let next: Vec<Pos> = (0..5).map(|p| future.next_use(p)).collect();
        assert_eq!(next, [2, 4, NEVER, NEVER, NEVER]);
        let mut oracle = Oracle::new(&future);
        assert_eq!(oracle.next_ref(0), 0);
        oracle.advance(0);
        assert_eq!(
            (oracle.next_ref(0), oracle.next_ref(1), oracle.next_ref(99)),
            (2, 1, NEVER)
        );
    }

    /// Section 3.4.2: with k = 2, A B A C B C D has phases {A B A}, {C B C}, {D}.
    #[test]
    fn phases_end_before_the_k_plus_first_distinct_block() {
        let future = Future::from_blocks(&[0, 1, 0, 2, 1, 2, 3]);
        assert_eq!(
            (future.phases(2), future.phases(3), future.phases(4)),
            (3, 2, 1)
        );
    }
}
