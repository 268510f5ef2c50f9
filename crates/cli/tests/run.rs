//! `prefetch run`, `prefetch record` and `prefetch run --replay` around real, unmodified programs
//! (coreutils, tar, python3, the sqlite3 shell) on real files: the same bytes and exit status as
//! without the library, signals passed through, `--no-children`, recordings of threads and forks, a
//! replay that prefetches a file the program has not opened yet, and replays against a modified
//! file, a diverging program and a program killed mid-replay.
//!
//! Follows libprefetch (ATC 2009) section 4: the interposers follow an application's reads and
//! never change what they return. Timeouts are deadlock detectors, never performance limits.
//!
//! A missing program (python3, sqlite3, tar, fincore) fails the test, naming it.

mod common;
use common::library;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use plan::recording::{Recording, Via};

/// The real python3 (not a pyenv shim, whose bash scripts would be recorded too).
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 must be installed");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    })
}

/// `prefetch SUBCOMMAND [OPTIONS] --library LIB -- PROGRAM...`.
fn prefetch(subcommand: &[&str], program: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    command
        .args(subcommand)
        .arg("--library")
        .arg(library())
        .arg("--")
        .args(program);
    command
}

fn plain(program: &[&str]) -> Command {
    let mut command = Command::new(program[0]);
    command.args(&program[1..]);
    command
}

fn output(mut command: Command, dir: &Path) -> Output {
    command
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
}

/// Asserts the program gives the same stdout, stderr and status as without the library.
fn assert_same(label: &str, stock: &Output, under: &Output) {
    assert_eq!(stock.status, under.status, "{label}: exit status differs");
    assert_eq!(stock.stdout, under.stdout, "{label}: stdout differs");
    assert_eq!(
        String::from_utf8_lossy(&stock.stderr),
        String::from_utf8_lossy(&under.stderr),
        "{label}: stderr differs"
    );
}

/// The output of `prefetch record` without its summary lines (`prefetch: record: ...`),
/// which must come after the program's own stderr.
fn without_summary(mut out: Output) -> Output {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let program = stderr
        .find("prefetch: record: ")
        .map_or(stderr.as_str(), |at| &stderr[..at]);
    let summary = &stderr[program.len()..];
    assert!(
        summary.lines().all(|l| l.starts_with("prefetch: record: ")),
        "{stderr}"
    );
    assert!(summary.contains("prefetch: record: read: "), "{stderr}");
    out.stderr = program.as_bytes().to_vec();
    out
}

/// A directory with `data.bin` (`mib` MiB of a fixed pattern), `lines.txt` and a small tree.
fn fixture(mib: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let data: Vec<u8> = (0..mib << 20).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(dir.path().join("data.bin"), data).unwrap();
    let lines: String = (0..20_000)
        .map(|i| format!("{}\n", (i * 7919) % 10007))
        .collect();
    fs::write(dir.path().join("lines.txt"), lines).unwrap();
    fs::create_dir(dir.path().join("tree")).unwrap();
    for i in 0..5 {
        fs::write(
            dir.path().join(format!("tree/f{i}")),
            vec![b'a' + i; 9000 * (i as usize + 1)],
        )
        .unwrap();
    }
    dir
}

/// Writes back and drops `path`'s pages from the page cache.
fn evict(path: &Path) {
    let file = fs::File::open(path).unwrap();
    file.sync_all().unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: fadvise on an open descriptor.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "fadvise DONTNEED");
}

fn read_recording(path: &Path) -> Recording {
    Recording::parse(&fs::read_to_string(path).unwrap()).expect("a valid recording")
}

/// A SQLite database `db.sqlite` of 3000 rows in `dir`, made by the sqlite3 shell.
fn make_database(dir: &Path) {
    let sql = "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); \
               WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<3000) \
               INSERT INTO t SELECT i, printf('%0200d', i) FROM n;";
    let made = output(plain(&["sqlite3", "db.sqlite", sql]), dir);
    assert!(made.status.success(), "sqlite3 must be installed: {made:?}");
}

