//! Strict LRU: every hit moves the block to the top. Not a policy the papers simulate (DULO
//! uses CLOCK), but the order DULO's Table 1 draws for its *traditional* column, so the worked
//! example can be checked row by row.
//!
//! Prefetched blocks enter at the top like demanded ones, as in Table 1
//! (row 5: `[X4 X3 X2 X1 D C B A]`).

use std::time::Duration;

use plan::evict::Eviction;

use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

/// Blocks ordered by the time of their last use: [`plan::evict::lru::Lru`], the one LRU that the
/// live page-cache budget also runs.
#[derive(Debug, Default)]
pub struct Lru(plan::evict::lru::Lru);

impl Replacement for Lru {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn owes_eviction(&self) -> bool {
        false
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        self.0.hit(block);
    }

    fn on_miss(&mut self, _block: DiskBlock, _how: Touch) {}

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        self.0.insert(block, true);
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        self.0.evict()
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.0.order()
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        self.0.remove(block)
    }
}

/// Strict LRU's configuration: it takes no options.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options;

impl Options {
    /// Reads `given`, which must be empty.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&[])?;
        Ok(Options)
    }
}

impl MakeReplacement for Options {
    fn build(&self, _geometry: CacheGeometry) -> Box<dyn Replacement> {
        Box::new(Lru::default())
    }
}
