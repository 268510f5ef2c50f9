//! `prefetch record` around the program: runs it as a child (with the
//! interposers preloaded, which append their parts to the recording) beside
//! the kernel's page-cache tracepoint where the machine allows it
//! (`tracepoint.rs`), then puts the tracepoint's pages first in the
//! recording and says in one line per method what it saw.
//!
//! The methods (docs/record.md, "What each method sees"):
//!
//! | method | sees | order | needs |
//! |---|---|---|---|
//! | `read` (interposers) | pages read through the read family and stdio | first read | nothing |
//! | `map` (interposed `mmap` + `mincore`) | resident pages of mapped files at unmap and exit | none within a mapping | nothing |
//! | `trace` (`filemap` tracepoint) | every page the process tree brought into the cache | first touch | root or `CAP_PERFMON` |
//!
//! The recording then holds the tracepoint's parts first (pages in the
//! order the program brought them in) and the interposers' after (pages
//! that were cached already when recorded, which the tracepoint cannot
//! see); the replay lists each page once. A file the tracepoint saw that
//! no method could name (a static binary's reads) is left out and counted.
//! The preloaded library's own file is left out of every method: it is
//! the recorder's, not the program's.
//!
//! The exit status is the program's; a death by signal is passed on by
//! dying of the same signal. Ctrl-C and Ctrl-\ go to the program (the
//! terminal sends them to the whole group); `record` waits for its end.
//!
//! Follows libprefetch (ATC 2009) section 4.2 (the recording is an access
//! list) and iorap's page-cache traces.
//! Deviations: `run` replaces itself with the program; `record` stays its
//! parent, to trace it and to summarise.

use std::collections::{HashMap, HashSet};
use std::io::{BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitCode, ExitStatus};
use std::time::Duration;

use ::bench::size::format_bytes;
use anyhow::{Context, Result};
use plan::recording::{FileIdentity, Part, Recording, Run, Via};

use crate::tracepoint::{Trace, Tracer};

/// Runs in a part written by the tracepoint's method (as the recorder's parts).
const PART_RUNS: usize = 16 << 10;

/// How often the tracepoint's ring buffer is drained while the program runs.
const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// Runs `command`, recording into `path` (which holds the header); the
/// tracepoint too if `tracepoint` and the machine allows it.
pub fn run(mut command: Command, path: &Path, tracepoint: bool) -> Result<ExitCode> {
    let mut tracer = match tracepoint.then(Tracer::start) {
        Some(Ok(tracer)) => Some(tracer),
        Some(Err(reason)) => {
            eprintln!("prefetch: record: trace: not used: {reason}");
            None
        }
        None => None,
    };
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return Ok(launch::exec::cannot_run(command.get_program(), &error)),
    };
    let started = std::fs::read_link(format!("/proc/{}/exe", child.id())).ok();
    let library = preloaded(&command).and_then(|path| identity_of(&path));
    let _ignored = IgnoreInterrupts::new();
    let status = loop {
        if let Some(tracer) = tracer.as_mut() {
            tracer.drain();
        }
        if let Some(status) = child.try_wait().context("waiting for the program")? {
            break status;
        }
        std::thread::sleep(DRAIN_EVERY);
    };
    let trace = tracer.map(Tracer::finish);
    let exe = trace
        .as_ref()
        .and_then(|trace| last_exec(trace, child.id()))
        .or(started);
    let own = library.map(|identity| (identity.dev, identity.ino));
    match finish(path, trace, exe.as_deref(), child.id(), own) {
        Ok(lines) => lines
            .iter()
            .for_each(|line| eprintln!("prefetch: record: {line}")),
        Err(error) => eprintln!("prefetch: record: {error:#}"),
    }
    Ok(exit_code(status))
}

/// The library `command` preloads first (`run.rs` puts it there).
fn preloaded(command: &Command) -> Option<std::path::PathBuf> {
    let (_, list) = command.get_envs().find(|(name, _)| *name == "LD_PRELOAD")?;
    let first = list?.as_bytes().split(|&b| b == b':' || b == b' ').next()?;
    Some(Path::new(std::ffi::OsStr::from_bytes(first)).to_path_buf())
}

