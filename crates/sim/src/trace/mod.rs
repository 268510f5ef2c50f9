//! Trace readers: each turns a file into a stream of block references.
//!
//! Formats (chosen with [`Format`], or recognised from the file name for `oracleGeneral`, as
//! libCacheSim names its files, and from the first data line for the others; `docs/traces.md`
//! has a sample of each):
//!
//! | format | module | content |
//! |---|---|---|
//! | `blocks` (`txt`) | [`blocks`] | the reference traces of `traces/`, libCacheSim's txt: one block or object number per line, `*` lines skipped |
//! | `csv` | [`csv`] | the project's CSV: `time_us,file,offset,length,op` |
//! | `msr` | [`msr`] | MSR Cambridge: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` |
//! | `spc` | [`spc`] | UMass / SPC: `ASU,LBA,Size,Opcode,Timestamp` |
//! | `oracle-general` | [`oracle`] | libCacheSim's binary `oracleGeneral` records (24 bytes) |
//! | `libcachesim-csv` | [`cachesim_csv`] | libCacheSim's csv: a header naming `obj_id` (and `time`, `obj_size`) |
//! | `recording` | [`recording`] | `prefetch record`'s recordings (docs/record.md) |
//!
//! Requests of `csv`, `msr` and `spc` are split into blocks of `block_size` bytes; a block
//! number carries its file (or disk, or ASU) in its top bits, `file << FILE_SHIFT | index`, so
//! that one-block lookahead can tell files apart. Requests of the object formats
//! (`oracle-general`, `libcachesim-csv`) are one reference to their object id each, unless
//! [`TraceFile::split_objects`] splits them by size ([`objects`]). Any file may be gzip- or
//! zstd-compressed (recognised by its magic bytes). Readers stream: memory does not grow with the trace, and a request is
//! split into blocks one block at a time. Malformed lines stop the stream with an error naming
//! the file and the line. A pipe or FIFO (`--trace <(zcat t.gz)`) can be read only once:
//! [`TraceFile::read_once`] keeps its bytes in memory so that format detection and every run
//! read the same trace.
//!
//! Deviations: all operations, reads and writes, become references, as the paper did with the
//! Sprite traces (section 4.2).

pub mod blocks;
pub mod cachesim_csv;
pub mod csv;
mod lines;
pub mod msr;
pub mod objects;
pub mod oracle;
pub mod recording;
mod requests;
pub mod spc;
mod types;

use std::io::{Read, Seek};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::Arc;

use crate::error::TraceError;
use crate::time::Time;

use lines::Lines;
pub use requests::Request;
pub use types::{Format, Reference, References, TraceFile, FILE_SHIFT, FORMAT_NAMES};

