//! `prefetch run --restore` in a memory cgroup with a limit, as a user runs it (`prefetch run`
//! started inside the group). On a cgroup v1 memory hierarchy the restorer waits outside the
//! group, in its parent, executed afresh (`prefetch restore-beside`), and the pages it restores
//! once the program opens the snapshot's file are charged to the program's group; a snapshot
//! read from a pipe (`--restore <(...)`) is restored all the same, by a restorer that stays in the
//! group (docs/record.md, "prefetch run --restore"). Needs the privilege to make a memory cgroup
//! (skipped, saying so, without it); the first test needs a v1 memory hierarchy (on v2 the
//! restorer stays in the group, and it is skipped, saying so). Files live under the target
//! directory (a disk file system: tmpfs cannot evict).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::{fadvise, Advice};

const SIZE: usize = 8 << 20;

/// The memory cgroup directory of process `pid` (v1's memory controller or v2's).
fn memory_cgroup_of(pid: u32) -> PathBuf {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let v1 = text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then(|| Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/')))
    });
    v1.unwrap_or_else(|| {
        let path = text.lines().find_map(|l| l.strip_prefix("0::")).unwrap();
        Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'))
    })
}

/// The restorer of the program `pid`: the process running `prefetch restore-beside --pid PID`.
fn restorer_of(pid: u32) -> Option<u32> {
    let wanted = format!("restore-beside\0--pid\0{pid}\0");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let id: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline)
                .contains(&wanted)
                .then_some(id)
        })
}

/// The page-cache bytes charged to the memory cgroup at `dir` itself.
fn cache_charged(dir: &Path) -> u64 {
    let stat = std::fs::read_to_string(dir.join("memory.stat")).unwrap();
    let field = |name: &str| {
        stat.lines().find_map(|line| {
            let (key, value) = line.split_once(' ')?;
            (key == name).then(|| value.trim().parse::<u64>().unwrap())
        })
    };
    field("cache").or_else(|| field("file")).unwrap()
}

/// Whether a restorer of the program `pid`, whose command line names `data`, still runs: the
/// `prefetch run` forked before it became the program, or that fork executed afresh (`prefetch
/// restore-beside --pid PID`). One of them runs from before the program starts until the
/// restorer exits.
fn a_restorer_runs(pid: u32, data: &Path) -> bool {
    let beside = format!("restore-beside\0--pid\0{pid}\0");
    let data = data.to_str().unwrap();
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let Some(id) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            return false;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z');
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        id != pid && !zombie && (cmdline.contains(&beside) || cmdline.contains(data))
    })
}

/// Waits until `done` holds. Every condition waited for is an event that comes unless the code
/// under test is wrong (a restorer appears, restores or exits); the restorer runs at the lowest
/// CPU priority, so no time is asked of it: the 10 minutes are only a guard against a hang.
fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(600);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// A file of `SIZE` bytes out of the page cache and its snapshot, in a directory of the target
/// directory named after `name`.
fn evicted_file_and_snapshot(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("data.bin");
    std::fs::write(&data, vec![5u8; SIZE]).unwrap();
    let snapshot = dir.join("snap.json");
    let out = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(["snapshot", "-o", snapshot.to_str().unwrap()])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let file = File::open(&data).unwrap();
    file.sync_all().unwrap();
    fadvise(&file, 0, None, Advice::DontNeed).unwrap();
    (dir, data, snapshot)
}

/// A program that says it is ready, opens `data` (reading nothing) when told, and waits.
fn script(data: &Path) -> String {
    format!(
        "import sys\nprint('ready', flush=True)\nsys.stdin.readline()\n\
         f=open('{}','rb')\nprint('opened', flush=True)\nsys.stdin.read()",
        data.display()
    )
}

