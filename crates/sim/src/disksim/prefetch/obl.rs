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
//! Paired with LRU, FIFO, CLOCK, SIEVE, LFU or LFU-DA on the shipped traces (one stream, one
//! file, one object per slot), `obl:k=K` misses and prefetches exactly as libCacheSim's OBL
//! with `sequential-confidence-k=K` and the same eviction policy, for k 1 and 4
//! (`tests/libcachesim_prefetch.rs`, reference counts from `scripts/libcachesim_prefetch.py`),
//! apart from the deviations below.
//!
//! Option `k` (default 1, the paper's rule: one pair) is libCacheSim's `sequential-confidence-k`
//! (its default 4): prefetch K+1 after a reference to K that ends a run of k steps of one block
//! (K-k, ..., K).
//!
//! Deviations: libCacheSim's OBL history starts at UINT64_MAX, one below object 0, so a run
//! from object 0 at the start of a trace counts one step more (with k=1 a first reference to
//! object 0 prefetches object 1); here a file's first reference starts a run of 0 steps. It prefetches the object after the trace's highest id; here a
//! file ends at its highest block and nothing past it is fetched. It keeps one history for
//! the whole trace; this one per stream and file.

use rustc_hash::FxHashMap;

use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::FileBlock;
use crate::policy::obl::LastBlock;
use crate::SimError;

/// The OBL prefetcher: the last block of each stream's files, and with `k` over 1 the length
/// of the run each ends.
#[derive(Debug)]
pub struct Obl {
    last: LastBlock,
    k: u32,
    /// Steps of one block ending at each stream's file's last block (kept only when k > 1).
    runs: FxHashMap<u64, u32>,
}

impl Obl {
    /// Whether the reference to `block` of stream-and-file `key` ends a run of `k` steps.
    fn triggers(&mut self, key: u64, block: u64) -> bool {
        let continues = self.last.continues(key, block);
        if self.k == 1 {
            return continues;
        }
        let run = self.runs.entry(key).or_default();
        *run = match continues {
            true => run.saturating_add(1),
            false => 0,
        };
        *run >= self.k
    }
}

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
        match self.triggers(key, block) {
            true => vec![FetchRange {
                file,
                start: block + 1,
                len: 1,
            }],
            false => Vec::new(),
        }
    }

    fn demand_only(&self) -> bool {
        false
    }
}

/// OBL's configuration: option `k`, the steps of one block a run needs (default 1).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Steps of one block that trigger a prefetch (at least 1).
    pub k: u32,
}

impl Default for Options {
    fn default() -> Options {
        Options { k: 1 }
    }
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["k"])?;
        match u32::try_from(given.count("k", 1)?) {
            Ok(k) if k >= 1 => Ok(Options { k }),
            _ => Err(SimError::Config(
                "k is the steps of one block a run needs before OBL prefetches: give 1 or more \
                 (libCacheSim's default is 4)"
                    .into(),
            )),
        }
    }
}

impl MakePrefetcher for Options {
    fn build(&self, _setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        Ok(Box::new(Obl {
            last: LastBlock::default(),
            k: self.k,
            runs: FxHashMap::default(),
        }))
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

    fn obl(k: u32) -> Obl {
        Obl {
            last: LastBlock::default(),
            k,
            runs: FxHashMap::default(),
        }
    }

    fn one(file: u32, start: u64) -> Vec<FetchRange> {
        vec![FetchRange {
            file,
            start,
            len: 1,
        }]
    }

    #[test]
    fn prefetches_k_plus_2_after_k_and_k_plus_1_per_stream_and_file() {
        let mut obl = obl(1);
        let asked: Vec<Vec<FetchRange>> = [(0, 0, 4), (0, 0, 5), (1, 0, 6), (0, 1, 9), (0, 0, 6)]
            .into_iter()
            .map(|(stream, file, block)| obl.on_access(&access(stream, file, block)))
            .collect();
        assert_eq!(
            asked,
            [vec![], one(0, 6), vec![], vec![], one(0, 7)],
            "stream 1's block 6 does not continue stream 0's run; file 1 does not break file 0's"
        );
    }

    /// libCacheSim's `sequential-confidence-k`: with k = 3 the run 4, 5, 6, 7 triggers at 7
    /// and at every step after it; a jump starts the count again.
    #[test]
    fn with_k_a_run_of_k_steps_triggers() {
        let mut obl = obl(3);
        let asked: Vec<Vec<FetchRange>> = [4, 5, 6, 7, 8, 20, 21, 22, 23]
            .into_iter()
            .map(|block| obl.on_access(&access(0, 0, block)))
            .collect();
        let none = Vec::new;
        let expected = [
            none(),
            none(),
            none(),
            one(0, 8),
            one(0, 9),
            none(),
            none(),
            none(),
            one(0, 24),
        ];
        assert_eq!(asked, expected);
    }

    #[test]
    fn k_must_be_a_run_of_one_step_or_more() {
        for text in ["obl:k=0", "obl:k=5000000000"] {
            let error = Options::parse(&PolicySpec::parse(text).unwrap()).unwrap_err();
            assert!(
                error.to_string().contains("give 1 or more"),
                "{text}: {error}"
            );
        }
        let four = Options::parse(&PolicySpec::parse("obl:k=4").unwrap()).unwrap();
        assert_eq!(four.k, 4);
    }
}
