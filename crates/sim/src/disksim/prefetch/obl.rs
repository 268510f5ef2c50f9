//! One-block lookahead (OBL) on the disk-timed loop, Cao et al. section 4.1 after Smith (its
//! reference 22): when a stream's last two references to a file were blocks K and K+1,
//! prefetch K+2. The prefetcher libCacheSim offers as `OBL`, here timed and free to pair with
//! any replacement (`--policy fifo+obl`).
//!
//! The detector is Cao's OBL's (`policy::obl::LastBlock`), kept per stream and file, so
//! `lru-obl` (Cao's integrated policy) and `lru+obl` (strict LRU paired with this prefetcher)
//! trigger on the same references; they differ in when the prefetch may start (Cao's waits for
//! an idle disk and picks its own victim, this one queues at once behind the demand fetch) and
//! in the victim (the replacement's).
//!
//! Deviations: libCacheSim's OBL waits for `sequential_confidence_k` sequential accesses before
//! it prefetches; this follows the paper's rule (one pair).

use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::FileBlock;
use crate::policy::obl::LastBlock;
use crate::SimError;

/// The OBL prefetcher: the last block of each stream's files.
#[derive(Debug, Default)]
pub struct Obl(LastBlock);

impl Prefetcher for Obl {
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    fn on_stream_end(&mut self, _stream: usize) {}

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let FileBlock { file, block } = access.block;
        let key = (access.stream as u64) << 32 | u64::from(file);
        match self.0.continues(key, block) {
            true => vec![FetchRange {
                file,
                start: block + 1,
                len: 1,
            }],
            false => Vec::new(),
        }
    }
}

/// OBL's configuration: it takes no options.
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
        Ok(Box::new(Obl::default()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn access(stream: usize, file: u32, block: u64) -> Access {
        Access {
            stream,
            block: FileBlock { file, block },
            found: false,
            now: Duration::ZERO,
            active_streams: 1,
            prefetch_ceiling: None,
        }
    }

    #[test]
    fn prefetches_k_plus_2_after_k_and_k_plus_1_per_stream_and_file() {
        let mut obl = Obl::default();
        let asked: Vec<Vec<FetchRange>> = [(0, 0, 4), (0, 0, 5), (1, 0, 6), (0, 1, 9), (0, 0, 6)]
            .into_iter()
            .map(|(stream, file, block)| obl.on_access(&access(stream, file, block)))
            .collect();
        let one = |file, start| {
            vec![FetchRange {
                file,
                start,
                len: 1,
            }]
        };
        assert_eq!(
            asked,
            [vec![], one(0, 6), vec![], vec![], one(0, 7)],
            "stream 1's block 6 does not continue stream 0's run; file 1 does not break file 0's"
        );
    }
}
