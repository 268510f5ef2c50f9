//! What a read of the paper's Figure 7 costs once its page has arrived
//! (libprefetch, ATC 2009, section 4.5: the library follows every read),
//! with and without the library: 3,000 random 4 KiB reads of FILE listed
//! up front with `PF_SET | PF_DONE`, timed in the reading thread only.
//!
//! Modes, each one process, to run alternately:
//!
//! - `stock`: the reads alone.
//! - `advised`: every listed page advised with WILLNEED (offset order)
//!   before the reads, no library: the cost of reading pages just brought
//!   in, which the library's reads pay too.
//! - `library`: the library registered and given the list; its first
//!   round's advice is waited for (`settle`) before the reads are timed, so
//!   with `LIBPREFETCH_START_WINDOW=0` (the whole list in one round) the
//!   reads time only the library's per-read work over the pages' own cost.
//!
//! `--cold` evicts FILE first (POSIX_FADV_DONTNEED), as the benchmark's
//! cold runs do. Run, e.g. on the emulated disk:
//! `cargo run --release -p libprefetch --example read_tail -- library MOUNT/FILE --cold`
//! (set `LIBPREFETCH_START_WINDOW=0` for the paper's start). Exact counts:
//! the same under `valgrind --tool=callgrind` (instructions) or `strace -f
//! -c` (system calls), with `stock` as the baseline.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use libprefetch::{note_read, AccessEntry, Client, Config, Mode};

const PAGE: u64 = 4096;
const READS: usize = 3_000;

/// The pages read: a fixed xorshift walk over the file's pages.
fn pages_of(file_pages: u64) -> Vec<u64> {
    let mut x: u64 = 88_172_645_463_325_252;
    (0..READS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % file_pages
        })
        .collect()
}

fn advise(fd: i32, offset: u64, len: u64, advice: libc::c_int) {
    // SAFETY: advice on an open descriptor; it changes no data.
    unsafe { libc::posix_fadvise(fd, offset as libc::off_t, len as libc::off_t, advice) };
}

/// Reads `pages` in order (telling the library when `tracked`), returns the time taken.
fn read_all(file: &File, pages: &[u64], tracked: bool) -> std::io::Result<Duration> {
    let mut buf = vec![0u8; PAGE as usize];
    let start = Instant::now();
    for &page in pages {
        if tracked {
            note_read(file.as_raw_fd(), page * PAGE, PAGE);
        }
        file.read_exact_at(&mut buf, page * PAGE)?;
    }
    Ok(start.elapsed())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(path)) = (args.first(), args.get(1)) else {
        return Err("usage: read_tail stock|advised|library FILE [--cold]".into());
    };
    let file = File::open(path)?;
    let fd = file.as_raw_fd();
    let file_pages = file.metadata()?.len() / PAGE;
    if file_pages == 0 {
        return Err(format!("{path} holds no whole page: give a larger file").into());
    }
    let pages = pages_of(file_pages);
    if args.iter().any(|a| a == "--cold") {
        advise(fd, 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    let begin = Instant::now();
    let client = match mode.as_str() {
        "stock" => None,
        "advised" => {
            let mut sorted = pages.clone();
            sorted.sort_unstable();
            for page in sorted {
                advise(fd, page * PAGE, PAGE, libc::POSIX_FADV_WILLNEED);
            }
            None
        }
        "library" => {
            let client = Client::register(Config::from_env().config, |_, _| {})?;
            client.register_region(fd, 0, file_pages * PAGE)?;
            let entries: Vec<AccessEntry> = pages
                .iter()
                .map(|&page| AccessEntry {
                    offset: page * PAGE,
                    fd,
                    mark: false,
                })
                .collect();
            client.request_prefetching(&entries, Mode::SET | Mode::DONE)?;
            client.settle();
            Some(client)
        }
        other => return Err(format!("unknown mode {other}: stock, advised or library").into()),
    };
    let reads = read_all(&file, &pages, client.is_some())?;
    let rounds = client.map_or(0, |c| c.stats().rounds);
    println!(
        "{mode}: {READS} reads in {:.2} ms ({:.2} us a read), {:.2} ms in all, {rounds} rounds",
        reads.as_secs_f64() * 1e3,
        reads.as_secs_f64() * 1e6 / READS as f64,
        begin.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
