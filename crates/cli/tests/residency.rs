//! `prefetch fincore`, `snapshot` and `restore` as a user runs them: a snapshot restored after
//! the file was evicted gives back the same cached pages; a malformed snapshot is refused in one
//! line (even with `RUST_BACKTRACE=1`); a file changed since the snapshot is skipped with a
//! warning. Files live under the target directory (a disk file system: tmpfs cannot evict).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::{fadvise, Advice};

const PAGE: u64 = 4096;

fn prefetch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run prefetch")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

/// A directory of this test's own under the target directory.
fn test_dir(name: &str) -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 1 MiB file on disk, out of the cache, with pages 3, 10-19 and 200 read back in.
fn partly_cached_file(dir: &Path) -> PathBuf {
    let path = dir.join("data.bin");
    std::fs::write(&path, vec![7u8; 256 * PAGE as usize]).unwrap();
    let file = File::open(&path).unwrap();
    file.sync_all().unwrap();
    fadvise(&file, 0, None, Advice::DontNeed).unwrap();
    fadvise(&file, 0, None, Advice::Random).unwrap();
    for page in [3].into_iter().chain(10..20).chain([200]) {
        file.read_exact_at(&mut [0u8], page * PAGE).unwrap();
    }
    path
}

/// `command` (a `prefetch` under test) made `prefetch run --restore SNAPSHOT` of `program`, with the
/// `libprefetch.so` built beside it, and its output.
fn run_restore(mut command: Command, snapshot: &Path, program: &[&str]) -> Output {
    let library = Path::new(env!("CARGO_BIN_EXE_prefetch"))
        .parent()
        .unwrap()
        .join("libprefetch.so");
    command
        .args(["run", "--restore", snapshot.to_str().unwrap(), "--library"])
        .arg(library)
        .arg("--")
        .args(program)
        .output()
        .unwrap()
}

