//! A trace read into memory once: its reference string as dense block ids (Cao et al. section
//! 2.1's r_1 ... r_n), with the compute times when the run needs them.
//!
//! Trace block numbers are mapped to dense ids once, while the trace is read, so the engine
//! and the policies index plain vectors and never hash a block number during a run. A sweep
//! reads each trace into one [`RefString`] and every run (every thread) borrows it; the offline
//! policies' [`Future`](crate::Future) is a reference string plus next-use links.
//!
//! Deviations: positions are `u32`, so a trace is limited to 4,294,967,294 references.

use crate::cache::{Block, Interner};
use crate::error::TraceError;
use crate::time::Time;
use crate::trace::{Reference, TraceFile};
use crate::SimError;

/// A position in the reference string (0-based).
pub type Pos = u32;

/// The position of a reference that never comes.
pub const NEVER: Pos = Pos::MAX;

/// Which compute times [`RefString::load`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Times {
    /// Keep them when every reference has one (the realistic model needs them).
    Keep,
    /// Drop them (the simplified model gives every reference one tick).
    Drop,
}

/// A whole reference string as dense block ids.
#[derive(Clone, Debug)]
pub struct RefString {
    ids: Interner,
    blocks: Vec<Block>,
    think: Option<Vec<Time>>,
}

impl RefString {
    /// Reads trace `file` into memory (see [`RefString::load`]); an `oracleGeneral` trace read
    /// one reference per object without its times is decoded straight from its records.
    pub fn read(file: &TraceFile, times: Times) -> Result<RefString, SimError> {
        match (times, file.whole_objects()?) {
            (Times::Drop, Some(records)) => {
                let mut builder = Builder::new(Times::Drop);
                if let Some(&[(first, end)]) = file.object_parts(1)?.as_deref() {
                    builder.reserve(end - first);
                }
                records.for_each_objects(|ids| builder.push_all(ids))?;
                Ok(builder.finish())
            }
            _ => RefString::load(file.open()?, times),
        }
    }

