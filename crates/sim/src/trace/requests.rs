//! Splitting byte-range requests into block references, and spreading the time between
//! requests over their blocks (the realistic model's per-reference compute time).
//!
//! A request for `length` bytes at `offset` of file `f` references blocks
//! `offset / bs ..= (offset + length - 1) / bs` of that file, in order. The time from this
//! request to the next one is split evenly over its blocks (the last block takes the
//! remainder); the last request of the trace gets no compute time. Requests of length 0 have
//! no blocks and are skipped.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crate::error::TraceError;
use crate::time::Time;
use crate::trace::{Reference, FILE_SHIFT};

/// One request of a request trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Line it came from (for errors).
    pub line: u64,
    /// Issue time in microseconds, if the trace has it.
    pub time_us: Option<u64>,
    /// File (or disk, or ASU) number.
    pub file: u64,
    /// First byte.
    pub offset: u64,
    /// Number of bytes.
    pub length: u64,
    /// How long the traced system took to serve it, in microseconds, if recorded.
    pub service_us: Option<u64>,
}

/// References of the requests of `requests`, `block_size` bytes per block.
pub(crate) fn split<I>(requests: I, path: &Path, block_size: u64) -> Splitter<I>
where
    I: Iterator<Item = Result<Request, TraceError>>,
{
    Splitter {
        requests,
        path: path.to_path_buf(),
        block_size,
        current: None,
        pending: VecDeque::new(),
    }
}

/// Iterator adapter from requests to references.
pub(crate) struct Splitter<I> {
    requests: I,
    path: PathBuf,
    block_size: u64,
    current: Option<Request>,
    pending: VecDeque<Reference>,
}

impl<I: Iterator<Item = Result<Request, TraceError>>> Splitter<I> {
    /// Expands `request` now that the following one (if any) is known.
    fn expand(&mut self, request: Request, next: Option<&Request>) -> Result<(), TraceError> {
        let bad = |message: &str| TraceError::Parse {
            path: self.path.clone(),
            line: request.line,
            message: message.into(),
        };
        if request.file >= 1 << (64 - FILE_SHIFT) {
            return Err(bad("file number too large"));
        }
        let last_byte = request
            .offset
            .checked_add(request.length - 1)
            .ok_or_else(|| bad("offset + length overflows"))?;
        let (first, last) = (
            request.offset / self.block_size,
            last_byte / self.block_size,
        );
        if last >= 1 << FILE_SHIFT {
            return Err(bad("block index too large"));
        }
        let gap: Option<Time> = match (request.time_us, next.map(|n| n.time_us)) {
            (Some(now), Some(Some(later))) => Some(later.saturating_sub(now)),
            (Some(_), None) => Some(0),
            _ => None,
        };
        let count = last - first + 1;
        for (i, index) in (first..=last).enumerate() {
            let share = gap.map(|g| g / count + if i as u64 == count - 1 { g % count } else { 0 });
            self.pending.push_back(Reference {
                block: request.file << FILE_SHIFT | index,
                think: share,
            });
        }
        Ok(())
    }
}

impl<I: Iterator<Item = Result<Request, TraceError>>> Iterator for Splitter<I> {
    type Item = Result<Reference, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(reference) = self.pending.pop_front() {
                return Some(Ok(reference));
            }
            let next = loop {
                match self.requests.next() {
                    None => break None,
                    Some(Err(e)) => return Some(Err(e)),
                    Some(Ok(r)) if r.length == 0 => continue,
                    Some(Ok(r)) => break Some(r),
                }
            };
            let previous = std::mem::replace(&mut self.current, next);
            match previous {
                Some(request) => {
                    let next = self.current;
                    if let Err(e) = self.expand(request, next.as_ref()) {
                        return Some(Err(e));
                    }
                }
                None if self.current.is_none() => return None,
                None => {}
            }
        }
    }
}
