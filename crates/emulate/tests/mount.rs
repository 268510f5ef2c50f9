//! Real FUSE mounts of the emulated disk in temporary directories, served on
//! background threads of the test process. Each test prints "skipped: REASON"
//! and passes where /dev/fuse or fusermount3 is missing.
//!
//! Timing tests compare the latency and throughput that a program sees through
//! the mount with the disk model's own prediction for the same requests (read
//! from the emulator's counters, or constant for `fixed:MS`), never with a
//! fixed wall-clock number: they check that the emulator keeps the model's
//! time, whatever the model says.

use emulate::{Config, Mounted, Placement, Stats};
use std::fs::{self, File};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

const MIB: usize = 1024 * 1024;

/// A backing directory, a mount point and the mounted disk (unmounted on drop).
struct Fixture {
    mounted: Option<Mounted>,
    dir: tempfile::TempDir,
}

impl Fixture {
    /// Mounts `model` over a backing directory filled by `fill`, or returns
    /// None (after printing why) where FUSE is unavailable.
    fn mount(model: &str, time_scale: f64, fill: impl FnOnce(&Path)) -> Option<Self> {
        if let Err(reason) = emulate::fuse_available() {
            println!("skipped: {reason}");
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let backing = dir.path().join("backing");
        let mountpoint = dir.path().join("mnt");
        fs::create_dir(&backing).unwrap();
        fs::create_dir(&mountpoint).unwrap();
        fill(&backing);
        let mut config = Config::new(model, &backing, &mountpoint);
        config.time_scale = time_scale;
        config.placement = Placement::Contiguous;
        let mounted = emulate::mount(&config).expect("mount the emulated disk");
        Some(Fixture {
            mounted: Some(mounted),
            dir,
        })
    }

    fn backing(&self, name: &str) -> PathBuf {
        self.dir.path().join("backing").join(name)
    }

    fn mounted(&self, name: &str) -> PathBuf {
        self.dir.path().join("mnt").join(name)
    }

    fn stats(&self) -> Stats {
        self.mounted.as_ref().expect("mounted").stats()
    }

    fn unmount(mut self) -> Stats {
        self.mounted
            .take()
            .expect("mounted")
            .unmount()
            .expect("unmount")
    }
}

/// Deterministic bytes that differ at every offset modulo 251.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ seed).collect()
}

fn write_file(path: &Path, bytes: &[u8]) {
    let mut file = File::create(path).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_all().unwrap();
}

/// Drops `[offset, offset + len)` of `file` from the page cache.
fn evict(file: &File, offset: u64, len: u64) {
    // SAFETY: posix_fadvise only reads its integer arguments.
    let status = unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            offset as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    assert_eq!(status, 0, "posix_fadvise(DONTNEED)");
}

/// Turns off kernel readahead for `file`, so each read asks for its own pages.
fn no_readahead(file: &File) {
    // SAFETY: posix_fadvise only reads its integer arguments.
    let status = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    assert_eq!(status, 0, "posix_fadvise(RANDOM)");
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Offsets of `count` 4 KiB pages spread pseudo-randomly over `len` bytes.
fn random_pages(count: usize, len: usize) -> Vec<u64> {
    let pages = (len / 4096) as u64;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % pages) * 4096
        })
        .collect()
}

/// Reads 4 KiB at each offset from the page cache's cold state; returns each
/// read's wall-clock latency and the model's service time for it (seconds,
/// already scaled to wall time).
fn cold_random_reads(fixture: &Fixture, name: &str, offsets: &[u64]) -> Vec<(f64, f64)> {
    let file = File::open(fixture.mounted(name)).unwrap();
    no_readahead(&file);
    let scale = fixture.stats().time_scale;
    let mut buffer = vec![0u8; 4096];
    let mut samples = Vec::new();
    for &offset in offsets {
        evict(&file, offset, 4096);
        let before = fixture.stats();
        let start = Instant::now();
        file.read_exact_at(&mut buffer, offset).unwrap();
        let latency = start.elapsed().as_secs_f64();
        let after = fixture.stats();
        assert_eq!(
            after.requests - before.requests,
            1,
            "one disk request per cold 4 KiB read"
        );
        assert_eq!(after.bytes - before.bytes, 4096);
        samples.push((latency, (after.busy_seconds - before.busy_seconds) * scale));
    }
    samples
}

#[test]
fn bytes_read_through_the_mount_equal_the_backing_files() {
    let sizes = [
        ("empty", 0),
        ("one", 1),
        ("page", 4095),
        ("big", 3 * MIB + 123),
    ];
    let Some(fixture) = Fixture::mount("st3500320as", 0.001, |dir| {
        fs::create_dir(dir.join("sub")).unwrap();
        for (seed, (name, size)) in sizes.iter().enumerate() {
            write_file(&dir.join(name), &pattern(*size, seed as u8));
        }
        write_file(&dir.join("sub/nested"), &pattern(70_000, 9));
    }) else {
        return;
    };
    for name in ["empty", "one", "page", "big", "sub/nested"] {
        let through_mount = fs::read(fixture.mounted(name)).unwrap();
        assert_eq!(
            through_mount,
            fs::read(fixture.backing(name)).unwrap(),
            "{name}"
        );
    }
    let stats = fixture.unmount();
    assert!(stats.requests > 0);
    assert!(
        stats.bytes >= (3 * MIB + 123 + 70_000 + 4096) as u64,
        "{stats:?}"
    );
}

