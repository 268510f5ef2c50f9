//! Aggressive prefetching (AP) of TR840 s5.2: the read-ahead windows of competitive
//! prefetching ([`super::competitive::Windows`]: slow start from 16 blocks, doubling) grown up
//! to a fixed 256 blocks (1 MiB of 4 KiB pages, "about twice that of competitive prefetching")
//! instead of the disk's competitive depth. A hypothetical policy the paper includes only for
//! comparison.
//!
//! Deviations: the paper's AP is Linux 2.6.3 with its maximum depth raised to 256 pages; we
//! use the same window mechanics as CP so that AP and CP differ only in the depth, and Linux's
//! own growth (16 -> 32) is the `readahead` prefetcher.

use super::competitive::Windows;
use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::FileBlock;
use crate::SimError;

/// The paper's aggressive depth, in pages (blocks).
pub const DEPTH_BLOCKS: u64 = 256;

/// The AP prefetcher.
#[derive(Clone, Debug)]
pub struct Aggressive {
    windows: Windows,
    depth: u64,
}

impl Prefetcher for Aggressive {
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    fn on_stream_end(&mut self, _stream: usize) {}

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let depth = self.depth;
        self.windows.on_access(access, |_| depth)
    }

    fn demand_only(&self) -> bool {
        false
    }
}

/// AP's configuration: option `depth` (blocks, default 256).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The fixed depth windows grow to, in blocks (at least 1).
    pub depth: u64,
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["depth"])?;
        Ok(Options {
            depth: given.count("depth", DEPTH_BLOCKS)?.max(1),
        })
    }
}

impl MakePrefetcher for Options {
    fn build(&self, setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        Ok(Box::new(Aggressive {
            windows: Windows::new(setup.workload.layout.clone()),
            depth: self.depth,
        }))
    }
}
