//! The page-cache budget (`prefetch run --cache-budget SIZE`, `LIBPREFETCH_CACHE_BUDGET`):
//! DULO live. The pages an unmodified program reads are kept within SIZE by dropping pages
//! with `POSIX_FADV_DONTNEED` in a replacement order of `plan::evict` (`dulo` by default,
//! `lru`, `clock`, `drop-behind`; `LIBPREFETCH_CACHE_POLICY`), before the kernel has to evict
//! anything: while the program's pages stay under its memory's room, the kernel's LRU never
//! runs for them, and the order in which they leave is the policy's.
//!
//! How a read goes (the caller, `observe.rs` or, for reads at the file position while the
//! budget is the only observer, `cache_budget_io.rs` a batch at a time, holds the re-entrancy
//! guard and the file's identity):
//!
//! 1. The file gets a number at its first read (its pages are `plan::evict::budget::block_of`
//!    that number), and the descriptor that read it last is remembered.
//! 2. `plan::evict::budget::Budget::read` counts the read's pages (a hit or a miss) and, once
//!    over SIZE, returns victims down to SIZE less one batch (`batch_pages`), never a page of
//!    this read.
//! 3. The victims, in runs of adjacent pages per file, each widened to the large folios around
//!    it (see [`FOLIO_BYTES`]) and cut at their boundaries into chunks, are dropped through the
//!    descriptor that last read the file if it still names that file, or else, the program
//!    having closed it, through a descriptor opened again by the path the file had at its first
//!    read (`cache_budget_closed.rs`), and only if `cachestat` says the chunk holds no dirty
//!    page and none under writeback: the budget never drops data not yet on disk. A chunk
//!    that does is kept aside and tried again with later batches ([`RETRIES`] a batch), and
//!    dropped once clean; with `LIBPREFETCH_CACHE_WRITEBACK=1` (`--cache-writeback`) its
//!    writeback is started at once (`sync_file_range`, not waited for), otherwise the budget
//!    never starts one. Without `cachestat` (Linux before 6.5, or a file the kernel will not
//!    report on) nothing is dropped.
//!
//! Pages written count as read (`on_write`, told by the write and copy interposers through
//! `cache_budget_io.rs`), so a copy's destination leaves in the policy's order too, once clean.
//!
//! With `LIBPREFETCH_CACHE_BUDGET_REPORT=1` the process prints, as it exits, one line on stderr
//! with the pages it read (written ones included), missed (not held by the budget: what
//! `prefetch sim --policy dulo` predicts), dropped, still held, written, and left dirty (let go
//! but not yet dropped).
//!
//! Bytes, errno and file positions the program sees are the kernel's: the library only
//! drops clean pages, which the kernel reads again if the program asks for them. The state
//! is behind one mutex taken with `try_lock`: a read that finds it busy (another thread
//! inside, or a forked child of a process whose thread held it) goes uncounted rather than
//! wait, so the budget can never deadlock the program.
//!
//! Follows DULO (Jiang et al., FAST'05), sections 3-4, through `plan::evict::dulo`.
//! Deviations: user space cannot replace the kernel's policy, so the budget only leads it: the
//! kernel still evicts on its own when memory runs short first (a memory cgroup smaller than
//! the budget), and pages are counted only once read or written (the kernel's read-ahead past
//! the program is not, until read; mmapped pages are not seen, see `observe.rs`; nor are characters
//! and formatted output written through stdio, `putc` and `fprintf`). Sequences are formed from
//! file offsets, not physical extents. Pages of a file the program closed and then renamed or
//! unlinked cannot be dropped any more and are left to the kernel.

use std::collections::HashMap;
use std::ffi::CString;
use std::ops::Range;
use std::os::fd::RawFd;
use std::sync::{Mutex, OnceLock};

use plan::evict::budget::{batch_pages, block_of, page_of, runs, Budget};
use plan::evict::Block;

use crate::cache_budget_closed::{drop_runs, path_of, ClosedRun};
use crate::cache_budget_pending::{take_all, Held, Kind};
use crate::descriptors::FileId;
use crate::filestat::FileStat;
use crate::residency::cachestat;

/// The variable holding the budget's size (`32M`, `1G`, bytes).
pub(crate) const BUDGET_VARIABLE: &str = crate::variables::CACHE_BUDGET.name;
/// The variable naming the replacement order.
pub(crate) const POLICY_VARIABLE: &str = crate::variables::CACHE_POLICY.name;
/// With `1`, the process prints the budget's counts on stderr as it exits (one line).
const REPORT_VARIABLE: &str = crate::variables::CACHE_BUDGET_REPORT.name;
/// With `1`, the budget starts the writeback of the dirty pages it lets go.
pub(crate) const WRITEBACK_VARIABLE: &str = crate::variables::CACHE_WRITEBACK.name;

