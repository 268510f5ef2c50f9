//! DULO, dual-locality caching over CLOCK (FAST'05 s3), as the disk-timed simulator's
//! replacement: the decisions are [`plan::evict::dulo`]'s (the one DULO, which the live
//! page-cache budget also runs); this file adapts them to the engine's [`Replacement`] calls.
//! A demand-fetched block enters young (Figure 2), a prefetched one not.

use std::time::Duration;

use plan::evict::Eviction;

use super::{CacheGeometry, MakeReplacement, Replacement, Touch};
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
    fn remove(&mut self, _block: DiskBlock) -> bool {
        false
    }

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

    fn on_insert(&mut self, block: DiskBlock, how: Touch) {
        self.0.insert(block, !how.prefetched);
    }

    fn evict(&mut self, _now: Duration, _incoming: DiskBlock) -> Option<DiskBlock> {
        self.0.evict()
    }

    fn order(&self) -> Vec<DiskBlock> {
        self.0.order()
    }
}

/// DULO's configuration: options `bank` (bytes, default 8M) and `evict` (bytes, default 64M),
/// turned into blocks of the cache's block size.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The bank in bytes.
    pub bank: u64,
    /// The evicting section in bytes.
    pub evict: u64,
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["bank", "evict"])?;
        Ok(Options {
            bank: given.bytes("bank", plan::evict::dulo::BANK_BYTES)?,
            evict: given.bytes("evict", plan::evict::dulo::EVICTING_BYTES)?,
        })
    }
}

impl MakeReplacement for Options {
    fn build(&self, cache: CacheGeometry) -> Box<dyn Replacement> {
        let block = cache.block_size.max(1);
        Box::new(Dulo::new(
            cache.capacity,
            usize::try_from(self.bank / block).unwrap_or(usize::MAX),
            usize::try_from(self.evict / block).unwrap_or(usize::MAX),
        ))
    }
}
