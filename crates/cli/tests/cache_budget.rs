//! `prefetch run --cache-budget` around a real program on a real file: a program reading a
//! 256 MiB file sequentially under a 32 MiB budget never has more than 32 MiB and one batch of
//! the file cached (checked with cachestat after every read, the reader waiting meanwhile),
//! keeps close to 32 MiB of it at the end, and reads the same bytes as without the library; a
//! wrong budget in the environment is refused with one line and the program runs as without;
//! `prefetch sim --policy dulo` on a recording of the alternating program (`scripts/alternate.c`)
//! predicts the live budget's misses within 5%, and `--policy lru` those of `--cache-policy lru`;
//! a C client linked with `-lprefetch` (no preload) takes the budget from its environment;
//! victims in a file the program closed are dropped without losing the program's POSIX lock on
//! it; pages brought in through `mmap` are neither counted nor dropped (the stated limit); a
//! reader with the kernel's read-ahead on (large folios) leaves no more than the budget cached.
//!
//! Follows DULO (FAST'05) sections 3-4 through `plan::evict`. The reader sets
//! `POSIX_FADV_RANDOM`, so the kernel reads only the pages it asks for and every cached page of
//! the file is one the program read. A missing program (python3, md5sum, cc) fails the test,
//! naming it.

mod common;
use common::library;
#[path = "common/build_c.rs"]
mod build_c;
use build_c::build_c;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use plan::evict::budget::batch_pages;

const PAGE: u64 = 4096;
const FILE_BYTES: u64 = 256 << 20;
const BUDGET_BYTES: u64 = 32 << 20;
const READ: u64 = 1 << 20;

/// A 256 MiB file of varied bytes, written back and evicted.
fn data_file(dir: &Path) -> PathBuf {
    let path = dir.join("data.bin");
    let mut file = fs::File::create(&path).unwrap();
    let block: Vec<u8> = (0..READ).map(|i| (i * 7 % 251) as u8).collect();
    for i in 0..FILE_BYTES / READ {
        let mut chunk = block.clone();
        chunk[..8].copy_from_slice(&i.to_le_bytes());
        file.write_all(&chunk).unwrap();
    }
    file.sync_all().unwrap();
    // SAFETY: fadvise on an open descriptor.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "fadvise DONTNEED");
    assert_eq!(cached(&path), 0, "eviction left pages");
    path
}

/// Bytes of `path` in the page cache.
fn cached(path: &Path) -> u64 {
    let file = fs::File::open(path).unwrap();
    libprefetch::residency::cachestat(file.as_raw_fd(), 0, FILE_BYTES)
        .expect("cachestat (Linux 6.5 or later)")
        .nr_cache
        * PAGE
}

/// Reads `data.bin` in 1 MiB reads (after each it prints `read` and waits for a line on its
/// stdin), then prints the file's md5.
const READER: &str = "import hashlib, os, sys\n\
fd = os.open('data.bin', os.O_RDONLY)\n\
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)\n\
md5 = hashlib.md5()\n\
while True:\n\
\x20   chunk = os.read(fd, 1 << 20)\n\
\x20   if not chunk:\n\
\x20       break\n\
\x20   md5.update(chunk)\n\
\x20   print('read', flush=True)\n\
\x20   sys.stdin.readline()\n\
print(md5.hexdigest(), flush=True)\n";