    /// [`RefString::read`] on `threads` threads: a plain `oracleGeneral` file read without
    /// times is cut into that many runs of records, each numbered on its own thread, and the
    /// parts are joined into the string reading it in one piece gives (the same ids); anything
    /// else is read in one piece. Each part may hold its share of what the memory available
    /// can hold; past that the trace is read in one piece, which refuses it with the whole's
    /// limit.
    pub fn read_on(file: &TraceFile, times: Times, threads: usize) -> Result<RefString, SimError> {
        let parts = match (times, threads) {
            (Times::Drop, 2..) => file.object_parts(threads)?,
            _ => None,
        };
        let Some(parts) = parts else {
            return RefString::read(file, times);
        };
        let share = parts.len();
        let total = parts.last().map_or(0, |p| p.1);
        let strings = std::thread::scope(|scope| {
            let handles: Vec<_> = parts
                .into_iter()
                .enumerate()
                .map(|(i, part)| {
                    scope.spawn(move || {
                        let mut builder = Builder::new(Times::Drop);
                        builder.most /= share as u64;
                        // The first part becomes the whole string: room for all of it now, so
                        // neither it nor the join moves the references already read.
                        builder.reserve(if i == 0 { total } else { part.1 - part.0 });
                        let records = file.records(part)?;
                        records.for_each_objects(|ids| builder.push_all(ids))?;
                        Ok::<_, SimError>(builder.finish())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect::<Result<Vec<_>, _>>()
        });
        match strings {
            Ok(strings) => Ok(RefString::join(strings)),
            Err(SimError::TooLarge(_)) => RefString::read(file, times),
            Err(e) => Err(e),
        }
    }

    /// The strings of consecutive parts of one trace as one string, numbered as if read in
    /// one piece: each part's blocks, in order of first sight in the part, take the whole's
    /// id, or the next new one.
    fn join(parts: Vec<RefString>) -> RefString {
        let mut parts = parts.into_iter();
        let mut whole = parts.next().unwrap_or_else(|| RefString::from_blocks(&[]));
        for part in parts {
            let ids: Vec<Block> = (0..part.distinct() as Block)
                .map(|id| whole.ids.intern(part.ids.raw(id)))
                .collect();
            whole.blocks.reserve(part.len());
            whole
                .blocks
                .extend(part.blocks.iter().map(|&id| ids[id as usize]));
        }
        whole
    }

    /// Reads a whole trace into memory, interning each block number in order of first sight.
    /// With [`Times::Keep`], compute times are kept if every reference has one. A trace longer
    /// than the memory available can hold (or than 2^32 - 2 references) is refused when it
    /// gets there.
    pub fn load<I>(references: I, times: Times) -> Result<RefString, SimError>
    where
        I: IntoIterator<Item = Result<Reference, TraceError>>,
    {
        let mut builder = Builder::new(times);
        let mut references = references.into_iter();
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            batch.clear();
            let mut failed = None;
            for reference in references.by_ref().take(BATCH) {
                match reference {
                    Ok(reference) => batch.push((reference.block, reference.think)),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            // The references before a bad one count first, so a trace too large for memory
            // is refused as such wherever it also holds a bad line.
            builder.push_batch(&batch)?;
            match (failed, batch.len()) {
                (Some(e), _) => return Err(e.into()),
                (None, BATCH) => {}
                (None, _) => return Ok(builder.finish()),
            }
        }
    }

    /// A reference string without timing, from trace block numbers.
    pub fn from_blocks(blocks: &[u64]) -> RefString {
        let mut ids = Interner::default();
        let blocks = blocks.iter().map(|&b| ids.intern(b)).collect();
        RefString {
            ids,
            blocks,
            think: None,
        }
    }

    /// Number of references.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether the trace has no reference.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Number of distinct blocks.
    pub fn distinct(&self) -> usize {
        self.ids.len()
    }

    /// The block referenced at `pos`.
    pub fn block_at(&self, pos: Pos) -> Block {
        self.blocks[pos as usize]
    }

    /// The recorded compute time of the reference at `pos`, if kept.
    pub fn think(&self, pos: Pos) -> Option<Time> {
        self.think.as_ref().map(|t| t[pos as usize])
    }

    /// Whether every reference has a recorded compute time (and they were kept).
    pub fn timed(&self) -> bool {
        self.think.is_some()
    }

    /// The block-number mapping of this trace.
    pub fn ids(&self) -> &Interner {
        &self.ids
    }

    /// The dense block ids in reference order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The references again, with their trace block numbers and kept compute times: what the
    /// trace was read from, for a reader that wants it whole (the disk-timed engine's workload).
    pub fn references(&self) -> impl Iterator<Item = Result<Reference, TraceError>> + '_ {
        (0..self.blocks.len() as Pos).map(|pos| {
            Ok(Reference {
                block: self.ids.raw(self.block_at(pos)),
                think: self.think(pos),
            })
        })
    }
}

/// How many references ahead [`Builder::push_all`] warms the block number map.
const LOOKAHEAD: usize = 8;

/// References [`RefString::load`] reads before numbering them, so that it can warm the block
/// number map ahead as [`Builder::push_all`] does.
const BATCH: usize = 1024;

/// A reference string being read.
struct Builder {
    string: RefString,
    times: Vec<Time>,
    timed: bool,
    /// Most references the memory available holds.
    most: u64,
    room: u64,
}

impl Builder {
    fn new(times: Times) -> Builder {
        let room = crate::memory::available();
        let cost = crate::memory::BYTES_PER_REFERENCE + crate::memory::BYTES_PER_BLOCK;
        Builder {
            string: RefString {
                ids: Interner::default(),
                blocks: Vec::new(),
                think: None,
            },
            times: Vec::new(),
            timed: times == Times::Keep,
            most: (room / cost).min(u64::from(NEVER) - 1),
            room,
        }
    }

    /// Makes room for `references` more (a count known from the file's length), no more than
    /// the memory available holds, so the string is not copied as it grows.
    fn reserve(&mut self, references: u64) {
        let most = self.room / crate::memory::BYTES_PER_REFERENCE;
        let references = usize::try_from(references.min(most)).unwrap_or(usize::MAX);
        self.string.blocks.reserve(references);
    }

    /// Appends a reference to trace block `raw` with compute time `think`.
    fn push(&mut self, raw: u64, think: Option<Time>) -> Result<(), SimError> {
        let string = &mut self.string;
        if string.blocks.len() as u64 >= self.most {
            return Err(SimError::TooLarge(format!(
                "the trace has more than {} references, more than the memory available ({}) \
                 or the simulator's 2^32 - 2 positions can hold; simulate a part of it, or only \
                 policies that need no future",
                self.most,
                crate::memory::human(self.room)
            )));
        }
        string.blocks.push(string.ids.intern(raw));
        match think {
            Some(t) if self.timed => self.times.push(t),
            _ => self.timed = false,
        }
        Ok(())
    }

    /// Appends references to trace blocks `raws`, without compute times, warming the
    /// processor's cache for the block number map a few references ahead.
    fn push_all(&mut self, raws: &[u64]) -> Result<(), SimError> {
        self.push_warmed(raws, |&raw| (raw, None))
    }

    /// Appends references to trace blocks with their compute times, warming as
    /// [`Builder::push_all`] does.
    fn push_batch(&mut self, batch: &[(u64, Option<Time>)]) -> Result<(), SimError> {
        self.push_warmed(batch, |&reference| reference)
    }

    /// Appends the references `items` (trace block and compute time of each by `reference`),
    /// warming the block number map [`LOOKAHEAD`] references ahead.
    fn push_warmed<T>(
        &mut self,
        items: &[T],
        reference: impl Fn(&T) -> (u64, Option<Time>),
    ) -> Result<(), SimError> {
        for (i, item) in items.iter().enumerate() {
            if let Some(ahead) = items.get(i + LOOKAHEAD) {
                self.string.ids.warm_intern(reference(ahead).0);
            }
            let (raw, think) = reference(item);
            self.push(raw, think)?;
        }
        Ok(())
    }

    fn finish(mut self) -> RefString {
        if self.timed && !self.string.blocks.is_empty() {
            self.string.think = Some(self.times);
        }
        self.string
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(
        blocks: &[(u64, Option<Time>)],
    ) -> impl Iterator<Item = Result<Reference, TraceError>> + '_ {
        blocks
            .iter()
            .map(|&(block, think)| Ok(Reference { block, think }))
    }

    #[test]
    fn numbers_blocks_in_order_of_first_sight() {
        let string = RefString::from_blocks(&[70, 9, 70, 1 << 50]);
        assert_eq!(string.blocks(), [0, 1, 0, 2]);
        assert_eq!((string.distinct(), string.ids().raw(2)), (3, 1 << 50));
    }

    #[test]
    fn keeps_times_only_when_asked_and_every_reference_has_one() {
        let all = [(1, Some(5)), (2, Some(7))];
        let kept = RefString::load(timed(&all), Times::Keep).unwrap();
        assert_eq!((kept.think(0), kept.think(1)), (Some(5), Some(7)));
        assert!(!RefString::load(timed(&all), Times::Drop).unwrap().timed());
        let partial = [(1, Some(5)), (2, None)];
        assert!(!RefString::load(timed(&partial), Times::Keep)
            .unwrap()
            .timed());
    }
}
