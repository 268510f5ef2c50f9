//! The recorder of `prefetch record`: the pages each process reads, in the
//! order it first reads them, appended to the recording file in the format
//! of `plan::recording` (docs/record.md).
//!
//! Each process keeps, per file (device and inode), when it last read each
//! page, and a list of runs of listed page reads: first reads, and with
//! `LIBPREFETCH_RECORD_REREADS=N` rereads coming more than N page reads
//! after the page's previous read (`plan::recording::Touches`). The
//! runs are written as one *part* when the process exits (`atexit`), and
//! earlier whenever [`FLUSH_RUNS`] runs are waiting (within one read too),
//! so memory stays
//! bounded and a process killed later leaves what it read until then. A
//! part is appended with one `write` under an exclusive `flock` of the
//! recording, so the parts of concurrent processes never interleave; a
//! part cut short (the process killed inside that write, a full disk) has
//! no `end` line and readers skip it. Each append starts the part's
//! writeback and drops the parts written back before from the page cache
//! ([`write_behind`]): in a small memory cgroup, dirty recording pages made
//! the program wait in reclaim. The file's size and modification time
//! are taken again when the part is written (the program may have written
//! the file since), so that the next run's replay finds it unchanged.
//!
//! Thread safety: one mutex per process, held for bookkeeping and for a
//! flush's write. Fork: the child starts an empty recorder of its own (the
//! parent's, whose mutex a parent thread may hold, is leaked in the child);
//! `exec` starts afresh from the environment. Exit: the part is written if
//! the mutex can be had within a second (never a deadlock, even when
//! `exit` is called by a thread inside the library). A process that ends
//! with `_exit` or a signal writes nothing more.
//!
//! Follows libprefetch (ATC 2009) section 4.2: the recording is an access
//! list, in the order of first use.
//! Deviations: the paper's lists are written by the application; here they
//! are observed.

use std::collections::HashMap;
use std::ffi::OsString;
use std::ops::RangeInclusive;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use plan::recording::{FileIdentity, Part, Run, Touches, Via};
use rustix::fs::{flock, openat, statat, AtFlags, FlockOperation, Mode, OFlags, CWD};

use crate::filestat::FileStat;

/// Runs kept in memory before they are appended as a part.
const FLUSH_RUNS: usize = 16 << 10;

/// Pages beyond this index are not recorded (a 16 TiB file, at 4 KiB pages;
/// the replay list holds page numbers in 32 bits).
const MAX_PAGE: u64 = u32::MAX as u64;

/// How long exit waits for the recorder's mutex before giving up its part.
const EXIT_WAIT: Duration = Duration::from_secs(1);

/// A run waiting to be written, naming its file by (device, inode).
struct PendingRun {
    file: (u64, u64),
    first: u64,
    count: u64,
    time_us: u64,
    via: Via,
}

/// One process's recording state.
struct Recorder {
    output: OsString,
    pid: u32,
    exe: Vec<u8>,
    /// `plan::recording::args_hash` of the command line.
    args: u64,
    started: Instant,
    page_size: u64,
    /// The identity of each file read, by (device, inode).
    files: HashMap<(u64, u64), FileIdentity>,
    /// Which page reads are listed.
    touches: Touches,
    pending: Vec<PendingRun>,
}

static RECORDER: AtomicPtr<Mutex<Recorder>> = AtomicPtr::new(std::ptr::null_mut());

/// The recording's path, set once at start (read without a lock after a fork).
static OUTPUT: OnceLock<OsString> = OnceLock::new();

/// This process's command line as a part's `args=`.
pub(crate) fn own_args() -> u64 {
    plan::recording::args_hash(&crate::rawio::read_bytes("/proc/self/cmdline").unwrap_or_default())
}

/// Rereads listed after this many page reads, read from the environment
/// once at start (a forked child must not take the environment's lock).
static REREADS_AFTER: AtomicU64 = AtomicU64::new(0);

/// Run at exit before the recorder's last part is written: the mapped
/// files' resident pages (`mapped::at_exit`, given by [`start`]'s caller,
/// since `mapped.rs` records through this file).
static BEFORE_LAST_PART: OnceLock<fn()> = OnceLock::new();

/// Starts recording this process's reads into `output` (which exists and
/// holds the header) and writes its part at exit, after `before_last_part`.
pub(crate) fn start(output: OsString, before_last_part: fn()) {
    if OUTPUT.set(output.clone()).is_err() {
        return;
    }
    let _ = BEFORE_LAST_PART.set(before_last_part);
    REREADS_AFTER.store(rereads_from_env(), Ordering::Relaxed);
    install(output);
    // SAFETY: a plain extern "C" fn without arguments.
    unsafe { libc::atexit(write_at_exit) };
}