/// The programs of the issue, each as a command line run in the fixture directory, with the
/// file its recording must hold (md5sum and sort read through stdio).
fn programs() -> Vec<(Vec<String>, Option<&'static str>)> {
    let py = python().to_string();
    let script = "import hashlib,sys\n\
                  h=hashlib.sha256()\n\
                  with open('data.bin','rb') as f:\n\
                  \x20   while b:=f.read(65536): h.update(b)\n\
                  print(h.hexdigest()); sys.exit(3)";
    let sql = "SELECT count(*), sum(k), max(v) FROM t; SELECT * FROM nosuchtable;";
    let tar = [
        "tar",
        "-cf",
        "-",
        "--sort=name",
        "--mtime=@0",
        "--owner=0",
        "--group=0",
        "tree",
    ];
    [
        (
            vec!["md5sum", "data.bin", "lines.txt", "missing-file"],
            Some("data.bin"),
        ),
        (vec!["sort", "-n", "lines.txt"], Some("lines.txt")),
        (tar.to_vec(), Some("tree/f4")),
        (vec![&py, "-c", script], Some("data.bin")),
        (vec!["sqlite3", "db.sqlite", sql], Some("db.sqlite")),
    ]
    .into_iter()
    .map(|(p, file)| (p.into_iter().map(str::to_string).collect(), file))
    .collect()
}

/// True if some part of the recording names `path`.
fn recorded(recording: &Recording, path: &Path) -> bool {
    let path = path.as_os_str().as_encoded_bytes();
    recording
        .parts
        .iter()
        .any(|part| part.files.iter().any(|f| f.path == path))
}

#[test]
fn programs_give_the_same_bytes_and_status_under_run_record_and_replay() {
    let dir = fixture(3);
    make_database(dir.path());
    for (program, file) in programs() {
        let program: Vec<&str> = program.iter().map(String::as_str).collect();
        let stock = output(plain(&program), dir.path());
        let recording = dir.path().join("rec");
        let label = program[0];
        assert_same(
            label,
            &stock,
            &output(prefetch(&["run"], &program), dir.path()),
        );
        let record = prefetch(&["record", "-o", recording.to_str().unwrap()], &program);
        assert_same(label, &stock, &without_summary(output(record, dir.path())));
        let parsed = read_recording(&recording);
        if let Some(file) = file {
            assert!(
                recorded(&parsed, &dir.path().join(file)),
                "{label}: {file} not recorded"
            );
        }
        evict(&dir.path().join("data.bin"));
        evict(&dir.path().join("db.sqlite"));
        let replay = prefetch(&["run", "--replay", recording.to_str().unwrap()], &program);
        assert_same(label, &stock, &output(replay, dir.path()));
    }
}