/// Chunks left dirty that each batch tries again, oldest first: a batch makes at most three
/// chunks (4 MiB at most, cut at 2 MiB folios), so retrying four drains them as fast as they
/// come once the kernel has written them, at a bounded cost per batch (one `cachestat` each,
/// and a look at whether the budget holds any of their pages again).
const RETRIES: usize = 4;

/// The largest folio the page cache builds from read-ahead (a PMD, 2 MiB on x86-64), which
/// sits at a multiple of its size in the file. `DONTNEED` leaves a folio that straddles either
/// end of its range, so a run is widened to the multiples of this size around it where the
/// pages in between were read and are not held (`State::folio_widened`). Measured on ext4: 3 MiB runs behind `dd bs=1M` left 2 MiB of
/// every 6 MiB cached without it; 1 MiB runs at offsets not a multiple of 1 MiB (behind reads
/// of 8 or 10 KiB, as `tar` makes) left nearly every page cached.
const FOLIO_BYTES: u64 = 2 << 20;

/// The budget of this process, once started.
static STATE: OnceLock<Mutex<State>> = OnceLock::new();

/// The bytes of one batch of the budget, once started: the largest piece a copy the kernel
/// makes for the program is cut into (`cache_budget_io.rs`), so that a `cp` of a whole file in
/// one `copy_file_range` stays within the budget as a loop of `read` would.
static BATCH_BYTES: OnceLock<u64> = OnceLock::new();

/// The budget and the files it knows.
struct State {
    budget: Budget,
    page_size: u64,
    /// File number by identity, in order of first sight.
    numbers: HashMap<FileId, u32>,
    /// Per file number, in order of first sight.
    files: Vec<Known>,
    /// Start the writeback of dirty victims (`LIBPREFETCH_CACHE_WRITEBACK=1`).
    writeback: bool,
    /// Pages written (counted among those read, too).
    written: u64,
    /// Chunks the budget let go that held dirty pages or pages under writeback, oldest first,
    /// one per folio: dropped from a later batch on, once clean.
    dirty: Vec<(u32, Range<u64>)>,
}

/// A file the budget has seen.
struct Known {
    id: FileId,
    /// The descriptor that read it last.
    fd: RawFd,
    /// Its path at its first read, to open it again once the program closed it.
    path: Option<CString>,
    /// The end of the furthest page read: unheld pages below it were read and dropped (or
    /// skipped), those above may be the kernel's read-ahead the program is about to read.
    read_end: u64,
}

/// A budget as the variables describe it: pages and the order's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BudgetConfig {
    /// Capacity in bytes.
    pub(crate) bytes: u64,
    /// One of `plan::evict::POLICIES`.
    pub(crate) policy: String,
    /// Start the writeback of dirty pages the budget lets go.
    pub(crate) writeback: bool,
}

impl BudgetConfig {
    /// The budget `lookup` (an environment) asks for: `Ok(None)` without
    /// `LIBPREFETCH_CACHE_BUDGET`, an error line naming the variable and what to give if a value
    /// is wrong.
    pub(crate) fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, String> {
        let Some(size) = lookup(BUDGET_VARIABLE).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let bytes = units::parse_size(&size)
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                format!("{BUDGET_VARIABLE}={size:?} is not a size above 0 (such as 64M or 1G)")
            })?;
        let policy = lookup(POLICY_VARIABLE)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "dulo".to_string());
        if !plan::evict::POLICIES.contains(&policy.as_str()) {
            return Err(format!(
                "{POLICY_VARIABLE}={policy:?} is not one of {}",
                plan::evict::POLICIES.join(", ")
            ));
        }
        let writeback = lookup(WRITEBACK_VARIABLE).is_some_and(|v| v == "1");
        Ok(Some(BudgetConfig {
            bytes,
            policy,
            writeback,
        }))
    }
}

/// Starts the budget the environment asks for; true if one runs. A wrong value prints one line
/// on stderr and the program runs without a budget.
pub(crate) fn start_from_env() -> bool {
    match BudgetConfig::from_lookup(|name| std::env::var(name).ok()) {
        Ok(Some(config)) => start(&config),
        Ok(None) => false,
        Err(line) => {
            eprintln!("libprefetch: ignoring the cache budget: {line}");
            false
        }
    }
}

