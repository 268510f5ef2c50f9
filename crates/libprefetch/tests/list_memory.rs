//! A client that fills its access list inside a small memory cgroup gets
//! short counts, not an OOM kill: the list's capacity is accounted against
//! the cgroup's room (a million entries used to cost the planner 52-70 MiB).
//!
//! The test re-runs itself as a child process that moves into a fresh
//! 20 MiB cgroup (v1 memory controller) before it registers a client.
//! Skips, saying so, only where the kernel has no cgroup v1 memory
//! controller.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

use libprefetch::{AccessEntry, Client, Config, Mode};

mod common;
use common::Cgroup;

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
    if !common::memory_controller_or_skip() {
        return;
    }
    let cgroup = Cgroup::create("libprefetch-list", LIMIT_BYTES);
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
    common::join(cgroup);
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
