//! How much memory the page cache may use for this process: the smaller of
//! the system's available memory and what the process's memory cgroup
//! still allows ([`available_for_cache`]), and how much of it is free
//! without reclaiming anything ([`available_without_reclaim`]).
//!
//! Follows libprefetch (ATC 2009) section 4.6 ("libprefetch knows the
//! maximum size of the buffer cache from /proc"); the cgroup limit is ours:
//! a process in a memory cgroup has its page cache reclaimed at the
//! cgroup's limit, whatever /proc/meminfo says. A cgroup's room is its
//! limit minus its anonymous memory and minus its *active* file pages:
//! pages read ahead enter the kernel's inactive list, and the kernel keeps
//! the active list (pages read twice) while it reclaims the inactive one,
//! so a plan as large as "limit minus anonymous" has its own pages evicted
//! before their use. Measured (SQLite index scan, the extension's default
//! schedule, one run each under load): a 64 MiB database in a 16 MiB cgroup
//! read 88.5-99.7k pages in four runs against 100.9-102.6k (stock: 97k),
//! with 1-143 premature evictions against 106-705; 1 GiB in a quarter of
//! it, 1.40M pages and 2 premature evictions against 1.49M and 219; the
//! random benchmarks in 64, 100 and 200 MiB cgroups read the same.
//!
//! Active pages up to what the plan keeps count as its room
//! ([`available_for_cache_holding`]): a window's pages that the program
//! reads twice while they are kept (an index scan's repeated table
//! lookups) turn active, and counting them against the window capped it
//! below what the cgroup holds. Measured (a 104 MiB table scanned in a
//! 24 MiB cgroup on the emulated disk, docs/repro.md "The bound at the
//! memory the cgroup leaves"): room 12-15 MiB with 4-8 MiB active, window
//! 10.7 MiB at close; with them counted, 16-18 MiB and 3% less disk time
//! (114 model seconds against 117), 9% less in 12 MiB with the planner's
//! change beside it, the same in 6 MiB.
//!
//! Deviations: the paper reads the buffer-cache size; we read
//! `MemAvailable` (free memory plus reclaimable cache), the kernel's own
//! estimate of what can be used without swapping.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::rawio;

/// How long a reading of the memory available stays in use.
///
/// A reading opens and reads three files (/proc/self/cgroup, the cgroup's
/// memory.stat, /proc/meminfo): about ten system calls. A round is planned
/// on every miss of a followed read, so a cold index scan in a small memory
/// cgroup plans one every fraction of a millisecond; read at each round,
/// the probe was a large part of the library's system time (a 25 MiB
/// SQLite table scanned with 6 MiB, 4.5k rounds, 26.8k file opens). Every
/// 10 ms bounds the probe to about 100 readings a second, well under 1% of
/// a core. What a stale reading risks is a plan sized to memory that has
/// since gone: within 10 ms the kernel can only have filled what the device
/// reads in that time, and a plan that overflows memory has its premature
/// evictions seen and its budget halved (AIMD, section 4.6) at the next
/// round, whatever the reading said.
pub(crate) const PROBE_INTERVAL: Duration = Duration::from_millis(10);

/// A reading of the memory available, re-taken at most every
/// [`PROBE_INTERVAL`].
#[derive(Default)]
pub(crate) struct CachedProbe {
    last: Mutex<Option<(Instant, u64)>>,
    readings: AtomicU64,
}

impl CachedProbe {
    /// The last reading if taken less than [`PROBE_INTERVAL`] before `now`,
    /// otherwise a new one from `probe`.
    pub(crate) fn read(&self, now: Instant, probe: impl FnOnce() -> u64) -> u64 {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match *last {
            Some((at, value)) if now.saturating_duration_since(at) < PROBE_INTERVAL => value,
            _ => {
                let value = probe();
                self.readings.fetch_add(1, Ordering::Relaxed);
                *last = Some((now, value));
                value
            }
        }
    }

    /// Readings taken so far (tests count them).
    #[cfg(test)]
    pub(crate) fn readings(&self) -> u64 {
        self.readings.load(Ordering::Relaxed)
    }
}

/// Bytes the page cache may hold for this process.
pub fn available_for_cache() -> u64 {
    available_for_cache_holding(0)
}

/// Bytes the page cache may hold for a plan that keeps `held` bytes cached
/// now: [`available_for_cache`], where up to `held` bytes of the cgroup's
/// active file pages count as room. A plan's own pages that the program
/// read twice while they were kept (a table page looked up again by an
/// index scan within the window) are active, and are the plan's room, not
/// pages beside it.
pub fn available_for_cache_holding(held: u64) -> u64 {
    let system = meminfo_available().unwrap_or(1 << 30);
    match cgroup_room(held) {
        Some(room) => system.min(room),
        None => system,
    }
}

