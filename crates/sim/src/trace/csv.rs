//! The project's own request trace format: CSV with one request per line,
//!
//! ```text
//! time_us,file,offset,length,op
//! 0,/data/a.db,0,8192,R
//! 130,/data/a.db,8192,16384,R
//! 900,/data/b.idx,4096,4096,W
//! ```
//!
//! - `time_us`: issue time in microseconds since the start (integer, non-decreasing);
//! - `file`: any name without commas; each distinct name becomes a file number in order of
//!   first appearance;
//! - `offset`, `length`: bytes;
//! - `op`: `R` or `W` (either case, or `read` / `write`).
//!
//! The header line is optional; blank lines and lines starting with `#` are skipped; a time
//! before the previous line's is an error naming the line. (`prefetch record` writes the
//! `recording` format, see `recording.rs`.)

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use crate::error::TraceError;
use crate::trace::lines::{self, Lines};
use crate::trace::requests::Request;

/// Opens a trace in the project's CSV format.
pub fn read(path: &Path) -> Result<CsvTrace, TraceError> {
    Ok(from_lines(Lines::open(path)?))
}

/// Reads the trace from `lines`.
pub(crate) fn from_lines(lines: Lines) -> CsvTrace {
    CsvTrace {
        state: State {
            path: lines.path().to_path_buf(),
            files: FxHashMap::default(),
            last_time: 0,
        },
        lines,
    }
}

/// Stream of requests of a CSV trace.
pub struct CsvTrace {
    lines: Lines,
    state: State,
}

/// What the parser keeps between lines.
struct State {
    path: PathBuf,
    files: FxHashMap<String, u64>,
    /// The previous request's time, to enforce non-decreasing times.
    last_time: u64,
}

impl State {
    /// The request on `line`.
    fn parse(&mut self, line: u64, text: &str) -> Result<Request, TraceError> {
        let path = self.path.as_path();
        let f = lines::fields(path, line, text, 5, false)?;
        if !matches!(
            f[4].to_ascii_lowercase().as_str(),
            "r" | "w" | "read" | "write"
        ) {
            return Err(lines::error(
                path,
                line,
                format!("op {:?} is not R or W", f[4]),
            ));
        }
        if f[1].is_empty() {
            return Err(lines::error(path, line, "empty file name".into()));
        }
        let time_us: u64 = lines::number(path, line, "time_us", f[0])?;
        if time_us < self.last_time {
            return Err(lines::error(
                path,
                line,
                format!(
                    "time_us {time_us} is before the previous request's {}; \
                     times must be non-decreasing (sort the trace by time)",
                    self.last_time
                ),
            ));
        }
        self.last_time = time_us;
        let next_id = self.files.len() as u64;
        let file = *self.files.entry(f[1].to_string()).or_insert(next_id);
        Ok(Request {
            line,
            time_us: Some(time_us),
            file,
            offset: lines::number(path, line, "offset", f[2])?,
            length: lines::number(path, line, "length", f[3])?,
            service_us: None,
        })
    }
}

impl Iterator for CsvTrace {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let kept = self
            .lines
            .next_kept(|text| lines::is_data(text) && !text.starts_with("time_us"))?;
        Some(kept.and_then(|(line, text)| self.state.parse(line, text)))
    }
}
