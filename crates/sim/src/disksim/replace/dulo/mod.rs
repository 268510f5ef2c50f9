//! DULO, dual-locality caching over CLOCK (FAST'05 s3), as the disk-timed simulator's
//! replacement: the decisions are [`plan::evict::dulo`]'s (the one DULO, which the live
//! page-cache budget also runs); this file adapts them to the engine's [`Replacement`] calls.
//! A demand-fetched block enters young (Figure 2), a prefetched one not.

use std::time::Duration;

use plan::evict::Eviction;

use super::{CacheGeometry, Replacement, Touch};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::DiskBlock;
use crate::SimError;

/// DULO on the disk's blocks.
#[derive(Debug)]
pub struct Dulo(plan::evict::dulo::Dulo);

impl Dulo {
    /// DULO for a cache of `capacity` blocks with the given bank and evicting-section sizes in
    /// blocks (clamped as [`plan::evict::dulo`] says).
    pub fn new(capacity: usize, bank: usize, evicting: usize) -> Dulo {
        Dulo(plan::evict::dulo::Dulo::new(capacity, bank, evicting))
    }

    /// The current inflation value L.
    pub fn inflation(&self) -> f64 {
        self.0.inflation()
    }

    /// (sequencing bank, evicting section, correlation buffer) sizes in blocks, after clamping.
    pub fn geometry(&self) -> (usize, usize, usize) {
        self.0.geometry()
    }
}

impl Replacement for Dulo {
    fn on_hit(&mut self, block: DiskBlock, _how: Touch) {
        self.0.hit(block);
    }

    fn on_insert(&mut self, block: DiskBlock, how: Touch) {
        self.0.insert(block, !how.prefetched);
    }

    fn evict(&mut self, _now: Duration) -> Option<DiskBlock> {
        self.0.evict()
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.0.order()
    }
}

/// Registry constructor: options `bank` (bytes, default 8M) and `evict` (bytes, default 64M),
/// turned into blocks of the cache's block size.
pub fn build(spec: &PolicySpec, cache: CacheGeometry) -> Result<Box<dyn Replacement>, SimError> {
    spec.only(&["bank", "evict"])?;
    let block = cache.block_size.max(1);
    let bank = spec.bytes("bank", plan::evict::dulo::BANK_BYTES)? / block;
    let evict = spec.bytes("evict", plan::evict::dulo::EVICTING_BYTES)? / block;
    Ok(Box::new(Dulo::new(
        cache.capacity,
        usize::try_from(bank).unwrap_or(usize::MAX),
        usize::try_from(evict).unwrap_or(usize::MAX),
    )))
}