/// Starts a budget in this process (once: a second call keeps the first); true if one runs.
fn start(config: &BudgetConfig) -> bool {
    let page_size = crate::memory::page_size();
    let capacity = usize::try_from(config.bytes / page_size)
        .unwrap_or(usize::MAX)
        .max(1);
    let Some(order) = plan::evict::by_name(&config.policy, capacity, page_size) else {
        return false;
    };
    let batch = batch_pages(capacity);
    let _ = BATCH_BYTES.set(batch as u64 * page_size);
    let state = State {
        budget: Budget::new(order, capacity, batch),
        page_size,
        numbers: HashMap::new(),
        files: Vec::new(),
        writeback: config.writeback,
        written: 0,
        dirty: Vec::new(),
    };
    let started = STATE.set(Mutex::new(state)).is_ok();
    if started && std::env::var_os(REPORT_VARIABLE).is_some_and(|v| v == "1") {
        // A copy of stderr, close-on-exec: programs that close stderr in their own exit
        // handler (coreutils' `close_stdout`, run before this earlier-registered one: `dd`,
        // `tar`) would otherwise lose the line. Numbered high, out of the way of the numbers
        // programs pick (a shell's `exec 3<`), and checked to name the same file at exit.
        // SAFETY: fcntl duplicates a descriptor; the result is checked.
        let copy = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 100) };
        let copied = FileId::of(copy).map(|id| (copy, id));
        if copied.is_some_and(|copied| REPORT_TO.set(copied).is_ok()) {
            // SAFETY: registers a plain extern "C" fn without arguments.
            unsafe { libc::atexit(report) };
        }
    }
    started
}

/// The copy of stderr the report goes to, and the file it named.
static REPORT_TO: OnceLock<(RawFd, FileId)> = OnceLock::new();

/// Prints the budget's counts in pages on stderr (at exit, when asked for).
extern "C" fn report() {
    crate::guard::as_library(|| take_all().into_iter().for_each(count_held));
    let (Some(Ok(state)), Some(&(fd, id))) = (STATE.get().map(Mutex::try_lock), REPORT_TO.get())
    else {
        return;
    };
    if FileId::of(fd) != Some(id) {
        return;
    }
    let stats = state.budget.stats();
    let line = format!(
        "libprefetch: cache budget: {} pages read, {} missed, {} dropped, {} held, \
         {} written, {} left dirty\n",
        stats.hits + stats.misses,
        stats.misses,
        stats.evicted,
        state.budget.len(),
        state.written,
        state
            .dirty
            .iter()
            .map(|(_, pages)| pages.end - pages.start)
            .sum::<u64>()
    );
    // SAFETY: writes a buffer of its length to a descriptor of this library's own.
    unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
}

/// Counts the bytes `held` back as read or written (`cache_budget_pending.rs`), ending at its
/// descriptor's position now.
pub(crate) fn count_held(held: Held) {
    let Some(end) = position(held.fd) else {
        return;
    };
    let start = match held.from {
        Some(from) if from <= end => from,
        _ => end.saturating_sub(held.bytes),
    };
    match held.kind {
        Kind::Read => on_pages_read(held.fd, held.id, start, end),
        Kind::Written => on_write(held.fd, held.id, start, end),
    }
}

/// The file position of `fd`.
pub(crate) fn position(fd: RawFd) -> Option<u64> {
    // SAFETY: lseek with SEEK_CUR and offset 0 only reads the position.
    u64::try_from(unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) }).ok()
}

/// True once a budget runs in this process (one atomic load): the write and copy interposers'
/// first check.
pub(crate) fn running() -> bool {
    STATE.get().is_some()
}

/// The bytes of one batch, if a budget runs.
pub(crate) fn batch_bytes() -> Option<u64> {
    BATCH_BYTES.get().copied()
}

/// The program is about to read `[offset, end)` of `fd`, the file `file`.
pub(crate) fn on_read(fd: RawFd, file: &FileStat, offset: u64, end: u64) {
    on_pages(fd, FileId::from(file), offset, end, false);
}

/// The kernel read `[offset, end)` of `fd`, the file `id`, for the program (a copy's source).
pub(crate) fn on_pages_read(fd: RawFd, id: FileId, offset: u64, end: u64) {
    on_pages(fd, id, offset, end, false);
}