/// Bytes the page cache can still take for this process before anything
/// is reclaimed for it: the memory cgroup's limit minus its usage, capped by
/// the system's `MemAvailable`. Unlike [`available_for_cache`], cached pages
/// the kernel could reclaim do not count as room: a restore beside a program
/// that fills this much evicts nothing the program may need.
pub fn available_without_reclaim() -> u64 {
    let system = meminfo_available().unwrap_or(1 << 30);
    match cgroup_free() {
        Some(free) => system.min(free),
        None => system,
    }
}

/// True if a memory cgroup, not the system, bounds what the page cache can still take for
/// this process: its limit minus its usage is below `MemAvailable`.
pub fn cgroup_bounds_cache() -> bool {
    let system = meminfo_available().unwrap_or(1 << 30);
    cgroup_free().is_some_and(|free| free < system)
}

/// True if this process's memory cgroup, or one above it, has a memory limit.
pub fn cgroup_limited() -> bool {
    cgroup_free().is_some()
}

/// The memory cgroup's limit minus its usage, if limited.
fn cgroup_free() -> Option<u64> {
    let membership = rawio::read_to_string("/proc/self/cgroup")?;
    match memory_cgroup_path(&membership)? {
        (CgroupVersion::V1, path) => v1_free(&Path::new("/sys/fs/cgroup/memory").join(path)),
        (CgroupVersion::V2, path) => v2_free(Path::new("/sys/fs/cgroup"), &path),
    }
}

/// cgroup v1: `hierarchical_memory_limit` minus `memory.usage_in_bytes`.
fn v1_free(dir: &Path) -> Option<u64> {
    let stat = rawio::read_to_string(dir.join("memory.stat"))?;
    let limit = stat_field(&stat, "hierarchical_memory_limit")?;
    if limit >= 1 << 60 {
        return None;
    }
    let usage: u64 = rawio::read_to_string(dir.join("memory.usage_in_bytes"))?
        .trim()
        .parse()
        .ok()?;
    Some(limit.saturating_sub(usage))
}

/// cgroup v2: the least of `memory.max - memory.current` from the group up
/// to the root (a parent's usage counts its children's).
fn v2_free(root: &Path, path: &Path) -> Option<u64> {
    let mut free: Option<u64> = None;
    let mut dir = root.join(path);
    while dir.starts_with(root) && dir != root {
        let number = |name: &str| -> Option<u64> {
            rawio::read_to_string(dir.join(name))?.trim().parse().ok()
        };
        if let (Some(max), Some(current)) = (number("memory.max"), number("memory.current")) {
            let here = max.saturating_sub(current);
            free = Some(free.map_or(here, |f| f.min(here)));
        }
        dir.pop();
    }
    free
}

/// `MemAvailable` from /proc/meminfo, in bytes.
fn meminfo_available() -> Option<u64> {
    let text = rawio::read_to_string("/proc/meminfo")?;
    meminfo_field(&text, "MemAvailable:")
}

/// A `kB` field of /proc/meminfo, in bytes.
fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The memory cgroup's limit minus its anonymous memory and its active
/// file pages beyond `held` bytes, if limited.
fn cgroup_room(held: u64) -> Option<u64> {
    let membership = rawio::read_to_string("/proc/self/cgroup")?;
    let (version, path) = memory_cgroup_path(&membership)?;
    match version {
        CgroupVersion::V1 => v1_room(&Path::new("/sys/fs/cgroup/memory").join(path), held),
        CgroupVersion::V2 => v2_room(Path::new("/sys/fs/cgroup"), &path, held),
    }
}

/// The memory cgroup this process is in, as text naming it uniquely on the
/// machine (hierarchy and path), or `None` if it cannot be told.
pub fn cgroup_identity() -> Option<String> {
    let membership = rawio::read_to_string("/proc/self/cgroup")?;
    let (version, path) = memory_cgroup_path(&membership)?;
    Some(format!("{version:?}:/{}", path.display()))
}

/// The memory cgroup named in `membership` (the text of `/proc/PID/cgroup`): the root of its
/// hierarchy (`/sys/fs/cgroup/memory` for cgroup v1's memory controller, `/sys/fs/cgroup` for
/// v2) and the group's directory in it.
pub fn memory_cgroup_dir(membership: &str) -> Option<(PathBuf, PathBuf)> {
    let (version, path) = memory_cgroup_path(membership)?;
    let root = match version {
        CgroupVersion::V1 => PathBuf::from("/sys/fs/cgroup/memory"),
        CgroupVersion::V2 => PathBuf::from("/sys/fs/cgroup"),
    };
    let dir = root.join(path);
    Some((root, dir))
}