/// The executable the program's process ran last (a wrapper script or
/// shim execs the real program in the same process).
fn last_exec(trace: &Trace, pid: u32) -> Option<std::path::PathBuf> {
    let (_, path) = trace
        .execs
        .iter()
        .rev()
        .find(|(exec_pid, _)| *exec_pid == pid)?;
    std::fs::canonicalize(path).ok()
}

/// The program's exit status as this process's: its code, or death by
/// its signal.
fn exit_code(status: ExitStatus) -> ExitCode {
    if let Some(signal) = status.signal() {
        // SAFETY: restoring a default disposition and raising a signal
        // touch no memory of this program.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
        return ExitCode::from(128 + signal as u8);
    }
    ExitCode::from(status.code().unwrap_or(1) as u8)
}

/// SIGINT and SIGQUIT ignored while the program runs (they reach it from
/// the terminal; `record` must live to finish the recording).
struct IgnoreInterrupts;

impl IgnoreInterrupts {
    fn new() -> IgnoreInterrupts {
        // SAFETY: setting dispositions to SIG_IGN.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGQUIT, libc::SIG_IGN);
        }
        IgnoreInterrupts
    }
}

impl Drop for IgnoreInterrupts {
    fn drop(&mut self) {
        // SAFETY: restoring the default dispositions.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
        }
    }
}

/// Puts the tracepoint's parts (if any) first in the recording, leaves
/// out the file `own` (the preloaded library: device, inode) and returns
/// the summary lines.
fn finish(
    path: &Path,
    trace: Option<Trace>,
    exe: Option<&Path>,
    pid: u32,
    own: Option<(u64, u64)>,
) -> Result<Vec<String>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the recording {}", path.display()))?;
    let mut recording = Recording::read(BufReader::new(file))
        .with_context(|| format!("the recording {} cannot be read back", path.display()))?;
    let kept: Vec<Part> = recording
        .parts
        .iter()
        .map(|part| own.map_or_else(|| part.clone(), |key| without_file(part, key)))
        .collect();
    let mut changed = kept != recording.parts;
    recording.parts = kept;
    let mut lines = Vec::new();
    let mut parts = recording.parts.clone();
    if let Some(trace) = &trace {
        let exe = exe.map_or_else(Vec::new, |exe| exe.as_os_str().as_bytes().to_vec());
        let (traced, unnamed) = trace_parts(trace, &recording, exe, pid, own);
        lines.push(trace_line(&traced, trace, unnamed));
        changed |= !traced.is_empty();
        parts = traced.into_iter().chain(parts).collect();
    }
    if changed {
        rewrite(path, &recording, &parts)?;
    }
    lines.insert(0, method_line(&recording.parts, Via::Read));
    lines.insert(1, method_line(&recording.parts, Via::Map));
    Ok(lines)
}

/// `part` without the file `key` (device, inode) and its runs.
fn without_file(part: &Part, key: (u64, u64)) -> Part {
    let mut kept = part.clone();
    let Some(dropped) = part.files.iter().position(|f| (f.dev, f.ino) == key) else {
        return kept;
    };
    kept.files.remove(dropped);
    kept.runs.retain(|run| run.file != dropped);
    for run in &mut kept.runs {
        run.file -= usize::from(run.file > dropped);
    }
    kept
}

/// Replaces the recording with its header and `parts` (a new file renamed
/// over it, so a reader never sees half of it).
fn rewrite(path: &Path, recording: &Recording, parts: &[Part]) -> Result<()> {
    let mut text = plan::recording::header(recording.page_size, recording.rereads_after);
    for part in parts {
        text += &part.to_text();
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".partial-{}", std::process::id()));
    let mut file = std::fs::File::create(&temporary)
        .with_context(|| format!("cannot write {}", Path::new(&temporary).display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("cannot write the recording {}", path.display()))
}

