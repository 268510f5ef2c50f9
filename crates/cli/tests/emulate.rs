//! `prefetch emulate` as a real process: it mounts, serves the backing files,
//! and leaves no mount behind whether it is stopped by SIGTERM, by
//! `fusermount3 -u`, or killed outright. Each test prints "skipped (kernel feature missing): REASON" and
//! passes where /dev/fuse or fusermount3 is missing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long to wait for the daemon to mount or for a mount to go away. A
/// bound on waiting, not a performance threshold: it passes as soon as the
/// state is reached.
const PATIENCE: Duration = Duration::from_secs(20);

/// A running `prefetch emulate` over a temporary backing directory.
struct Daemon {
    child: Option<Child>,
    mountpoint: PathBuf,
    dir: tempfile::TempDir,
}

impl Daemon {
    /// Starts the daemon and waits for its mount, or returns None (after
    /// printing why) where FUSE is unavailable.
    fn start() -> Option<Self> {
        if let Some(reason) = emulate::fuse_kernel_missing() {
            println!("skipped (kernel feature missing): {reason}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let backing = dir.path().join("backing");
        let mountpoint = dir.path().join("mnt");
        fs::create_dir(&backing).unwrap();
        fs::create_dir(&mountpoint).unwrap();
        fs::write(backing.join("data"), b"emulated bytes\n".repeat(1000)).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_prefetch"))
            .args([
                "emulate",
                "--model",
                "fixed:1",
                "--time-scale",
                "0.01",
                "--backing",
            ])
            .arg(&backing)
            .arg(&mountpoint)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let daemon = Daemon {
            child: Some(child),
            mountpoint,
            dir,
        };
        assert!(
            wait_for(|| is_mounted(&daemon.mountpoint)),
            "prefetch emulate did not mount"
        );
        Some(daemon)
    }

    /// Where the daemon keeps the mount's device profile while mounted.
    fn profile_path(&self) -> PathBuf {
        use std::os::unix::fs::MetadataExt;
        let dev = fs::metadata(&self.mountpoint).unwrap().dev();
        let device = format!("{}:{}", libc::major(dev), libc::minor(dev));
        self.dir
            .path()
            .join("cache/libprefetch/devices")
            .join(device)
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Waits for the daemon to exit and returns its output (the temporary
    /// directories stay until the Daemon is dropped).
    fn wait(&mut self) -> Output {
        self.child.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if is_mounted(&self.mountpoint) {
            let _ = Command::new("fusermount3")
                .args(["-u", "-z"])
                .arg(&self.mountpoint)
                .status();
        }
    }
}

/// True when `path` is a mount point (listed in /proc/self/mountinfo).
fn is_mounted(path: &Path) -> bool {
    let path = path.to_str().unwrap();
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(path))
}

/// Polls `condition` until it holds (true) or `PATIENCE` runs out (false).
fn wait_for(mut condition: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if condition() {
            return true;
        }
        sleep(Duration::from_millis(20));
    }
    condition()
}

fn signal(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).unwrap();
    // SAFETY: kill only reads its two integer arguments.
    let status = unsafe { libc::kill(pid, signal) };
    assert_eq!(status, 0, "kill({pid}, {signal})");
}

#[test]
fn sigterm_unmounts_and_prints_the_counters() {
    let Some(mut daemon) = Daemon::start() else {
        return;
    };
    let data = fs::read(daemon.mountpoint.join("data")).unwrap();
    assert_eq!(data, b"emulated bytes\n".repeat(1000));
    // While mounted, the mount's device profile holds the model's cost per request (scaled).
    let profile_path = daemon.profile_path();
    assert!(wait_for(|| profile_path.exists()), "no device profile");
    let profile = fs::read_to_string(&profile_path).unwrap();
    let profile = libprefetch::profile::DeviceProfile::from_text(&profile).expect(&profile);
    assert!(
        profile.request_seconds > 0.0 && profile.bytes_per_second > 0.0,
        "{profile:?}"
    );
    signal(daemon.pid(), libc::SIGTERM);
    let output = daemon.wait();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}: {stdout}",
        output.status
    );
    assert!(stdout.contains("emulated disk: model fixed:1"), "{stdout}");
    assert!(stdout.contains("bytes             15000"), "{stdout}");
    assert!(!is_mounted(&daemon.mountpoint));
    assert!(!profile_path.exists(), "the profile outlived the mount");
}