#[test]
fn a_sequential_reader_stays_within_its_budget_and_reads_the_same_bytes() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let data = data_file(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(["run", "--cache-budget", "32M", "--library"])
        .arg(library())
        .args(["--", "/usr/bin/python3", "-c", READER])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 (Debian's /usr/bin/python3) must be installed");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let batch = batch_pages((BUDGET_BYTES / PAGE) as usize) as u64 * PAGE;
    let mut most = 0;
    let mut reads = 0;
    let digest = loop {
        let line = lines.next().expect("the reader stopped early").unwrap();
        if line != "read" {
            break line;
        }
        reads += 1;
        most = most.max(cached(&data));
        writeln!(stdin, "go").unwrap();
    };
    assert!(child.wait().unwrap().success());
    assert_eq!(reads, FILE_BYTES / READ);
    assert!(
        most <= BUDGET_BYTES + batch,
        "{most} bytes cached, budget {BUDGET_BYTES} + batch {batch}"
    );
    let end = cached(&data);
    assert!(
        end >= BUDGET_BYTES - batch - READ,
        "only {end} bytes kept at the end"
    );
    let md5sum = Command::new("md5sum").arg(&data).output().expect("md5sum");
    let expected = String::from_utf8(md5sum.stdout).unwrap();
    assert_eq!(Some(digest.as_str()), expected.split_whitespace().next());
}

#[test]
fn a_wrong_budget_is_refused_with_one_line_and_the_program_runs() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let path = dir.path().join("small.txt");
    fs::write(&path, "twelve bytes").unwrap();
    let output = Command::new("cat")
        .arg(&path)
        .env("LD_PRELOAD", library())
        .env("LIBPREFETCH_CACHE_BUDGET", "lots")
        .output()
        .expect("cat");
    assert!(output.status.success());
    assert_eq!(output.stdout, b"twelve bytes");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("LIBPREFETCH_CACHE_BUDGET=\"lots\""),
        "{stderr}"
    );
}

/// Writes `bytes` of varied data to `path`, written back and evicted.
fn cold_file(path: &Path, bytes: u64) {
    let block: Vec<u8> = (0..READ).map(|i| (i * 13 % 241) as u8).collect();
    let mut file = fs::File::create(path).unwrap();
    for _ in 0..bytes / READ {
        file.write_all(&block).unwrap();
    }
    file.sync_all().unwrap();
    evict(path);
}

fn evict(path: &Path) {
    let file = fs::File::open(path).unwrap();
    // SAFETY: fadvise on an open descriptor.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "fadvise DONTNEED");
}