impl TraceFile {
    /// Makes a trace that can be read only once (a pipe, a FIFO, a shell's `<(...)`)
    /// re-readable by reading it whole into memory now, refusing one larger than the memory
    /// available. Regular files are left to be read from disk on each open; anything else (a
    /// device such as `/dev/zero`, a socket) is refused.
    pub fn read_once(&mut self) -> Result<(), TraceError> {
        let io = |cause| TraceError::Io {
            path: self.path.clone(),
            cause,
        };
        let kind = std::fs::metadata(&self.path).map_err(io)?.file_type();
        if self.content.is_some() || kind.is_file() {
            return Ok(());
        }
        if !kind.is_fifo() {
            return Err(lines::error(
                &self.path,
                0,
                "neither a regular file nor a pipe: give a trace file".into(),
            ));
        }
        let room = crate::memory::available();
        let mut bytes = Vec::new();
        std::fs::File::open(&self.path)
            .map_err(io)?
            .take(room.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > room {
            return Err(lines::error(
                &self.path,
                0,
                format!(
                    "a pipe holding more than {} (the memory available) cannot be kept; \
                     write the trace to a file and give that",
                    crate::memory::human(room)
                ),
            ));
        }
        self.content = Some(bytes.into());
        Ok(())
    }

    /// The lines of the trace, from the bytes kept by `read_once` or from the file.
    fn lines(&self) -> Result<Lines, TraceError> {
        if let Some(bytes) = &self.content {
            return Lines::from_bytes(&self.path, Arc::clone(bytes));
        }
        let meta = std::fs::metadata(&self.path).map_err(|cause| TraceError::Io {
            path: self.path.clone(),
            cause,
        })?;
        if !meta.is_file() {
            return Err(lines::error(
                &self.path,
                0,
                "not a regular file: a pipe or FIFO can be read only once; \
                 call TraceFile::read_once first"
                    .into(),
            ));
        }
        Lines::open(&self.path)
    }

    /// The trace's format: the one given, or the one recognised from its name
    /// (`oracleGeneral`) or its first data line.
    pub fn format(&self) -> Result<Format, TraceError> {
        match self.format {
            Some(format) => Ok(format),
            None if is_oracle_name(&self.path) => Ok(Format::OracleGeneral),
            None => detect_lines(self.lines()?),
        }
    }

    /// The object requests of an object trace.
    fn object_requests(
        &self,
        format: Format,
    ) -> Result<Box<dyn Iterator<Item = Result<objects::ObjectRequest, TraceError>>>, TraceError>
    {
        Ok(match format {
            Format::OracleGeneral => {
                let input = lines::open_bytes(&self.path, self.content.as_ref())?;
                Box::new(oracle::requests(oracle::from_input(&self.path, input)))
            }
            _ => Box::new(cachesim_csv::from_lines(self.lines()?)),
        })
    }

    /// The records of an `oracleGeneral` trace read as one reference per object (the fast way
    /// to read it whole); `None` for any other format or setting.
    pub(crate) fn whole_objects(&self) -> Result<Option<oracle::OracleTrace>, TraceError> {
        if self.split_objects || self.block_size == 0 || self.format()? != Format::OracleGeneral {
            return Ok(None);
        }
        let input = lines::open_bytes(&self.path, self.content.as_ref())?;
        Ok(Some(oracle::from_input(&self.path, input)))
    }

    /// A plain (uncompressed) `oracleGeneral` file read as [`Self::whole_objects`] reads it,
    /// cut into `parts` runs of whole records (first record, end), to be read each on its own
    /// thread ([`Self::records`]); `None` for a compressed file, bytes kept in memory, another
    /// format or setting, or a length that is not a whole number of records (reading it whole
    /// reports that).
    pub(crate) fn object_parts(&self, parts: usize) -> Result<Option<Vec<(u64, u64)>>, TraceError> {
        if self.content.is_some() || self.whole_objects()?.is_none() {
            return Ok(None);
        }
        let io = |cause| TraceError::Io {
            path: self.path.clone(),
            cause,
        };
        let mut file = std::fs::File::open(&self.path).map_err(io)?;
        let mut head = [0; 4];
        let read = file.read(&mut head).map_err(io)?;
        let head = &head[..read];
        let compressed =
            head.starts_with(&lines::GZIP_MAGIC) || head.starts_with(&lines::ZSTD_MAGIC);
        let bytes = file.metadata().map_err(io)?.len();
        let record = oracle::RECORD_BYTES as u64;
        if compressed || bytes % record != 0 {
            return Ok(None);
        }
        let (records, parts) = (bytes / record, parts.max(1) as u64);
        let cut = |i: u64| records * i / parts;
        Ok(Some((0..parts).map(|i| (cut(i), cut(i + 1))).collect()))
    }

    /// Records `first..end` of a plain `oracleGeneral` file (a part of [`Self::object_parts`]).
    pub(crate) fn records(
        &self,
        (first, end): (u64, u64),
    ) -> Result<oracle::OracleTrace, TraceError> {
        let io = |cause| TraceError::Io {
            path: self.path.clone(),
            cause,
        };
        let record = oracle::RECORD_BYTES as u64;
        let mut file = std::fs::File::open(&self.path).map_err(io)?;
        file.seek(std::io::SeekFrom::Start(first * record))
            .map_err(io)?;
        let input = std::io::BufReader::with_capacity(1 << 16, file.take((end - first) * record));
        Ok(oracle::from_input_at(&self.path, Box::new(input), first))
    }

    /// Opens the trace as a stream of references.
    pub fn open(&self) -> Result<References, TraceError> {
        if self.block_size == 0 {
            return Err(TraceError::Io {
                path: self.path.clone(),
                cause: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "block size must be at least 1 byte",
                ),
            });
        }
        let format = self.format()?;
        let (path, bs) = (self.path.as_path(), self.block_size);
        Ok(match format {
            Format::Blocks => Box::new(blocks::from_lines(self.lines()?)),
            Format::Csv => Box::new(requests::split(csv::from_lines(self.lines()?), path, bs)),
            Format::Msr => Box::new(requests::split(msr::from_lines(self.lines()?), path, bs)),
            Format::Spc => Box::new(requests::split(spc::from_lines(self.lines()?), path, bs)),
            Format::OracleGeneral | Format::CachesimCsv => {
                let requests = self.object_requests(format)?;
                match self.split_objects {
                    true => Box::new(objects::by_size(requests, path, bs)),
                    false => Box::new(objects::one_per_object(requests)),
                }
            }
            Format::Recording => recording::open(self)?,
        })
    }
}

