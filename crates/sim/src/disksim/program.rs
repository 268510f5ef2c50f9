//! Where the loop reads its streams' references from ([`Program`]): a workload's list of steps
//! ([`Workload`]), or Cao's adapter, which makes each step from a reference string when asked
//! ([`super::cao`]).

use std::time::Duration;

use super::workload::{Layout, Step, Workload};
use crate::cache::Interner;

/// What the loop reads its streams' references from, where they are: a workload's list of
/// steps, or a program that makes each step when asked (Cao's adapter reads a reference
/// string in place, building no list). Every step it gives lies in its layout.
pub(crate) trait Program {
    /// Where the files are.
    fn layout(&self) -> &Layout;
    /// How many concurrent streams.
    fn streams(&self) -> usize;
    /// References of all streams together.
    fn references(&self) -> u64;
    /// Whether its disk blocks are numbered densely from 0 (as Cao's adapter numbers the
    /// blocks it meets), so the loop keeps their state in a vector that grows with them.
    fn dense_blocks(&self) -> bool {
        false
    }
    /// Reference `index` of `stream`, if it has one (the loop asks for a stream's references
    /// in order, looking at most [`super::engine::LOOKAHEAD`] ahead of its current one and one behind it);
    /// a program that numbers its blocks as it reads them numbers them in `ids`.
    fn step(&self, stream: usize, index: usize, ids: &mut Interner) -> Option<Step>;
    /// Think time of `stream` after its last reference (a program's work after its last
    /// read: Cao's realistic model counts the last reference's compute time); asked once the
    /// stream has ended.
    fn last_think(&self, _stream: usize) -> Duration {
        Duration::ZERO
    }
}

impl Program for Workload {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn streams(&self) -> usize {
        self.streams.len()
    }

    fn references(&self) -> u64 {
        self.streams.iter().map(|s| s.len() as u64).sum()
    }

    fn step(&self, stream: usize, index: usize, _ids: &mut Interner) -> Option<Step> {
        self.streams[stream].get(index).copied()
    }
}
