//! A client in a 64 MiB memory cgroup with a 200 MiB access list (data
//! bigger than memory, section 5.3's regime): the process is not OOM-killed,
//! reads every byte right, and the kernel evicts almost none of the pages the
//! plan keeps. The plan makes room itself with DONTNEED, which leaves no
//! shadow entry, so a page the kernel's reclaim took and the list then reads
//! again shows up as a refault (`workingset_refault_file` of the cgroup's
//! memory.stat): that count is the premature evictions the library caused.
//!
//! The test re-runs itself as a child inside a fresh cgroup; the parent
//! writes the file outside it. Skips, saying so, only where the kernel has
//! no cgroup v1 memory controller.

use std::fs::{self, File};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Stdio};

use libprefetch::{note_read, AccessEntry, Client, Config, Mode};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

mod common;
use common::Cgroup;

/// Set in the child: "CGROUP_DIR:DATA_FILE".
const CHILD: &str = "LIBPREFETCH_PRESSURE_CHILD";
const TEST: &str =
    "a_list_three_times_the_cgroup_is_read_without_kernel_evictions_of_planned_pages";
const LIMIT_BYTES: u64 = 64 << 20;
const FILE_BYTES: u64 = 200 << 20;
const PAGE: u64 = 4096;
/// Reads of the list: every page once in a shuffled order, then as many drawn with repeats.
const REPEAT_READS: usize = (FILE_BYTES / PAGE) as usize;
/// How the child reports its counters on stdout.
const REPORT: &str = "pressure report: ";

#[test]
fn a_list_three_times_the_cgroup_is_read_without_kernel_evictions_of_planned_pages() {
    if let Some(spec) = std::env::var_os(CHILD) {
        let spec = spec.to_string_lossy().into_owned();
        let (cgroup, data) = spec.split_once(':').unwrap();
        read_inside(Path::new(cgroup), Path::new(data));
        return;
    }
    if !common::memory_controller_or_skip() {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let data = dir.path().join("data");
    write_pattern(&data);
    let cgroup = Cgroup::create("libprefetch-pressure", LIMIT_BYTES);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--test-threads=1", "--nocapture"])
        .env(CHILD, format!("{}:{}", cgroup.0.display(), data.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(cgroup.oom_kills(), 0, "the child was OOM-killed");
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child ended with {}:\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let refaults = refaults(&cgroup.0);
    let report = stdout
        .lines()
        .find_map(|line| line.split(REPORT).nth(1))
        .expect("the child reports its counters");
    println!("{report}; refaults of the cgroup {refaults}");
    let reads = FILE_BYTES / PAGE + REPEAT_READS as u64;
    assert!(
        refaults * 100 <= reads,
        "the kernel evicted {refaults} pages that were read again (of {reads} reads): {report}"
    );
}

/// Writes the file, page `p` filled with bytes derived from `p`, and drops it from the cache.
fn write_pattern(path: &Path) {
    let mut file = File::create(path).unwrap();
    for page in 0..FILE_BYTES / PAGE {
        file.write_all(&page_bytes(page)).unwrap();
    }
    file.sync_all().unwrap();
    // SAFETY: fadvise on an open descriptor.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

fn page_bytes(page: u64) -> Vec<u8> {
    (0..PAGE).map(|i| ((page * 31 + i) % 251) as u8).collect()
}

/// `workingset_refault_file` of the cgroup: pages read again after reclaim evicted them.
fn refaults(cgroup: &Path) -> u64 {
    let stat = fs::read_to_string(cgroup.join("memory.stat")).unwrap();
    stat.lines()
        .find_map(|line| line.strip_prefix("workingset_refault_file "))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// In the child: join the cgroup, hand the whole list over, read it, check every page.
fn read_inside(cgroup: &Path, data: &Path) {
    common::join(cgroup);
    let file = File::open(data).unwrap();
    let fd = file.as_raw_fd();
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    client.register_region(fd, 0, FILE_BYTES).unwrap();
    let pages = list_pages();
    let entries = |from: usize| {
        pages[from..].iter().map(move |&page| AccessEntry {
            offset: page * PAGE,
            fd,
            mark: false,
        })
    };
    // The library takes a list of at most 1/8 of the memory (short count): hand the rest over in
    // appends as reads free room, as an application with a long list does.
    let mut listed = client.request_from(entries(0), Mode::SET).unwrap();
    assert!(listed > 0, "the library took no entry");
    let first_take = listed;
    let mut buf = vec![0u8; PAGE as usize];
    for (read, &page) in pages.iter().enumerate() {
        if listed < pages.len() && listed - read <= first_take / 2 {
            listed += client.request_from(entries(listed), Mode::APPEND).unwrap();
        }
        note_read(fd, page * PAGE, PAGE);
        file.read_exact_at(&mut buf, page * PAGE).unwrap();
        assert!(buf == page_bytes(page), "page {page} read wrong bytes");
    }
    assert_eq!(listed, pages.len(), "the whole list was handed over");
    let stats = client.stats();
    println!(
        "\n{REPORT}rounds {}, fetched {}, dropped {}, premature evictions {}, window {} bytes",
        stats.rounds,
        stats.pages_fetched,
        stats.pages_dropped,
        stats.premature_evictions,
        stats.budget_bytes
    );
    assert!(
        stats.rounds > 1,
        "the list was planned in rounds: {stats:?}"
    );
    assert!(
        stats.budget_bytes < LIMIT_BYTES,
        "the window outgrew the cgroup: {stats:?}"
    );
}

/// Every page once in a shuffled order, then reads drawn with repeats (seeded: the same list each run).
fn list_pages() -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let mut pages: Vec<u64> = (0..FILE_BYTES / PAGE).collect();
    pages.shuffle(&mut rng);
    pages.extend((0..REPEAT_READS).map(|_| rng.gen_range(0..FILE_BYTES / PAGE)));
    pages
}
