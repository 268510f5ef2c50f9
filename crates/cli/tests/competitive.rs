//! `prefetch run --competitive` around real programs on a real file: the same bytes and exit
//! status as without it; a sequential reader's pages are advised ahead of it by exactly the
//! windows `plan::stream` computes for the device profile's depth (checked with cachestat); a
//! device without a profile, and a random reader, get nothing beyond their own reads.
//!
//! Follows TR840 section 3 (competitive depth with slow start). The readers set
//! `POSIX_FADV_RANDOM` on their descriptor, so the kernel reads only the pages they ask for and
//! every other cached page is the library's advice. Timeouts are deadlock detectors, never
//! performance limits.
//!
//! A missing program (python3) fails the test, naming it.

mod common;
use common::library;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use plan::stream::{Roomy, Stream};

const PAGE: u64 = 4096;
const READ: u64 = 64 << 10;
/// Size of the test file.
const FILE_BYTES: u64 = 16 << 20;
/// The test profile: 10 ms per request at 51.2 MB/s, a depth of 512 000 bytes (125 pages).
const PROFILE: &str = "request_seconds 0.01\nbytes_per_second 51200000\n";
const DEPTH_PAGES: u64 = 125;
/// Reads of the sequential reader.
const SEQUENTIAL_READS: u64 = 40;

/// A directory holding `data.bin` and a cache directory whose profile (if `profiled`) gives the
/// data file's device [`DEPTH_PAGES`].
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(profiled: bool) -> Fixture {
        let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
        let data: Vec<u8> = (0..FILE_BYTES).map(|i| (i * 7 % 251) as u8).collect();
        fs::write(dir.path().join("data.bin"), data).unwrap();
        let devices = dir.path().join("cache/libprefetch/devices");
        fs::create_dir_all(&devices).unwrap();
        if profiled {
            let dev = fs::metadata(dir.path().join("data.bin")).unwrap().dev();
            let name = format!("{}:{}", libc::major(dev), libc::minor(dev));
            fs::write(devices.join(name), PROFILE).unwrap();
        }
        let fixture = Fixture { dir };
        fixture.evict();
        fixture
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data.bin")
    }

    /// `prefetch run --competitive -- PROGRAM...` with this fixture's cache directory.
    fn competitive(&self, program: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
        command
            .args(["run", "--competitive", "--library"])
            .arg(library())
            .arg("--")
            .args(program)
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .current_dir(self.dir.path());
        command
    }

    /// Writes back and drops the data file's pages.
    fn evict(&self) {
        let file = fs::File::open(self.data()).unwrap();
        file.sync_all().unwrap();
        // SAFETY: fadvise on an open descriptor.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0, "fadvise DONTNEED");
        assert_eq!(self.cached(0, FILE_BYTES / PAGE), 0, "eviction left pages");
    }

    /// Cached pages of the data file in `[first, end)` (pages).
    fn cached(&self, first: u64, end: u64) -> u64 {
        let file = fs::File::open(self.data()).unwrap();
        libprefetch::residency::cachestat(file.as_raw_fd(), first * PAGE, (end - first) * PAGE)
            .expect("cachestat (Linux 6.5 or later)")
            .nr_cache
    }
}

fn output(mut command: Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
}

/// `cat`, `md5sum` and `dd` of the file, and `cat` of a missing file: the same stdout, stderr
/// and exit status with and without competitive prefetching.
#[test]
fn programs_print_the_same_bytes_and_status() {
    let fixture = Fixture::new(true);
    let data = fixture.data();
    let data = data.to_str().unwrap();
    let dd_input = format!("if={data}");
    let programs: [&[&str]; 4] = [
        &["cat", data],
        &["md5sum", data],
        &["dd", &dd_input, "bs=64K", "status=none"],
        &["cat", "no-such-file"],
    ];
    for program in programs {
        fixture.evict();
        let mut plain = Command::new(program[0]);
        plain.args(&program[1..]).current_dir(fixture.dir.path());
        let stock = output(plain);
        fixture.evict();
        let under = output(fixture.competitive(program));
        assert_eq!(
            stock.status, under.status,
            "{program:?}: exit status differs"
        );
        assert!(stock.stdout == under.stdout, "{program:?}: stdout differs");
        assert_eq!(
            String::from_utf8_lossy(&stock.stderr),
            String::from_utf8_lossy(&under.stderr),
            "{program:?}: stderr differs"
        );
    }
}

