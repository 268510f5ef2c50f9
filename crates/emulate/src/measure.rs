//! Measurements through a mounted emulated disk, compared with the disk
//! model's own prediction for the same requests: cold random 4 KiB reads and
//! sequential reads. Used by the real-mount tests and by
//! `cargo run --release -p emulate --example measure`.
//!
//! The prediction for each measurement is the model's service time for the
//! requests the reads caused, taken from the counters (busy time, converted
//! to wall time by the time scale). A measurement whose wall time matches it
//! shows the emulator keeps the model's time; queueing and the kernel's own
//! gaps are what remain.

use crate::{Mounted, Stats};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

/// Bytes of one random read.
pub const PAGE: u64 = 4096;

/// The kernel's readahead window on a FUSE mount: one posix_fadvise(WILLNEED)
/// call reads at most this much (the mount's read_ahead_kb).
pub const READAHEAD: u64 = 128 * 1024;

/// One cold read: wall-clock latency and the model's service time, both in
/// wall seconds, and how many disk requests it caused.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Wall-clock time of the `pread`.
    pub latency: f64,
    /// The model's service time for the requests it caused, scaled to wall time.
    pub predicted: f64,
    /// Disk requests it caused.
    pub requests: u64,
}

/// A throughput measurement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throughput {
    /// Bytes read divided by wall time, in MB/s (10^6 bytes per second).
    pub measured_mb_s: f64,
    /// Bytes served by the disk divided by the model's busy time (wall), in MB/s.
    pub predicted_mb_s: f64,
    /// Disk requests served.
    pub requests: u64,
}

/// Applies `posix_fadvise(advice)` to `[offset, offset + len)` of `file`.
pub fn fadvise(file: &File, offset: u64, len: u64, advice: libc::c_int) -> io::Result<()> {
    let offset = libc::off_t::try_from(offset).map_err(io::Error::other)?;
    let len = libc::off_t::try_from(len).map_err(io::Error::other)?;
    // SAFETY: posix_fadvise reads only its integer arguments; the descriptor
    // is borrowed from a live File.
    let status = unsafe { libc::posix_fadvise(file.as_raw_fd(), offset, len, advice) };
    match status {
        0 => Ok(()),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

/// Offsets of `count` pages spread pseudo-randomly (fixed seed) over `len` bytes.
pub fn random_pages(count: usize, len: u64) -> Vec<u64> {
    let pages = (len / PAGE).max(1);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % pages) * PAGE
        })
        .collect()
}

/// Reads one page at each offset of `path` (a file on `mounted`) from a cold
/// page cache: readahead off, the page dropped with DONTNEED before each read.
pub fn cold_random_reads(
    mounted: &Mounted,
    path: &Path,
    offsets: &[u64],
) -> io::Result<Vec<Sample>> {
    let file = File::open(path)?;
    fadvise(&file, 0, 0, libc::POSIX_FADV_RANDOM)?;
    let mut buffer = vec![0u8; PAGE as usize];
    let mut samples = Vec::with_capacity(offsets.len());
    for &offset in offsets {
        fadvise(&file, offset, PAGE, libc::POSIX_FADV_DONTNEED)?;
        let before = mounted.stats();
        let start = Instant::now();
        file.read_exact_at(&mut buffer, offset)?;
        let latency = start.elapsed().as_secs_f64();
        let after = mounted.stats();
        samples.push(Sample {
            latency,
            predicted: busy_wall(&before, &after),
            requests: after.requests - before.requests,
        });
    }
    Ok(samples)
}

/// Reads `len` bytes of `path` from `offset` in 1 MiB reads. With `prefetch`,
/// first asks the kernel to read the whole range ahead (one WILLNEED per
/// readahead window), so the disk's queue never runs dry; without, it is a
/// plain sequential read as `cat` does.
pub fn sequential_read(
    mounted: &Mounted,
    path: &Path,
    offset: u64,
    len: u64,
    prefetch: bool,
) -> io::Result<Throughput> {
    const CHUNK: u64 = 1 << 20;
    let file = File::open(path)?;
    let before = mounted.stats();
    let start = Instant::now();
    if prefetch {
        for window in (offset..offset + len).step_by(READAHEAD as usize) {
            fadvise(&file, window, READAHEAD, libc::POSIX_FADV_WILLNEED)?;
        }
    }
    let mut buffer = vec![0u8; CHUNK as usize];
    for chunk in (offset..offset + len).step_by(CHUNK as usize) {
        let size = CHUNK.min(offset + len - chunk) as usize;
        file.read_exact_at(&mut buffer[..size], chunk)?;
    }
    let wall = start.elapsed().as_secs_f64();
    let after = mounted.stats();
    Ok(Throughput {
        measured_mb_s: len as f64 / wall / 1e6,
        predicted_mb_s: (after.bytes - before.bytes) as f64 / busy_wall(&before, &after) / 1e6,
        requests: after.requests - before.requests,
    })
}

/// The model's busy time between two counter snapshots, in wall seconds.
fn busy_wall(before: &Stats, after: &Stats) -> f64 {
    (after.busy_seconds - before.busy_seconds) * after.time_scale
}

/// The median of `values` (0 when empty): the workspace's one median, `units::median`.
pub fn median(values: Vec<f64>) -> f64 {
    units::median(&values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_pages_are_aligned_and_in_range() {
        let offsets = random_pages(1000, 10 * PAGE + 5);
        assert!(offsets.iter().all(|o| o % PAGE == 0 && *o < 10 * PAGE));
        assert!(
            offsets.iter().any(|&o| o != offsets[0]),
            "not all the same page"
        );
    }

    #[test]
    fn median_takes_the_middle_value() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(Vec::new()), 0.0);
    }
}
