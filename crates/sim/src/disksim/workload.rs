//! What the disk-timed simulator runs: files laid out on a disk, and streams of references.
//!
//! A [`Layout`] gives every file a contiguous extent of disk blocks (the papers assume files are
//! laid out sequentially: DULO's "a file is usually continuously allocated", libprefetch's
//! "sequential layout"). A [`Workload`] is one list of [`Step`]s per concurrent stream.
//! [`Workload::from_trace`] reads the reference traces of `traces/`, whose block ids are
//! adjacent on disk when consecutive: one stream, one file spanning ids `0..=max`.
//!
//! Deviations: the reference traces carry no file names, so a trace is one file; a read-ahead
//! prefetcher then sees file boundaries nowhere but at block 0 and at the last id.

use std::path::Path;
use std::time::Duration;

use rustc_hash::FxHashMap;

pub use crate::error::OutOfLayout;
use crate::trace::{Reference, TraceFile, FILE_SHIFT};
use crate::TraceError;

/// A block's number on the disk (its byte address divided by the block size).
pub type DiskBlock = u64;

/// A block of a file: the prefetchers' coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileBlock {
    /// File number, an index into the [`Layout`].
    pub file: u32,
    /// Block index inside the file.
    pub block: u64,
}

/// One reference of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The block referenced.
    pub block: FileBlock,
    /// Compute ("think") time of the stream before it issues this reference.
    pub think: Duration,
}

impl Step {
    /// A reference with no think time.
    pub fn at(file: u32, block: u64) -> Step {
        Step {
            block: FileBlock { file, block },
            think: Duration::ZERO,
        }
    }
}

/// A file's place on the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Disk block of the file's block 0.
    pub start: DiskBlock,
    /// Length of the file in blocks.
    pub blocks: u64,
}

/// Where every file lives on the disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes per block (the cache's page size).
    pub block_size: u64,
    /// Extent of file `i` at index `i`.
    pub files: Vec<Extent>,
}

impl Layout {
    /// Files of the given sizes (in blocks) one after another from disk block 0, with `gap`
    /// free blocks between neighbours.
    pub fn contiguous(sizes: &[u64], gap: u64, block_size: u64) -> Layout {
        let mut next = 0;
        let files = sizes
            .iter()
            .map(|&blocks| {
                let extent = Extent {
                    start: next,
                    blocks,
                };
                next += blocks + gap;
                extent
            })
            .collect();
        Layout { block_size, files }
    }

    /// The disk block holding `block`, or `None` if the file or the block does not exist.
    pub fn disk_block(&self, block: FileBlock) -> Option<DiskBlock> {
        let extent = self.files.get(block.file as usize)?;
        (block.block < extent.blocks).then_some(extent.start + block.block)
    }

    /// The file block at disk block `disk`, if a file lies there.
    pub fn file_block(&self, disk: DiskBlock) -> Option<FileBlock> {
        let (file, extent) = self
            .files
            .iter()
            .enumerate()
            .find(|(_, e)| (e.start..e.start + e.blocks).contains(&disk))?;
        Some(FileBlock {
            file: file as u32,
            block: disk - extent.start,
        })
    }

    /// Length of `file` in blocks (0 for an unknown file).
    pub fn file_blocks(&self, file: u32) -> u64 {
        self.files.get(file as usize).map_or(0, |e| e.blocks)
    }

    /// Blocks `start .. start + len` of `file` that lie in the file, with their disk blocks,
    /// in order.
    pub fn range_blocks(
        &self,
        file: u32,
        start: u64,
        len: u64,
    ) -> impl Iterator<Item = (FileBlock, DiskBlock)> + '_ {
        let end = start.saturating_add(len).min(self.file_blocks(file));
        (start..end).filter_map(move |block| {
            let block = FileBlock { file, block };
            Some((block, self.disk_block(block)?))
        })
    }
}

/// A disk layout and the streams that read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// Where the files are.
    pub layout: Layout,
    /// The references of each concurrent stream, in order.
    pub streams: Vec<Vec<Step>>,
}

impl Workload {
    /// Reads a `blocks` trace (one block id per line) as one stream over one file; think times
    /// are zero. Errors name the file and the line.
    pub fn from_trace(path: &Path, block_size: u64) -> Result<Workload, TraceError> {
        let mut trace = TraceFile::new(path);
        trace.block_size = block_size;
        trace.read_once()?;
        Workload::from_references(trace.open()?, block_size, false)
    }