/// The program wrote (or had the kernel copy into) `[offset, end)` of `fd`, the file `id`:
/// its pages count as read, and leave, once the budget lets them go, when clean.
pub(crate) fn on_write(fd: RawFd, id: FileId, offset: u64, end: u64) {
    on_pages(fd, id, offset, end, true);
}

/// Counts `[offset, end)` of `fd` and drops the victims this makes, with the runs left dirty
/// before.
fn on_pages(fd: RawFd, id: FileId, offset: u64, end: u64, written: bool) {
    let Some(Ok(mut state)) = STATE.get().map(Mutex::try_lock) else {
        return;
    };
    let number = state.number(id, fd);
    let page = state.page_size;
    let known = &mut state.files[number as usize];
    known.read_end = known.read_end.max(end.div_ceil(page));
    let pages = block_of(number, offset / page)..block_of(number, end.div_ceil(page));
    if written {
        state.written += pages.end - pages.start;
    }
    let victims = state.budget.read(pages);
    if victims.is_empty() {
        return;
    }
    let chunks = state.chunks(&victims);
    let retried = state.retried();
    for chunk in state.drop_chunks(&retried, &chunks) {
        state.leave_dirty(chunk);
    }
}

impl State {
    /// The victims as chunks to drop: runs of adjacent pages per file, widened over the large
    /// folios around them (`folio_widened`), and cut at the folio boundaries, so that a chunk
    /// still dirty or under writeback holds up no other.
    fn chunks(&self, victims: &[Block]) -> Vec<(u32, Range<u64>)> {
        let folio = FOLIO_BYTES / self.page_size;
        let mut chunks = Vec::new();
        for (number, run) in runs(victims) {
            let run = self.folio_widened(number, run, self.files[number as usize].read_end);
            let mut start = run.start;
            while start < run.end {
                let end = ((start / folio + 1) * folio).min(run.end);
                chunks.push((number, start..end));
                start = end;
            }
        }
        chunks
    }

    /// Keeps `chunk` aside as dirty, merged with one kept of the same folio (chunks never
    /// straddle one): a run widened over pages left dirty before comes back with them, and
    /// once clean they go together, with the folio around them.
    fn leave_dirty(&mut self, (number, pages): (u32, Range<u64>)) {
        let folio = FOLIO_BYTES / self.page_size;
        let same = self
            .dirty
            .iter_mut()
            .find(|(n, kept)| *n == number && kept.start / folio == pages.start / folio);
        match same {
            Some((_, kept)) => *kept = kept.start.min(pages.start)..kept.end.max(pages.end),
            None => self.dirty.push((number, pages)),
        }
    }

    /// Up to [`RETRIES`] of the chunks left dirty before, oldest first, less the pages the
    /// budget holds again (read since).
    fn retried(&mut self) -> Vec<(u32, Range<u64>)> {
        let taken: Vec<_> = self.dirty.drain(..self.dirty.len().min(RETRIES)).collect();
        let mut parts = Vec::new();
        for (number, chunk) in taken {
            let blocks = block_of(number, chunk.start)..block_of(number, chunk.end);
            for gap in self.budget.not_held(blocks) {
                parts.push((number, page_of(gap.start)..page_of(gap.end)));
            }
        }
        parts
    }

    /// Drops the chunks `retried` (left dirty before, oldest first) and the batch's new
    /// `chunks` where they are clean; returns those that held dirty pages or pages under
    /// writeback (having started their writeback, where asked to). Each file's descriptor is
    /// checked once to name it still. Once a retried chunk of a file is found still dirty, the
    /// file's new chunks, written after it, are kept aside unlooked-at (unless writeback is
    /// asked for: they are looked at, to start it): one `cachestat` fewer per chunk the
    /// program writes, which is dirty when the budget first lets it go.
    fn drop_chunks(
        &self,
        retried: &[(u32, Range<u64>)],
        chunks: &[(u32, Range<u64>)],
    ) -> Vec<(u32, Range<u64>)> {
        let page = self.page_size;
        let writeback = self.writeback;
        let mut dirty = Vec::new();
        let mut closed = Vec::new();
        let mut closed_chunks = Vec::new();
        let mut open: Vec<(u32, bool)> = Vec::new();
        let mut stuck: Vec<u32> = Vec::new();
        let all = retried.iter().map(|c| (c, true));
        for ((number, pages), was_dirty) in all.chain(chunks.iter().map(|c| (c, false))) {
            if !was_dirty && !writeback && stuck.contains(number) {
                dirty.push((*number, pages.clone()));
                continue;
            }
            let known = &self.files[*number as usize];
            let (offset, len) = (pages.start * page, (pages.end - pages.start) * page);
            let named = match open.iter().find(|(n, _)| n == number) {
                Some(&(_, named)) => named,
                None => {
                    let named = FileId::of(known.fd) == Some(known.id);
                    open.push((*number, named));
                    named
                }
            };
            match (named, &known.path) {
                (true, _) => {
                    if drop_if_clean(known.fd, offset, len, writeback) {
                        dirty.push((*number, pages.clone()));
                        if was_dirty {
                            stuck.push(*number);
                        }
                    }
                }
                (false, Some(path)) => {
                    closed.push(ClosedRun {
                        id: known.id,
                        path: path.clone(),
                        offset,
                        len,
                    });
                    closed_chunks.push((*number, pages.clone()));
                }
                (false, None) => {}
            }
        }
        let drop = move |fd: RawFd, id: FileId, offset: u64, len: u64| {
            drop_clean(fd, id, offset, len, writeback)
        };
        for index in drop_runs(&closed, &drop) {
            dirty.push(closed_chunks[index].clone());
        }
        dirty
    }

