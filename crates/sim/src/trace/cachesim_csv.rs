//! libCacheSim's csv form: a header line naming the columns, then one request per line,
//!
//! ```text
//! time,obj_id,obj_size
//! 0,42,4096
//! 1,7,512
//! ```
//!
//! Columns are found by their header names: `obj_id` (also `id`, `key`, `lbn`), `time`
//! (also `timestamp`, `clock_time`; seconds, as libCacheSim's `clock_time`), and `obj_size`
//! (also `size`; bytes); other columns are ignored, so a csv written for libCacheSim with
//! extra fields reads as it is. Only `obj_id` is required; without `obj_size` every object
//! has size 1 (libCacheSim's default); without `time` there are no compute times. The
//! delimiter is a comma; ids are unsigned integers (libCacheSim's `obj_id_is_num`). Blank lines
//! and `#` comments are skipped. Requests of size 0 are skipped, as libCacheSim does by
//! default. libCacheSim's txt form, one object id per line, is the `blocks` format.

use std::path::{Path, PathBuf};

use crate::error::TraceError;
use crate::trace::lines::{self, Lines};
use crate::trace::objects::ObjectRequest;

/// Header names accepted for each column.
const ID_NAMES: &[&str] = &["obj_id", "id", "key", "lbn"];
const TIME_NAMES: &[&str] = &["time", "timestamp", "clock_time"];
const SIZE_NAMES: &[&str] = &["obj_size", "size"];

/// Whether `header` (a first data line) is a libCacheSim csv header: it names an `obj_id`.
pub(crate) fn is_header(header: &str) -> bool {
    header.split(',').any(|f| f.trim() == "obj_id")
}

/// Where each column is.
#[derive(Clone, Copy, Debug)]
struct Columns {
    id: usize,
    time: Option<usize>,
    size: Option<usize>,
    count: usize,
}

/// Stream of requests of a libCacheSim csv trace.
pub struct CachesimCsv {
    lines: Lines,
    path: PathBuf,
    columns: Option<Columns>,
}

/// Opens a libCacheSim csv trace.
pub fn read(path: &Path) -> Result<CachesimCsv, TraceError> {
    Ok(from_lines(Lines::open(path)?))
}

/// Reads the trace from `lines`.
pub(crate) fn from_lines(lines: Lines) -> CachesimCsv {
    CachesimCsv {
        path: lines.path().to_path_buf(),
        lines,
        columns: None,
    }
}

impl Columns {
    /// The columns named by the header on `line` of `path`.
    fn of(path: &Path, line: u64, text: &str) -> Result<Columns, TraceError> {
        let names: Vec<String> = text
            .split(',')
            .map(|f| f.trim().to_ascii_lowercase())
            .collect();
        let find = |aliases: &[&str]| names.iter().position(|n| aliases.contains(&n.as_str()));
        let id = find(ID_NAMES).ok_or_else(|| {
            lines::error(
                path,
                line,
                format!(
                    "the header names no object id column ({}); a libCacheSim csv starts \
                     with a header such as `time,obj_id,obj_size`",
                    ID_NAMES.join(", ")
                ),
            )
        })?;
        Ok(Columns {
            id,
            time: find(TIME_NAMES),
            size: find(SIZE_NAMES),
            count: names.len(),
        })
    }

    /// The request on `line` of `path`.
    fn parse(self, path: &Path, line: u64, text: &str) -> Result<ObjectRequest, TraceError> {
        let columns = self;
        let f = lines::fields(path, line, text, columns.count, false)?;
        let time_us = columns
            .time
            .map(|i| lines::number::<u64>(path, line, "time", f[i]))
            .transpose()?
            .map(|seconds| seconds.saturating_mul(1_000_000));
        let size = columns
            .size
            .map_or(Ok(1), |i| lines::number(path, line, "obj_size", f[i]))?;
        Ok(ObjectRequest {
            position: line,
            time_us,
            id: lines::number(path, line, "obj_id", f[columns.id])?,
            size,
        })
    }
}

impl Iterator for CachesimCsv {
    type Item = Result<ObjectRequest, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (line, text) = match self.lines.next_kept(lines::is_data)? {
                Ok(kept) => kept,
                Err(e) => return Some(Err(e)),
            };
            let Some(columns) = self.columns else {
                match Columns::of(&self.path, line, text) {
                    Ok(columns) => self.columns = Some(columns),
                    Err(e) => return Some(Err(e)),
                }
                continue;
            };
            match columns.parse(&self.path, line, text) {
                Ok(request) if request.size == 0 => continue,
                result => return Some(result),
            }
        }
    }
}