#[test]
fn exit_status_and_death_by_signal_are_the_programs() {
    let dir = fixture(0);
    let status = output(prefetch(&["run"], &["sh", "-c", "exit 7"]), dir.path()).status;
    assert_eq!(status.code(), Some(7));
    let killed = output(
        prefetch(&["run"], &["sh", "-c", "kill -KILL $$"]),
        dir.path(),
    )
    .status;
    assert_eq!(killed.signal(), Some(libc::SIGKILL), "{killed:?}");
    let missing = output(prefetch(&["run"], &["no-such-program-here"]), dir.path());
    assert_eq!(missing.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot run no-such-program-here"));
}

#[test]
fn children_inherit_the_library_unless_no_children() {
    let dir = fixture(0);
    // grep is a child the shell executes: its own mappings tell whether it was preloaded.
    let probe = [
        "sh",
        "-c",
        "grep -c libprefetch /proc/self/maps; echo \"[$LIBPREFETCH_NO_CHILDREN]\"",
    ];
    let inherited = output(prefetch(&["run"], &probe), dir.path());
    let text = String::from_utf8_lossy(&inherited.stdout);
    assert_ne!(
        text.lines().next(),
        Some("0"),
        "child not preloaded: {text}"
    );
    let kept = output(prefetch(&["run", "--no-children"], &probe), dir.path());
    let text = String::from_utf8_lossy(&kept.stdout);
    assert_eq!(text, "0\n[]\n", "child preloaded despite --no-children");
}

#[test]
fn a_recording_holds_each_page_once_in_first_touch_order_with_the_files_identity() {
    let dir = fixture(1);
    let recording = dir.path().join("rec");
    // Reads pages 100..110, then the whole file: 0..100 and 110..256 are new the second time.
    let script = "f=open('data.bin','rb',buffering=0); f.seek(100*4096); f.read(10*4096); f.seek(0); f.read()";
    let record = prefetch(
        &["record", "-o", recording.to_str().unwrap()],
        &[python(), "-c", script],
    );
    assert!(output(record, dir.path()).status.success());
    let parsed = read_recording(&recording);
    let data = dir.path().join("data.bin");
    let meta = fs::metadata(&data).unwrap();
    let part = parsed
        .parts
        .iter()
        .filter(|p| p.runs.iter().all(|r| r.via != Via::Trace))
        .find(|p| p.exe.ends_with(b"python3.11") || p.exe.ends_with(b"python3"))
        .expect("python's part of the interposers");
    let file = part
        .files
        .iter()
        .position(|f| f.path == data.as_os_str().as_encoded_bytes())
        .expect("data.bin recorded");
    let identity = &part.files[file];
    assert_eq!(
        (identity.dev, identity.ino, identity.size),
        (meta.dev(), meta.ino(), meta.size())
    );
    assert_eq!(
        identity.mtime_ns,
        meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128
    );
    let runs: Vec<(u64, u64)> = part
        .runs
        .iter()
        .filter(|r| r.file == file)
        .map(|r| (r.first, r.count))
        .collect();
    assert_eq!(runs, vec![(100, 10), (0, 100), (110, 146)]);
}

/// The (first page, pages) runs of `path` in the interposers' part of the recording whose
/// program ends with `exe`.
fn runs_of(recording: &Recording, exe: &str, path: &Path) -> Vec<(u64, u64)> {
    let part = recording
        .parts
        .iter()
        .find(|p| p.exe.ends_with(exe.as_bytes()) && p.runs.iter().all(|r| r.via != Via::Trace))
        .unwrap_or_else(|| panic!("no part of {exe} in the recording"));
    let file = part
        .files
        .iter()
        .position(|f| f.path == path.as_os_str().as_encoded_bytes())
        .unwrap_or_else(|| panic!("{exe}: {} not recorded", path.display()));
    part.runs
        .iter()
        .filter(|r| r.file == file)
        .map(|r| (r.first, r.count))
        .collect()
}

#[test]
fn programs_reading_through_stdio_are_recorded_page_by_page() {
    let dir = fixture(1);
    let recording = dir.path().join("rec");
    let lines = dir.path().join("lines.txt");
    let line_pages = fs::metadata(&lines).unwrap().len().div_ceil(4096);
    // md5sum and sha256sum: fread_unlocked of 32 KiB; cut: the getc_unlocked macro (__uflow);
    // sort: fread_unlocked.
    let cases: [(&[&str], &str, &Path, u64); 4] = [
        (
            &["md5sum", "data.bin"],
            "md5sum",
            &dir.path().join("data.bin"),
            256,
        ),
        (&["cut", "-c1-2", "lines.txt"], "cut", &lines, line_pages),
        (&["sort", "-n", "lines.txt"], "sort", &lines, line_pages),
        (&["sha256sum", "lines.txt"], "sha256sum", &lines, line_pages),
    ];
    for (program, exe, file, pages) in cases {
        let stock = output(plain(program), dir.path());
        let record = prefetch(&["record", "-o", recording.to_str().unwrap()], program);
        assert_same(exe, &stock, &without_summary(output(record, dir.path())));
        let runs = runs_of(&read_recording(&recording), exe, file);
        assert_eq!(runs, vec![(0, pages)], "{exe}");
    }
}

#[test]
fn threads_and_forked_children_are_recorded_each_in_its_own_part_and_replay() {
    let dir = fixture(0);
    for i in 0..4 {
        fs::write(dir.path().join(format!("t{i}")), vec![i as u8; 64 << 10]).unwrap();
    }
    let script = "import os,threading,zlib\n\
                  sums={}\n\
                  def read(i): sums[i]=zlib.crc32(open(f't{i}','rb').read())\n\
                  ts=[threading.Thread(target=read,args=(i,)) for i in range(3)]\n\
                  [t.start() for t in ts]; [t.join() for t in ts]\n\
                  pid=os.fork()\n\
                  if pid==0:\n\
                  \x20   print(len(open('t3','rb').read()), flush=True); raise SystemExit(0)\n\
                  os.waitpid(pid,0); print(sorted(sums.items()))";
    let recording = dir.path().join("rec");
    let record = prefetch(
        &["record", "-o", recording.to_str().unwrap()],
        &[python(), "-c", script],
    );
    let out = output(record, dir.path());
    assert!(out.status.success(), "{out:?}");
    let parsed = read_recording(&recording);
    let pages_of = |name: &str| -> Vec<u32> {
        let path = dir.path().join(name);
        let path = path.as_os_str().as_encoded_bytes();
        parsed
            .parts
            .iter()
            .filter(|part| {
                let file = part.files.iter().position(|f| f.path == path);
                file.is_some_and(|file| {
                    part.runs
                        .iter()
                        .filter(|r| r.file == file)
                        .map(|r| r.count)
                        .sum::<u64>()
                        == 16
                })
            })
            .map(|part| part.pid)
            .collect()
    };
    let parent: Vec<u32> = (0..3).flat_map(|i| pages_of(&format!("t{i}"))).collect();
    assert_eq!(
        parent.len(),
        3,
        "each thread's file recorded once, whole: {parsed:?}"
    );
    assert!(
        parent.iter().all(|&pid| pid == parent[0]),
        "threads of one process, one pid"
    );
    let child = pages_of("t3");
    assert_eq!(child.len(), 1, "the child's file recorded once");
    assert_ne!(child[0], parent[0], "the child writes its own part");
    let stock = output(plain(&[python(), "-c", script]), dir.path());
    for i in 0..4 {
        evict(&dir.path().join(format!("t{i}")));
    }
    let replay = prefetch(
        &["run", "--replay", recording.to_str().unwrap()],
        &[python(), "-c", script],
    );
    assert_same("threads and fork", &stock, &output(replay, dir.path()));
}

/// How many of `path`'s pages are cached, from util-linux `fincore`.
fn cached_pages(path: &Path) -> u64 {
    let out = Command::new("fincore")
        .args(["--noheadings", "--output", "PAGES"])
        .arg(path)
        .output()
        .expect("fincore (util-linux) must be installed");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("fincore's page count")
}

/// Runs `script` under `prefetch run --replay`; it prints how many pages of data.bin are cached
/// once 32 have arrived or `wait_seconds` have passed, before the program opens the file, and
/// then reads it.
fn replayed_residency(dir: &Path, recording: &Path, wait_seconds: u32) -> (u64, Output) {
    let mut replay = prefetch(
        &["run", "--replay", recording.to_str().unwrap()],
        &[python(), "-c", RESIDENCY_SCRIPT],
    );
    replay.env("WAIT_SECONDS", wait_seconds.to_string());
    let out = output(replay, dir);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let cached = text
        .lines()
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("{out:?}"));
    (cached, out)
}