#[derive(Debug, PartialEq, Eq)]
enum CgroupVersion {
    V1,
    V2,
}

/// Finds the memory controller's cgroup in /proc/self/cgroup text.
fn memory_cgroup_path(membership: &str) -> Option<(CgroupVersion, PathBuf)> {
    let mut v2 = None;
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let relative = PathBuf::from(path.trim_start_matches('/'));
        if controllers.split(',').any(|c| c == "memory") {
            return Some((CgroupVersion::V1, relative));
        }
        if controllers.is_empty() {
            v2 = Some((CgroupVersion::V2, relative));
        }
    }
    v2
}

/// cgroup v1: `hierarchical_memory_limit` (the tightest limit up the tree)
/// minus `total_rss` and `total_active_file` beyond `held`.
fn v1_room(dir: &Path, held: u64) -> Option<u64> {
    let stat = rawio::read_to_string(dir.join("memory.stat"))?;
    let limit = stat_field(&stat, "hierarchical_memory_limit").or_else(|| {
        rawio::read_to_string(dir.join("memory.limit_in_bytes"))?
            .trim()
            .parse()
            .ok()
    })?;
    if limit >= 1 << 60 {
        return None;
    }
    Some(room_for_cache(
        limit,
        stat_field(&stat, "total_rss").unwrap_or(0),
        stat_field(&stat, "total_active_file").unwrap_or(0),
        held,
    ))
}

/// What a plan keeping `held` bytes may have in a cgroup's page cache: its
/// limit less what the kernel will not reclaim for it (anonymous memory,
/// active file pages), where active pages up to `held` may be the plan's own.
fn room_for_cache(limit: u64, anonymous: u64, active_file: u64, held: u64) -> u64 {
    limit
        .saturating_sub(anonymous)
        .saturating_sub(active_file.saturating_sub(held))
}

/// cgroup v2: the smallest `memory.max` from the group up to the root,
/// minus the group's `anon` and its `active_file` beyond `held`.
fn v2_room(root: &Path, path: &Path, held: u64) -> Option<u64> {
    let mut limit: Option<u64> = None;
    let mut dir = root.join(path);
    while dir.starts_with(root) && dir != root {
        if let Some(text) = rawio::read_to_string(dir.join("memory.max")) {
            if let Ok(value) = text.trim().parse::<u64>() {
                limit = Some(limit.map_or(value, |l| l.min(value)));
            }
        }
        dir.pop();
    }
    let stat = rawio::read_to_string(root.join(path).join("memory.stat")).unwrap_or_default();
    let anon = stat_field(&stat, "anon").unwrap_or(0);
    let active_file = stat_field(&stat, "active_file").unwrap_or(0);
    limit.map(|l| room_for_cache(l, anon, active_file, held))
}