    /// One stream reading `references` in order. Block numbers carry their file in the top
    /// bits (`file << FILE_SHIFT | index`): each file met becomes a file of the layout, in
    /// order of first appearance, as long as its highest block + 1. When some number names a
    /// file beyond 2^16 (object ids of libCacheSim's traces, often hashes), every distinct
    /// number becomes a block of one file instead, in order of first appearance. With `think`, each
    /// step waits for the previous reference's compute time (microseconds).
    ///
    /// Read in one pass, keeping only the steps: the references before the first number past
    /// 2^56 are renumbered from their steps when it comes.
    pub fn from_references(
        references: impl Iterator<Item = Result<Reference, TraceError>>,
        block_size: u64,
        think: bool,
    ) -> Result<Workload, TraceError> {
        let mut steps = Steps::with_capacity(references.size_hint().0);
        let mut previous_think = Duration::ZERO;
        for reference in references {
            let reference = reference?;
            let wait = match think {
                true => previous_think,
                false => Duration::ZERO,
            };
            steps.push(reference.block, wait);
            previous_think = Duration::from_micros(reference.think.unwrap_or(0));
        }
        Ok(steps.workload(block_size))
    }

    /// [`Workload::from_references`] of `file`'s references; a plain `oracleGeneral` trace
    /// read without compute times is decoded straight from its records (as
    /// [`crate::RefString::read`] reads it), with the same steps.
    pub fn from_file(file: &TraceFile, think: bool) -> Result<Workload, TraceError> {
        let records = match think {
            true => None,
            false => file.whole_objects()?,
        };
        let Some(records) = records else {
            return Workload::from_references(file.open()?, file.block_size, think);
        };
        let records_held = match file.object_parts(1)?.as_deref() {
            Some(&[(first, end)]) => (end - first) as usize,
            _ => 0,
        };
        let mut steps = Steps::with_capacity(records_held);
        records.for_each_objects(|ids| {
            for &id in ids {
                steps.push(id, Duration::ZERO);
            }
            Ok::<_, TraceError>(())
        })?;
        Ok(steps.workload(file.block_size))
    }