/// The program of [`replayed_residency`] (recorded and replayed with the same command line: a
/// replay keeps only the parts of its own command line); it waits `WAIT_SECONDS` at most. Each
/// wait first reads `first.bin`, if there is one: a replay starts at the program's first touch
/// of its recording, and a replay made ready only after the interpreter's start-up reads (a
/// loaded machine) sees that touch on the next wait.
const RESIDENCY_SCRIPT: &str = "import subprocess,time,sys,os\n\
                  end=time.time()+int(os.environ['WAIT_SECONDS'])\n\
                  while True:\n\
                  \x20   os.path.exists('first.bin') and open('first.bin','rb').read(1)\n\
                  \x20   n=int(subprocess.run(['fincore','--noheadings','--output','PAGES','data.bin'],capture_output=True).stdout)\n\
                  \x20   if n>=32 or time.time()>end: break\n\
                  \x20   time.sleep(0.05)\n\
                  print(n); sys.stdout.flush()\n\
                  print(len(open('data.bin','rb').read()))";

fn record_reading_data(dir: &Path) -> PathBuf {
    let recording = dir.join("rec");
    let mut record = prefetch(
        &["record", "-o", recording.to_str().unwrap()],
        &[python(), "-c", RESIDENCY_SCRIPT],
    );
    record.env("WAIT_SECONDS", "0");
    assert!(output(record, dir).status.success());
    recording
}

#[test]
fn a_replay_prefetches_a_file_before_the_program_opens_it() {
    let dir = fixture(1);
    fs::write(dir.path().join("first.bin"), b"touched first").unwrap();
    let recording = record_reading_data(dir.path());
    let data = dir.path().join("data.bin");
    evict(&data);
    assert_eq!(cached_pages(&data), 0, "eviction failed");
    // 20 s is a deadlock detector: the first window arrives in milliseconds.
    let (cached, out) = replayed_residency(dir.path(), &recording, 20);
    assert!(
        cached >= 32,
        "the first window (128 KiB) was not prefetched: {cached} pages; {out:?}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("1048576\n"));
}

#[test]
fn a_recording_of_the_same_executable_with_another_command_line_is_not_replayed() {
    let dir = fixture(1);
    let recording = dir.path().join("rec");
    let record = prefetch(
        &["record", "-o", recording.to_str().unwrap()],
        &[python(), "-c", "open('data.bin','rb').read()"],
    );
    assert!(output(record, dir.path()).status.success());
    let data = dir.path().join("data.bin");
    evict(&data);
    let (cached, out) = replayed_residency(dir.path(), &recording, 3);
    assert_eq!(cached, 0, "another script's pages were prefetched");
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("1048576\n"));
}

