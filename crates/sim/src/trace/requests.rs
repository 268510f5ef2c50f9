//! Splitting byte-range requests into block references, and spreading the time between
//! requests over their blocks (the realistic model's per-reference compute time).
//!
//! A request for `length` bytes at `offset` of file `f` references blocks
//! `offset / bs ..= (offset + length - 1) / bs` of that file, in order. The time from this
//! request to the next one is split evenly over its blocks (the last block takes the
//! remainder); the last request of the trace gets no compute time. Requests of length 0 have
//! no blocks and are skipped. A request is split one block at a time, never held as a list of
//! its blocks, and one with more blocks than the memory available could simulate is an error
//! naming its line.

use std::path::{Path, PathBuf};

use crate::error::TraceError;
use crate::time::Time;
use crate::trace::types::{Reference, FILE_SHIFT};

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
        most_blocks: crate::memory::available() / crate::memory::BYTES_PER_BLOCK,
        current: None,
        expanding: None,
    }
}

/// Iterator adapter from requests to references.
pub(crate) struct Splitter<I> {
    requests: I,
    path: PathBuf,
    block_size: u64,
    /// Most blocks one request may have: each is a distinct block, and more than the memory
    /// available can hold is refused (naming the line) before any is simulated.
    most_blocks: u64,
    /// The request read ahead (its successor's time gives it its compute time).
    current: Option<Request>,
    /// The request being split, one block per call.
    expanding: Option<Expansion>,
}

/// A request being split into blocks `next ..= last`, with its compute time spread over them.
struct Expansion {
    file: u64,
    next: u64,
    last: u64,
    count: u64,
    gap: Option<Time>,
}

impl Iterator for Expansion {
    type Item = Reference;

    fn next(&mut self) -> Option<Reference> {
        if self.next > self.last {
            return None;
        }
        let index = self.next;
        self.next += 1;
        let is_last = index == self.last;
        let think = self
            .gap
            .map(|g| g / self.count + if is_last { g % self.count } else { 0 });
        Some(Reference {
            block: self.file << FILE_SHIFT | index,
            think,
        })
    }
}

impl<I: Iterator<Item = Result<Request, TraceError>>> Splitter<I> {
    /// The blocks of `request`, now that the following one (if any) is known.
    fn expand(&self, request: Request, next: Option<&Request>) -> Result<Expansion, TraceError> {
        let bad = |message: String| TraceError::Parse {
            path: self.path.clone(),
            line: request.line,
            message,
        };
        if request.file >= 1 << (64 - FILE_SHIFT) {
            return Err(bad("file number too large".into()));
        }
        let last_byte = request
            .offset
            .checked_add(request.length - 1)
            .ok_or_else(|| bad("offset + length overflows".into()))?;
        let (first, last) = (
            request.offset / self.block_size,
            last_byte / self.block_size,
        );
        if last >= 1 << FILE_SHIFT {
            return Err(bad("block index too large".into()));
        }
        let count = last - first + 1;
        if count > self.most_blocks {
            return Err(bad(format!(
                "a request of {} bytes is {count} blocks, more than the memory available \
                 ({}) can simulate; fix the length or use a larger --block-size",
                request.length,
                crate::memory::human(self.most_blocks * crate::memory::BYTES_PER_BLOCK)
            )));
        }
        let gap: Option<Time> = match (request.time_us, next.map(|n| n.time_us)) {
            (Some(now), Some(Some(later))) => Some(later.saturating_sub(now)),
            (Some(_), None) => Some(0),
            _ => None,
        };
        Ok(Expansion {
            file: request.file,
            next: first,
            last,
            count,
            gap,
        })
    }
}

impl<I: Iterator<Item = Result<Request, TraceError>>> Iterator for Splitter<I> {
    type Item = Result<Reference, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(reference) = self.expanding.as_mut().and_then(Iterator::next) {
                return Some(Ok(reference));
            }
            self.expanding = None;
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
                Some(request) => match self.expand(request, self.current.as_ref()) {
                    Ok(expansion) => self.expanding = Some(expansion),
                    Err(e) => return Some(Err(e)),
                },
                None if self.current.is_none() => return None,
                None => {}
            }
        }
    }
}