    /// Checks that every reference is inside the layout.
    pub fn validate(&self) -> Result<(), OutOfLayout> {
        for (stream, steps) in self.streams.iter().enumerate() {
            for (index, step) in steps.iter().enumerate() {
                if self.layout.disk_block(step.block).is_none() {
                    return Err(OutOfLayout {
                        stream,
                        index,
                        file: step.block.file,
                        block: step.block.block,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Trace numbers from here on name a file beyond 2^16: the trace's numbers are object ids.
const FILE_LIMIT: u64 = 1 << (FILE_SHIFT + 16);

/// One stream's steps as a trace is read, numbered by a [`Numbering`].
struct Steps {
    numbering: Numbering,
    steps: Vec<Step>,
}

impl Steps {
    fn with_capacity(references: usize) -> Steps {
        Steps {
            numbering: Numbering::default(),
            steps: Vec::with_capacity(references),
        }
    }

    /// The next reference, to trace number `raw`, after `think`.
    fn push(&mut self, raw: u64, think: Duration) {
        if !self.numbering.objects && raw >= FILE_LIMIT {
            self.numbering.renumber(&mut self.steps);
        }
        let block = self.numbering.place(raw);
        self.steps.push(Step { block, think });
    }

    /// The workload of one stream, its files laid out contiguously.
    fn workload(self, block_size: u64) -> Workload {
        Workload {
            layout: Layout::contiguous(&self.numbering.sizes, 0, block_size),
            streams: vec![self.steps],
        }
    }
}

/// How [`Workload::from_references`] numbers a trace's blocks: files in order of first
/// appearance, or, once the trace has shown object ids, every distinct number a block of one
/// file.
#[derive(Default)]
struct Numbering {
    /// Every distinct number is a block of file 0.
    objects: bool,
    /// Layout file of each trace file (its number's top bits; 0 for objects).
    files: FxHashMap<u64, u32>,
    /// Trace file of each layout file.
    keys: Vec<u64>,
    /// Blocks of each layout file (highest block + 1).
    sizes: Vec<u64>,
    /// Block of each object id.
    blocks: FxHashMap<u64, u64>,
    /// The trace file met last and its layout file (most references stay in one file, so
    /// most skip the lookup in `files`).
    last: Option<(u64, u32)>,
}

impl Numbering {
    /// The file block of trace number `raw`.
    fn place(&mut self, raw: u64) -> FileBlock {
        let (key, index) = match self.objects {
            true => {
                let next = self.blocks.len() as u64;
                (0, *self.blocks.entry(raw).or_insert(next))
            }
            false => (raw >> FILE_SHIFT, raw & ((1 << FILE_SHIFT) - 1)),
        };
        let file = match self.last {
            Some((last, file)) if last == key => file,
            _ => self.file_of(key),
        };
        self.sizes[file as usize] = self.sizes[file as usize].max(index + 1);
        FileBlock { file, block: index }
    }

    /// The layout file of trace file `key`, numbered now if it is new.
    fn file_of(&mut self, key: u64) -> u32 {
        let next_file = self.files.len() as u32;
        let file = *self.files.entry(key).or_insert(next_file);
        if file as usize == self.sizes.len() {
            self.sizes.push(0);
            self.keys.push(key);
        }
        self.last = Some((key, file));
        file
    }

    /// Numbers objects from now on, and `steps` (numbered by files so far) again as objects.
    fn renumber(&mut self, steps: &mut [Step]) {
        let keys = std::mem::take(&mut self.keys);
        *self = Numbering {
            objects: true,
            ..Numbering::default()
        };
        for step in steps {
            let raw = (keys[step.block.file as usize] << FILE_SHIFT) | step.block.block;
            step.block = self.place(raw);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks_of(numbers: &[u64]) -> (Vec<(u32, u64)>, Vec<u64>) {
        let references = numbers
            .iter()
            .map(|&block| Ok(Reference { block, think: None }));
        let workload = Workload::from_references(references, 4096, false).unwrap();
        let steps = workload.streams[0].iter();
        let sizes = workload.layout.files.iter().map(|f| f.blocks).collect();
        (
            steps.map(|s| (s.block.file, s.block.block)).collect(),
            sizes,
        )
    }

    #[test]
    fn files_are_numbered_by_first_appearance_and_object_ids_renumber_all() {
        let file = |f: u64, b: u64| (f << FILE_SHIFT) | b;
        assert_eq!(
            blocks_of(&[file(2, 4), 3, file(2, 1)]),
            (vec![(0, 4), (1, 3), (0, 1)], vec![5, 4])
        );
        // A number past 2^56 late in the trace makes every number an object, from the start.
        assert_eq!(
            blocks_of(&[file(2, 4), 3, file(2, 4), 1 << 60, 3, 7]),
            (
                vec![(0, 0), (0, 1), (0, 0), (0, 2), (0, 1), (0, 3)],
                vec![4]
            )
        );
    }

    #[test]
    fn an_oracle_trace_decoded_from_its_records_gives_the_steps_of_its_references() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../traces/cpp.oracleGeneral.zst"
        );
        let file = TraceFile::new(Path::new(path));
        assert!(file.whole_objects().unwrap().is_some());
        let decoded = Workload::from_file(&file, false).unwrap();
        let read = Workload::from_references(file.open().unwrap(), file.block_size, false);
        assert_eq!(decoded, read.unwrap());
        assert!(decoded.streams[0].len() > 1000);
    }

    #[test]
    fn contiguous_layout_leaves_gaps_between_files() {
        let layout = Layout::contiguous(&[4, 1], 10, 4096);
        assert_eq!(layout.disk_block(FileBlock { file: 1, block: 0 }), Some(14));
        assert_eq!(layout.disk_block(FileBlock { file: 0, block: 4 }), None);
        assert_eq!(layout.disk_block(FileBlock { file: 2, block: 0 }), None);
    }

    /// A range running past its file's end stops there; an unknown file has no blocks.
    #[test]
    fn range_blocks_stop_at_the_end_of_the_file() {
        let layout = Layout::contiguous(&[4, 1], 10, 4096);
        let disk: Vec<_> = layout.range_blocks(0, 2, 5).map(|(_, d)| d).collect();
        assert_eq!(disk, [2, 3]);
        assert_eq!(layout.range_blocks(1, 0, u64::MAX).count(), 1);
        assert_eq!(layout.range_blocks(2, 0, 3).count(), 0);
    }

    #[test]
    fn validate_names_the_reference_outside_the_layout() {
        let workload = Workload {
            layout: Layout::contiguous(&[2], 0, 4096),
            streams: vec![vec![Step::at(0, 1), Step::at(0, 2)]],
        };
        assert_eq!(
            workload.validate(),
            Err(OutOfLayout {
                stream: 0,
                index: 1,
                file: 0,
                block: 2
            })
        );
    }
}
