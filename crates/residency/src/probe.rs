//! Which pages of a file are in the page cache: the probe behind `fincore`, `snapshot` and
//! `restore`.
//!
//! Follows libprefetch (ATC 2009) section 4.5, which added a `fincore` call for this; Linux now
//! has two (see libprefetch's `residency` module for their costs):
//!
//! - **cachestat(2)** (since 6.5) counts the cached pages of a byte range. The set of cached
//!   pages is found by bisection: a range whose count is 0 or its length is settled, any other
//!   is split in two. A file whose cached pages form `k` runs costs about `2k log2(n/k)` calls
//!   (0.3 us each), one call when it is wholly cached or wholly absent. It also reports dirty,
//!   writeback and evicted pages, which `fincore` shows.
//! - **mincore(2)** on a read-only shared mapping, where cachestat is missing (`ENOSYS`): one
//!   byte per page, in chunks of [`MINCORE_CHUNK_PAGES`].
//!
//! The two differ on pages whose read is in flight: cachestat counts them (the page is in the
//! cache), mincore does not until the read completes (it checks that the page is up to date).
//! `restore` waits for its reads with mincore for that reason.
//!
//! Permissions: both reveal residency only of files the caller owns or may write (or as root);
//! for other files mincore says every page is resident, and cachestat may refuse. The answers
//! are a snapshot: pages may come and go while the probe runs.
//!
//! Deviations: the paper's `fincore` returned a bitmap in one call; here cachestat's counts are
//! turned into runs by bisection.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

use libprefetch::residency::cachestat;
use serde::Serialize;

use crate::runs::PageRuns;

/// Pages mincore examines per mapping.
pub const MINCORE_CHUNK_PAGES: u64 = 1 << 18;

/// How residency is asked of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Probe {
    /// cachestat(2), bisected.
    Cachestat,
    /// mmap + mincore(2).
    Mincore,
}

impl Probe {
    /// cachestat if this kernel has it (any answer but `ENOSYS`), else mincore.
    pub fn detect(file: &impl AsFd) -> Probe {
        match cachestat(file.as_fd().as_raw_fd(), 0, 1) {
            Err(error) if error.raw_os_error() == Some(libc::ENOSYS) => Probe::Mincore,
            _ => Probe::Cachestat,
        }
    }

    /// The name `fincore --json` prints.
    pub fn name(self) -> &'static str {
        match self {
            Probe::Cachestat => "cachestat",
            Probe::Mincore => "mincore",
        }
    }
}

/// The page size of this machine, in bytes.
pub fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// Pages a file of `size` bytes spans.
pub fn pages_of(size: u64) -> u64 {
    size.div_ceil(page_size())
}

/// cachestat's other counters over a whole file (pages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheCounters {
    /// Dirty pages.
    pub dirty: u64,
    /// Pages under writeback.
    pub writeback: u64,
    /// Pages evicted since the file was opened the first time (shadow entries).
    pub evicted: u64,
    /// Evicted pages that would still be cached in a cache of the current size.
    pub recently_evicted: u64,
}

/// The residency of one file at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Residency {
    /// How it was asked.
    pub probe: Probe,
    /// Pages the file spans.
    pub pages: u64,
    /// The cached pages.
    pub resident: PageRuns,
    /// cachestat's counters; `None` with mincore.
    pub counters: Option<CacheCounters>,
}

/// The residency of the first `size` bytes of `file` (its size, normally), asked with `probe`.
/// Blocks only for the system calls (no I/O: neither probe reads data).
pub fn probe_file(file: &impl AsFd, size: u64, probe: Probe) -> io::Result<Residency> {
    let pages = pages_of(size);
    let fd = file.as_fd().as_raw_fd();
    let (resident, counters) = match probe {
        Probe::Cachestat => {
            let whole = cachestat(fd, 0, pages * page_size()).map_err(naming("cachestat"))?;
            let counters = CacheCounters {
                dirty: whole.nr_dirty,
                writeback: whole.nr_writeback,
                evicted: whole.nr_evicted,
                recently_evicted: whole.nr_recently_evicted,
            };
            let mut runs = PageRuns::new();
            bisect(fd, 0..pages, whole.nr_cache, &mut runs)?;
            (runs, Some(counters))
        }
        Probe::Mincore => (mincore_runs(file, 0..pages)?, None),
    };
    Ok(Residency {
        probe,
        pages,
        resident,
        counters,
    })
}