/// Puts a fresh recorder for this process in place; the previous one, if
/// any, is leaked (a forked child must not touch its mutex).
fn install(output: OsString) {
    let recorder = Recorder {
        output,
        pid: std::process::id(),
        exe: readlink("/proc/self/exe").unwrap_or_default(),
        args: own_args(),
        started: Instant::now(),
        page_size: crate::memory::page_size(),
        files: HashMap::new(),
        touches: Touches::new(REREADS_AFTER.load(Ordering::Relaxed)),
        pending: Vec::new(),
    };
    RECORDER.store(
        Box::into_raw(Box::new(Mutex::new(recorder))),
        Ordering::Release,
    );
}

fn recorder() -> Option<&'static Mutex<Recorder>> {
    let pointer = RECORDER.load(Ordering::Acquire);
    // SAFETY: non-null values are leaked Boxes that are never freed.
    (!pointer.is_null()).then(|| unsafe { &*pointer })
}

/// Records a read of bytes `[offset, end)` of `fd`'s file `file`.
pub(crate) fn on_read(file: &FileStat, fd: i32, offset: u64, end: u64) {
    let Some(recorder) = recorder() else {
        return;
    };
    let mut recorder = recorder.lock().unwrap_or_else(|e| e.into_inner());
    let page_size = recorder.page_size;
    let pages = offset / page_size..=((end - 1) / page_size).min(MAX_PAGE);
    recorder.note(file, || fd_path(fd), pages, Via::Read);
}

/// Records pages `pages` of the mapped file `file` at `path`, seen
/// resident in a mapping of it (`mapped.rs`).
pub(crate) fn on_mapped_pages(file: &FileStat, path: &[u8], pages: RangeInclusive<u64>) {
    let Some(recorder) = recorder() else {
        return;
    };
    let mut recorder = recorder.lock().unwrap_or_else(|e| e.into_inner());
    let pages = *pages.start()..=(*pages.end()).min(MAX_PAGE);
    recorder.note(file, || path.to_vec(), pages, Via::Map);
}

/// The path `fd` names (its `/proc/self/fd` link), empty if unknown.
pub(crate) fn fd_path(fd: i32) -> Vec<u8> {
    readlink(&format!("/proc/self/fd/{fd}")).unwrap_or_default()
}

/// True if this process records (the mapping interposers' first check).
pub(crate) fn recording() -> bool {
    recorder().is_some()
}

/// In a forked child: record the child's reads, not the parent's again.
pub(crate) fn after_fork_in_child() {
    if let Some(output) = OUTPUT.get().filter(|_| recorder().is_some()) {
        install(output.clone());
    }
}

