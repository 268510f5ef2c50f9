//! A client that fills its access list inside a small memory cgroup gets
//! short counts, not an OOM kill: the list's capacity is accounted against
//! the cgroup's room (a million entries used to cost the planner 52-70 MiB).
//!
//! The test re-runs itself as a child process that moves into a fresh
//! 20 MiB cgroup (v1 memory controller) before it registers a client.
//! Skips, saying so, only where the kernel has no cgroup v1 memory
//! controller.

use std::fs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use libprefetch::{AccessEntry, Client, Config, Mode};

/// Set in the child: the cgroup directory to join.
const CHILD: &str = "LIBPREFETCH_LIST_MEMORY_CHILD";
const TEST: &str = "a_million_entries_in_a_20_mib_cgroup_get_short_counts_not_an_oom_kill";
const ENTRIES: u64 = 1 << 20;
const LIMIT_BYTES: u64 = 20 << 20;

#[test]
fn a_million_entries_in_a_20_mib_cgroup_get_short_counts_not_an_oom_kill() {
    if let Some(cgroup) = std::env::var_os(CHILD) {
        fill_the_list_inside(Path::new(&cgroup));
        return;
    }
    let base = Path::new("/sys/fs/cgroup/memory");
    if !base.join("memory.limit_in_bytes").exists() {
        eprintln!("SKIP: the kernel has no cgroup v1 memory controller (feature missing)");
        return;
    }
    let cgroup = Cgroup::create(base, LIMIT_BYTES);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--test-threads=1", "--nocapture"])
        .env(CHILD, &cgroup.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let oom_kills = cgroup.oom_kills();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child ended with {} ({oom_kills} OOM kills in its cgroup):\n{stdout}{stderr}",
        out.status
    );
    assert_eq!(oom_kills, 0, "{stdout}");
}

/// In the child: join the cgroup, then offer a million entries.
fn fill_the_list_inside(cgroup: &Path) {
    fs::write(cgroup.join("cgroup.procs"), std::process::id().to_string()).unwrap();
    let file = tempfile::tempfile().unwrap();
    file.set_len(ENTRIES * 4096).unwrap();
    let fd = file.as_raw_fd();
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    client.register_region(fd, 0, ENTRIES * 4096).unwrap();
    let entries = (0..ENTRIES).map(|i| AccessEntry {
        offset: (i * 7919 % ENTRIES) * 4096,
        fd,
        mark: false,
    });
    let accepted = client
        .request_from(entries, Mode::SET | Mode::DONE)
        .unwrap();
    client.settle();
    println!("accepted {accepted} of {ENTRIES} entries");
    assert!(
        (accepted as u64) < ENTRIES,
        "all {ENTRIES} entries accepted in a {LIMIT_BYTES}-byte cgroup"
    );
    assert!(accepted > 0, "no entry accepted at all");
}

/// A memory cgroup created for the test, removed when dropped.
struct Cgroup(PathBuf);

impl Cgroup {
    fn create(base: &Path, limit: u64) -> Cgroup {
        let dir = base.join(format!("libprefetch-list-{}", std::process::id()));
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let cgroup = Cgroup(dir);
        fs::write(cgroup.0.join("memory.limit_in_bytes"), limit.to_string()).unwrap();
        cgroup
    }

    /// OOM kills in the cgroup so far (`oom_kill` of memory.oom_control).
    fn oom_kills(&self) -> u64 {
        let control = fs::read_to_string(self.0.join("memory.oom_control")).unwrap();
        control
            .lines()
            .find_map(|line| line.strip_prefix("oom_kill "))
            .map_or(0, |n| n.trim().parse().unwrap())
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}