/// The alternating program (3 rounds of a 16 MiB pass and 1,000 random page reads of a 64 MiB
/// file) recorded, then run under an 8 MiB budget (2,048 pages) that reports its misses: the
/// simulator's `dulo` with a cache of 2,048 pages fetches within 5% of them. Its
/// `linux-readahead` (CLOCK) fetches more than 5% above them: the check tells the orders apart.
/// The same with `lru` on both sides (the live budget's `--cache-policy lru`, the simulator's
/// `lru`, which has no read-ahead). The pages the disk read are within 5% of the simulator's
/// too, though the program closes its sequential file after each pass.
#[test]
fn the_simulators_dulo_predicts_the_live_budgets_misses_from_a_recording() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let program = build_c("scripts/alternate.c", dir.path());
    let (seq, rand) = (dir.path().join("seq.bin"), dir.path().join("rand.bin"));
    cold_file(&seq, 16 << 20);
    cold_file(&rand, 64 << 20);
    let alternate = |command: &mut Command| {
        command
            .arg("--")
            .arg(&program)
            .args([&seq, &rand])
            .args(["3", "1000"])
            .stdout(Stdio::null());
    };
    let recording = dir.path().join("recording");
    let mut record = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    record
        .args([
            "record",
            "--no-tracepoint",
            "--rereads-after",
            "4K",
            "--library",
        ])
        .arg(library())
        .arg("-o")
        .arg(&recording);
    alternate(&mut record);
    assert!(record.status().unwrap().success());
    // The budget follows the read family only (docs/cache-budget.md): the pages the recording saw
    // mapped (the program's binary and libraries) are no references of the budget's.
    let text = std::fs::read_to_string(&recording).unwrap();
    let reads: String = text
        .lines()
        .filter(|line| !line.contains(" via="))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(
        reads.len() < text.len(),
        "the recording saw the mapped binary"
    );
    std::fs::write(&recording, reads).unwrap();
    let live_missed = |policy: &str| -> u64 {
        let mut live = Command::new(env!("CARGO_BIN_EXE_prefetch"));
        live.args(["run", "--cache-budget", "8M", "--cache-policy", policy])
            .arg("--library")
            .arg(library())
            .env("LIBPREFETCH_CACHE_BUDGET_REPORT", "1");
        alternate(&mut live);
        let live = live.output().unwrap();
        assert!(live.status.success(), "{live:?}");
        let report = String::from_utf8(live.stderr).unwrap();
        report
            .split(", ")
            .find_map(|part| part.strip_suffix(" missed"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no report line: {report:?}"))
    };
    let (missed, lru_missed) = (live_missed("dulo"), live_missed("lru"));
    // The pages the disk read (`ru_inblock` of the run, counted by a python3 parent of its own),
    // from cold files. The program closes its sequential file after each pass: the budget's
    // victims in it are dropped through a reopen (without, the `lru` run read 10% fewer).
    let disk_pages = |policy: &str| -> f64 {
        evict(&seq);
        evict(&rand);
        let mut live = Command::new("python3");
        live.args(["-c", INBLOCK, env!("CARGO_BIN_EXE_prefetch")])
            .args(["run", "--cache-budget", "8M", "--cache-policy", policy])
            .arg("--library")
            .arg(library())
            .arg("--")
            .arg(&program)
            .args([&seq, &rand])
            .args(["3", "1000"]);
        let output = live.output().expect("python3 must be installed");
        assert!(output.status.success(), "{output:?}");
        let sectors: u64 = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap();
        assert!(
            sectors > 0,
            "no block reads counted: the files must be on a disk, not tmpfs"
        );
        (sectors / 8) as f64
    };
    let (disk, lru_disk) = (disk_pages("dulo"), disk_pages("lru"));
    let sim = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args([
            "sim",
            "--format",
            "recording",
            "--block-size",
            "4096",
            "--cache",
            "2048",
        ])
        .args([
            "--device",
            "unit:1",
            "--policy",
            "dulo,linux-readahead,lru",
            "--json",
        ])
        .arg("--trace")
        .arg(&recording)
        .output()
        .unwrap();
    assert!(sim.status.success(), "{sim:?}");
    let runs: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
    let fetched = |i: usize| runs[i]["disk"]["blocks_fetched"].as_u64().unwrap() as f64;
    let gap = |simulated: f64| (missed as f64 - simulated).abs() / simulated;
    assert!(
        gap(fetched(0)) <= 0.05,
        "live {missed} missed, dulo {}",
        fetched(0)
    );
    assert!(
        gap(fetched(1)) > 0.05,
        "live {missed} missed, clock {}",
        fetched(1)
    );
    assert!(
        (disk - fetched(0)).abs() / fetched(0) <= 0.05,
        "live dulo read {disk} pages from the disk, simulated dulo {}",
        fetched(0)
    );
    // The catalog's `lru` fetches on demand only: its misses are its fetches.
    let lru = runs[2]["misses"].as_u64().unwrap() as f64;
    let lru_gap = (lru_missed as f64 - lru).abs() / lru;
    assert!(
        lru_gap <= 0.05,
        "live lru {lru_missed} missed, simulated lru {lru}"
    );
    assert!(
        (lru_disk - lru).abs() / lru <= 0.05,
        "live lru read {lru_disk} pages from the disk, simulated lru {lru}"
    );
}

/// Runs the command of its arguments (output discarded) and prints the 512-byte sectors its
/// processes read from block devices.
const INBLOCK: &str = "import resource, subprocess, sys\n\
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n\
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock)\n";

/// A C client of the API: it calls `pf_instance_id` (so it links `libprefetch.so`, no preload),
/// then reads its file in 64 KiB reads with `POSIX_FADV_RANDOM` (every cached page is one it read)
/// and prints how many bytes it read.
const C_CLIENT: &str = r#"#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "libprefetch.h"
int main(int argc, char **argv) {
    static char buf[65536];
    long long total = 0;
    ssize_t n;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0 || pf_instance_id() == 0) return 1;
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    while ((n = read(fd, buf, sizeof buf)) > 0) total += n;
    printf("%lld\n", total);
    return n < 0;
}
"#;

