//! Recordings of `prefetch record` (docs/record.md) as traces: each run of
//! pages becomes one request of its file at its time, so a recording of a
//! real program can be simulated with any policy.
//!
//! Files are numbered in order of first appearance by identity (device and
//! inode), the same file keeping its number across parts. Parts follow each
//! other in file order: each part's times (microseconds since its process
//! started recording) are shifted to start where the previous part's
//! ended, so the compute time between requests stays what each process
//! showed. The parsing is `plan::recording`'s; a part cut off before its
//! `end` line is left out.
//!
//! A page that several methods saw (a recording made as root holds the read
//! family's runs, the page-cache tracepoint's and the mappings') is one
//! reference, of the method that sees references best: read, then trace,
//! then map (`SeenBy`).
//!
//! Deviations: a recording holds each page once per process (its first
//! read), so rereads served by the cache while recording are not
//! references here.

use std::collections::{HashMap, HashSet};

use plan::recording::{Recording, Via};

use crate::error::TraceError;
use crate::trace::lines;
use crate::trace::requests::{self, Request};
use crate::trace::types::{References, TraceFile};

/// Opens a recording as a stream of references of `trace.block_size` bytes.
pub fn open(trace: &TraceFile) -> Result<References, TraceError> {
    let requests = self::requests(trace)?;
    let stream = requests.into_iter().map(Ok);
    Ok(Box::new(requests::split(
        stream,
        &trace.path,
        trace.block_size,
    )))
}

/// The recording's runs as requests, in order.
pub fn requests(trace: &TraceFile) -> Result<Vec<Request>, TraceError> {
    let bytes = match &trace.content {
        Some(bytes) => bytes.to_vec(),
        None => std::fs::read(&trace.path).map_err(|cause| TraceError::Io {
            path: trace.path.clone(),
            cause,
        })?,
    };
    let recording = Recording::read(&bytes[..])
        .map_err(|e| lines::error(&trace.path, e.line as u64, e.reason))?;
    Ok(as_requests(&recording))
}

fn as_requests(recording: &Recording) -> Vec<Request> {
    let page = recording.page_size;
    let mut numbers: HashMap<(u64, u64), u64> = HashMap::new();
    let numbered: Vec<Vec<u64>> = recording
        .parts
        .iter()
        .map(|part| {
            let numbers = &mut numbers;
            part.files
                .iter()
                .map(|f| {
                    let next = numbers.len() as u64;
                    *numbers.entry((f.dev, f.ino)).or_insert(next)
                })
                .collect()
        })
        .collect();
    let seen = SeenBy::of(recording, &numbered);
    let mut requests = Vec::new();
    let mut part_start = 0;
    for (part, files) in recording.parts.iter().zip(&numbered) {
        let mut last = part_start;
        for run in &part.runs {
            last = part_start + run.time_us;
            let file = files[run.file];
            for (first, count) in seen.unseen_pages(run.via, file, run.first, run.count) {
                requests.push(Request {
                    line: 0,
                    time_us: Some(last),
                    file,
                    offset: first * page,
                    length: count * page,
                    service_us: None,
                });
            }
        }
        part_start = last;
    }
    requests
}

/// The pages (file number, page) each method saw, so that a page is a reference of the method
/// that sees references best: a recording made as root holds the same pages from the read
/// family (every read, in order), the page-cache tracepoint (first touches) and the mappings
/// (resident at unmap); read runs are kept whole, a traced page is left out where a read saw
/// it, a mapped one where a read or the tracepoint did.
struct SeenBy {
    read: HashSet<(u64, u64)>,
    trace: HashSet<(u64, u64)>,
}

impl SeenBy {
    fn of(recording: &Recording, numbered: &[Vec<u64>]) -> SeenBy {
        let mut seen = SeenBy {
            read: HashSet::new(),
            trace: HashSet::new(),
        };
        for (part, files) in recording.parts.iter().zip(numbered) {
            for run in &part.runs {
                let set = match run.via {
                    Via::Read => &mut seen.read,
                    Via::Trace => &mut seen.trace,
                    Via::Map => continue,
                };
                set.extend((run.first..run.first + run.count).map(|p| (files[run.file], p)));
            }
        }
        seen
    }

