//! The privileged method of `prefetch record`: the kernel's page-cache
//! tracepoint `filemap:mm_filemap_add_to_page_cache`, which fires for every
//! page added to the page cache, however it was asked for (`read`, an
//! `mmap` fault, `exec`, the dynamic loader, readahead, a static binary),
//! in the context of the task that caused it.
//!
//! A tracing instance of its own (`instances/prefetch-record-PID` of
//! tracefs, mounted at `/sys/kernel/tracing` if it is not) traces only this
//! process and its descendants: `set_event_pid` holds this process and
//! `options/event-fork` adds each child as it is forked, so pages another
//! process brings in at the same time are not seen. Events of this process
//! itself (the recorder) are dropped as they are read. `sched_process_exec`
//! is traced too, for the paths of executed files. The instance is removed
//! when the tracer is dropped, and one left by a `record` that was killed
//! is removed by the next.
//!
//! Needs root (or `CAP_PERFMON` with tracefs readable): without it,
//! [`Tracer::start`] says why and `record` keeps the unprivileged method.
//!
//! Follows iorap (Android), which records the same tracepoint to prefetch
//! an app's start, and libprefetch (ATC 2009) section 4.2: the result is
//! an access list in first-touch order.
//! Deviations: the pages are those added to the cache (a page already
//! cached is not seen); the interposers' parts cover those.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where tracefs is (mounted there if it is not).
const TRACEFS: &str = "/sys/kernel/tracing";

/// The page-cache event, under `events/`.
const ADD_EVENT: &str = "filemap/mm_filemap_add_to_page_cache";

/// The exec event, under `events/`.
const EXEC_EVENT: &str = "sched/sched_process_exec";

/// Per-CPU ring buffer, KiB (drained every few milliseconds).
const BUFFER_KB: u32 = 16 << 10;

/// One page (or folio) added to the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Added {
    /// `st_dev` of the file's file system.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// First page.
    pub page: u64,
    /// Pages (a folio of order N holds 2^N).
    pub count: u64,
    /// Microseconds since the first event.
    pub time_us: u64,
}

/// What the tracepoint saw of the process tree.
#[derive(Debug, Default)]
pub struct Trace {
    /// First additions of each page, in order.
    pub added: Vec<Added>,
    /// Files executed, by pid, in order.
    pub execs: Vec<(u32, PathBuf)>,
    /// Events the ring buffer lost (overruns).
    pub lost: u64,
}

/// A running trace of this process's descendants.
pub struct Tracer {
    instance: PathBuf,
    pipe: File,
    own_pid: u32,
    pending: Vec<u8>,
    seen: HashSet<(u64, u64, u64)>,
    first_time: Option<f64>,
    trace: Trace,
}

impl Tracer {
    /// Starts tracing this process and the children it will fork; the
    /// reason in words if the machine does not allow it.
    pub fn start() -> Result<Tracer, String> {
        let root = Path::new(TRACEFS);
        if !root.join("instances").is_dir() {
            mount_tracefs()?;
        }
        if !root.join("events").join(ADD_EVENT).is_dir() {
            return Err(format!("the kernel has no {ADD_EVENT} tracepoint"));
        }
        remove_abandoned(&root.join("instances"));
        let own_pid = std::process::id();
        let instance = root
            .join("instances")
            .join(format!("prefetch-record-{own_pid}"));
        fs::create_dir(&instance).map_err(|e| {
            format!(
                "cannot create the tracing instance {}: {e}",
                instance.display()
            )
        })?;
        let mut tracer = Tracer {
            pipe: File::open("/dev/null").map_err(|e| e.to_string())?,
            instance,
            own_pid,
            pending: Vec::new(),
            seen: HashSet::new(),
            first_time: None,
            trace: Trace::default(),
        };
        tracer.configure()?;
        Ok(tracer)
    }