/// The tracepoint's pages as parts of `exe`, naming each file by what the
/// other methods recorded of it or by the executed files; also the pages
/// of files no method named; the file `own` is left out.
fn trace_parts(
    trace: &Trace,
    recording: &Recording,
    exe: Vec<u8>,
    pid: u32,
    own: Option<(u64, u64)>,
) -> (Vec<Part>, u64) {
    let mut known: HashMap<(u64, u64), FileIdentity> = HashMap::new();
    for file in recording.parts.iter().flat_map(|part| &part.files) {
        known.insert((file.dev, file.ino), file.clone());
    }
    for (_, path) in &trace.execs {
        if let Some(identity) = identity_of(path) {
            known
                .entry((identity.dev, identity.ino))
                .or_insert(identity);
        }
    }
    // The command line the program's process recorded for itself, if it did.
    let args = recording
        .parts
        .iter()
        .rev()
        .find(|part| part.pid == pid && part.exe == exe)
        .and_then(|part| part.args);
    let mut parts: Vec<Part> = Vec::new();
    let mut numbers: HashMap<(u64, u64), usize> = HashMap::new();
    let mut unnamed = 0;
    for added in &trace.added {
        let key = (added.dev, added.ino);
        if Some(key) == own {
            continue;
        }
        let Some(identity) = known.get(&key) else {
            unnamed += added.count;
            continue;
        };
        if parts.last().is_none_or(|part| part.runs.len() >= PART_RUNS) {
            parts.push(Part {
                pid,
                exe: exe.clone(),
                args,
                ..Part::default()
            });
            numbers.clear();
        }
        let part = parts.last_mut().expect("pushed above");
        let next = part.files.len();
        let file = *numbers.entry(key).or_insert(next);
        if file == next {
            part.files.push(identity.clone());
        }
        part.runs.push(Run {
            file,
            first: added.page,
            count: added.count,
            time_us: added.time_us,
            via: Via::Trace,
        });
    }
    (parts, unnamed)
}

/// The identity of the file at `path` now.
fn identity_of(path: &Path) -> Option<FileIdentity> {
    let path = std::fs::canonicalize(path).ok()?;
    let stat = std::fs::metadata(&path).ok()?;
    Some(FileIdentity {
        path: path.as_os_str().as_bytes().to_vec(),
        dev: stat.dev(),
        ino: stat.ino(),
        size: stat.size(),
        mtime_ns: i128::from(stat.mtime()) * 1_000_000_000 + i128::from(stat.mtime_nsec()),
    })
}

/// Pages and files of the runs seen by `via`, each page once.
fn tally(parts: &[Part], via: Via) -> (u64, usize) {
    let mut pages: HashSet<(u64, u64, u64)> = HashSet::new();
    let mut files: HashSet<(u64, u64)> = HashSet::new();
    for part in parts {
        for run in part.runs.iter().filter(|run| run.via == via) {
            let file = &part.files[run.file];
            files.insert((file.dev, file.ino));
            pages.extend((run.first..run.first + run.count).map(|p| (file.dev, file.ino, p)));
        }
    }
    (pages.len() as u64, files.len())
}

fn pages_text(pages: u64, files: usize) -> String {
    let page = ::residency::probe::page_size();
    format!(
        "{pages} pages ({}) of {files} files",
        format_bytes(pages * page)
    )
}

/// The summary line of the interposers' methods.
fn method_line(parts: &[Part], via: Via) -> String {
    let (pages, files) = tally(parts, via);
    match via {
        Via::Read => format!(
            "read: {} read through the read family and stdio",
            pages_text(pages, files)
        ),
        _ => format!(
            "map: {} mapped (exec, shared libraries, mmap), seen as the pages still resident \
             when unmapped or at exit: the unprivileged method sees no order within a mapping \
             and nothing of a mapping dropped by exec or _exit",
            pages_text(pages, files)
        ),
    }
}

/// The summary line of the tracepoint.
fn trace_line(parts: &[Part], trace: &Trace, unnamed: u64) -> String {
    let (pages, files) = tally(parts, Via::Trace);
    let mut line = format!(
        "trace: {} brought into the page cache by the program, in first-touch order",
        pages_text(pages, files)
    );
    if unnamed > 0 {
        line += &format!(
            "; {unnamed} pages ({}) of files no method could name were left out",
            format_bytes(unnamed * ::residency::probe::page_size())
        );
    }
    if trace.lost > 0 {
        line += &format!(
            "; {} events were lost (the ring buffer overflowed)",
            trace.lost
        );
    }
    line
}