    /// `run` of file `number`, widened to the boundaries of the largest folio around its
    /// ends ([`FOLIO_BYTES`]) where the pages in between are read (below `read_end`) and not
    /// held: those went before, and the folio straddling the run's end goes with them.
    fn folio_widened(&self, number: u32, run: Range<u64>, read_end: u64) -> Range<u64> {
        let folio = FOLIO_BYTES / self.page_size;
        let free = |pages: Range<u64>| {
            !self
                .budget
                .holds_any(block_of(number, pages.start)..block_of(number, pages.end))
        };
        let floor = run.start / folio * folio;
        let ceiling = run.end.div_ceil(folio) * folio;
        let start = if free(floor..run.start) {
            floor
        } else {
            run.start
        };
        let end = if ceiling <= read_end && free(run.end..ceiling) {
            ceiling
        } else {
            run.end
        };
        start..end
    }

    /// The number of file `id`, given at its first read; remembers `fd` as its descriptor.
    fn number(&mut self, id: FileId, fd: RawFd) -> u32 {
        if let Some(&number) = self.numbers.get(&id) {
            self.files[number as usize].fd = fd;
            return number;
        }
        let number = u32::try_from(self.files.len()).unwrap_or(u32::MAX);
        self.numbers.insert(id, number);
        self.files.push(Known {
            id,
            fd,
            path: path_of(fd),
            read_end: 0,
        });
        number
    }
}

/// Drops `[offset, offset + len)` of `fd` if `fd` still names `id` and the range holds no
/// dirty page and none under writeback; true if it held such pages (and were left). With
/// `writeback`, the dirty pages' writeback is started (`sync_file_range`, not waited for), so
/// that a later batch finds them clean.
fn drop_clean(fd: RawFd, id: FileId, offset: u64, len: u64, writeback: bool) -> bool {
    FileId::of(fd) == Some(id) && drop_if_clean(fd, offset, len, writeback)
}

