//! `prefetch run --restore` in a memory cgroup with a limit, as a user runs it (`prefetch run`
//! started inside the group): the restorer waits outside the group, in its parent, executed
//! afresh (`prefetch restore-beside`), and the pages it restores once the program opens the
//! snapshot's file are charged to the program's group (docs/record.md, "prefetch run
//! --restore"). Needs the privilege to make a memory cgroup (skipped, saying so, without it).
//! Files live under the target directory (a disk file system: tmpfs cannot evict).

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

/// Waits (20 s at most: a deadlock detector) until `done` holds.
fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

#[test]
fn the_restorer_waits_outside_the_programs_memory_cgroup_and_restores_inside_it() {
    let Ok(cgroup) = bench::cgroup::MemoryCgroup::create(64 << 20) else {
        eprintln!("SKIP: cannot create a memory cgroup (root and a memory controller needed)");
        return;
    };
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-aside-{}", std::process::id()));
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
    // The program says it is ready, opens the file (reading nothing) when told, and waits.
    let script = format!(
        "import sys\nprint('ready', flush=True)\nsys.stdin.readline()\n\
         f=open('{}','rb')\nprint('opened', flush=True)\nsys.stdin.read()",
        data.display()
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    bench::cgroup::join_before_exec(&mut command, cgroup.dir()).unwrap();
    let mut program = command
        .env("XDG_CACHE_HOME", dir.join("no-profiles"))
        .args(["run", "--restore", snapshot.to_str().unwrap(), "--"])
        .args(["python3", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = program.id();
    let mut lines = BufReader::new(program.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let mut restorer = None;
    let found = wait_until(|| {
        restorer = restorer_of(pid);
        restorer.is_some()
    });
    let waiting_in = restorer.map(memory_cgroup_of);
    let before = cache_charged(cgroup.dir());
    let mut stdin = program.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), "opened");
    let charged = wait_until(|| cache_charged(cgroup.dir()) >= before + SIZE as u64);
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
