//! `prefetch run --competitive` never drops a POSIX lock the program holds, on the device where
//! the library keeps descriptors of its own: a `prefetch emulate` FUSE mount. `programs/lockrace.c`
//! reads a file in bursts (a stream the library advises through a private descriptor), closes it,
//! reopens it and locks it, then ends another stream, and checks `/proc/locks` each time; the test
//! runs it for [`RUNS`] x [`ITERATIONS`] iterations, two runs at a time. A library that checks for
//! locks and then closes its descriptor loses a lock in about one iteration in a hundred here.
//!
//! Follows TR840 section 3 through `prefetch run --competitive`; the rule tested is the project's
//! (a lock the program holds is never changed). Prints "skipped (kernel feature missing): REASON"
//! and passes where /dev/fuse or fusermount3 is missing; a missing gcc fails the test.

mod common;
use common::library;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Runs of the program, and iterations of each (2,000 in all).
const RUNS: usize = 4;
const ITERATIONS: &str = "500";

/// How long to wait for the mount: a bound on waiting, not a performance threshold.
const PATIENCE: Duration = Duration::from_secs(20);

/// A `prefetch emulate` mount of two 4 MiB files, unmounted when dropped.
struct Mount {
    daemon: Child,
    dir: tempfile::TempDir,
}

impl Mount {
    fn start() -> Option<Mount> {
        if let Some(reason) = emulate::fuse_kernel_missing() {
            println!("skipped (kernel feature missing): {reason}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let (backing, mountpoint) = (dir.path().join("backing"), dir.path().join("mnt"));
        fs::create_dir(&backing).unwrap();
        fs::create_dir(&mountpoint).unwrap();
        for (name, seed) in [("locked", 7u64), ("other", 11)] {
            let bytes: Vec<u8> = (0..4u64 << 20).map(|i| (i * seed % 251) as u8).collect();
            fs::write(backing.join(name), bytes).unwrap();
        }
        let daemon = Command::new(env!("CARGO_BIN_EXE_prefetch"))
            .args(["emulate", "--model", "ibm-36z15", "--time-scale", "0.01"])
            .arg("--backing")
            .arg(&backing)
            .arg(&mountpoint)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mount = Mount { daemon, dir };
        let start = Instant::now();
        while !mount.is_mounted() && start.elapsed() < PATIENCE {
            sleep(Duration::from_millis(20));
        }
        assert!(mount.is_mounted(), "prefetch emulate did not mount");
        Some(mount)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join("mnt").join(name)
    }

    fn is_mounted(&self) -> bool {
        let mountpoint = self.path("");
        let mountpoint = mountpoint.to_str().unwrap().trim_end_matches('/');
        fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .any(|line| line.split(' ').nth(4) == Some(mountpoint))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        if self.is_mounted() {
            let _ = Command::new("fusermount3")
                .args(["-u", "-z"])
                .arg(self.path(""))
                .status();
        }
    }
}

/// `programs/lockrace.c` built with gcc into `dir`.
fn build_lockrace(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/lockrace.c");
    let program = dir.join("lockrace");
    let status = Command::new("gcc")
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&program)
        .arg(&source)
        .status()
        .expect("gcc is needed to build tests/programs/lockrace.c");
    assert!(status.success(), "gcc failed on {}", source.display());
    program
}

#[test]
fn competitive_prefetching_on_fuse_keeps_every_lock_the_program_takes() {
    let Some(mount) = Mount::start() else {
        return;
    };
    let program = build_lockrace(mount.dir.path());
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_prefetch"))
            .args(["run", "--competitive", "--library"])
            .arg(library())
            .arg("--")
            .arg(&program)
            .arg(mount.path("locked"))
            .arg(ITERATIONS)
            .arg(mount.path("other"))
            .env("XDG_CACHE_HOME", mount.dir.path().join("cache"))
            .output()
            .unwrap()
    };
    let mut reports = Vec::new();
    for _ in 0..RUNS / 2 {
        let (first, second) = std::thread::scope(|scope| {
            let first = scope.spawn(run);
            let second = scope.spawn(run);
            (first.join().unwrap(), second.join().unwrap())
        });
        reports.extend([first, second]);
    }
    for output in &reports {
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}{}",
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            stdout.trim(),
            format!("0 of {ITERATIONS} iterations lost the lock")
        );
    }
}
