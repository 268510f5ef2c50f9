//! UMass Trace Repository block traces in the Storage Performance Council format
//! (Financial1/2, WebSearch1-3):
//!
//! ```text
//! 0,20941264,8192,W,0.551706
//! 1,3019336,4096,r,0.554041
//! ```
//!
//! Fields: application specific unit (ASU, becomes the file number), logical block address in
//! 512-byte sectors, size in bytes, opcode `r`/`w` (either case), timestamp in seconds. Further
//! optional fields are ignored.

use std::path::{Path, PathBuf};

use crate::error::TraceError;
use crate::trace::lines::{self, Lines};
use crate::trace::requests::Request;

/// Bytes per logical block address.
const SECTOR: u64 = 512;

/// Opens a UMass / SPC trace.
pub fn read(path: &Path) -> Result<SpcTrace, TraceError> {
    Ok(from_lines(Lines::open(path)?))
}

/// Reads the trace from `lines`.
pub(crate) fn from_lines(lines: Lines) -> SpcTrace {
    SpcTrace {
        path: lines.path().to_path_buf(),
        lines,
    }
}

/// Stream of requests of a UMass / SPC trace.
pub struct SpcTrace {
    lines: Lines,
    path: PathBuf,
}

/// The request on `line` of `path`.
fn parse(path: &Path, line: u64, text: &str) -> Result<Request, TraceError> {
    let f = lines::fields(path, line, text, 5, true)?;
    if !matches!(f[3], "r" | "R" | "w" | "W") {
        return Err(lines::error(
            path,
            line,
            format!("opcode {:?} is not r or w", f[3]),
        ));
    }
    let seconds: f64 = lines::number(path, line, "timestamp", f[4])?;
    if !(seconds.is_finite() && seconds >= 0.0) {
        return Err(lines::error(
            path,
            line,
            format!("timestamp {seconds} is negative or not finite"),
        ));
    }
    let lba: u64 = lines::number(path, line, "LBA", f[1])?;
    Ok(Request {
        line,
        time_us: Some((seconds * 1e6).round() as u64),
        file: lines::number(path, line, "ASU", f[0])?,
        offset: lba
            .checked_mul(SECTOR)
            .ok_or_else(|| lines::error(path, line, "LBA too large".into()))?,
        length: lines::number(path, line, "size", f[2])?,
        service_us: None,
    })
}

impl Iterator for SpcTrace {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let kept = self.lines.next_kept(lines::is_data)?;
        Some(kept.and_then(|(line, text)| parse(&self.path, line, text)))
    }
}