    /// Sets the instance up and opens its pipe.
    fn configure(&mut self) -> Result<(), String> {
        self.write("buffer_size_kb", &BUFFER_KB.to_string())?;
        self.write("options/event-fork", "1")?;
        self.write("set_event_pid", &self.own_pid.to_string())?;
        self.write(&format!("events/{ADD_EVENT}/enable"), "1")?;
        self.write(&format!("events/{EXEC_EVENT}/enable"), "1")?;
        self.write("tracing_on", "1")?;
        self.pipe = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.instance.join("trace_pipe"))
            .map_err(|e| format!("cannot open trace_pipe: {e}"))?;
        Ok(())
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.instance.join(file);
        fs::write(&path, value).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Reads what the ring buffer holds now (never blocks).
    pub fn drain(&mut self) {
        let mut buffer = vec![0u8; 1 << 16];
        loop {
            match self.pipe.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => self.pending.extend_from_slice(&buffer[..n]),
            }
            let end = self.pending.iter().rposition(|&b| b == b'\n');
            if let Some(end) = end {
                let lines: Vec<u8> = self.pending.drain(..=end).collect();
                for line in String::from_utf8_lossy(&lines).lines() {
                    self.take(line);
                }
            }
        }
    }

    /// Stops tracing and returns what was seen.
    pub fn finish(mut self) -> Trace {
        let _ = self.write("tracing_on", "0");
        self.drain();
        self.trace.lost = self.overruns();
        std::mem::take(&mut self.trace)
    }

    /// Events lost in the ring buffer, over all CPUs.
    fn overruns(&self) -> u64 {
        let Ok(cpus) = fs::read_dir(self.instance.join("per_cpu")) else {
            return 0;
        };
        cpus.filter_map(|cpu| fs::read_to_string(cpu.ok()?.path().join("stats")).ok())
            .filter_map(|stats| {
                let line = stats.lines().find(|l| l.starts_with("overrun:"))?;
                line["overrun:".len()..].trim().parse::<u64>().ok()
            })
            .sum()
    }

    /// One line of `trace_pipe`.
    fn take(&mut self, line: &str) {
        let Some(event) = Event::parse(line) else {
            return;
        };
        if event.pid == self.own_pid {
            return;
        }
        let first = *self.first_time.get_or_insert(event.seconds);
        let time_us = ((event.seconds - first).max(0.0) * 1e6) as u64;
        match event.kind {
            Kind::Exec(path) => self.trace.execs.push((event.pid, path)),
            Kind::Added {
                dev,
                ino,
                page,
                count,
            } => {
                for page in page..page + count {
                    if self.seen.insert((dev, ino, page)) {
                        self.push(Added {
                            dev,
                            ino,
                            page,
                            count: 1,
                            time_us,
                        });
                    }
                }
            }
        }
    }

    /// Appends a page, joining the previous run where it continues it.
    fn push(&mut self, added: Added) {
        match self.trace.added.last_mut() {
            Some(last)
                if (last.dev, last.ino) == (added.dev, added.ino)
                    && last.page + last.count == added.page =>
            {
                last.count += 1
            }
            _ => self.trace.added.push(added),
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        let _ = self.write(&format!("events/{ADD_EVENT}/enable"), "0");
        let _ = self.write(&format!("events/{EXEC_EVENT}/enable"), "0");
        // The instance cannot be removed while its pipe is open.
        if let Ok(null) = File::open("/dev/null") {
            drop(std::mem::replace(&mut self.pipe, null));
        }
        let _ = fs::remove_dir(&self.instance);
    }
}

/// Removes the instances of `record` processes that are gone (killed
/// before they could remove their own): an instance keeps its ring buffers.
fn remove_abandoned(instances: &Path) {
    let Ok(entries) = fs::read_dir(instances) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("prefetch-record-") else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        let dir = entry.path();
        let _ = fs::write(dir.join("tracing_on"), "0");
        let _ = fs::write(dir.join("events").join(ADD_EVENT).join("enable"), "0");
        let _ = fs::write(dir.join("events").join(EXEC_EVENT).join("enable"), "0");
        let _ = fs::remove_dir(&dir);
    }
}

