//! MSR Cambridge block I/O traces (Narayanan et al., FAST 2008), as published by SNIA:
//!
//! ```text
//! Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
//! 128166372003061629,wdev,0,Read,3154128896,4096,1607
//! ```
//!
//! `Timestamp` is a Windows FILETIME (100 ns ticks), `Type` is `Read` or `Write`, `Offset` and
//! `Size` are bytes, `ResponseTime` is in 100 ns ticks. Each (hostname, disk) pair becomes a file number in order of first
//! appearance. Times are converted to microseconds since the first request.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use crate::error::TraceError;
use crate::trace::lines::{self, Lines};
use crate::trace::requests::Request;

/// Opens an MSR Cambridge trace.
pub fn read(path: &Path) -> Result<MsrTrace, TraceError> {
    Ok(from_lines(Lines::open(path)?))
}

/// Reads the trace from `lines`.
pub(crate) fn from_lines(lines: Lines) -> MsrTrace {
    MsrTrace {
        state: State {
            path: lines.path().to_path_buf(),
            disks: FxHashMap::default(),
            start: None,
        },
        lines,
    }
}

/// Stream of requests of an MSR Cambridge trace.
pub struct MsrTrace {
    lines: Lines,
    state: State,
}

/// What the parser keeps between lines.
struct State {
    path: PathBuf,
    disks: FxHashMap<(String, u64), u64>,
    start: Option<u64>,
}

impl State {
    /// The request on `line`.
    fn parse(&mut self, line: u64, text: &str) -> Result<Request, TraceError> {
        let path = self.path.as_path();
        let f = lines::fields(path, line, text, 7, false)?;
        let ticks: u64 = lines::number(path, line, "Timestamp", f[0])?;
        let disk: u64 = lines::number(path, line, "DiskNumber", f[2])?;
        let response: u64 = lines::number(path, line, "ResponseTime", f[6])?;
        if !matches!(f[3], "Read" | "Write") {
            return Err(lines::error(
                path,
                line,
                format!("Type {:?} is not Read or Write", f[3]),
            ));
        }
        let next_id = self.disks.len() as u64;
        let file = *self
            .disks
            .entry((f[1].to_string(), disk))
            .or_insert(next_id);
        let start = *self.start.get_or_insert(ticks);
        Ok(Request {
            line,
            time_us: Some(ticks.saturating_sub(start) / 10),
            file,
            offset: lines::number(path, line, "Offset", f[4])?,
            length: lines::number(path, line, "Size", f[5])?,
            service_us: Some(response / 10),
        })
    }
}

impl Iterator for MsrTrace {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let kept = self
            .lines
            .next_kept(|text| lines::is_data(text) && !text.starts_with("Timestamp"))?;
        Some(kept.and_then(|(line, text)| self.state.parse(line, text)))
    }
}
