//! The Python package's data loaders where an epoch does not fit in the cache, as a simulator
//! policy: each stream (a `RecordDataset` worker) advises its own records a phase ahead, each
//! phase's union in offset order (libprefetch, ATC 2009, section 4.5's window with each round in
//! section 3.3's C-LOOK order), with no access list and nothing dropped.
//!
//! It runs the live schedule, [`plan::loader::Phases`], not a copy: the phases, when each is due
//! (the first two before the first read, phase `k + 1` once the reader enters phase `k`) and each
//! phase's calls are what `_native.LoaderPhases` gives the package's advice thread.
//!
//! A stream's records are its runs of references to consecutive blocks of one file (a loader's
//! trace holds one request a record; the simulator sees its blocks): two records read one after
//! the other that are adjacent on disk count as one, which can move a phase's end by a record.
//! Blocks are the pages (`block_size` is the page size); each file's blocks are kept apart by
//! numbering them `file << FILE_BITS | block`.
//!
//! Deviations: the advice is queued at the reference that makes a phase due, where the live
//! thread advises it a moment later; a WILLNEED call's pages go to the scheduler as one range
//! (the engine cuts it into requests of at most `max_request_blocks`, as the block layer cuts a
//! call at `max_sectors_kb`).

use plan::loader::Phases;

use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::{FileBlock, Step};
use crate::SimError;

/// Bits of a block number inside its file, in the numbering the schedule sees.
const FILE_BITS: u32 = 40;

/// One stream's phases and where its reader is.
#[derive(Debug)]
struct Reader {
    phases: Phases,
    /// The reference count at which each record ends.
    record_ends: Vec<usize>,
    /// References seen, and the record they are in.
    seen: usize,
    record: usize,
    started: bool,
}

impl Reader {
    fn new(steps: &[Step], phase_blocks: u64) -> Reader {
        let mut records: Vec<(u64, u64)> = Vec::new();
        let mut record_ends = Vec::new();
        for (index, step) in steps.iter().enumerate() {
            let at = u64::from(step.block.file) << FILE_BITS | step.block.block;
            match (records.last_mut(), record_ends.last_mut()) {
                (Some(last), Some(end)) if last.0 + last.1 == at => {
                    last.1 += 1;
                    *end = index + 1;
                }
                _ => {
                    records.push((at, 1));
                    record_ends.push(index + 1);
                }
            }
        }
        Reader {
            phases: Phases::new(records, 1, phase_blocks),
            record_ends,
            seen: 0,
            record: 0,
            started: false,
        }
    }

    /// The phases due at this reference.
    fn on_reference(&mut self) -> std::ops::Range<usize> {
        while self.record_ends.get(self.record).is_some_and(|&end| end <= self.seen) {
            self.record += 1;
        }
        self.seen += 1;
        if !self.started {
            self.started = true;
            return self.phases.first_due();
        }
        if self.record >= self.phases.next_start() {
            return self.phases.enter(self.record);
        }
        0..0
    }
}

/// Each stream's phases.
#[derive(Debug)]
pub struct LoaderPhases {
    readers: Vec<Reader>,
    call_blocks: u64,
}

impl Prefetcher for LoaderPhases {
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    fn on_stream_end(&mut self, _stream: usize) {}

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let Some(reader) = self.readers.get_mut(access.stream) else {
            return Vec::new();
        };
        let mask = (1u64 << FILE_BITS) - 1;
        let due = reader.on_reference();
        due.flat_map(|phase| reader.phases.calls(phase, self.call_blocks))
            .map(|call| FetchRange {
                file: (call.offset >> FILE_BITS) as u32,
                start: call.offset & mask,
                len: call.length,
            })
            .collect()
    }

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    fn demand_only(&self) -> bool {
        false
    }
}

/// The configuration: `phase` (bytes of pages a phase holds; default the live default for a
/// memory of the cache's size, `min(call, cache / 4) / streams`) and `call` (bytes one WILLNEED
/// call loads; default 8M, `read_ahead_kb` here).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Bytes of pages a phase holds; `None`: the live default.
    pub phase: Option<u64>,
    /// Bytes one WILLNEED call loads.
    pub call: u64,
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["phase", "call"])?;
        Ok(Options {
            phase: given.bytes_given("phase")?,
            call: given.bytes("call", 8 << 20)?.max(1),
        })
    }
}

impl MakePrefetcher for Options {
    fn build(&self, setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        let block = setup.workload.layout.block_size.max(1);
        let streams = setup.workload.streams.len().max(1) as u64;
        let cache = setup.cache_blocks as u64 * block;
        let phase = self
            .phase
            .unwrap_or_else(|| (self.call.min(cache / 4) / streams).max(1));
        let phase_blocks = (phase / block).max(1);
        Ok(Box::new(LoaderPhases {
            readers: setup
                .workload
                .streams
                .iter()
                .map(|steps| Reader::new(steps, phase_blocks))
                .collect(),
            call_blocks: (self.call / block).max(1),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(blocks: &[u64]) -> Vec<Step> {
        blocks.iter().map(|&b| Step::at(0, b)).collect()
    }

    #[test]
    fn records_are_runs_of_consecutive_blocks_and_phases_come_due_as_the_reader_enters_them() {
        // Records 10-11, 40, 20-22, 5, 30: phases of 3 blocks are [10-11 40] [20-22] [5 30].
        let mut reader = Reader::new(&steps(&[10, 11, 40, 20, 21, 22, 5, 30]), 3);
        assert_eq!(reader.phases.starts(), &[0, 2, 3]);
        let due: Vec<Vec<usize>> = (0..8).map(|_| reader.on_reference().collect()).collect();
        assert_eq!(due, [vec![0, 1], vec![], vec![], vec![2], vec![], vec![], vec![], vec![]]);
        let calls = reader.phases.calls(1, 2);
        let calls: Vec<(u64, u64)> = calls.iter().map(|c| (c.offset, c.length)).collect();
        assert_eq!(calls, [(20, 2), (22, 1)]);
    }
}
