//! `prefetch sim` as a real process on trace input that is not a plain file or not a sane
//! trace: a FIFO, a pipe, and a request of absurd length under an address-space limit. Each
//! must finish (simulating the whole trace) or fail with one line naming file and line.

use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a run may take before the test calls it a hang: a bound on waiting, not a speed
/// check (these runs take well under a second).
const PATIENCE: Duration = Duration::from_secs(60);

/// A small CSV trace with re-references, so that every policy has work to do.
const TRACE: &str = "time_us,file,offset,length,op\n\
                     0,a,0,8192,R\n10,a,8192,8192,R\n20,b,0,4096,R\n30,a,0,8192,R\n\
                     40,a,16384,8192,R\n50,b,0,4096,R\n60,a,8192,8192,R\n";

fn sim(trace: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    command
        .args([
            "sim",
            "--cache",
            "2",
            "--fetch-time",
            "3",
            "--json",
            "--trace",
        ])
        .arg(trace)
        // The one-line error is checked; how backtraces print is another test's concern.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Waits for `child`, killing it and failing the test if it runs past PATIENCE.
fn finish(mut child: Child) -> Output {
    let begin = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if begin.elapsed() > PATIENCE {
            child.kill().unwrap();
            panic!("prefetch sim hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The rows of a successful `--json` run, without the trace name (which differs between a
/// file and a pipe).
fn rows(output: &Output) -> Vec<serde_json::Value> {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut rows: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    for row in &mut rows {
        row.as_object_mut().unwrap().remove("trace");
    }
    rows
}

fn from_file(dir: &Path) -> Vec<serde_json::Value> {
    let file = dir.join("t.csv");
    std::fs::write(&file, TRACE).unwrap();
    let rows = rows(&finish(sim(&file).spawn().unwrap()));
    assert!(rows.iter().all(|row| row["references"] == 7), "{rows:?}");
    rows
}

#[test]
fn a_fifo_trace_is_read_once_and_simulated_whole() {
    let dir = tempfile::tempdir().unwrap();
    let expected = from_file(dir.path());
    let fifo = dir.path().join("t.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let child = sim(&fifo).spawn().unwrap();
    // Opening a FIFO for writing waits for its reader: the child.
    std::fs::write(&fifo, TRACE).unwrap();
    assert_eq!(rows(&finish(child)), expected);
}

#[test]
fn a_piped_trace_is_simulated_whole_not_as_an_empty_trace() {
    let dir = tempfile::tempdir().unwrap();
    let expected = from_file(dir.path());
    // /dev/stdin of a piped child is a pipe, as `--trace <(cat t.csv)` gives.
    let mut child = sim(Path::new("/dev/stdin"))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(TRACE.as_bytes())
        .unwrap();
    assert_eq!(rows(&finish(child)), expected);
}

#[test]
fn an_absurd_request_length_is_an_error_under_an_address_space_limit() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("absurd.csv");
    std::fs::write(&trace, "0,a,0,4096,R\n0,a,0,8000000000000000,R\n").unwrap();
    for policies in ["lru-demand", "all"] {
        let mut command = sim(&trace);
        command.args(["--policy", policies]);
        // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
        unsafe {
            command.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 1 << 30,
                    rlim_max: 1 << 30,
                };
                match libc::setrlimit(libc::RLIMIT_AS, &limit) {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            });
        }
        let output = finish(command.spawn().unwrap());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.signal(),
            None,
            "{policies}: killed by a signal (allocation abort?): {stderr}"
        );
        assert_eq!(output.status.code(), Some(1), "{policies}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!("{}:2: ", trace.display())) && stderr.contains("blocks"),
            "{policies}: {stderr}"
        );
    }
}

#[test]
fn more_distinct_blocks_than_memory_holds_is_an_error_under_an_address_space_limit() {
    // Four requests of 8 GiB in 8 KiB blocks: 1M blocks each (each fits), 4M distinct blocks
    // in all, more than 256 MiB of address space can simulate.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("wide.csv");
    let lines: String = (0..4)
        .map(|i| format!("{i},f{i},0,8589934592,R\n"))
        .collect();
    std::fs::write(&trace, lines).unwrap();
    let mut command = sim(&trace);
    command.args(["--policy", "lru-demand"]);
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 256 << 20,
                rlim_max: 256 << 20,
            };
            match libc::setrlimit(libc::RLIMIT_AS, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let output = finish(command.spawn().unwrap());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.signal(), None, "killed by a signal: {stderr}");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("distinct blocks"), "{stderr}");
}

#[test]
fn a_benchmark_trace_longer_than_memory_holds_is_refused_not_a_capacity_overflow() {
    let output = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(["sim", "--bench", "--refs", "18446744073709551615"])
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--refs"), "{stderr}");
}

#[test]
fn more_jobs_than_runs_are_lowered_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.csv");
    std::fs::write(&file, TRACE).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args([
            "sim",
            "--cache",
            "1,2",
            "--fetch-time",
            "1",
            "--policy",
            "lru",
        ])
        .args(["--jobs", "10000", "--json", "--trace"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child);
    assert_eq!(rows(&output).len(), 2);
    let cores = std::thread::available_parallelism().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        format!("prefetch sim: --jobs 10000 lowered to 2: no more threads than runs, nor four per core ({cores} cores)")
    );
}