/// A program linked with `-lprefetch` and run with `LIBPREFETCH_CACHE_BUDGET=2M` (512 pages)
/// and `LIBPREFETCH_CACHE_BUDGET_REPORT=1` in its environment keeps its budget: it reads all
/// 4,096 pages of a cold 16 MiB file, the budget misses each once, holds at most 512 at exit,
/// and no more than the budget and one batch of the file stays cached.
#[test]
fn a_c_client_linking_the_library_gets_the_budget_from_the_environment() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let (source, program) = (dir.path().join("client.c"), dir.path().join("client"));
    fs::write(&source, C_CLIENT).unwrap();
    // The soname the program records, beside the library cargo built (cargo makes no such link).
    let lib_dir = dir.path().join("lib");
    fs::create_dir(&lib_dir).unwrap();
    std::os::unix::fs::symlink(library(), lib_dir.join("libprefetch.so")).unwrap();
    std::os::unix::fs::symlink(library(), lib_dir.join("libprefetch.so.0")).unwrap();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include");
    let built = Command::new("cc")
        .arg("-I")
        .arg(&include)
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .arg("-L")
        .arg(&lib_dir)
        .arg("-lprefetch")
        .status()
        .expect("cc (a C compiler) must be installed");
    assert!(built.success());
    let data = dir.path().join("data.bin");
    cold_file(&data, 16 << 20);
    let run = Command::new(&program)
        .arg(&data)
        .env_remove("LD_PRELOAD")
        .env("LD_LIBRARY_PATH", &lib_dir)
        .env("LIBPREFETCH_CACHE_BUDGET", "2M")
        .env("LIBPREFETCH_CACHE_BUDGET_REPORT", "1")
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "16777216");
    let report = String::from_utf8(run.stderr).unwrap();
    let count = |what: &str| report_count(&report, what);
    assert_eq!(count("pages read"), 4096, "{report}");
    assert_eq!(count("missed"), 4096, "{report}");
    assert!(count("held") <= 512, "{report}");
    assert!(count("dropped") >= 4096 - 512, "{report}");
    let batch = batch_pages(512) as u64 * PAGE;
    assert!(cached(&data) <= (2 << 20) + batch, "{report}");
}

/// Reads `a.bin` (4 MiB) and closes it, takes a POSIX lock on it through a new descriptor
/// (another number: `/dev/null` takes the closed one), reads `b.bin` (16 MiB), prints `read`
/// and waits for a line on its stdin.
const CLOSER: &str = "import fcntl, os, sys\n\
def read_all(name):\n\
\x20   fd = os.open(name, os.O_RDONLY)\n\
\x20   os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)\n\
\x20   while os.read(fd, 1 << 20):\n\
\x20       pass\n\
\x20   return fd\n\
os.close(read_all('a.bin'))\n\
spare = os.open('/dev/null', os.O_RDONLY)\n\
locker = os.open('a.bin', os.O_RDWR)\n\
fcntl.lockf(locker, fcntl.LOCK_EX)\n\
read_all('b.bin')\n\
print('read', flush=True)\n\
sys.stdin.readline()\n";

/// The closed-file case: under an `lru` budget of 4 MiB, the pages of a 4 MiB file leave as a
/// 16 MiB file is read after the program closed the descriptor that read it. The budget opens
/// the file again to drop them, and the POSIX lock the program holds on it through another
/// descriptor survives (closing any descriptor of a file in the program's file table would
/// release it).
#[test]
fn victims_in_a_closed_file_are_dropped_and_the_programs_lock_stays() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let (a, b) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
    cold_file(&a, 4 << 20);
    cold_file(&b, 16 << 20);
    let mut child = run_python(
        dir.path(),
        &["--cache-budget", "4M", "--cache-policy", "lru"],
        CLOSER,
        &[],
    );
    let mut stdin = wait_for_read(&mut child);
    let left = cached(&a);
    let lock = lock_holder(&a);
    writeln!(stdin, "go").unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(left, 0, "{left} bytes of the closed file still cached");
    assert_eq!(lock, Some(child.id() as libc::pid_t), "the program's lock");
}

