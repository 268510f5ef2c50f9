//! The reference traces of `traces/` (the LIRS trace set): gzip text, one block number
//! per line, in reference order. A line holding only `*` is a checkpoint marker of the original
//! tool and is skipped; blank lines and `#` comment lines are skipped too. No timing and no file names: the whole
//! trace is one file, and consecutive numbers are adjacent blocks.

use std::path::{Path, PathBuf};

use crate::error::TraceError;
use crate::trace::lines::{self, Kept, Lines};
use crate::trace::types::{Reference, FILE_SHIFT};

/// Opens a block-number trace.
pub fn read(path: &Path) -> Result<BlockTrace, TraceError> {
    Ok(from_lines(Lines::open(path)?))
}

/// Reads the trace from `lines`.
pub(crate) fn from_lines(lines: Lines) -> BlockTrace {
    BlockTrace {
        path: lines.path().to_path_buf(),
        lines,
    }
}

/// Stream of references of a block-number trace.
pub struct BlockTrace {
    lines: Lines,
    path: PathBuf,
}

/// The reference on `line` of `path`, whose trimmed text is `text`.
fn parse(path: &Path, line: u64, text: &str) -> Result<Reference, TraceError> {
    match text.parse::<u64>() {
        Ok(block) if block < 1 << FILE_SHIFT => Ok(Reference { block, think: None }),
        Ok(_) => Err(lines::error(
            path,
            line,
            format!("block number {text} too large"),
        )),
        Err(_) => Err(lines::error(
            path,
            line,
            format!("expected a block number or '*', found {text:?}"),
        )),
    }
}

impl Iterator for BlockTrace {
    type Item = Result<Reference, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let kept = self
            .lines
            .next_number_or_kept(|text| lines::is_data(text) && text.trim() != "*")?;
        Some(kept.and_then(|(line, kept)| match kept {
            Kept::Number(block) if block < 1 << FILE_SHIFT => Ok(Reference { block, think: None }),
            Kept::Number(block) => parse(&self.path, line, &block.to_string()),
            Kept::Text(text) => parse(&self.path, line, text.trim()),
        }))
    }
}