/// A `name value` line of a memory.stat file.
fn stat_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        line.strip_prefix(name)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// The system's page size.
pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn parses_meminfo() {
        let text = "MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(
            meminfo_field(text, "MemAvailable:"),
            Some(20_000_000 * 1024)
        );
    }

    #[test]
    fn finds_v1_memory_controller() {
        let text = "12:pids:/x\n4:memory:/bench/run1\n0::/user.slice\n";
        assert_eq!(
            memory_cgroup_path(text),
            Some((CgroupVersion::V1, PathBuf::from("bench/run1")))
        );
    }

    #[test]
    fn names_the_memory_cgroups_directory_in_either_hierarchy() {
        assert_eq!(
            memory_cgroup_dir("12:pids:/x\n4:memory:/bench/run1\n0::/user.slice\n"),
            Some((
                PathBuf::from("/sys/fs/cgroup/memory"),
                PathBuf::from("/sys/fs/cgroup/memory/bench/run1")
            ))
        );
        assert_eq!(
            memory_cgroup_dir("0::/\n"),
            Some((
                PathBuf::from("/sys/fs/cgroup"),
                PathBuf::from("/sys/fs/cgroup")
            ))
        );
        assert_eq!(memory_cgroup_dir(""), None);
    }

    #[test]
    fn falls_back_to_unified_hierarchy() {
        assert_eq!(
            memory_cgroup_path("0::/a/b\n"),
            Some((CgroupVersion::V2, PathBuf::from("a/b")))
        );
    }

    #[test]
    fn reads_stat_fields_exactly() {
        let stat = "rss 5\ntotal_rss 4096\nhierarchical_memory_limit 1048576\n";
        assert_eq!(stat_field(stat, "total_rss"), Some(4096));
        assert_eq!(stat_field(stat, "rss"), Some(5));
        assert_eq!(stat_field(stat, "hierarchical_memory_limit"), Some(1 << 20));
    }

    #[test]
    fn room_leaves_out_anonymous_memory_and_active_file_pages() {
        assert_eq!(room_for_cache(100, 30, 20, 0), 50);
        assert_eq!(room_for_cache(100, 80, 40, 0), 0);
        assert_eq!(room_for_cache(100, 0, 0, 0), 100);
    }

    #[test]
    fn active_pages_up_to_what_the_plan_keeps_count_as_its_room() {
        assert_eq!(room_for_cache(100, 30, 20, 15), 65);
        assert_eq!(room_for_cache(100, 30, 20, 20), 70);
        assert_eq!(
            room_for_cache(100, 30, 20, 50),
            70,
            "no more than the active pages"
        );
        let stat = "hierarchical_memory_limit 1000\ntotal_rss 300\ntotal_active_file 200\n";
        let v1 = Fixture::new("v1-held", &[("memory.stat", stat)]);
        assert_eq!(v1_room(&v1.0, 0), Some(500));
        assert_eq!(v1_room(&v1.0, 150), Some(650));
        let v2 = Fixture::new(
            "v2-held",
            &[
                ("a/memory.max", "1000\n"),
                ("a/memory.stat", "anon 300\nactive_file 200\n"),
            ],
        );
        assert_eq!(v2_room(&v2.0, Path::new("a"), 150), Some(650));
    }

    #[test]
    fn a_reading_is_reused_within_the_interval_and_renewed_after_it() {
        let cache = CachedProbe::default();
        let start = Instant::now();
        let mut next = 100;
        let mut probe = || {
            next += 1;
            next
        };
        assert_eq!(cache.read(start, &mut probe), 101);
        for step in 0..1000 {
            let now = start + PROBE_INTERVAL * step / 1000;
            assert_eq!(cache.read(now, &mut probe), 101);
        }
        assert_eq!(cache.read(start + PROBE_INTERVAL, &mut probe), 102);
        assert_eq!(cache.readings(), 2);
    }

    /// A directory of cgroup files for a fixture, removed when dropped.
    struct Fixture(PathBuf);

    impl Fixture {
        fn new(name: &str, files: &[(&str, &str)]) -> Fixture {
            let dir = std::env::temp_dir().join(format!("memory-{name}-{}", std::process::id()));
            for (path, text) in files {
                let path = dir.join(path);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(path, text).unwrap();
            }
            Fixture(dir)
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn v1_free_is_the_limit_minus_the_usage() {
        let stat = "total_rss 100\nhierarchical_memory_limit 1000\ntotal_inactive_file 800\n";
        let dir = Fixture::new(
            "v1",
            &[("memory.stat", stat), ("memory.usage_in_bytes", "900\n")],
        );
        assert_eq!(v1_free(&dir.0), Some(100));
        fs::write(dir.0.join("memory.usage_in_bytes"), "1200\n").unwrap();
        assert_eq!(v1_free(&dir.0), Some(0));
    }

    #[test]
    fn v1_free_of_an_unlimited_group_is_none() {
        let stat = "hierarchical_memory_limit 9223372036854771712\n";
        let dir = Fixture::new(
            "v1-unlimited",
            &[("memory.stat", stat), ("memory.usage_in_bytes", "5")],
        );
        assert_eq!(v1_free(&dir.0), None);
    }

    #[test]
    fn v2_free_is_the_tightest_up_the_tree() {
        let dir = Fixture::new(
            "v2",
            &[
                ("a/memory.max", "1000\n"),
                ("a/memory.current", "700\n"),
                ("a/b/memory.max", "max\n"),
                ("a/b/memory.current", "100\n"),
            ],
        );
        assert_eq!(v2_free(&dir.0, Path::new("a/b")), Some(300));
        fs::write(dir.0.join("a/b/memory.max"), "150\n").unwrap();
        assert_eq!(v2_free(&dir.0, Path::new("a/b")), Some(50));
        assert_eq!(v2_free(&dir.0, Path::new("c")), None);
    }

    #[test]
    fn v1_limit_in_a_real_cgroup_when_available() {
        let base = Path::new("/sys/fs/cgroup/memory");
        if !base.join("memory.limit_in_bytes").exists() {
            eprintln!("skip: no cgroup v1 memory controller here");
            return;
        }
        let dir = base.join(format!("libprefetch-test-{}", std::process::id()));
        if fs::create_dir(&dir).is_err() {
            eprintln!("skip: cannot create a memory cgroup (not root?)");
            return;
        }
        fs::write(dir.join("memory.limit_in_bytes"), "67108864").unwrap();
        let room = v1_room(&dir, 0);
        fs::remove_dir(&dir).unwrap();
        assert_eq!(room, Some(64 << 20));
    }
}
