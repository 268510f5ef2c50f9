//! No prefetching: only demand misses reach the disk. The baseline of every comparison.

use super::{Access, FetchRange, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::SimError;

/// Fetches nothing beyond the demand block.
#[derive(Debug, Default)]
pub struct NoPrefetch;

impl Prefetcher for NoPrefetch {
    fn on_access(&mut self, _access: &Access) -> Vec<FetchRange> {
        Vec::new()
    }
}

/// Registry constructor (no options).
pub fn build(spec: &PolicySpec, _setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
    spec.only(&[])?;
    Ok(Box::new(NoPrefetch))
}