/// A Python reader of `data.bin` (descriptor in `POSIX_FADV_RANDOM`) that makes the reads
/// `(offset, length)` (`lseek`, then `read`), prints `done`, and waits for its stdin to close.
fn reader(fixture: &Fixture, reads: &[(u64, u64)]) -> Child {
    let list: Vec<String> = reads.iter().map(|(o, l)| format!("({o},{l})")).collect();
    let script = format!(
        "import os, sys\n\
         fd = os.open('data.bin', os.O_RDONLY)\n\
         os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)\n\
         for offset, length in [{}]:\n\
         \x20   os.lseek(fd, offset, os.SEEK_SET)\n\
         \x20   assert len(os.read(fd, length)) == length\n\
         print('done', flush=True)\n\
         sys.stdin.read()\n",
        list.join(",")
    );
    fixture
        .competitive(&["/usr/bin/python3", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 (Debian's /usr/bin/python3) must be installed")
}

/// Runs the reader until it has made its reads; returns it, still running.
fn read_and_hold(fixture: &Fixture, reads: &[(u64, u64)]) -> Child {
    let mut child = reader(fixture, reads);
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "done", "the reader failed");
    child
}

fn finish(mut child: Child) {
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "reader: {status}");
}

/// Waits (a deadlock detector, not a time limit) until the pages from the last 48 before `end`
/// to `end` are all cached.
fn wait_until_cached(fixture: &Fixture, end: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let first = end.saturating_sub(48);
    while fixture.cached(first, end) < end - first {
        assert!(
            Instant::now() < deadline,
            "pages {first}..{end} not all cached after 60 s: {} are",
            fixture.cached(first, end)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The page the advice reaches after `reads` of `path`, and the last window's length, per
/// `plan::stream` on the file's device (whose kernel read-ahead window it is told, as the
/// library does). (With the device's queue full the stream advises nothing for a while; after
/// the reads of these tests the advice reaches the same page either way.)
fn expected_advice(path: &Path, reads: &[(u64, u64)]) -> (u64, u64) {
    let mut stream = Stream::new(PAGE).with_kernel_window(kernel_window_pages(path));
    let (mut end, mut last) = (0, 0);
    for &(offset, len) in reads {
        let step = stream.on_read(offset, len, FILE_BYTES, DEPTH_PAGES, &mut Roomy);
        if let Some(window) = step.advise.last() {
            (end, last) = (window.end, window.end - window.start);
        }
    }
    (end, last)
}

/// The kernel's read-ahead window on `path`'s device (`read_ahead_kb`), in pages.
fn kernel_window_pages(path: &Path) -> u64 {
    let dev = fs::metadata(path).unwrap().dev();
    let sysfs = format!(
        "/sys/class/bdi/{}:{}/read_ahead_kb",
        libc::major(dev),
        libc::minor(dev)
    );
    let kib: u64 = fs::read_to_string(&sysfs)
        .unwrap_or_else(|e| panic!("{sysfs}: {e}"))
        .trim()
        .parse()
        .unwrap();
    kib * 1024 / PAGE
}

/// 40 reads of 64 KiB from the start: the cached pages are exactly those up to where the
/// stream's windows reach, past slow start (the depths the kernel's read-ahead does not cover
/// already) at the profile's 125 pages.
#[test]
fn a_sequential_reader_is_advised_ahead_by_the_profiles_depth() {
    let fixture = Fixture::new(true);
    let reads: Vec<(u64, u64)> = (0..SEQUENTIAL_READS).map(|i| (i * READ, READ)).collect();
    let (advised_to, last_window) = expected_advice(&fixture.data(), &reads);
    assert_eq!(last_window, DEPTH_PAGES, "the reads go past slow start");
    let read_to = SEQUENTIAL_READS * READ / PAGE;
    assert!(advised_to > read_to + DEPTH_PAGES);
    let child = read_and_hold(&fixture, &reads);
    wait_until_cached(&fixture, advised_to);
    assert_eq!(fixture.cached(0, advised_to), advised_to, "advice missing");
    assert_eq!(
        fixture.cached(advised_to, FILE_BYTES / PAGE),
        0,
        "pages cached past the advice"
    );
    finish(child);
}

/// Without a profile for the device, the same reads leave only their own pages cached.
#[test]
fn a_device_without_a_profile_gets_no_advice() {
    let fixture = Fixture::new(false);
    let reads: Vec<(u64, u64)> = (0..SEQUENTIAL_READS).map(|i| (i * READ, READ)).collect();
    let child = read_and_hold(&fixture, &reads);
    let read_to = SEQUENTIAL_READS * READ / PAGE;
    assert_eq!(fixture.cached(0, FILE_BYTES / PAGE), read_to);
    finish(child);
}

/// Reads at scattered offsets (no two in sequence, no constant stride) get no advice. Three
/// sequential reads far away follow them, whose advice (queued after anything the scattered
/// reads might have asked for) shows when the advice thread has caught up.
#[test]
fn a_random_reader_gets_no_advice() {
    let fixture = Fixture::new(true);
    let scattered = [37, 3, 250, 91, 180, 12, 333, 140, 60, 290];
    let mut reads: Vec<(u64, u64)> = scattered
        .iter()
        .map(|&page| (page * PAGE, 4 * PAGE))
        .collect();
    let far = 2048 * PAGE;
    reads.extend((0..3).map(|i| (far + i * READ, READ)));
    let (advised_to, _) = expected_advice(&fixture.data(), &reads[scattered.len()..]);
    let child = read_and_hold(&fixture, &reads);
    wait_until_cached(&fixture, advised_to);
    assert_eq!(fixture.cached(0, 2048), 4 * scattered.len() as u64);
    finish(child);
}