#[test]
fn fusermount_u_ends_the_daemon() {
    let Some(mut daemon) = Daemon::start() else {
        return;
    };
    // Any process of the machine that stands in the fresh mount for a moment (a
    // `find /`, an indexer) makes the unmount fail with EBUSY, as it would for a
    // user, who tries again: so does the test, a few times.
    let unmounted = (0..20).any(|_| {
        let status = Command::new("fusermount3")
            .arg("-u")
            .arg(&daemon.mountpoint)
            .status()
            .unwrap();
        status.success() || {
            std::thread::sleep(std::time::Duration::from_millis(100));
            false
        }
    });
    assert!(unmounted, "fusermount3 -u failed 20 times");
    let output = daemon.wait();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).contains("requests          0"));
}

#[test]
fn a_killed_daemon_leaves_no_mount_behind() {
    let Some(mut daemon) = Daemon::start() else {
        return;
    };
    signal(daemon.pid(), libc::SIGKILL);
    let output = daemon.wait();
    assert!(!output.status.success());
    assert!(
        wait_for(|| !is_mounted(&daemon.mountpoint)),
        "the fusermount3 auto_unmount helper should remove the mount"
    );
}

/// Pids of the direct children of process `pid`.
fn children(pid: u32) -> Vec<u32> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .filter_map(|task| fs::read_to_string(task.unwrap().path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// True when process `pid` has exited (gone, or a zombie not yet reaped).
fn is_dead(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

#[test]
fn a_dead_mount_is_named_and_the_documented_recovery_works() {
    let Some(mut daemon) = Daemon::start() else {
        return;
    };
    // Kill the auto_unmount helper first, then the daemon: the mount stays, dead.
    for helper in children(daemon.pid()) {
        signal(helper, libc::SIGKILL);
        assert!(
            wait_for(|| is_dead(helper)),
            "helper {helper} survived SIGKILL"
        );
    }
    signal(daemon.pid(), libc::SIGKILL);
    daemon.wait();
    assert!(
        is_mounted(&daemon.mountpoint),
        "the dead mount stays without its helper"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(["emulate", "--model", "fixed:1", "--backing"])
        .arg(daemon.dir.path().join("backing"))
        .arg(&daemon.mountpoint)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("dead FUSE mount"), "{stderr}");
    let status = Command::new("fusermount3")
        .args(["-u", "-z"])
        .arg(&daemon.mountpoint)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(!is_mounted(&daemon.mountpoint));
}

/// Runs `prefetch emulate` with `args` (after the model) and returns its
/// output; a refusal returns at once, a regression would hang, so the child is
/// killed after PATIENCE.
fn emulate_refused(extra: &[&str], backing: &Path, mountpoint: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(["emulate", "--model", "fixed:1"])
        .args(extra)
        // The one-line error is checked; how backtraces print is another test's concern.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .arg("--backing")
        .arg(backing)
        .arg(mountpoint)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if !wait_for(|| matches!(child.try_wait(), Ok(Some(_)))) {
        let _ = Command::new("fusermount3")
            .args(["-u", "-z"])
            .arg(mountpoint)
            .status();
        child.kill().unwrap();
        panic!("prefetch emulate {extra:?} did not refuse: it mounted or hung");
    }
    child.wait_with_output().unwrap()
}

/// The one error line of a refused run.
fn refusal(output: &Output) -> String {
    assert!(!output.status.success(), "accepted: {output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
    stderr
}

#[test]
fn an_unrepresentable_time_scale_is_refused_before_mounting() {
    let dir = tempfile::tempdir().unwrap();
    let (backing, mountpoint) = (dir.path().join("backing"), dir.path().join("mnt"));
    fs::create_dir(&backing).unwrap();
    fs::create_dir(&mountpoint).unwrap();
    for scale in ["1e300", "1e-300", "NaN", "0", "-1", "inf"] {
        let option = format!("--time-scale={scale}");
        let output = emulate_refused(&[&option], &backing, &mountpoint);
        let message = refusal(&output);
        assert!(
            message.contains("time scale must be between"),
            "{scale}: {message}"
        );
    }
}

#[test]
fn a_mount_point_inside_or_equal_to_the_backing_tree_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("backing");
    fs::create_dir_all(backing.join("sub")).unwrap();
    let outside = dir.path().join("mnt");
    fs::create_dir(&outside).unwrap();
    for (backing, mountpoint) in [
        (backing.clone(), backing.clone()),
        (backing.clone(), backing.join("sub")),
        (backing.join("sub/.."), backing.clone()),
        (outside.join("."), dir.path().to_path_buf()),
    ] {
        let output = emulate_refused(&[], &backing, &mountpoint);
        let message = refusal(&output);
        assert!(message.contains("overlap"), "{message}");
    }
}