#[test]
fn the_mount_is_read_only_and_lists_the_counters_file() {
    let Some(fixture) = Fixture::mount("fixed:1", 0.01, |dir| {
        write_file(&dir.join("data"), &pattern(8192, 1));
    }) else {
        return;
    };
    let error = File::create(fixture.mounted("new")).unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::EROFS), "{error}");
    let error = fs::OpenOptions::new()
        .write(true)
        .open(fixture.mounted("data"))
        .unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::EROFS), "{error}");
    let mut names: Vec<String> = fs::read_dir(fixture.mounted(""))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [".emulate-stats", "data"]);
    fs::read(fixture.mounted("data")).unwrap();
    let counters: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(fixture.mounted(".emulate-stats")).unwrap())
            .unwrap();
    assert_eq!(counters["model"], "fixed:1");
    assert_eq!(counters["bytes"], 8192);
}

#[test]
fn cached_pages_do_not_reach_the_disk() {
    let Some(fixture) = Fixture::mount("fixed:1", 0.01, |dir| {
        write_file(&dir.join("data"), &pattern(MIB, 2));
    }) else {
        return;
    };
    fs::read(fixture.mounted("data")).unwrap();
    let warm = fixture.stats().requests;
    fs::read(fixture.mounted("data")).unwrap();
    assert_eq!(
        fixture.stats().requests,
        warm,
        "a second read of a cached file is free"
    );
    let file = File::open(fixture.mounted("data")).unwrap();
    evict(&file, 0, 0);
    fs::read(fixture.mounted("data")).unwrap();
    assert!(
        fixture.stats().requests > warm,
        "DONTNEED evicts, as on a disk"
    );
}

#[test]
fn fixed_cost_reads_take_the_fixed_time() {
    // fixed:10 at time scale 0.5: every read should take 5 ms of wall time.
    let Some(fixture) = Fixture::mount("fixed:10", 0.5, |dir| {
        write_file(&dir.join("data"), &pattern(4 * MIB, 3));
    }) else {
        return;
    };
    let samples = cold_random_reads(&fixture, "data", &random_pages(30, 4 * MIB));
    let ratio = median(samples.iter().map(|(latency, _)| latency / 0.005).collect());
    println!("emulated disk fixed:10, time scale 0.5: median latency / 5 ms = {ratio:.3}");
    assert!(
        (0.9..=1.1).contains(&ratio),
        "median latency is {ratio:.3} x the model's 5 ms"
    );
}

#[test]
fn random_4k_reads_take_the_models_time() {
    let size = 64 * MIB;
    let Some(fixture) = Fixture::mount("st3500320as", 1.0, |dir| {
        write_file(&dir.join("data"), &pattern(size, 4));
    }) else {
        return;
    };
    let samples = cold_random_reads(&fixture, "data", &random_pages(40, size));
    let measured: f64 = samples.iter().map(|s| s.0).sum::<f64>() / samples.len() as f64;
    let predicted: f64 = samples.iter().map(|s| s.1).sum::<f64>() / samples.len() as f64;
    let ratio = median(
        samples
            .iter()
            .map(|(latency, model)| latency / model)
            .collect(),
    );
    println!(
        "emulated disk st3500320as, time scale 1, random 4 KiB reads: mean {:.3} ms measured, \
         {:.3} ms predicted by the model; median per-read ratio {ratio:.3}",
        measured * 1e3,
        predicted * 1e3
    );
    assert!(
        (0.9..=1.1).contains(&ratio),
        "median per-read latency ratio {ratio:.3}"
    );
}

/// Kernel readahead window of a FUSE mount: one posix_fadvise(WILLNEED)
/// call reads at most this much (the bdi's read_ahead_kb).
const READAHEAD: usize = 128 * 1024;

/// Reads `size` bytes of `name` sequentially in 1 MiB reads, after asking
/// the kernel (one WILLNEED per readahead window) to queue the whole file, so
/// that the disk never waits for the reader; returns the wall MB/s, the
/// model's MB/s for the requests it served, and the request count.
fn prefetched_sequential_read(fixture: &Fixture, name: &str, size: usize) -> (f64, f64, u64) {
    let file = File::open(fixture.mounted(name)).unwrap();
    let before = fixture.stats();
    let start = Instant::now();
    for offset in (0..size).step_by(READAHEAD) {
        // SAFETY: posix_fadvise only reads its integer arguments.
        let status = unsafe {
            libc::posix_fadvise(
                file.as_raw_fd(),
                offset as libc::off_t,
                READAHEAD as libc::off_t,
                libc::POSIX_FADV_WILLNEED,
            )
        };
        assert_eq!(status, 0, "posix_fadvise(WILLNEED)");
    }
    let mut buffer = vec![0u8; MIB];
    for offset in (0..size).step_by(MIB) {
        file.read_exact_at(&mut buffer, offset as u64).unwrap();
    }
    let wall = start.elapsed().as_secs_f64();
    let after = fixture.stats();
    let bytes = (after.bytes - before.bytes) as f64;
    let busy = (after.busy_seconds - before.busy_seconds) * after.time_scale;
    (
        size as f64 / wall / 1e6,
        bytes / busy / 1e6,
        after.requests - before.requests,
    )
}

#[test]
fn sequential_reads_run_at_the_models_rate() {
    let size = 48 * MIB;
    let Some(fixture) = Fixture::mount("st3500320as", 1.0, |dir| {
        write_file(&dir.join("data"), &pattern(size, 5));
    }) else {
        return;
    };
    let (measured, predicted, requests) = prefetched_sequential_read(&fixture, "data", size);
    println!(
        "emulated disk st3500320as, time scale 1, sequential read after WILLNEED: \
         {measured:.1} MB/s measured, {predicted:.1} MB/s predicted by the model ({requests} requests)"
    );
    let ratio = measured / predicted;
    assert!((0.9..=1.1).contains(&ratio), "throughput ratio {ratio:.3}");
}
