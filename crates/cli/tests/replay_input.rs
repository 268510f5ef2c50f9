//! A recording handed to a replay is input that may be anything: it must
//! be a regular file, checked before it is read (a FIFO must not block the
//! program, `/dev/zero` must not grow without bound), a bad one costs one
//! line and the program runs without it, and a long one is held within the
//! list's memory share (a replay in a 20 MiB memory cgroup is not
//! OOM-killed). Each child runs under a deadline: past it the test fails
//! (a hang), never passes.

mod common;
use common::library;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Longer than any of these programs takes; a child still running then has hung.
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `command` to its end, killing it (and failing) past [`DEADLINE`].
fn finish(mut command: Command) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{command:?} still ran after {DEADLINE:?}: {out:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `program` with the library preloaded and `LIBPREFETCH_REPLAY=recording`.
fn replaying(recording: &Path, program: &[&str]) -> Command {
    let mut command = Command::new(program[0]);
    command
        .args(&program[1..])
        .env("LD_PRELOAD", library())
        .env("LIBPREFETCH_REPLAY", recording);
    command
}

#[test]
fn run_refuses_a_recording_that_is_not_a_regular_file_in_one_line() {
    let out = finish({
        let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
        command.args(["run", "--replay", "/dev/zero", "--library"]);
        command.arg(library()).args(["--", "/bin/true"]);
        command
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
}

#[test]
fn the_library_warns_once_and_runs_the_program_without_a_fifo_or_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    for recording in [fifo.as_path(), Path::new("/dev/zero")] {
        let out = finish(replaying(recording, &["/bin/sh", "-c", "/bin/echo ran"]));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(out.stdout, b"ran\n");
        assert_eq!(
            stderr.lines().count(),
            1,
            "one warning, not one per process: {stderr}"
        );
        assert!(stderr.contains("not a regular file"), "{stderr}");
    }
}

/// A recording of `md5sum` reading `data` page by page `rounds` times
/// over, as the recorder writes it (parts of 16 Ki runs).
fn write_long_recording(path: &Path, data: &Path, pages: u64, rounds: u64) {
    let stat = std::fs::metadata(data).unwrap();
    use std::os::unix::fs::MetadataExt;
    let mtime_ns = i128::from(stat.mtime()) * 1_000_000_000 + i128::from(stat.mtime_nsec());
    let exe = std::fs::canonicalize("/usr/bin/md5sum").unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(
        out,
        "libprefetch-recording 1 page_size=4096 rereads_after=1"
    )
    .unwrap();
    let runs = pages * rounds;
    for chunk in 0..runs.div_ceil(16 << 10) {
        writeln!(out, "part pid=1 exe={}", exe.display()).unwrap();
        writeln!(
            out,
            "file 0 dev={} ino={} size={} mtime_ns={mtime_ns} path={}",
            stat.dev(),
            stat.ino(),
            stat.size(),
            data.display()
        )
        .unwrap();
        for run in chunk * (16 << 10)..((chunk + 1) * (16 << 10)).min(runs) {
            writeln!(out, "pages 0 {} 1 {run}", run % pages).unwrap();
        }
        writeln!(out, "end").unwrap();
    }
}

#[test]
fn a_long_recording_replays_in_a_20_mib_cgroup_without_an_oom_kill() {
    if !Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() {
        eprintln!("SKIP: the kernel has no cgroup v1 memory controller (feature missing)");
        return;
    }
    let Ok(cgroup) = bench::cgroup::MemoryCgroup::create(20 << 20) else {
        eprintln!("SKIP: cannot create a memory cgroup (kernel feature or privilege missing)");
        return;
    };
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let data = dir.path().join("data.bin");
    let pages = 2048;
    std::fs::write(&data, vec![7u8; pages as usize * 4096]).unwrap();
    let recording = dir.path().join("long.rec");
    // 480 Ki page entries, 12 MB of text: the size that was OOM-killed.
    write_long_recording(&recording, &data, pages, 240);
    let mut command = replaying(&recording, &["/usr/bin/md5sum", data.to_str().unwrap()]);
    bench::cgroup::join_before_exec(&mut command, cgroup.dir()).unwrap();
    let out = finish(command);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let stock = finish({
        let mut command = Command::new("/usr/bin/md5sum");
        command.arg(&data);
        command
    });
    assert_eq!(out.stdout, stock.stdout);
    drop(cgroup);
}
