//! No prefetching: only demand misses reach the disk. The baseline of every comparison.

use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::FileBlock;
use crate::SimError;

/// Fetches nothing beyond the demand block.
#[derive(Debug, Default)]
pub struct NoPrefetch;

impl Prefetcher for NoPrefetch {
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    fn on_stream_end(&mut self, _stream: usize) {}

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    fn on_access(&mut self, _access: &Access) -> Vec<FetchRange> {
        Vec::new()
    }

    fn demand_only(&self) -> bool {
        true
    }
}

/// Demand fetching's configuration: it takes no options.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options;

impl Options {
    /// Reads `given`, which must be empty.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&[])?;
        Ok(Options)
    }
}

impl MakePrefetcher for Options {
    fn build(&self, _setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        Ok(Box::new(NoPrefetch))
    }
}