/// `prefetch run ARGS -- python3 -c SCRIPT SCRIPT_ARGS` in `dir`, with the budget's report on
/// and stdin, stdout and stderr piped.
fn run_python(dir: &Path, args: &[&str], script: &str, script_args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .arg("run")
        .args(args)
        .arg("--library")
        .arg(library())
        .args(["--", "/usr/bin/python3", "-c", script])
        .args(script_args)
        .env("LIBPREFETCH_CACHE_BUDGET_REPORT", "1")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 (Debian's /usr/bin/python3) must be installed")
}

/// Waits for the program's `read` line; gives its stdin, to let it go on.
fn wait_for_read(child: &mut Child) -> ChildStdin {
    let stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().expect("the program stopped early").unwrap();
    assert_eq!(line, "read");
    stdin
}

/// The process holding a write lock on `path`, as `F_GETLK` sees it from here.
fn lock_holder(path: &Path) -> Option<libc::pid_t> {
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    // SAFETY: an all-zero flock is a valid value; F_GETLK fills it in.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: F_GETLK with a valid flock on an open descriptor.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) };
    assert_eq!(rc, 0, "F_GETLK");
    (lock.l_type != libc::F_UNLCK as libc::c_short).then_some(lock.l_pid)
}

/// Touches every page of `m.bin` through a read-only mapping (unless given `skip`), unmaps it,
/// reads `r.bin`, prints `read` and waits for a line on its stdin.
const MAPPER: &str = "import mmap, os, sys\n\
if sys.argv[1] != 'skip':\n\
\x20   m = mmap.mmap(os.open('m.bin', os.O_RDONLY), 0, prot=mmap.PROT_READ)\n\
\x20   m.madvise(mmap.MADV_RANDOM)\n\
\x20   sum(m[i] for i in range(0, len(m), 4096))\n\
\x20   m.close()\n\
fd = os.open('r.bin', os.O_RDONLY)\n\
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)\n\
while os.read(fd, 1 << 20):\n\
\x20   pass\n\
print('read', flush=True)\n\
sys.stdin.readline()\n";

/// The mapped-pages limit: pages a program brings in through `mmap` are neither counted nor
/// dropped by the budget. Under a 2 MiB budget the program maps and touches all 8 MiB of one
/// file, unmaps it, then reads 8 MiB of another: all of the mapped file stays cached while the
/// read one is kept to the budget, and the budget counts as many pages read as when the program
/// skips the mapping.
#[test]
fn pages_brought_in_through_mmap_are_neither_counted_nor_dropped() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let (mapped, read) = (dir.path().join("m.bin"), dir.path().join("r.bin"));
    cold_file(&mapped, 8 << 20);
    let mut counted = Vec::new();
    for touch in ["touch", "skip"] {
        cold_file(&read, 8 << 20);
        let mut child = run_python(dir.path(), &["--cache-budget", "2M"], MAPPER, &[touch]);
        let mut stdin = wait_for_read(&mut child);
        let (kept_mapped, kept_read) = (cached(&mapped), cached(&read));
        writeln!(stdin, "go").unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success());
        let budget = (2 << 20) + batch_pages(512) as u64 * PAGE;
        assert!(
            kept_read <= budget,
            "{kept_read} bytes of the read file cached"
        );
        if touch == "touch" {
            assert_eq!(kept_mapped, 8 << 20, "the mapped file's pages");
        }
        let report = String::from_utf8(output.stderr).unwrap();
        counted.push(report_count(&report, "pages read"));
    }
    assert_eq!(
        counted[0], counted[1],
        "pages read with and without the mapping"
    );
}

/// The count `what` (`pages read`, `missed`, `dropped`, `held`) in the budget's report line
/// (`LIBPREFETCH_CACHE_BUDGET_REPORT=1`).
fn report_count(report: &str, what: &str) -> u64 {
    report
        .split([',', ':'])
        .find_map(|part| part.trim().strip_suffix(what))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {what:?} in the report: {report:?}"))
}

