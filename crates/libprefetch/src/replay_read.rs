//! Reading a replay's recording (`replay.rs`): the parts recorded by this
//! executable with this command line, one part held at a time, their files
//! given reserved descriptors (`replay_open.rs`) and their pages listed in
//! the order each process touched them, each page once unless the
//! recording lists rereads (docs/record.md, "What a replay does").
//!
//! Follows libprefetch (ATC 2009) section 4.2 (the access list).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::fd::{OwnedFd, RawFd};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use plan::recording::{FileIdentity, PartReader, Touches, Via};
use rustix::fs::{openat, Mode as FileMode, OFlags, CWD};

use crate::replay_mapped::{Entry, Runs};
use crate::replay_open::{Descriptors, Opening};

/// What the read path needs: the private descriptors of the files by
/// (device, inode), and which of the program's page reads the list holds.
pub(super) struct Replay {
    /// Reserved descriptors until opened (`replay_open.rs`).
    pub(super) files: HashMap<(u64, u64), RawFd>,
    /// The same, by private descriptor.
    pub(super) identities: HashMap<RawFd, (u64, u64)>,
    pub(super) page_size: u64,
    pub(super) touches: Mutex<Touches>,
    pub(super) opening: Arc<Opening>,
}

/// Reads the recording part by part (raw system calls, one part held at a
/// time), opening the files of the parts recorded by `exe` that are
/// unchanged and listing their pages in recorded order, up to
/// `max_entries`, with where each recorded run starts among them, and the
/// bytes the list holds of files the program mapped (a `via=map` run).
pub(super) fn read_recording(
    path: &OsStr,
    exe: &[u8],
    max_entries: usize,
) -> Result<(Replay, Runs, u64), String> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = openat(CWD, path, flags, FileMode::empty()).map_err(|e| e.to_string())?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| e.to_string())?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err("not a regular file".into());
    }
    let input = std::io::BufReader::with_capacity(1 << 16, RawReader(fd));
    let mut reader = PartReader::new(input).map_err(|e| e.to_string())?;
    // Without rereads a page is listed once, whichever method saw it (a
    // tracepoint's part and the interposers' may both hold it).
    let rereads = reader.rereads_after > 0;
    let mut replay = Replay {
        files: HashMap::new(),
        identities: HashMap::new(),
        page_size: reader.page_size,
        touches: Mutex::new(Touches::new(reader.rereads_after)),
        opening: Arc::new(Opening::new()),
    };
    let mut opening = Opening::new();
    let mut kept = Vec::new();
    let mut pages = 0;
    let mut processes: HashMap<u32, usize> = HashMap::new();
    let mut mapped: HashSet<RawFd> = HashSet::new();
    let limit = Descriptors::from_limit();
    let own_args = crate::record::own_args();
    let own = |part: &plan::recording::Part| {
        part.exe == exe && part.args.is_none_or(|args| args == own_args)
    };
    while let Some(part) = reader.next_part_where(own).map_err(|e| e.to_string())? {
        let next = processes.len();
        let process = *processes.entry(part.pid).or_insert(next);
        let privates: Vec<Option<RawFd>> = part
            .files
            .iter()
            .map(|identity| private_of(&mut replay, &mut opening, identity, &limit))
            .collect();
        for run in &part.runs {
            if let Some(fd) = privates[run.file] {
                if run.via == Via::Map {
                    mapped.insert(fd);
                }
                kept.push(KeptRun {
                    process,
                    time_us: run.time_us,
                    ordered: run.via != Via::Map,
                    fd,
                    pages: run.first..run.first + run.count,
                });
                pages += run.count;
            }
        }
        if pages >= max_entries as u64 {
            break;
        }
    }
    // The parts of one process (the tracepoint's, the interposers') in
    // time order: a program's start-up reads come before its faults.
    kept.sort_by_key(|run| (run.process, run.time_us));
    let runs = listed(&kept, rereads, max_entries);
    opening.order_by(&runs.entries);
    replay.opening = Arc::new(opening);
    let in_mapped = runs.entries.iter().filter(|(fd, _)| mapped.contains(fd));
    let mapped_bytes = in_mapped.count() as u64 * replay.page_size;
    Ok((replay, runs, mapped_bytes))
}

/// The entries of `run`'s pages.
fn entries_of(run: &KeptRun) -> impl Iterator<Item = Entry> + '_ {
    let fd = run.fd;
    run.pages
        .clone()
        .filter_map(move |page| Some((fd, u32::try_from(page).ok()?)))
}

/// A recorded run of a replayed file.
struct KeptRun {
    /// Order of its process's first part in the recording.
    process: usize,
    time_us: u64,
    /// Whether its time is when it was touched (the map method's is when
    /// the mapping was looked at).
    ordered: bool,
    fd: RawFd,
    pages: std::ops::Range<u64>,
}

/// The list of `kept` runs' pages, each once unless `rereads`, at most
/// `max_entries`, with where each run starts. A page an ordered run holds
/// is listed at its place, never at a map run's: a map run's time is when
/// the mapping was looked at, and the tracepoint's times count from the
/// recorder's start, before the process's, so the exit walk of a short
/// program can sort before the faults it saw (the follower passes map runs
/// over, and such a program's replay never started).
fn listed(kept: &[KeptRun], rereads: bool, max_entries: usize) -> Runs {
    let mut entries = Vec::new();
    let mut starts = Vec::new();
    let mut ordered = Vec::new();
    let mut listed: HashSet<Entry> = HashSet::new();
    let in_order: HashSet<Entry> = kept
        .iter()
        .filter(|run| run.ordered)
        .flat_map(entries_of)
        .collect();
    for run in kept {
        let room = max_entries.saturating_sub(entries.len());
        let pages = entries_of(run).filter(|entry| run.ordered || !in_order.contains(entry));
        let first_times = pages.filter(|&entry| rereads || listed.insert(entry));
        let before = entries.len();
        entries.extend(first_times.take(room));
        if entries.len() > before {
            starts.push(before);
            ordered.push(run.ordered);
        }
    }
    Runs {
        entries: Arc::new(entries),
        starts,
        ordered,
        relisted: Arc::new(AtomicUsize::new(usize::MAX)),
    }
}

/// The private descriptor of a recorded file: reserved at its first
/// mention within `limit`'s files (opened later, `replay_open.rs`), else
/// `None`.
fn private_of(
    replay: &mut Replay,
    opening: &mut Opening,
    identity: &FileIdentity,
    limit: &Descriptors,
) -> Option<RawFd> {
    let key = (identity.dev, identity.ino);
    if let Some(&private) = replay.files.get(&key) {
        return Some(private);
    }
    if replay.files.len() >= limit.max_files {
        return None;
    }
    let private = opening.reserve(identity, limit)?;
    replay.files.insert(key, private);
    replay.identities.insert(private, key);
    Some(private)
}

/// `std::io::Read` over a descriptor with raw system calls (never seen by
/// the read interposers).
struct RawReader(OwnedFd);

impl std::io::Read for RawReader {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match rustix::io::read(&self.0, &mut *buffer) {
                Err(rustix::io::Errno::INTR) => continue,
                done => return done.map_err(std::io::Error::from),
            }
        }
    }
}