#[test]
fn a_file_modified_since_the_recording_is_not_prefetched() {
    let dir = fixture(1);
    let recording = record_reading_data(dir.path());
    let data = dir.path().join("data.bin");
    // Same size, new content and modification time.
    fs::write(&data, vec![9u8; 1 << 20]).unwrap();
    evict(&data);
    let (cached, out) = replayed_residency(dir.path(), &recording, 3);
    assert_eq!(cached, 0, "a changed file was prefetched");
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("1048576\n"));
}

#[test]
fn a_program_that_diverges_from_its_recording_reads_what_it_reads_without_replay() {
    let dir = fixture(2);
    let recording = record_reading_data(dir.path());
    // Backwards in 4 KiB reads, and another file the recording does not hold.
    let script = "import os,hashlib\n\
                  fd=os.open('data.bin',os.O_RDONLY); h=hashlib.md5()\n\
                  for p in range(511,-1,-1): h.update(os.pread(fd,4096,p*4096))\n\
                  print(h.hexdigest(), len(open('lines.txt','rb').read()))";
    let program = [python(), "-c", script];
    let stock = output(plain(&program), dir.path());
    evict(&dir.path().join("data.bin"));
    let replay = prefetch(&["run", "--replay", recording.to_str().unwrap()], &program);
    assert_same("diverging python", &stock, &output(replay, dir.path()));
}

/// Every file of `dir` with its bytes and modification time.
fn files_of(dir: &Path) -> Vec<(PathBuf, Vec<u8>, i64)> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = fs::read(&p).unwrap();
            let modified = fs::metadata(&p).unwrap().mtime_nsec();
            (p, bytes, modified)
        })
        .collect()
}

#[test]
fn a_program_killed_mid_replay_leaves_nothing_behind() {
    let dir = fixture(4);
    let recording = record_reading_data(dir.path());
    let before = files_of(dir.path());
    evict(&dir.path().join("data.bin"));
    let script = "import os,signal\n\
                  fd=os.open('data.bin',os.O_RDONLY); os.pread(fd,1<<20,0)\n\
                  os.kill(os.getpid(), signal.SIGKILL)";
    let replay = prefetch(
        &["run", "--replay", recording.to_str().unwrap()],
        &[python(), "-c", script],
    );
    let started = Instant::now();
    let killed = output(replay, dir.path());
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "deadlock detector"
    );
    assert_eq!(killed.status.signal(), Some(libc::SIGKILL));
    let after = files_of(dir.path());
    assert_eq!(before, after, "a file was created, changed or removed");
    // The recording still replays: a later run is unaffected.
    let again = prefetch(
        &["run", "--replay", recording.to_str().unwrap()],
        &[python(), "-c", "print(len(open('data.bin','rb').read()))"],
    );
    assert_eq!(
        String::from_utf8_lossy(&output(again, dir.path()).stdout),
        "4194304\n"
    );
}

#[test]
fn a_bad_recording_is_refused_in_one_line() {
    let dir = fixture(0);
    let bad = dir.path().join("bad");
    fs::write(&bad, "hello\n").unwrap();
    let out = output(
        prefetch(&["run", "--replay", bad.to_str().unwrap()], &["true"]),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("is not a recording of `prefetch record"),
        "{stderr}"
    );
}

#[test]
fn rereads_after_a_distance_are_listed_again_when_asked() {
    let dir = fixture(1);
    // Pages 0..=4, then page 0 again (5 page reads after its first), page 4 again (2 after).
    let script = "import os\n\
                  fd=os.open('data.bin',os.O_RDONLY)\n\
                  for p in [0,1,2,3,4,0,4]: os.pread(fd,4096,p*4096)";
    let data = dir.path().join("data.bin");
    let data = data.as_os_str().as_encoded_bytes();
    let pages = |extra: &[&str]| -> Vec<(u64, u64)> {
        let recording = dir.path().join("rec");
        let mut args = vec!["record", "-o", recording.to_str().unwrap()];
        args.extend(extra);
        let record = prefetch(&args, &[python(), "-c", script]);
        assert!(output(record, dir.path()).status.success());
        let parsed = read_recording(&recording);
        let part = parsed
            .parts
            .iter()
            .find(|p| p.files.iter().any(|f| f.path == data))
            .expect("data.bin recorded");
        let file = part.files.iter().position(|f| f.path == data).unwrap();
        let runs = part.runs.iter().filter(|r| r.file == file);
        runs.map(|r| (r.first, r.count)).collect()
    };
    assert_eq!(pages(&[]), vec![(0, 5)]);
    assert_eq!(pages(&["--rereads-after", "12K"]), vec![(0, 5), (0, 1)]);
}