/// Reads `data.bin` to its end in reads of 10 KiB (as `tar` does), with the kernel's
/// read-ahead on.
const SMALL_READER: &str = "import os\n\
fd = os.open('data.bin', os.O_RDONLY)\n\
while os.read(fd, 10240):\n\
\x20   pass\n";

/// Large folios: with read-ahead on, the kernel caches a sequential reader's pages in folios of
/// up to 2 MiB, and `DONTNEED` leaves a folio that straddles an end of its range. Reads of
/// 10 KiB under an `lru` budget of 4 MiB make runs of victims that start and end inside
/// folios; widened to the folios' boundaries, they leave no more than the budget, one batch and
/// one folio of a 64 MiB file cached (unwidened, nearly all of it stayed).
#[test]
fn a_reader_with_read_ahead_leaves_no_folios_behind() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let data = dir.path().join("data.bin");
    cold_file(&data, 64 << 20);
    let status = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args([
            "run",
            "--cache-budget",
            "4M",
            "--cache-policy",
            "lru",
            "--library",
        ])
        .arg(library())
        .args(["--", "/usr/bin/python3", "-c", SMALL_READER])
        .current_dir(dir.path())
        .status()
        .expect("python3 (Debian's /usr/bin/python3) must be installed");
    assert!(status.success());
    let left = cached(&data);
    let most = (4 << 20) + batch_pages(1024) as u64 * PAGE + (2 << 20);
    assert!(left <= most, "{left} bytes cached, at most {most} expected");
}

/// Reads `data.bin` in records of 10 KiB at the file position (read-ahead off: every cached
/// page is one it read), its second half first, then prints the position the first half ended
/// at.
const RECORDS_OUT_OF_ORDER: &str = "import os\n\
fd = os.open('data.bin', os.O_RDONLY)\n\
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)\n\
half = os.fstat(fd).st_size // 2\n\
os.lseek(fd, half, os.SEEK_SET)\n\
while os.read(fd, 10240):\n\
\x20   pass\n\
os.lseek(fd, 0, os.SEEK_SET)\n\
left = half\n\
while left > 0:\n\
\x20   left -= len(os.read(fd, min(10240, left)))\n\
print(os.lseek(fd, 0, os.SEEK_CUR))\n";

/// Reads at the file position are told a batch at a time (one `lseek` per batch, not one per
/// read), and those held back before a seek are told before it: every page of a 64 MiB file
/// read in 10 KiB records, its second half first, is counted, each at most once more per batch
/// (the page two batches share; told one read at a time, the page two records share counted
/// twice: about 3,300 more), the file stays within the budget and a batch, and the positions
/// are the program's.
#[test]
fn records_read_at_the_position_are_counted_a_batch_at_a_time() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let data = dir.path().join("data.bin");
    cold_file(&data, 64 << 20);
    let output = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(["run", "--cache-budget", "4M", "--library"])
        .arg(library())
        .args(["--", "/usr/bin/python3", "-c", RECORDS_OUT_OF_ORDER])
        .env("LIBPREFETCH_CACHE_BUDGET_REPORT", "1")
        .current_dir(dir.path())
        .output()
        .expect("python3 (Debian's /usr/bin/python3) must be installed");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "33554432\n");
    let report = String::from_utf8(output.stderr).unwrap();
    let pages = (64 << 20) / PAGE;
    let batch = batch_pages(1024) as u64;
    // The interpreter's own reads at its start: 14 pages on Debian 12's python3.11.
    let own = 64;
    let read = report_count(&report, "pages read");
    let most = pages + pages / batch + 2 + own;
    assert!(
        (pages..=most).contains(&read),
        "{read} pages counted, {pages} to {most} expected: {report}"
    );
    let left = cached(&data);
    let most = (4 << 20) + batch * PAGE;
    assert!(left <= most, "{left} bytes cached, at most {most} expected");
}
