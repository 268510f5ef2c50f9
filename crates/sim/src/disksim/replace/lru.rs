//! Strict LRU: every hit moves the block to the top. Not a policy the papers simulate (DULO
//! uses CLOCK), but the order DULO's Table 1 draws for its *traditional* column, so the worked
//! example can be checked row by row.
//!
//! Deviations: none. Prefetched blocks enter at the top like demanded ones, as in Table 1
//! (row 5: `[X4 X3 X2 X1 D C B A]`).

use std::collections::BTreeMap;
use std::time::Duration;

use rustc_hash::FxHashMap;

use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

/// Blocks ordered by the time of their last use.
#[derive(Debug, Default)]
pub struct Lru {
    by_use: BTreeMap<u64, DiskBlock>,
    last_use: FxHashMap<DiskBlock, u64>,
    tick: u64,
}

impl Lru {
    fn touch_top(&mut self, block: DiskBlock) {
        if let Some(old) = self.last_use.insert(block, self.tick) {
            self.by_use.remove(&old);
        }
        self.by_use.insert(self.tick, block);
        self.tick += 1;
    }
}

impl Replacement for Lru {
    fn prefetch_ceiling(&self) -> Option<usize> {
        None
    }

    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        self.touch_top(block);
    }

    fn on_insert(&mut self, block: DiskBlock, _how: Touch) {
        self.touch_top(block);
    }

    fn evict(&mut self, _now: Duration) -> Option<DiskBlock> {
        let (_, block) = self.by_use.pop_first()?;
        self.last_use.remove(&block);
        Some(block)
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.by_use.values().rev().copied().collect()
    }

    fn remove(&mut self, block: DiskBlock) -> bool {
        match self.last_use.remove(&block) {
            Some(tick) => self.by_use.remove(&tick).is_some(),
            None => false,
        }
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