/// The program of [`a_replay_advises_nothing_until_the_program_touches_its_recording`]: with
/// TOUCH=2 it reads the whole of never.bin; with TOUCH=1 it reads one more page of it (read-ahead
/// off) on every wait, so a replay made ready after the first read (a loaded machine) still sees
/// a touch; it prints how many pages of never.bin are cached besides those it read, once 32 have
/// arrived or 3 s have passed.
const UNTOUCHED_SCRIPT: &str = "import subprocess,time,os\n\
                  t=os.environ['TOUCH']\n\
                  fd=os.open('never.bin',os.O_RDONLY) if t!='0' else -1\n\
                  if t!='0': os.posix_fadvise(fd,0,0,os.POSIX_FADV_RANDOM)\n\
                  if t=='2': os.pread(fd,1<<20,0)\n\
                  end=time.time()+3\n\
                  own=0\n\
                  while True:\n\
                  \x20   if t=='1': own+=1; os.pread(fd,4096,4096*own)\n\
                  \x20   n=int(subprocess.run(['fincore','--noheadings','--output','PAGES','never.bin'],capture_output=True).stdout)-own\n\
                  \x20   if n>=32 or time.time()>end: break\n\
                  \x20   time.sleep(0.05)\n\
                  print(n)";

/// `recording` with only the runs of `name` read through the interposers (python's reads of
/// it, not fincore's mapping): a recording of pages nothing else in the program touches.
fn keep_only(recording: &Recording, name: &str) -> String {
    let mut text = plan::recording::header(recording.page_size, recording.rereads_after);
    for part in &recording.parts {
        let Some(kept) = part
            .files
            .iter()
            .position(|f| f.path.ends_with(name.as_bytes()))
        else {
            continue;
        };
        let mut part = part.clone();
        part.runs
            .retain(|run| run.file == kept && run.via == Via::Read);
        if part.runs.is_empty() {
            continue;
        }
        part.runs.iter_mut().for_each(|run| run.file = 0);
        part.files = vec![part.files[kept].clone()];
        text.push_str(&part.to_text());
    }
    text
}

/// A replay of a recording whose pages the program never touches advises nothing (the file
/// stays uncached for 3 s beside the program); the same replay, once the program reads one of
/// its pages, prefetches from there (32 pages arrive).
#[test]
fn a_replay_advises_nothing_until_the_program_touches_its_recording() {
    let dir = fixture(1);
    let never = dir.path().join("never.bin");
    fs::write(&never, vec![5u8; 1 << 20]).unwrap();
    let full = dir.path().join("full.rec");
    let mut record = prefetch(
        &["record", "--no-tracepoint", "-o", full.to_str().unwrap()],
        &[python(), "-c", UNTOUCHED_SCRIPT],
    );
    record.env("TOUCH", "2");
    assert!(output(record, dir.path()).status.success());
    let only = dir.path().join("only.rec");
    fs::write(&only, keep_only(&read_recording(&full), "never.bin")).unwrap();
    let kept = read_recording(&only);
    let pages: u64 = kept
        .parts
        .iter()
        .flat_map(|p| &p.runs)
        .map(|r| r.count)
        .sum();
    assert_eq!(
        pages, 256,
        "the recording lists never.bin's pages: {kept:?}"
    );
    let replayed = |touch: &str| {
        evict(&never);
        assert_eq!(cached_pages(&never), 0, "eviction failed");
        let mut replay = prefetch(
            &["run", "--replay", only.to_str().unwrap()],
            &[python(), "-c", UNTOUCHED_SCRIPT],
        );
        replay.env("TOUCH", touch);
        let out = output(replay, dir.path());
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{out:?}"))
    };
    assert_eq!(
        replayed("0"),
        0,
        "pages the program never touched were advised"
    );
    let touched = replayed("1");
    assert!(
        touched >= 32,
        "a touch did not start the replay: {touched} pages"
    );
}
