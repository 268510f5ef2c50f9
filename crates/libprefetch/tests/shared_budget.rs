//! Two processes in one memory cgroup, each with an access list as large as
//! the cgroup, plan windows that together stay within the cgroup's limit
//! (the memory is shared per cgroup, `share.rs`; section 5.6, Figure 12).
//!
//! The test re-runs itself as two child processes that join a fresh 64 MiB
//! cgroup (v1 memory controller), each hand over a list of every page of
//! its own 64 MiB file, wait for each other, plan a round, report their
//! windows (`budget_bytes`), and wait again before they leave. Skips,
//! saying so, only where the kernel has no cgroup v1 memory controller.

use std::fs;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use libprefetch::{AccessEntry, Client, Config, Mode};

mod common;
use common::Cgroup;

/// Set in a child: "CGROUP_DIR:RENDEZVOUS_DIR:INDEX".
const CHILD: &str = "LIBPREFETCH_SHARED_BUDGET_CHILD";
const TEST: &str = "two_processes_in_one_cgroup_plan_within_its_limit_together";
const LIMIT_BYTES: u64 = 64 << 20;
const PAGE: u64 = 4096;
const PROCESSES: usize = 2;
/// How a child reports its window on stdout (libtest may print other text on the same line).
const WINDOW: &str = "window bytes: ";

#[test]
fn two_processes_in_one_cgroup_plan_within_its_limit_together() {
    if let Some(spec) = std::env::var_os(CHILD) {
        let spec = spec.to_string_lossy().into_owned();
        let mut parts = spec.splitn(3, ':');
        let (cgroup, rendezvous, index) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        plan_inside(Path::new(cgroup), Path::new(rendezvous), index);
        return;
    }
    if !common::memory_controller_or_skip() {
        return;
    }
    let cgroup = Cgroup::create("libprefetch-share", LIMIT_BYTES);
    let rendezvous = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|index| {
            let spec = format!(
                "{}:{}:{index}",
                cgroup.0.display(),
                rendezvous.path().display()
            );
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", TEST, "--test-threads=1", "--nocapture"])
                .env(CHILD, spec)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut windows = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "child ended with {}:\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let window: u64 = stdout
            .lines()
            .find_map(|line| line.split(WINDOW).nth(1))
            .expect("the child reports its window")
            .trim()
            .parse()
            .unwrap();
        windows.push(window);
    }
    let total: u64 = windows.iter().sum();
    println!("windows {windows:?}, together {total} of a {LIMIT_BYTES}-byte cgroup");
    assert!(
        total <= LIMIT_BYTES,
        "windows {windows:?} overflow the cgroup's {LIMIT_BYTES} bytes"
    );
    assert!(
        windows.iter().all(|&w| w > 0),
        "a process planned nothing: {windows:?}"
    );
}

/// In a child: join the cgroup, list every page of a file as large as the cgroup, meet the other process, plan,
/// report the window, meet again, leave.
fn plan_inside(cgroup: &Path, rendezvous: &Path, index: &str) {
    common::join(cgroup);
    let file = tempfile::tempfile().unwrap();
    file.set_len(LIMIT_BYTES).unwrap();
    let fd = file.as_raw_fd();
    let config = Config {
        background_advice: false,
        ..Config::default()
    };
    let client = Client::register(config, |_, _| {}).unwrap();
    client.register_region(fd, 0, LIMIT_BYTES).unwrap();
    let pages = LIMIT_BYTES / PAGE;
    let entries = (0..pages).map(|page| AccessEntry {
        offset: page * PAGE,
        fd,
        mark: false,
    });
    assert_eq!(
        client.request_from(entries, Mode::SET).unwrap() as u64,
        pages
    );
    meet(rendezvous, "listed", index);
    client.request_prefetching(&[], Mode::DONE).unwrap();
    println!("\n{WINDOW}{}", client.stats().budget_bytes);
    meet(rendezvous, "planned", index);
}

/// Marks this process as at `stage` and waits until every process is.
fn meet(rendezvous: &Path, stage: &str, index: &str) {
    fs::write(rendezvous.join(format!("{stage}-{index}")), "").unwrap();
    while (0..PROCESSES).any(|i| !rendezvous.join(format!("{stage}-{i}")).exists()) {
        std::thread::sleep(Duration::from_millis(5));
    }
}
