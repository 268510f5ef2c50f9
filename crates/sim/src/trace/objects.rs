//! Object traces (libCacheSim's `oracleGeneral` and csv forms): each request names an object
//! and its size, and becomes either one reference to the object (the default, as libCacheSim's
//! `ignore_obj_size`: a cache of N blocks holds N objects) or, with a block size, one
//! reference per block of the object (object `i` in order of first appearance is file `i`,
//! its bytes `0..size`).
//!
//! Times are converted to microseconds by the readers; the time from one request to the next
//! is the first one's compute time (spread over its blocks when split), the last request gets
//! none, as for request traces.

use std::path::Path;

use rustc_hash::FxHashMap;

use crate::error::TraceError;
use crate::trace::requests::{self, Request};
use crate::trace::types::Reference;

/// One request of an object trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectRequest {
    /// Line (text forms) or record (binary forms) it came from, 1-based, for errors.
    pub position: u64,
    /// Issue time in microseconds, if the trace has it.
    pub time_us: Option<u64>,
    /// The object.
    pub id: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// One reference per request, to the object id itself.
pub(crate) fn one_per_object<I>(requests: I) -> PerObject<I>
where
    I: Iterator<Item = Result<ObjectRequest, TraceError>>,
{
    PerObject {
        requests,
        ahead: None,
        started: false,
    }
}

/// Iterator adapter from object requests to one reference each.
pub(crate) struct PerObject<I> {
    requests: I,
    /// The request read ahead (its time gives the previous one its compute time).
    ahead: Option<ObjectRequest>,
    started: bool,
}

impl<I: Iterator<Item = Result<ObjectRequest, TraceError>>> PerObject<I> {
    fn pull(&mut self) -> Result<Option<ObjectRequest>, TraceError> {
        self.requests.next().transpose()
    }
}

impl<I: Iterator<Item = Result<ObjectRequest, TraceError>>> Iterator for PerObject<I> {
    type Item = Result<Reference, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.started {
            self.started = true;
            match self.pull() {
                Ok(first) => self.ahead = first,
                Err(e) => return Some(Err(e)),
            }
        }
        let current = self.ahead.take()?;
        let next = match self.pull() {
            Ok(next) => next,
            Err(e) => return Some(Err(e)),
        };
        let think = match (current.time_us, next.map(|n| n.time_us)) {
            (Some(now), Some(Some(later))) => Some(later.saturating_sub(now)),
            (Some(_), None) => Some(0),
            _ => None,
        };
        self.ahead = next;
        Some(Ok(Reference {
            block: current.id,
            think,
        }))
    }
}

/// One reference per `block_size` bytes of each object; object ids become file numbers in
/// order of first appearance.
pub(crate) fn by_size<I>(
    requests: I,
    path: &Path,
    block_size: u64,
) -> impl Iterator<Item = Result<Reference, TraceError>>
where
    I: Iterator<Item = Result<ObjectRequest, TraceError>>,
{
    let mut files: FxHashMap<u64, u64> = FxHashMap::default();
    let as_requests = requests.map(move |request| {
        let request = request?;
        let next_file = files.len() as u64;
        let file = *files.entry(request.id).or_insert(next_file);
        Ok(Request {
            line: request.position,
            time_us: request.time_us,
            file,
            offset: 0,
            length: request.size,
            service_us: None,
        })
    });
    requests::split(as_requests, path, block_size)
}
