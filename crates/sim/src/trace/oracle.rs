//! libCacheSim's `oracleGeneral` binary traces (the format of its public corpora), plain or
//! zstd-compressed. Each request is one 24-byte little-endian record:
//!
//! ```text
//! offset  size  field
//!      0     4  clock_time         u32, seconds
//!      4     8  obj_id             u64
//!     12     4  obj_size           u32, bytes
//!     16     8  next_access_vtime  i64, position of the next request to obj_id (-1: none)
//! ```
//!
//! as libCacheSim's `oracleGeneralBin_read_one_req` reads it. Requests of size 0 are skipped,
//! as libCacheSim does by default (`ignore_size_zero_req`). `next_access_vtime` is read and
//! checked by nobody here: the offline policies compute next uses themselves. A file whose
//! length is not a whole number of records, or a zstd stream cut short, is an error naming the
//! file and the record.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::error::TraceError;
use crate::trace::objects::ObjectRequest;

/// Bytes per record.
pub const RECORD_BYTES: usize = 24;

/// One record of an `oracleGeneral` trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OracleRecord {
    /// Request time in seconds.
    pub time: u32,
    /// The object.
    pub obj_id: u64,
    /// The object's size in bytes.
    pub size: u32,
    /// Position of the next request to the same object, or -1.
    pub next_access_vtime: i64,
}

impl OracleRecord {
    /// Decodes one record.
    pub fn decode(bytes: &[u8; RECORD_BYTES]) -> OracleRecord {
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        OracleRecord {
            time: u32_at(0),
            obj_id: u64_at(4),
            size: u32_at(12),
            next_access_vtime: u64_at(16) as i64,
        }
    }

    /// Encodes one record (to write traces: tests, benchmarks).
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut bytes = [0; RECORD_BYTES];
        bytes[0..4].copy_from_slice(&self.time.to_le_bytes());
        bytes[4..12].copy_from_slice(&self.obj_id.to_le_bytes());
        bytes[12..16].copy_from_slice(&self.size.to_le_bytes());
        bytes[16..24].copy_from_slice(&self.next_access_vtime.to_le_bytes());
        bytes
    }
}

/// Stream of records of an `oracleGeneral` trace, size-0 records included.
pub struct OracleTrace {
    path: PathBuf,
    input: Box<dyn BufRead>,
    /// Records read so far.
    record: u64,
    /// An error was returned: the stream is over.
    failed: bool,
}

/// Opens an `oracleGeneral` trace, plain or zstd-compressed (recognised by its magic bytes).
pub fn read(path: &Path) -> Result<OracleTrace, TraceError> {
    Ok(from_input(
        path,
        crate::trace::lines::open_bytes(path, None)?,
    ))
}

/// Reads the trace from `input`, already decompressed.
pub(crate) fn from_input(path: &Path, input: Box<dyn BufRead>) -> OracleTrace {
    from_input_at(path, input, 0)
}

/// The records of `input`, which starts at record `first` (0-based) of the file at `path`.
pub(crate) fn from_input_at(path: &Path, input: Box<dyn BufRead>, first: u64) -> OracleTrace {
    OracleTrace {
        path: path.to_path_buf(),
        input,
        record: first,
        failed: false,
    }
}

impl OracleTrace {
    fn error(&mut self, message: String) -> TraceError {
        self.failed = true;
        TraceError::Record {
            path: self.path.clone(),
            record: self.record,
            message,
        }
    }

    /// Fills `bytes` from the input; returns how many bytes it got (less than a record only
    /// at the end of the input).
    fn fill(&mut self, bytes: &mut [u8; RECORD_BYTES]) -> std::io::Result<usize> {
        let mut filled = 0;
        while filled < RECORD_BYTES {
            let available = match self.input.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            let n = (RECORD_BYTES - filled).min(available.len());
            bytes[filled..filled + n].copy_from_slice(&available[..n]);
            self.input.consume(n);
            filled += n;
        }
        Ok(filled)
    }
}

impl OracleTrace {
    /// Calls `each` with the object ids of the requests, a buffer's worth at a time, size-0
    /// records skipped, stopping at the first error. Decodes whole records straight from the
    /// input's buffer, the fast way to read a trace into memory (no per-record item); a record
    /// split across two buffer fills, and the errors, go through the record-by-record path.
    pub(crate) fn for_each_objects<E: From<TraceError>>(
        mut self,
        mut each: impl FnMut(&[u64]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut ids = Vec::new();
        loop {
            ids.clear();
            let whole = match self.input.fill_buf() {
                Ok(buffered) => {
                    let whole = buffered.len() / RECORD_BYTES * RECORD_BYTES;
                    for bytes in buffered[..whole].chunks_exact(RECORD_BYTES) {
                        let size = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
                        if size != 0 {
                            ids.push(u64::from_le_bytes(
                                bytes[4..12].try_into().expect("8 bytes"),
                            ));
                        }
                    }
                    whole
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.record += 1;
                    return Err(self.read_failed(e).into());
                }
            };
            self.record += (whole / RECORD_BYTES) as u64;
            self.input.consume(whole);
            if whole == 0 {
                match self.next() {
                    None => return Ok(()),
                    Some(Ok(r)) if r.size == 0 => {}
                    Some(Ok(r)) => ids.push(r.obj_id),
                    Some(Err(e)) => return Err(e.into()),
                }
            }
            each(&ids)?;
        }
    }

    /// The input failed while `self.record` was being read: named by the records read whole
    /// before it, since a compressed file cut short fails where its last whole block ends, not
    /// at a record of its own.
    fn read_failed(&mut self, cause: std::io::Error) -> TraceError {
        self.failed = true;
        let whole = self.record.saturating_sub(1);
        TraceError::Io {
            path: self.path.clone(),
            cause: std::io::Error::new(
                cause.kind(),
                format!("read failed after {whole} whole records: {cause} (a truncated or damaged compressed file?)"),
            ),
        }
    }
}

impl Iterator for OracleTrace {
    type Item = Result<OracleRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let mut bytes = [0; RECORD_BYTES];
        self.record += 1;
        match self.fill(&mut bytes) {
            Ok(0) => None,
            Ok(RECORD_BYTES) => Some(Ok(OracleRecord::decode(&bytes))),
            Ok(n) => Some(Err(self.error(format!(
                "cut short: {n} of {RECORD_BYTES} bytes; an oracleGeneral file is a whole \
                 number of {RECORD_BYTES}-byte records (is it another format, or truncated?)"
            )))),
            Err(e) => Some(Err(self.read_failed(e))),
        }
    }
}

/// The requests of the trace, size-0 records skipped, times in microseconds.
pub(crate) fn requests(
    trace: OracleTrace,
) -> impl Iterator<Item = Result<ObjectRequest, TraceError>> {
    let mut position = 0;
    trace.filter_map(move |record| {
        position += 1;
        match record {
            Ok(r) if r.size == 0 => None,
            Ok(r) => Some(Ok(ObjectRequest {
                position,
                time_us: Some(u64::from(r.time) * 1_000_000),
                id: r.obj_id,
                size: u64::from(r.size),
            })),
            Err(e) => Some(Err(e)),
        }
    })
}