impl TraceFile {
    /// The traced system's mean service time per block, in microseconds: each request's
    /// response time spread over its blocks, averaged over all blocks. This is the realistic
    /// model's "average (measured) disk access time for the trace" (Cao et al. section 4.3).
    /// `None` when the format records no response times (only MSR Cambridge does).
    pub fn mean_service_time(&self) -> Result<Option<Time>, TraceError> {
        let bs = self.block_size.max(1);
        let requests = match self.format()? {
            Format::Msr => msr::from_lines(self.lines()?),
            _ => return Ok(None),
        };
        let (mut service, mut blocks) = (0u128, 0u128);
        for request in requests {
            let request = request?;
            if let (Some(us), true) = (request.service_us, request.length > 0) {
                let first = request.offset / bs;
                let last = request.offset.saturating_add(request.length - 1) / bs;
                service += u128::from(us);
                blocks += u128::from(last - first + 1);
            }
        }
        Ok((blocks > 0).then(|| (service / blocks).max(1) as Time))
    }
}

/// Recognises the format from the file name (`oracleGeneral`) or the first line that is not
/// blank or a comment.
pub fn detect(path: &Path) -> Result<Format, TraceError> {
    match is_oracle_name(path) {
        true => Ok(Format::OracleGeneral),
        false => detect_lines(Lines::open(path)?),
    }
}

/// Whether the file is named as libCacheSim names `oracleGeneral` traces: `NAME.oracleGeneral`,
/// `NAME.oracleGeneral.bin`, `NAME.oracleGeneral.zst`, `NAME.oracleGeneral.sample10.zst`, ...
fn is_oracle_name(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().contains(".oracleGeneral"))
}

/// Recognises the format from the first data line of `lines`.
fn detect_lines(mut lines: Lines) -> Result<Format, TraceError> {
    let path = lines.path().to_path_buf();
    let first = match lines.next_kept(lines::is_data) {
        None => return Ok(Format::Blocks),
        Some(kept) => kept?.1.to_string(),
    };
    let fields: Vec<&str> = first.split(',').map(str::trim).collect();
    let op = |i: usize| fields.get(i).map(|f| f.to_ascii_lowercase());
    let numeric = |i: usize| fields.get(i).is_some_and(|f| f.parse::<f64>().is_ok());
    match fields.len() {
        _ if first.starts_with(plan::recording::MAGIC) => Ok(Format::Recording),
        1 => Ok(Format::Blocks),
        _ if fields[0] == "time_us" => Ok(Format::Csv),
        _ if cachesim_csv::is_header(&first) => Ok(Format::CachesimCsv),
        7 if fields[0] == "Timestamp" && fields[3] == "Type" => Ok(Format::Msr),
        7 if matches!(op(3).as_deref(), Some("read" | "write")) => Ok(Format::Msr),
        n if n >= 5 && numeric(1) && matches!(op(3).as_deref(), Some("r" | "w")) => Ok(Format::Spc),
        5 if matches!(op(4).as_deref(), Some("r" | "w" | "read" | "write")) => Ok(Format::Csv),
        _ => Err(lines::error(
            &path,
            1,
            format!("cannot tell the trace format; give it with --format ({FORMAT_NAMES})"),
        )),
    }
}