#[test]
fn the_restorer_waits_outside_the_programs_memory_cgroup_and_restores_inside_it() {
    let Ok(cgroup) = bench::cgroup::MemoryCgroup::create(64 << 20) else {
        eprintln!("SKIP: cannot create a memory cgroup (root and a memory controller needed)");
        return;
    };
    let membership = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    if !membership.lines().any(|line| line.contains(":memory:")) {
        eprintln!(
            "SKIP: cgroup v2: the restorer stays in the program's group (no v1 memory hierarchy)"
        );
        return;
    }
    let (dir, data, snapshot) = evicted_file_and_snapshot("aside");
    let script = script(&data);
    let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    command
        .args(["run", "--restore", snapshot.to_str().unwrap(), "--"])
        .args(["python3", "-c", &script]);
    let (mut program, mut lines) = start_ready(command, cgroup.dir(), &dir);
    let pid = program.id();
    let mut restorer = None;
    wait_until(|| {
        restorer = restorer_of(pid);
        restorer.is_some() || !a_restorer_runs(pid, &data)
    });
    let found = restorer.is_some();
    let waiting_in = restorer.map(memory_cgroup_of);
    let (stdin, before, charged) =
        open_and_wait_for_the_restore(&mut program, &mut lines, cgroup.dir(), &data);
    let program_in = memory_cgroup_of(pid);
    drop(stdin);
    let status = program.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(status.success());
    assert!(found, "no `prefetch restore-beside --pid {pid}` process");
    assert_eq!(
        waiting_in.as_deref(),
        cgroup.dir().parent(),
        "the waiting restorer is in the group's parent"
    );
    assert_eq!(program_in, cgroup.dir());
    assert!(
        charged,
        "the restored 8 MiB are charged to the program's group ({} bytes before, {} after)",
        before,
        cache_charged(cgroup.dir())
    );
}

#[test]
fn a_snapshot_read_from_a_pipe_is_restored_in_the_programs_memory_cgroup() {
    let Ok(cgroup) = bench::cgroup::MemoryCgroup::create(64 << 20) else {
        eprintln!("SKIP: cannot create a memory cgroup (root and a memory controller needed)");
        return;
    };
    let (dir, data, snapshot) = evicted_file_and_snapshot("pipe");
    // bash passes the snapshot as /dev/fd/N, a pipe `prefetch run` reads once.
    let mut command = Command::new("bash");
    command
        .env("PREFETCH", env!("CARGO_BIN_EXE_prefetch"))
        .env("SNAPSHOT", &snapshot)
        .args([
            "-c",
            "exec \"$PREFETCH\" run --restore <(cat \"$SNAPSHOT\") -- python3 -c \"$0\"",
        ])
        .arg(script(&data));
    let (mut program, mut lines) = start_ready(command, cgroup.dir(), &dir);
    let pid = program.id();
    let found = a_restorer_runs(pid, &data);
    let (stdin, before, charged) =
        open_and_wait_for_the_restore(&mut program, &mut lines, cgroup.dir(), &data);
    drop(stdin);
    let status = program.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(status.success());
    assert!(
        found,
        "no restorer of `prefetch run --restore /dev/fd/N` (program {pid})"
    );
    assert!(
        charged,
        "the restored 8 MiB are charged to the program's group ({} bytes before, {} after)",
        before,
        cache_charged(cgroup.dir())
    );
}

/// Lets the program started by [`start_ready`] open the data file and waits until the group's cache
/// grew by the file's size or no restorer of it runs: the program's standard input (its end closed by
/// dropping it), the cache charged before, and whether it grew.
fn open_and_wait_for_the_restore(
    program: &mut std::process::Child,
    lines: &mut std::io::Lines<BufReader<std::process::ChildStdout>>,
    group: &Path,
    data: &Path,
) -> (std::process::ChildStdin, u64, bool) {
    let pid = program.id();
    let before = cache_charged(group);
    let mut stdin = program.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), "opened");
    let restored = || cache_charged(group) >= before + SIZE as u64;
    wait_until(|| restored() || !a_restorer_runs(pid, data));
    (stdin, before, restored())
}

/// Starts `command` (the program under `prefetch run --restore`) in the memory cgroup `group`,
/// without device profiles (under `dir`), its standard input and output piped; returns once the
/// program printed "ready", with the rest of its output.
fn start_ready(
    mut command: Command,
    group: &Path,
    dir: &Path,
) -> (
    std::process::Child,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    bench::cgroup::join_before_exec(&mut command, group).unwrap();
    let mut program = command
        .env("XDG_CACHE_HOME", dir.join("no-profiles"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(program.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    (program, lines)
}