/// The "ranges" of the one file `prefetch fincore --json --pages` reports.
fn cached_ranges(path: &Path) -> serde_json::Value {
    let out = prefetch(&["fincore", "--json", "--pages", path.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["files"][0]["ranges"].clone()
}

#[test]
fn restore_after_eviction_gives_back_the_snapshot_pages() {
    let dir = test_dir("roundtrip");
    let data = partly_cached_file(&dir);
    let snapshot = dir.join("snap.json");
    let expected = serde_json::json!([[3, 4], [10, 20], [200, 201]]);
    assert_eq!(cached_ranges(&data), expected);
    take_snapshot(&snapshot, &data);
    fadvise(File::open(&data).unwrap(), 0, None, Advice::DontNeed).unwrap();
    assert_eq!(cached_ranges(&data), serde_json::json!([]));
    let out = prefetch(&[
        "restore",
        "--no-infill",
        "--json",
        snapshot.to_str().unwrap(),
    ]);
    let after = cached_ranges(&data);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(after, expected);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["missing_pages_read"], 12);
    assert_eq!(summary["infill_pages"], 0);
}

#[test]
fn a_malformed_snapshot_is_one_line_saying_how_to_make_one() {
    let dir = test_dir("malformed");
    let snapshot = dir.join("snap.json");
    std::fs::write(
        &snapshot,
        "{\"format\": \"prefetch-residency-snapshot\", \"version\": 1",
    )
    .unwrap();
    let out = prefetch(&["restore", snapshot.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "not one line:\n{stderr}");
    assert!(stderr.starts_with("prefetch: restore: "), "{stderr}");
    assert!(
        stderr.contains("is not a valid residency snapshot"),
        "{stderr}"
    );
    assert!(stderr.contains("prefetch snapshot -o FILE"), "{stderr}");
}

#[test]
fn a_file_changed_since_the_snapshot_is_skipped_with_a_warning() {
    let dir = test_dir("changed");
    let data = partly_cached_file(&dir);
    let snapshot = dir.join("snap.json");
    take_snapshot(&snapshot, &data);
    std::fs::write(&data, vec![8u8; 300 * PAGE as usize]).unwrap();
    let file = File::open(&data).unwrap();
    file.sync_all().unwrap();
    fadvise(&file, 0, None, Advice::DontNeed).unwrap();
    let out = prefetch(&["restore", snapshot.to_str().unwrap()]);
    let after = cached_ranges(&data);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("warning: skipped"), "{stderr}");
    assert!(stderr.contains("size"), "{stderr}");
    assert_eq!(after, serde_json::json!([]));
}

/// `prefetch snapshot -o SNAPSHOT DATA`, which must succeed.
fn take_snapshot(snapshot: &Path, data: &Path) {
    let out = prefetch(&[
        "snapshot",
        "-o",
        snapshot.to_str().unwrap(),
        data.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
}

/// Runs `command` as `prefetch restore --json SNAPSHOT` and returns its summary.
fn restore_json(snapshot: &Path, mut command: Command) -> serde_json::Value {
    let out = command
        .args([
            "restore",
            "--json",
            "--no-progress",
            snapshot.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_file_listed_many_times_is_restored_and_counted_once() {
    let dir = test_dir("duplicates");
    let data = partly_cached_file(&dir);
    let snapshot = dir.join("snap.json");
    take_snapshot(&snapshot, &data);
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&snapshot).unwrap()).unwrap();
    let file = json["files"][0].clone();
    json["files"] = serde_json::Value::Array(vec![file; 5000]);
    std::fs::write(&snapshot, serde_json::to_vec(&json).unwrap()).unwrap();
    fadvise(File::open(&data).unwrap(), 0, None, Advice::DontNeed).unwrap();
    let summary = restore_json(&snapshot, Command::new(env!("CARGO_BIN_EXE_prefetch")));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(summary["files"], 1);
    assert_eq!(summary["snapshot_pages"], 12);
    assert_eq!(summary["missing_pages_read"], 12);
}

#[test]
fn a_snapshot_holds_only_files_with_cached_pages() {
    let dir = test_dir("only-cached");
    let data = partly_cached_file(&dir);
    let cold = dir.join("cold.bin");
    std::fs::write(&cold, vec![1u8; 64 * PAGE as usize]).unwrap();
    let file = File::open(&cold).unwrap();
    file.sync_all().unwrap();
    fadvise(&file, 0, None, Advice::DontNeed).unwrap();
    let snapshot = dir.join("snap.json");
    take_snapshot(&snapshot, &dir);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&snapshot).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let files = json["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{json}");
    assert_eq!(files[0]["path"], data.to_str().unwrap());
}

#[test]
fn a_budget_set_by_the_memory_cgroup_is_not_called_max_memory() {
    let Some((_cgroup, dir, _, snapshot, mut command)) = snapshot_over_a_cgroup("cgroup-budget")
    else {
        return;
    };
    let out = command
        .args(["restore", "--no-progress", snapshot.to_str().unwrap()])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("not restored: over the memory budget"),
        "{stdout}"
    );
    assert!(!stdout.contains("--max-memory"), "{stdout}");
    assert!(stdout.contains("memory cgroup"), "{stdout}");
}

#[test]
fn an_error_names_the_operation_that_failed() {
    let out = prefetch(&["snapshot", "-o", "/nonexistent-dir/x", "/nonexistent-file"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("/nonexistent-file: cannot stat: "),
        "{stderr}"
    );
}

#[test]
fn run_restore_reads_the_snapshot_back_beside_the_program_which_starts_at_once() {
    let dir = test_dir("beside");
    let data = partly_cached_file(&dir);
    let snapshot = dir.join("snap.json");
    take_snapshot(&snapshot, &data);
    fadvise(File::open(&data).unwrap(), 0, None, Advice::DontNeed).unwrap();
    // The program sees no child of its own, opens the file (the restore
    // starts at that touch), then waits (20 s at most: a deadlock detector)
    // for the snapshot's 12 pages to come back.
    let script = format!(
        "import os,time,subprocess\n\
         try: os.wait(); print('a child')\n\
         except ChildProcessError: print('no child')\n\
         data=open('{0}','rb')\n\
         end=time.time()+20\n\
         while True:\n\
         \x20   n=int(subprocess.run(['fincore','--noheadings','--output','PAGES','{0}'],capture_output=True).stdout)\n\
         \x20   if n>=12 or time.time()>end: break\n\
         \x20   time.sleep(0.02)\n\
         print('restored' if n>=12 else n)",
        data.display()
    );
    // No device profile (an empty cache directory): no fragment is widened.
    let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    command.env("XDG_CACHE_HOME", dir.join("no-profiles"));
    let out = run_restore(command, &snapshot, &["python3", "-c", &script]);
    let after = cached_ranges(&data);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "no child\nrestored\n");
    assert_eq!(text(&out.stderr), "");
    // The snapshot's pages and the 32 KiB infill between 3 and 10.
    assert_eq!(after, serde_json::json!([[3, 20], [200, 201]]));
}

/// The restorer reads at the lowest best-effort I/O priority, not in the idle class: the
/// program waits for the pages it advises, and mq-deadline holds an idle-class request back while
/// any best-effort one (the program's other reads) is queued.
#[test]
fn the_restorer_reads_at_the_lowest_best_effort_io_priority() {
    let dir = test_dir("beside-ioprio");
    let data = partly_cached_file(&dir);
    let snapshot = dir.join("snap.json");
    take_snapshot(&snapshot, &data);
    let mut program = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args([
            "run",
            "--restore",
            snapshot.to_str().unwrap(),
            "--",
            "sleep",
            "20",
        ])
        .spawn()
        .unwrap();
    // The restorer: a process other than the program whose command line names the snapshot
    // (the fork of `prefetch run`) or the program (`restore-beside`, which the fork executes in
    // a limited memory cgroup), once it has set its priority (a 20 s deadlock detector).
    let named = snapshot.to_str().unwrap().to_string();
    let beside = format!("restore-beside\0--pid\0{}\0", program.id());
    let deadline = Instant::now() + Duration::from_secs(20);
    let priority = loop {
        let found = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .find_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let is_restorer = pid != program.id()
                    && [&named, &beside]
                        .iter()
                        .any(|name| String::from_utf8_lossy(&cmdline).contains(name.as_str()))
                    && unsafe { libc::getpriority(libc::PRIO_PROCESS, pid) } == 19;
                // SAFETY: ioprio_get of a process by id (IOPRIO_WHO_PROCESS = 1), no memory.
                is_restorer.then(|| unsafe { libc::syscall(libc::SYS_ioprio_get, 1, pid) })
            });
        match found {
            Some(priority) => break Some(priority),
            None if Instant::now() > deadline => break None,
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    program.kill().unwrap();
    program.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    // IOPRIO_CLASS_BE << 13 | level 7.
    assert_eq!(priority, Some((2 << 13) | 7));
}

/// `--restore` alone runs the program without the library (it would have no policy to follow);
/// with one of the library's options, such as `--competitive`, the program has it.
#[test]
fn run_restore_alone_runs_the_program_without_the_library() {
    let dir = test_dir("beside-no-library");
    let data = partly_cached_file(&dir);
    let snapshot = dir.join("snap.json");
    take_snapshot(&snapshot, &data);
    let probe = "grep -c libprefetch /proc/$$/maps; echo \"[$LD_PRELOAD]\"";
    let run = |options: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_prefetch"))
            .args(["run", "--restore", snapshot.to_str().unwrap()])
            .args(options)
            .args(["--", "sh", "-c", probe])
            .env_remove("LD_PRELOAD")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        text(&out.stdout)
    };
    let alone = run(&[]);
    let competitive = run(&["--competitive"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(alone, "0\n[]\n");
    assert!(
        competitive.ends_with("libprefetch.so]\n") && !competitive.starts_with("0\n"),
        "{competitive}"
    );
}

/// The restorer's fork signals nothing to the program: started with `SIGCHLD` blocked (kept
/// through the exec, so a `SIGCHLD` sent to `prefetch` or to the program stays pending), the
/// program finds none pending once the restorer is on its way, and `wait` finds no child.
#[test]
fn run_restore_sends_the_program_no_sigchld() {
    let dir = test_dir("beside-no-sigchld");
    let data = partly_cached_file(&dir);
    let snapshot = dir.join("snap.json");
    take_snapshot(&snapshot, &data);
    // Pending signals of the process (SigPnd) and its thread group (ShdPnd), as hex masks.
    let script = "import os,time\n\
                  time.sleep(0.3)\n\
                  try: os.wait(); print('a child')\n\
                  except ChildProcessError: print('no child')\n\
                  status=open('/proc/self/status').read().split('\\n')\n\
                  pending=[int(l.split()[1],16) for l in status if l.startswith(('SigPnd','ShdPnd'))]\n\
                  print('SIGCHLD pending' if any(p>>16&1 for p in pending) else 'none pending')";
    let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    // SAFETY: sigprocmask in the child between fork and exec, no allocation.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            let mut set = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGCHLD);
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            Ok(())
        })
    };
    let out = run_restore(command, &snapshot, &["python3", "-c", script]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "no child\nnone pending\n");
}