    /// The sub-runs (first page, count) of a run that no better method saw.
    fn unseen_pages(&self, via: Via, file: u64, first: u64, count: u64) -> Vec<(u64, u64)> {
        let better = |page: u64| match via {
            Via::Read => false,
            Via::Trace => self.read.contains(&(file, page)),
            Via::Map => self.read.contains(&(file, page)) || self.trace.contains(&(file, page)),
        };
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for page in (first..first + count).filter(|&page| !better(page)) {
            match runs.last_mut() {
                Some((start, n)) if *start + *n == page => *n += 1,
                _ => runs.push((page, 1)),
            }
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Format, FILE_SHIFT};

    const TEXT: &str = "libprefetch-recording 1 page_size=4096\n\
        part pid=1 exe=/bin/a\n\
        file 0 dev=1 ino=7 size=65536 mtime_ns=0 path=/x\n\
        pages 0 2 2 10\n\
        end\n\
        part pid=2 exe=/bin/b\n\
        file 0 dev=1 ino=9 size=8192 mtime_ns=0 path=/y\n\
        file 1 dev=1 ino=7 size=65536 mtime_ns=0 path=/x\n\
        pages 1 0 1 5\n\
        pages 0 1 1 25\n\
        end\n\
        part pid=3 exe=/bin/c\n\
        pages";

    #[test]
    fn runs_become_blocks_of_files_numbered_by_identity_with_times_chained() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec");
        std::fs::write(&path, TEXT).unwrap();
        let mut trace = TraceFile::new(&path);
        trace.block_size = 4096;
        assert_eq!(trace.format().unwrap(), Format::Recording);
        let blocks: Vec<(u64, Option<u64>)> = trace
            .open()
            .unwrap()
            .map(|r| r.map(|r| (r.block, r.think)).unwrap())
            .collect();
        let y = 1 << FILE_SHIFT;
        // /x pages 2,3 at 10 us; then /x page 0 at 10+5; /y page 1 at 10+25; the cut part is left out.
        assert_eq!(
            blocks,
            vec![(2, Some(2)), (3, Some(3)), (0, Some(20)), (y | 1, Some(0))]
        );
    }

    #[test]
    fn a_page_several_methods_saw_is_one_reference_of_the_best_method() {
        let text = "libprefetch-recording 1 page_size=4096\n\
            part pid=1 exe=/bin/a\n\
            file 0 dev=1 ino=7 size=65536 mtime_ns=0 path=/x\n\
            pages 0 0 4 10 via=trace\n\
            end\n\
            part pid=1 exe=/bin/a\n\
            file 0 dev=1 ino=7 size=65536 mtime_ns=0 path=/x\n\
            pages 0 1 2 5\n\
            pages 0 0 8 20 via=map\n\
            end\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec");
        std::fs::write(&path, text).unwrap();
        let mut trace = TraceFile::new(&path);
        trace.format = Some(Format::Recording);
        let runs: Vec<(u64, u64)> = requests(&trace)
            .unwrap()
            .iter()
            .map(|r| (r.offset / 4096, r.length / 4096))
            .collect();
        // Traced 0-3 less the read 1-2; the read 1-2; mapped 0-7 less all of those.
        assert_eq!(runs, vec![(0, 1), (3, 1), (1, 2), (4, 4)]);
    }

    #[test]
    fn a_recording_that_is_not_text_names_the_line_at_fault() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec");
        let mut bytes = TEXT.as_bytes()[..TEXT.find("pages").unwrap()].to_vec();
        bytes.extend_from_slice(b"\xff\xfe\n");
        std::fs::write(&path, bytes).unwrap();
        let mut trace = TraceFile::new(&path);
        trace.format = Some(Format::Recording);
        let error = requests(&trace).unwrap_err().to_string();
        assert!(error.contains(":4:"), "{error}");
        assert!(!error.contains(":0:"), "{error}");
    }
}