/// Mounts tracefs at [`TRACEFS`] (root only).
fn mount_tracefs() -> Result<(), String> {
    let fstype = c"tracefs";
    let target = c"/sys/kernel/tracing";
    // SAFETY: NUL-terminated strings; no data argument.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(format!(
            "tracefs is not mounted at {TRACEFS} and cannot be ({}; needs root)",
            std::io::Error::last_os_error()
        )),
    }
}

/// One parsed event line.
#[derive(Debug, PartialEq)]
struct Event {
    pid: u32,
    seconds: f64,
    kind: Kind,
}

#[derive(Debug, PartialEq)]
enum Kind {
    Added {
        dev: u64,
        ino: u64,
        page: u64,
        count: u64,
    },
    Exec(PathBuf),
}

impl Event {
    /// `TASK-PID [CPU] FLAGS SECONDS: EVENT: FIELDS` (the task's name may
    /// hold spaces and dashes: the pid is after the last dash before ` [`).
    fn parse(line: &str) -> Option<Event> {
        let (task, rest) = line.split_once(" [")?;
        let pid = task.trim().rsplit_once('-')?.1.parse().ok()?;
        let (_, rest) = rest.split_once("] ")?;
        let (head, rest) = rest.split_once(": ")?;
        let seconds = head.split_whitespace().last()?.parse().ok()?;
        let (name, fields) = rest.split_once(": ")?;
        let kind = match name {
            "mm_filemap_add_to_page_cache" => added(fields)?,
            "sched_process_exec" => {
                let path = fields.strip_prefix("filename=")?.rsplit_once(" pid=")?.0;
                Kind::Exec(PathBuf::from(path))
            }
            _ => return None,
        };
        Some(Event { pid, seconds, kind })
    }
}

/// `dev MAJOR:MINOR ino HEX pfn=0xHEX ofs=BYTES order=N` (the kernel's
/// 20-bit minor numbers; `ofs` is the page index times 4096).
fn added(fields: &str) -> Option<Kind> {
    let mut words = fields.split_whitespace();
    let mut named: HashMap<&str, &str> = HashMap::new();
    while let Some(word) = words.next() {
        match word.split_once('=') {
            Some((key, value)) => named.insert(key, value),
            None => named.insert(word, words.next()?),
        };
    }
    let (major, minor) = named.get("dev")?.split_once(':')?;
    let page = named.get("ofs")?.parse::<u64>().ok()? / 4096;
    let order: u32 = named.get("order").map_or(Some(0), |o| o.parse().ok())?;
    Some(Kind::Added {
        dev: libc::makedev(major.parse().ok()?, minor.parse().ok()?),
        ino: u64::from_str_radix(named.get("ino")?, 16).ok()?,
        page,
        count: 1u64 << order.min(20),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_added_page_line_gives_device_inode_page_and_pages() {
        let line = "   my-task-name-4242    [001] ..... 295.067021: mm_filemap_add_to_page_cache: dev 254:0 ino a1b2 pfn=0x10f3c ofs=8192 order=2";
        assert_eq!(
            Event::parse(line),
            Some(Event {
                pid: 4242,
                seconds: 295.067021,
                kind: Kind::Added {
                    dev: libc::makedev(254, 0),
                    ino: 0xa1b2,
                    page: 2,
                    count: 4
                }
            })
        );
    }

    #[test]
    fn an_exec_line_gives_the_file() {
        let line = "head-12089   [001] .....   295.067021: sched_process_exec: filename=/usr/bin/a b pid=12089 old_pid=12089";
        let event = Event::parse(line).unwrap();
        assert_eq!(event.kind, Kind::Exec(PathBuf::from("/usr/bin/a b")));
        assert_eq!(event.pid, 12089);
    }
}