/// [`drop_clean`] of a descriptor checked to name its file.
fn drop_if_clean(fd: RawFd, offset: u64, len: u64, writeback: bool) -> bool {
    let Ok(stat) = cachestat(fd, offset, len) else {
        return false;
    };
    if stat.nr_dirty + stat.nr_writeback > 0 {
        if writeback && stat.nr_dirty > 0 {
            // SAFETY: starts the writeback of a range of a file the program holds open; the
            // data written and what the program reads stay the same.
            unsafe {
                libc::sync_file_range(
                    fd,
                    offset as libc::off64_t,
                    len as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                )
            };
        }
        return true;
    }
    if stat.nr_cache == 0 {
        return false;
    }
    // SAFETY: fadvise on a descriptor the program holds open; DONTNEED drops only clean,
    // unmapped pages and never changes the file.
    unsafe {
        libc::posix_fadvise(
            fd,
            offset as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<Option<BudgetConfig>, String> {
        BudgetConfig::from_lookup(|name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    /// Dirty pages are left, and counted as left; their writeback starts only when asked for;
    /// once clean they are dropped.
    #[test]
    fn dirty_pages_are_left_and_written_back_only_when_asked() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let mut file = tempfile::tempfile_in("/var/tmp").expect("temporary file");
        file.write_all(&vec![7u8; 1 << 20]).unwrap();
        let fd = file.as_raw_fd();
        let id = FileId::of(fd).unwrap();
        let stat = || cachestat(fd, 0, 1 << 20).expect("cachestat (Linux 6.5 or later)");
        assert_eq!(stat().nr_dirty, 256);
        assert!(
            drop_clean(fd, id, 0, 1 << 20, false),
            "dirty pages reported left"
        );
        assert_eq!((stat().nr_cache, stat().nr_dirty), (256, 256), "untouched");
        assert!(
            drop_clean(fd, id, 0, 1 << 20, true),
            "still left, writeback started"
        );
        assert_eq!(stat().nr_dirty, 0, "submitted for writeback");
        file.sync_all().unwrap();
        assert!(!drop_clean(fd, id, 0, 1 << 20, false), "clean now");
        assert_eq!(stat().nr_cache, 0, "dropped");
    }

    /// A budget of 1,024 pages (`lru`) that has seen the file of `fd` (its number 0).
    fn state_of(fd: RawFd, writeback: bool) -> State {
        let page_size = crate::memory::page_size();
        let order = plan::evict::by_name("lru", 1024, page_size).expect("lru");
        let mut state = State {
            budget: Budget::new(order, 1024, 64),
            page_size,
            numbers: HashMap::new(),
            files: Vec::new(),
            writeback,
            written: 0,
            dirty: Vec::new(),
        };
        assert_eq!(state.number(FileId::of(fd).unwrap(), fd), 0);
        state
    }

    /// A chunk the program wrote is dirty when first let go: once a file's chunk left dirty
    /// before is still dirty, its new chunks are kept aside unlooked-at (no `cachestat`),
    /// unless writeback is asked for (they are looked at, to start it); once clean, they go.
    #[test]
    fn new_chunks_wait_behind_a_files_chunk_still_dirty() {
        use std::io::{Seek, Write};
        use std::os::fd::AsRawFd;
        use std::slice::from_ref;
        let mut file = tempfile::tempfile_in("/var/tmp").expect("temporary file");
        file.write_all(&vec![7u8; 4 << 20]).unwrap();
        file.sync_all().unwrap();
        file.rewind().unwrap();
        file.write_all(&vec![8u8; 2 << 20]).unwrap();
        let fd = file.as_raw_fd();
        let cached = |from: u64| cachestat(fd, from, 2 << 20).expect("cachestat").nr_cache;
        let folio = FOLIO_BYTES / crate::memory::page_size();
        let (first, second) = ((0, 0..folio), (0, folio..2 * folio));
        let state = state_of(fd, false);
        let left = state.drop_chunks(from_ref(&first), from_ref(&second));
        assert_eq!(left, vec![first.clone(), second.clone()]);
        assert_eq!(
            cached(2 << 20),
            folio,
            "the new chunk, clean, left unlooked-at"
        );
        let left = state_of(fd, true).drop_chunks(from_ref(&first), from_ref(&second));
        assert_eq!(left, vec![first.clone()], "looked at with writeback");
        assert_eq!(cached(2 << 20), 0, "and dropped, being clean");
        file.sync_all().unwrap();
        assert!(state.drop_chunks(from_ref(&first), &[]).is_empty());
        assert_eq!(cached(0), 0, "clean now, dropped");
    }

    #[test]
    fn sizes_and_policies_are_read_and_bad_ones_named() {
        assert_eq!(config(&[]), Ok(None));
        assert_eq!(
            config(&[(BUDGET_VARIABLE, "48M")]),
            Ok(Some(BudgetConfig {
                bytes: 48 << 20,
                policy: "dulo".into(),
                writeback: false,
            }))
        );
        assert_eq!(
            config(&[(BUDGET_VARIABLE, "1g"), (POLICY_VARIABLE, "drop-behind")])
                .unwrap()
                .unwrap()
                .policy,
            "drop-behind"
        );
        let wrong = config(&[(BUDGET_VARIABLE, "lots")]).unwrap_err();
        assert!(
            wrong.contains("LIBPREFETCH_CACHE_BUDGET=\"lots\""),
            "{wrong}"
        );
        let zero = config(&[(BUDGET_VARIABLE, "0")]).unwrap_err();
        assert!(zero.contains("above 0"), "{zero}");
        let policy = config(&[(BUDGET_VARIABLE, "1M"), (POLICY_VARIABLE, "arc")]).unwrap_err();
        assert!(policy.contains("dulo, lru, clock, drop-behind"), "{policy}");
    }
}
