//! The types every trace reader shares: a [`Reference`] and a stream of them, the trace
//! [`Format`]s, and the [`TraceFile`] that names a trace and how to read it. They sit in their
//! own file so that the readers (`blocks`, `csv`, `recording`, ...) import them without
//! importing the module that dispatches to the readers.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use crate::error::TraceError;
use crate::time::Time;

/// Bit position of the file number inside a trace block number.
pub const FILE_SHIFT: u32 = 40;

/// One reference of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reference {
    /// Trace block number (`file << FILE_SHIFT | block index` for request traces).
    pub block: u64,
    /// Compute time before the next reference, in microseconds, when the trace has timestamps.
    pub think: Option<Time>,
}

/// A stream of references.
pub type References = Box<dyn Iterator<Item = Result<Reference, TraceError>>>;

/// A trace file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One block number per line (`traces/`).
    Blocks,
    /// The project's CSV.
    Csv,
    /// MSR Cambridge block traces.
    Msr,
    /// UMass / Storage Performance Council traces.
    Spc,
    /// libCacheSim's binary `oracleGeneral` records.
    OracleGeneral,
    /// libCacheSim's csv (a header naming the columns).
    CachesimCsv,
    /// `prefetch record`'s recordings.
    Recording,
}

/// The format names `--format` accepts.
pub const FORMAT_NAMES: &str =
    "blocks (txt), csv, msr, spc, oracle-general, libcachesim-csv, recording";

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "blocks" | "txt" => Ok(Format::Blocks),
            "csv" => Ok(Format::Csv),
            "msr" => Ok(Format::Msr),
            "spc" | "umass" => Ok(Format::Spc),
            "recording" => Ok(Format::Recording),
            "oracle-general" | "oracleGeneral" => Ok(Format::OracleGeneral),
            "libcachesim-csv" | "lcs-csv" => Ok(Format::CachesimCsv),
            _ => Err(format!("unknown trace format {s:?} ({FORMAT_NAMES})")),
        }
    }
}

/// A trace file and how to read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceFile {
    /// The file.
    pub path: PathBuf,
    /// Its format; `None` recognises it from the first data line.
    pub format: Option<Format>,
    /// Block size in bytes for request traces (ignored by `blocks`).
    pub block_size: u64,
    /// Split the requests of object traces (`oracle-general`, `libcachesim-csv`) into blocks
    /// of `block_size` bytes; `false` makes each request one reference to its object.
    pub split_objects: bool,
    /// The bytes of a trace that can be read only once (pipe, FIFO), kept by
    /// [`TraceFile::read_once`]; `None` reads `path` each time.
    pub content: Option<Arc<[u8]>>,
}

impl TraceFile {
    /// A trace whose format is recognised from its content, with 8 KiB blocks (the paper's).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TraceFile {
            path: path.into(),
            format: None,
            block_size: 8192,
            split_objects: false,
            content: None,
        }
    }
}