#[test]
fn run_restore_reads_nothing_for_a_program_that_never_opens_the_snapshots_files() {
    let dir = test_dir("beside-untouched");
    let data = partly_cached_file(&dir);
    let snapshot = dir.join("snap.json");
    take_snapshot(&snapshot, &data);
    fadvise(File::open(&data).unwrap(), 0, None, Advice::DontNeed).unwrap();
    // A second in which the restore would have read the 12 pages many times over.
    let command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    let out = run_restore(command, &snapshot, &["sleep", "1"]);
    let after = cached_ranges(&data);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(after, serde_json::json!([]));
}

/// A program that opens a file of the snapshot and closes it at once, reading nothing, starts
/// the restore: the open is seen as it happens (fanotify), not only while the file stays open
/// or mapped. The program then waits, holding no file of the snapshot, while this process
/// (outside its tree) looks (20 s at most: a deadlock detector) for the pages of the
/// snapshot's other file, which the program never opens.
#[test]
fn run_restore_starts_at_an_open_the_program_closed_at_once() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP: fanotify needs CAP_SYS_ADMIN (run as root)");
        return;
    }
    let dir = test_dir("beside-opened-closed");
    let data = partly_cached_file(&dir);
    let opened = dir.join("opened.bin");
    std::fs::write(&opened, vec![1u8; PAGE as usize]).unwrap();
    let snapshot = dir.join("snap.json");
    let out = prefetch(&[
        "snapshot",
        "-o",
        snapshot.to_str().unwrap(),
        data.to_str().unwrap(),
        opened.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    fadvise(File::open(&data).unwrap(), 0, None, Advice::DontNeed).unwrap();
    let script = format!(
        "import os,sys\nos.close(os.open('{}', os.O_RDONLY))\nprint('closed', flush=True)\nsys.stdin.read()",
        opened.display()
    );
    let mut program = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .env("XDG_CACHE_HOME", dir.join("no-profiles"))
        .args(["run", "--restore", snapshot.to_str().unwrap(), "--"])
        .args(["python3", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut closed = String::new();
    BufReader::new(program.stdout.as_mut().unwrap())
        .read_line(&mut closed)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut after = cached_ranges(&data);
    while after != serde_json::json!([[3, 20], [200, 201]]) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        after = cached_ranges(&data);
    }
    drop(program.stdin.take());
    let status = program.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(status.success());
    assert_eq!(closed, "closed\n");
    assert_eq!(
        after,
        serde_json::json!([[3, 20], [200, 201]]),
        "the snapshot's pages and the infill"
    );
}

#[test]
fn run_restore_reads_nothing_when_the_snapshot_exceeds_the_memory_cgroup_free() {
    let Some((_cgroup, dir, data, snapshot, command)) = snapshot_over_a_cgroup("beside-cgroup")
    else {
        return;
    };
    // The restore would evict the program's own pages to make room: it reads nothing at all,
    // while the program runs (a second) or after.
    let out = run_restore(command, &snapshot, &["sleep", "1"]);
    let after = cached_ranges(&data);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(after, serde_json::json!([]));
}

/// A 48 MiB file, its snapshot taken while wholly cached, then evicted, and a `prefetch` command that
/// runs in a new 24 MiB memory cgroup (kept alive by the first element): `None`, saying why, where
/// the cgroup cannot be made.
fn snapshot_over_a_cgroup(
    name: &str,
) -> Option<(
    bench::cgroup::MemoryCgroup,
    PathBuf,
    PathBuf,
    PathBuf,
    Command,
)> {
    let Ok(cgroup) = bench::cgroup::MemoryCgroup::create(24 << 20) else {
        eprintln!("SKIP: cannot create a memory cgroup (privilege or kernel feature missing)");
        return None;
    };
    let dir = test_dir(name);
    let data = dir.join("big.bin");
    std::fs::write(&data, vec![3u8; 48 << 20]).unwrap();
    let file = File::open(&data).unwrap();
    file.sync_all().unwrap();
    let snapshot = dir.join("snap.json");
    take_snapshot(&snapshot, &data);
    fadvise(&file, 0, None, Advice::DontNeed).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    bench::cgroup::join_before_exec(&mut command, cgroup.dir()).unwrap();
    Some((cgroup, dir, data, snapshot, command))
}