extern "C" fn write_at_exit() {
    let _inside = crate::guard::Reentry::enter();
    let _ = std::panic::catch_unwind(|| {
        let Some(recorder) = recorder() else {
            return;
        };
        if let Some(before_last_part) = BEFORE_LAST_PART.get() {
            before_last_part();
        }
        let deadline = Instant::now() + EXIT_WAIT;
        loop {
            if let Ok(mut recorder) = recorder.try_lock() {
                recorder.flush();
                return;
            }
            if Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

impl Recorder {
    /// Adds the listed reads of `pages` of `file` to the runs (`path`
    /// names the file the first time it is seen), as seen by `via`.
    fn note(
        &mut self,
        file: &FileStat,
        path: impl FnOnce() -> Vec<u8>,
        pages: RangeInclusive<u64>,
        via: Via,
    ) {
        let key = (file.dev, file.ino);
        let time_us = self.started.elapsed().as_micros() as u64;
        self.files
            .entry(key)
            .or_insert_with(|| identity(path(), file));
        for page in pages {
            if !self.touches.read(key, page) {
                continue;
            }
            match self.pending.last_mut() {
                Some(run) if run.file == key && run.via == via && run.first + run.count == page => {
                    run.count += 1
                }
                _ => {
                    if self.pending.len() >= FLUSH_RUNS {
                        self.flush();
                    }
                    self.pending.push(PendingRun {
                        file: key,
                        first: page,
                        count: 1,
                        time_us,
                        via,
                    });
                }
            }
        }
    }

    /// Appends the waiting runs as one part and forgets them.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let part = self.part();
        self.pending.clear();
        append(&self.output, part.to_text().as_bytes());
    }

    /// The waiting runs as a part, naming only their files, each with its
    /// size and modification time as they are now.
    fn part(&self) -> Part {
        let mut numbers: HashMap<(u64, u64), usize> = HashMap::new();
        let mut part = Part {
            pid: self.pid,
            exe: self.exe.clone(),
            args: Some(self.args),
            ..Part::default()
        };
        for run in &self.pending {
            let next = numbers.len();
            let file = *numbers.entry(run.file).or_insert_with(|| {
                part.files.push(refreshed(&self.files[&run.file]));
                next
            });
            part.runs.push(Run {
                file,
                first: run.first,
                count: run.count,
                time_us: run.time_us,
                via: run.via,
            });
        }
        part
    }
}

/// Rereads listed after this many page reads (`LIBPREFETCH_RECORD_REREADS`,
/// set by `prefetch record --rereads-after`; 0 or unset: first reads only).
fn rereads_from_env() -> u64 {
    crate::variables::RECORD_REREADS
        .value()
        .and_then(|value| value.to_str()?.parse().ok())
        .unwrap_or(0)
}

/// A recorded file's identity from its path and `fstat`.
fn identity(path: Vec<u8>, file: &FileStat) -> FileIdentity {
    FileIdentity {
        path,
        dev: file.dev,
        ino: file.ino,
        size: file.size,
        mtime_ns: file.mtime_ns,
    }
}

/// `identity` with the size and modification time its path shows now, if
/// the path still names the same file.
fn refreshed(identity: &FileIdentity) -> FileIdentity {
    let path = std::ffi::OsStr::from_bytes(&identity.path);
    match statat(CWD, path, AtFlags::empty()) {
        Ok(stat) if stat.st_dev == identity.dev && stat.st_ino == identity.ino => FileIdentity {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime_ns: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
            ..identity.clone()
        },
        _ => identity.clone(),
    }
}

/// Appends `bytes` to `output` with one write under an exclusive flock
/// (raw system calls: never seen by the interposers). Errors are dropped:
/// a recording that cannot be written must not disturb the program.
fn append(output: &OsString, bytes: &[u8]) {
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CLOEXEC;
    let Ok(fd) = openat(CWD, output.as_os_str(), flags, Mode::empty()) else {
        return;
    };
    if flock(&fd, FlockOperation::LockExclusive).is_err() {
        return;
    }
    let mut written = 0;
    while written < bytes.len() {
        match rustix::io::write(&fd, &bytes[written..]) {
            Ok(n) => written += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
    }
    write_behind(&fd);
}

/// Starts writing the recording's dirty pages back and drops those already
/// written (the earlier parts) from the page cache.
///
/// The parts are charged to the program's memory cgroup. Left dirty, they
/// keep cache from the program until the flusher writes them (up to 30 s
/// later), and cgroup v1 reclaim that takes a batch of dirty pages not yet
/// queued for writing puts the program to sleep
/// (`VMSCAN_THROTTLE_WRITEBACK`: 18-22 times in a recorded run over a
/// 256 MiB database in a 64 MiB cgroup, none with this). Queued for writing
/// now, the pages are clean by the time reclaim meets them; dropped at the
/// next part, they take no cache from the program at all.
/// `POSIX_FADV_DONTNEED` does both and never waits for the disk.
fn write_behind(fd: &rustix::fd::OwnedFd) {
    let _ = rustix::fs::fadvise(fd, 0, None, rustix::fs::Advice::DontNeed);
}

/// The target of a symbolic link (raw system call), as bytes.
fn readlink(path: &str) -> Option<Vec<u8>> {
    rustix::fs::readlinkat(CWD, path, Vec::new())
        .ok()
        .map(|target| target.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::path::Path;

    const MIB: u64 = 1 << 20;

    /// Pages of `path`'s first `len` bytes in the page cache.
    fn cached_pages(path: &Path, len: u64) -> u64 {
        let file = std::fs::File::open(path).unwrap();
        crate::residency::cachestat(file.as_raw_fd(), 0, len)
            .expect("cachestat (Linux 6.5 or later)")
            .nr_cache
    }

    #[test]
    fn appending_a_part_drops_the_parts_already_written_back() {
        // On disk, not tmpfs: tmpfs pages cannot be dropped.
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let path = dir.path().join("recording");
        std::fs::write(&path, b"").unwrap();
        let output = OsString::from(path.as_os_str());
        append(&output, &vec![b'a'; MIB as usize]);
        std::fs::File::open(&path).unwrap().sync_all().unwrap();
        assert_eq!(
            cached_pages(&path, MIB),
            MIB / crate::memory::page_size(),
            "the first part is cached"
        );
        append(&output, b"second\n");
        assert_eq!(cached_pages(&path, MIB), 0, "the first part was dropped");
        let text = std::fs::read(&path).unwrap();
        assert_eq!(text.len() as u64, MIB + 7);
        assert!(text.ends_with(b"asecond\n"), "both parts are whole");
    }
}