/// Appends the cached pages of `range` to `runs`, given that `cached` of them are cached.
fn bisect(
    fd: i32,
    range: std::ops::Range<u64>,
    cached: u64,
    runs: &mut PageRuns,
) -> io::Result<()> {
    let len = range.end - range.start;
    if cached == 0 || len == 0 {
        return Ok(());
    }
    if cached >= len {
        runs.push(range);
        return Ok(());
    }
    let middle = range.start + len / 2;
    let left = count(fd, range.start..middle)?;
    bisect(fd, range.start..middle, left, runs)?;
    let right = count(fd, middle..range.end)?;
    bisect(fd, middle..range.end, right, runs)
}

/// Cached pages of a page range, by cachestat.
fn count(fd: i32, range: std::ops::Range<u64>) -> io::Result<u64> {
    let page = page_size();
    let bytes = (range.end - range.start) * page;
    let stat = cachestat(fd, range.start * page, bytes).map_err(naming("cachestat"))?;
    Ok(stat.nr_cache)
}

/// `error` with the system call that gave it named first ("mincore:
/// Operation not permitted"), so that a one-line message says what failed.
pub fn naming(call: &'static str) -> impl Fn(io::Error) -> io::Error {
    move |error| io::Error::new(error.kind(), format!("{call}: {error}"))
}

/// The pages of `range` that mincore says are resident (and up to date).
pub fn mincore_runs(file: &impl AsFd, range: std::ops::Range<u64>) -> io::Result<PageRuns> {
    Mapping::new(file, range.end)?.resident(range)
}

/// A read-only shared mapping of a file's first pages, never read through: only mincore looks
/// at it, so holding it reads nothing and changes nothing. Unmapped on drop.
pub struct Mapping {
    addr: *mut libc::c_void,
    length: usize,
}

impl Mapping {
    /// Maps the first `pages` pages of `file` (at least one page is mapped).
    pub fn new(file: &impl AsFd, pages: u64) -> io::Result<Mapping> {
        use rustix::mm::{mmap, MapFlags, ProtFlags};
        let length = usize::try_from(pages.max(1) * page_size()).map_err(io::Error::other)?;
        // SAFETY: a fresh read-only shared mapping at an address the kernel picks; it is only
        // passed to mincore and munmap and never dereferenced, so no Rust reference aliases it.
        let addr = unsafe {
            mmap(
                std::ptr::null_mut(),
                length,
                ProtFlags::READ,
                MapFlags::SHARED,
                file,
                0,
            )
        }
        .map_err(|e| naming("mmap (for mincore)")(e.into()))?;
        Ok(Mapping { addr, length })
    }

    /// The pages of `range` (within the mapping) that are resident and up to date, asked in
    /// chunks of [`MINCORE_CHUNK_PAGES`].
    pub fn resident(&self, range: std::ops::Range<u64>) -> io::Result<PageRuns> {
        let page = page_size();
        let end = range.end.min(self.length as u64 / page);
        let mut runs = PageRuns::new();
        let mut start = range.start;
        while start < end {
            let chunk = end.min(start + MINCORE_CHUNK_PAGES) - start;
            let mut bitmap = vec![0u8; chunk as usize];
            // SAFETY: [start, start + chunk) pages lie within the mapping made in `new`, and
            // bitmap has one byte per page of that range.
            let rc = unsafe {
                libc::mincore(
                    self.addr.cast::<u8>().add((start * page) as usize).cast(),
                    (chunk * page) as usize,
                    bitmap.as_mut_ptr(),
                )
            };
            if rc != 0 {
                return Err(naming("mincore")(io::Error::last_os_error()));
            }
            for run in PageRuns::from_bitmap(start, &bitmap).runs() {
                runs.push(run.clone());
            }
            start += chunk;
        }
        Ok(runs)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`, which nothing else refers to.
        let _ = unsafe { rustix::mm::munmap(self.addr, self.length) };
    }
}
