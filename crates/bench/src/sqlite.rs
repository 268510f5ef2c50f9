//! `prefetch bench sqlite`: the paper's section 5.4 benchmark. The query `SELECT * FROM customer ORDER BY
//! c_zip` walks the zip index and reads the table in random order; it runs with a cold cache, once with
//! stock SQLite and once with SQLite plus the prefetch extension (the same bundled SQLite both times), a
//! few times each, in a child process per run, and the medians are compared.
//!
//! Settings (each printed result names its own):
//! * **disk**: this machine's disk, the file evicted with posix_fadvise(DONTNEED) before each run; also
//!   measured: the warm-cache time and the time to read the file sequentially, the lower bounds of any
//!   prefetcher;
//! * **cgroup**: the same with the child in a memory cgroup limited to a quarter of the database, so pages
//!   are evicted and read again during the scan (the paper's datasets larger than memory);
//! * **emulated**: the database served by `prefetch emulate` with a 7200 RPM disk model (Seagate
//!   ST3500320AS), mounted for the duration of the measurement.
//!
//! Deviations: the paper ran on a machine with 512 MB of RAM; a memory cgroup gives the same squeeze here.
//! Runs of stock and extension alternate so that drifts of the machine hit both alike, and which of the
//! two goes first alternates from pair to pair, so that neither always runs after the other's exit.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};
use units::median;

use prefetch_sqlite::ext::load_extension;
use prefetch_sqlite::vfs::VFS_NAME;

use crate::cache::Eviction;
use crate::cgroup::{join_before_exec, MemoryCgroup};
use crate::io_counters::own_read_bytes;
use crate::sqlite_optimum::query_optimum;
pub use crate::sqlite_report::{BenchOptions, Report, SettingResult, PAPER_QUERY};
use crate::sqlite_workloads::{self as workloads, Workload};
use crate::workload::PAGE_SIZE;

/// File name of the extension that `cargo build` puts next to the `prefetch` binary.
pub const EXTENSION_FILE: &str = "libprefetch_sqlite.so";
/// Disk model of the emulated setting: a 7200 RPM drive.
pub const EMULATED_MODEL: &str = "st3500320as";

/// One execution of a query.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QueryRun {
    /// Rows returned.
    pub rows: u64,
    /// Seconds from prepare to the last row.
    pub seconds: f64,
    /// Hash of every value of every row, in order (equal results give equal checksums).
    pub checksum: u64,
    /// Bytes the process read from storage during the query (`/proc/self/io`), the reads its
    /// advice started included.
    #[serde(default)]
    pub read_bytes: u64,
    /// Minor page faults the process took during the query (`getrusage`): memory or code touched for
    /// the first time.
    #[serde(default)]
    pub minor_faults: u64,
    /// CPU seconds the query's thread spent in the query (`CLOCK_THREAD_CPUTIME_ID`): unlike
    /// `seconds`, not lengthened while the process waits for a core on a loaded machine.
    #[serde(default)]
    pub cpu_seconds: f64,
}

/// Runs `sql` on `db` (read-only) and reads every column of every row. With `ext`, loads that extension
/// first and opens the database through its `prefetch` VFS, named with `prefetch_scan=whole` if
/// `whole_scans` (the connection asks for its full scans listed whole).
pub fn run_query(db: &Path, sql: &str, ext: Option<&Path>, whole_scans: bool) -> Result<QueryRun> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = match ext {
        Some(ext) => {
            load_extension(ext)?;
            match whole_scans {
                true => Connection::open_with_flags_and_vfs(
                    whole_scans_uri(db),
                    flags | OpenFlags::SQLITE_OPEN_URI,
                    VFS_NAME,
                ),
                false => Connection::open_with_flags_and_vfs(db, flags, VFS_NAME),
            }
        }
        None => Connection::open_with_flags(db, flags),
    }
    .with_context(|| format!("opening {}", db.display()))?;
    let read_before = own_read_bytes()?;
    let faults_before = own_minor_faults();
    let cpu_before = thread_cpu_seconds();
    let start = Instant::now();
    let mut stmt = conn
        .prepare(sql)
        .with_context(|| format!("preparing {sql}"))?;
    let columns = stmt.column_count();
    let mut rows = stmt.query([])?;
    let (mut count, mut checksum) = (0u64, 0u64);
    while let Some(row) = rows.next()? {
        count += 1;
        for i in 0..columns {
            checksum = checksum.wrapping_mul(0x100_0000_01b3) ^ hash_value(row.get_ref(i)?);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let minor_faults = own_minor_faults().saturating_sub(faults_before);
    let cpu_seconds = thread_cpu_seconds() - cpu_before;
    Ok(QueryRun {
        rows: count,
        seconds,
        checksum,
        read_bytes: own_read_bytes()?.saturating_sub(read_before),
        minor_faults,
        cpu_seconds,
    })
}

/// CPU seconds this thread has run so far (0 if the clock cannot be read).
fn thread_cpu_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes a timespec into `now`.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return 0.0;
    }
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// Minor page faults this process has taken so far.
fn own_minor_faults() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes a struct rusage into the buffer on success.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } != 0 {
        return 0;
    }
    // SAFETY: getrusage succeeded.
    u64::try_from(unsafe { usage.assume_init() }.ru_minflt).unwrap_or(0)
}

fn hash_value(value: ValueRef<'_>) -> u64 {
    let bytes: &[u8] = match value {
        ValueRef::Null => b"",
        ValueRef::Integer(i) => return i as u64,
        ValueRef::Real(f) => return f.to_bits(),
        ValueRef::Text(t) | ValueRef::Blob(t) => t,
    };
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Where a measurement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// This machine's disk.
    Disk,
    /// A memory cgroup limited to a quarter of the database.
    Cgroup,
    /// The emulated 7200 RPM disk.
    Emulated,
    /// Warm cache: index scan, rolled-back UPDATE, range count ([`crate::sqlite_workloads`]).
    Warm,
    /// Warm cache with one page in 200 reclaimed: the index scan ([`crate::sqlite_workloads`]).
    WarmReclaimed,
    /// WAL index scans with a concurrent writer ([`crate::sqlite_workloads`]).
    WalWriter,
    /// A transaction deleting a tenth of the rows ([`crate::sqlite_workloads`]).
    Delete,
}

impl FromStr for Setting {
    type Err = String;
    fn from_str(s: &str) -> Result<Setting, String> {
        match s {
            "disk" => Ok(Setting::Disk),
            "cgroup" => Ok(Setting::Cgroup),
            "emulated" => Ok(Setting::Emulated),
            "warm" => Ok(Setting::Warm),
            "warm-reclaimed" => Ok(Setting::WarmReclaimed),
            "wal-writer" => Ok(Setting::WalWriter),
            "delete" => Ok(Setting::Delete),
            _ => Err(format!(
                "unknown setting {s:?}: expected disk, cgroup, emulated, warm, warm-reclaimed, wal-writer or delete"
            )),
        }
    }
}

/// Finds the extension next to the `prefetch` binary (both are built into target/{debug,release}).
pub fn extension_next_to(exe: &Path) -> Result<PathBuf> {
    let dir = exe
        .parent()
        .ok_or_else(|| anyhow!("{} has no directory", exe.display()))?;
    let path = dir.join(EXTENSION_FILE);
    if !path.exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p sqlite`, or pass --ext",
            path.display()
        );
    }
    Ok(path)
}

/// Runs the benchmark in each of `settings`, reporting progress lines through `log`.
pub fn run(opts: &BenchOptions, settings: &[Setting], mut log: impl FnMut(&str)) -> Result<Report> {
    if opts.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let db_bytes = std::fs::metadata(&opts.db)
        .with_context(|| format!("reading {}", opts.db.display()))?
        .len();
    check_query(&opts.db, &opts.sql)?;
    let mut report = Report {
        sql: opts.sql.clone(),
        db: opts.db.clone(),
        db_bytes,
        rows: 0,
        runs: opts.runs,
        eviction: Eviction::Fadvise.describe().to_string(),
        results: Vec::new(),
        skipped: Vec::new(),
    };
    for &setting in settings {
        let outcome = match setting {
            Setting::Disk => measure_disk(opts, &mut log),
            Setting::Cgroup => measure_cgroup(opts, db_bytes, &mut log),
            Setting::Emulated => measure_emulated(opts, &mut log),
            Setting::Warm => workload(opts, Workload::Warm, &mut log),
            Setting::WarmReclaimed => workload(opts, Workload::WarmReclaimed, &mut log),
            Setting::WalWriter => workload(opts, Workload::WalWriter, &mut log),
            Setting::Delete => workload(opts, Workload::Delete, &mut log),
        };
        match outcome {
            Ok((result, rows)) => {
                report.rows = report.rows.max(rows);
                report.results.push(result);
            }
            Err(err) => {
                log(&format!("{setting:?}: skipped: {err:#}"));
                report
                    .skipped
                    .push((format!("{setting:?}"), format!("{err:#}")));
            }
        }
    }
    if report.results.is_empty() {
        bail!("no setting could be measured (see the lines above)");
    }
    Ok(report)
}

/// Fails with one clear line unless stock SQLite can prepare `sql` on `db`: a file that is not a database,
/// or lacks the query's tables, is the user's mistake, not a setting that could not be measured.
pub(crate) fn check_query(db: &Path, sql: &str) -> Result<()> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", db.display()))?;
    if let Err(err) = conn.prepare(sql) {
        bail!(
            "{} cannot run the benchmark's query ({err}); make one with `prefetch sqlite gen`",
            db.display()
        );
    }
    Ok(())
}

/// A warm or writing workload; it reports no row count of the paper's query.
fn workload(
    opts: &BenchOptions,
    workload: Workload,
    log: &mut impl FnMut(&str),
) -> Result<(SettingResult, u64)> {
    Ok((workloads::measure(opts, workload, log)?, 0))
}

/// Whether each measured run starts with the database evicted from the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cache {
    Cold,
    Warm,
}

/// One measured child: evicts `db` if `cache` says cold, runs the query in a new process (inside
/// `cgroup` if given).
fn measured_run(
    opts: &BenchOptions,
    db: &Path,
    ext: bool,
    cgroup: Option<&Path>,
    cache: Cache,
) -> Result<QueryRun> {
    if cache == Cache::Cold {
        evict(db)?;
    }
    child_run(opts, db, ext, cgroup)
}

/// `db` as a `file:` URI asking for whole lists (`prefetch_scan=whole`); the characters a URI's path
/// gives a meaning (`%`, `?`, `#`) are escaped, as SQLite's URI rules require.
fn whole_scans_uri(db: &Path) -> String {
    let path = db.to_string_lossy();
    let mut uri = String::from("file:");
    for c in path.chars() {
        match c {
            '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", u32::from(c))),
            c => uri.push(c),
        }
    }
    uri + "?prefetch_scan=whole"
}

pub(crate) fn evict(db: &Path) -> Result<()> {
    let file = File::open(db).with_context(|| format!("opening {}", db.display()))?;
    Eviction::Fadvise.evict(&file)
}

pub(crate) fn child_run(
    opts: &BenchOptions,
    db: &Path,
    ext: bool,
    cgroup: Option<&Path>,
) -> Result<QueryRun> {
    let mut cmd = Command::new(&opts.runner);
    cmd.args(["sqlite", "query", "--json", "--sql", &opts.sql, "--db"])
        .arg(db);
    if ext {
        cmd.arg("--ext").arg(&opts.ext);
        if opts.whole_scans {
            cmd.arg("--whole-scans");
        }
    }
    if let Some(dir) = cgroup {
        join_before_exec(&mut cmd, dir)?;
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", opts.runner.display()))?;
    if !out.status.success() {
        bail!(
            "{} sqlite query failed: {}",
            opts.runner.display(),
            out.status
        );
    }
    serde_json::from_slice(&out.stdout).context("reading the query child's JSON")
}

/// Alternates stock and extension runs; checks that both return the same rows. The pages read are
/// the children's own, or with `emulated` (the emulated disk's mount) the emulated disk's, which also
/// gives the requests it served.
pub(crate) fn stock_vs_extension(
    opts: &BenchOptions,
    db: &Path,
    cgroup: Option<&Path>,
    cache: Cache,
    label: &str,
    log: &mut impl FnMut(&str),
) -> Result<(SettingResult, u64)> {
    stock_vs_extension_counted(opts, db, cgroup, cache, label, None, log)
}

fn stock_vs_extension_counted(
    opts: &BenchOptions,
    db: &Path,
    cgroup: Option<&Path>,
    cache: Cache,
    label: &str,
    emulated: Option<&Path>,
    log: &mut impl FnMut(&str),
) -> Result<(SettingResult, u64)> {
    let (mut stock, mut extension) = (Vec::new(), Vec::new());
    let (mut stock_bytes, mut extension_bytes) = (Vec::new(), Vec::new());
    let (mut stock_requests, mut extension_requests) = (Vec::new(), Vec::new());
    let mut reference: Option<QueryRun> = None;
    let mut run = 0;
    while more_runs(opts, run, &stock) {
        run += 1;
        for ext in pair_order(run) {
            let before = emulated.map(emulated_counters).transpose()?;
            let mut result = measured_run(opts, db, ext, cgroup, cache)?;
            if let (Some(mount), Some((bytes, requests))) = (emulated, before) {
                let (bytes_after, requests_after) = emulated_counters(mount)?;
                result.read_bytes = bytes_after.saturating_sub(bytes);
                let served = requests_after.saturating_sub(requests) as f64;
                match ext {
                    true => extension_requests.push(served),
                    false => stock_requests.push(served),
                }
            }
            let variant = if ext { "extension" } else { "stock" };
            log(&format!(
                "{label}: run {run} {variant}: {:.4} s, {} rows",
                result.seconds, result.rows
            ));
            if let Some(first) = reference {
                if (first.rows, first.checksum) != (result.rows, result.checksum) {
                    bail!("{variant} returned different rows ({} rows, checksum {:x}) than the first run ({} rows, checksum {:x})", result.rows, result.checksum, first.rows, first.checksum);
                }
            }
            reference = Some(result);
            if ext {
                extension.push(result.seconds);
                extension_bytes.push(result.read_bytes as f64);
            } else {
                stock.push(result.seconds);
                stock_bytes.push(result.read_bytes as f64);
            }
        }
    }
    let rows = reference.map_or(0, |r| r.rows);
    let mut result = SettingResult::new(label.to_string(), stock, extension);
    let pages = |bytes: &[f64]| Some((median(bytes) / PAGE_SIZE as f64).round() as u64);
    result.stock_pages = pages(&stock_bytes);
    result.extension_pages = pages(&extension_bytes);
    if emulated.is_some() {
        result.stock_requests = Some(median(&stock_requests).round() as u64);
        result.extension_requests = Some(median(&extension_requests).round() as u64);
    }
    Ok((result, rows))
}

/// Whether the extension runs in pair `run` (from 1): stock first in odd pairs, the extension first in
/// even ones.
fn pair_order(run: usize) -> [bool; 2] {
    match run % 2 {
        1 => [false, true],
        _ => [true, false],
    }
}

/// Whether another stock/extension pair is due after `done` pairs whose stock runs took `stock`
/// seconds: until `opts.runs`, then until they add up to `opts.min_seconds`, within `opts.max_runs`.
fn more_runs(opts: &BenchOptions, done: usize, stock: &[f64]) -> bool {
    done < opts.runs || (done < opts.max_runs && stock.iter().sum::<f64>() < opts.min_seconds)
}

/// (bytes, requests) the emulated disk mounted at `mount` has served (its `.emulate-stats`).
fn emulated_counters(mount: &Path) -> Result<(u64, u64)> {
    let path = mount.join(emulate::fs::STATS_NAME);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let stats: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("reading the counters in {}", path.display()))?;
    let field = |name: &str| {
        stats[name]
            .as_u64()
            .ok_or_else(|| anyhow!("{} has no {name} counter", path.display()))
    };
    Ok((field("bytes")?, field("requests")?))
}

fn measure_disk(opts: &BenchOptions, log: &mut impl FnMut(&str)) -> Result<(SettingResult, u64)> {
    let label = "this machine's disk";
    let (mut result, rows) = stock_vs_extension(opts, &opts.db, None, Cache::Cold, label, log)?;
    result.optimum_pages = Some(query_optimum(&opts.runner, &opts.db, &opts.sql, None)?);
    evict(&opts.db)?;
    let sequential = read_sequentially(&opts.db)?;
    let warm = median(
        &(0..opts.runs)
            .map(|_| child_run(opts, &opts.db, false, None).map(|r| r.seconds))
            .collect::<Result<Vec<_>>>()?,
    );
    log(&format!(
        "{label}: sequential read {sequential:.2} s, warm stock {warm:.2} s"
    ));
    result.warm = Some(warm);
    result.sequential_read = Some(sequential);
    Ok((result, rows))
}

/// Seconds to read the whole file in 1 MiB reads (from a cold cache if the caller evicted it).
fn read_sequentially(path: &Path) -> Result<f64> {
    let start = Instant::now();
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    while file.read(&mut buf)? > 0 {}
    Ok(start.elapsed().as_secs_f64())
}

fn measure_cgroup(
    opts: &BenchOptions,
    db_bytes: u64,
    log: &mut impl FnMut(&str),
) -> Result<(SettingResult, u64)> {
    let limit = opts.cgroup_bytes.unwrap_or(db_bytes / 4);
    let (mut result, rows) = cold_in_cgroup(opts, db_bytes, log)?;
    let optimum = query_optimum(&opts.runner, &opts.db, &opts.sql, Some(limit))?;
    result.optimum_pages = Some(optimum);
    Ok((result, rows))
}

/// Stock against the extension, cold, in a memory cgroup of `opts.cgroup_bytes` (a quarter of the
/// database's `db_bytes` by default).
pub(crate) fn cold_in_cgroup(
    opts: &BenchOptions,
    db_bytes: u64,
    log: &mut impl FnMut(&str),
) -> Result<(SettingResult, u64)> {
    let limit = opts.cgroup_bytes.unwrap_or(db_bytes / 4);
    let group = MemoryCgroup::create(limit)
        .context("creating the memory cgroup (needs root and cgroup v1 or v2)")?;
    let share = match opts.cgroup_bytes {
        Some(_) => format!("{:.2} of the database", limit as f64 / db_bytes as f64),
        None => "1/4 of the database".to_string(),
    };
    let label = format!("{} = {share}, on this machine's disk", group.describe());
    let outcome = stock_vs_extension(opts, &opts.db, Some(group.dir()), Cache::Cold, &label, log);
    group.remove().context("removing the memory cgroup")?;
    outcome
}

/// The emulated disk, mounted by a `prefetch emulate` child for as long as the value lives.
pub(crate) struct EmulatedMount {
    child: Child,
    mountpoint: PathBuf,
    _dir: TempDir,
}

/// The directory holding `db`, absolute: a bare file name's parent is "", which `prefetch
/// emulate` refuses as its backing directory.
fn backing_dir(db: &Path) -> Result<PathBuf> {
    let db = std::path::absolute(db)?;
    db.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| anyhow!("{} has no directory", db.display()))
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

impl EmulatedMount {
    pub(crate) fn start(opts: &BenchOptions) -> Result<EmulatedMount> {
        let backing = backing_dir(&opts.db)?;
        let dir = TempDir(
            std::env::temp_dir().join(format!("prefetch-sqlite-emulated-{}", std::process::id())),
        );
        std::fs::create_dir_all(&dir.0)?;
        let child = Command::new(&opts.runner)
            .args(["emulate", "--model", EMULATED_MODEL, "--time-scale"])
            .arg(opts.time_scale.to_string())
            .arg("--backing")
            .arg(backing)
            .arg(&dir.0)
            .stdout(Stdio::null())
            .spawn()
            .context("starting `prefetch emulate`")?;
        let mount = EmulatedMount {
            child,
            mountpoint: dir.0.clone(),
            _dir: dir,
        };
        mount.wait_until_mounted(&opts.db)?;
        Ok(mount)
    }

    pub(crate) fn db_path(&self, db: &Path) -> PathBuf {
        self.mountpoint.join(db.file_name().unwrap_or_default())
    }

    fn wait_until_mounted(&self, db: &Path) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.db_path(db).exists() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!(
            "`prefetch emulate` did not show {} within 20 s",
            self.db_path(db).display()
        )
    }
}

impl Drop for EmulatedMount {
    fn drop(&mut self) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our own child's.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

pub(crate) fn measure_emulated(
    opts: &BenchOptions,
    log: &mut impl FnMut(&str),
) -> Result<(SettingResult, u64)> {
    let mount = EmulatedMount::start(opts)?;
    let db = mount.db_path(&opts.db);
    let label = format!(
        "emulated 7200 RPM disk ({EMULATED_MODEL}, prefetch emulate, time scale {})",
        opts.time_scale
    );
    evict(&opts.db)?;
    // The emulated disk's reads happen in its FUSE daemon: its own counters, not the children's, say
    // what was read.
    let mount_dir = mount.mountpoint.clone();
    stock_vs_extension_counted(opts, &db, None, Cache::Cold, &label, Some(&mount_dir), log)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--db unicode.db` (a bare name) mounts the current directory.
    #[test]
    fn a_bare_database_name_is_backed_by_the_current_directory() {
        let here = std::env::current_dir().unwrap();
        assert_eq!(backing_dir(Path::new("unicode.db")).unwrap(), here);
        assert_eq!(
            backing_dir(Path::new("/data/unicode.db")).unwrap(),
            Path::new("/data")
        );
    }

    /// The emulated disk's counters are read from its stats file as the emulator writes it; a file
    /// without them is an error that names it.
    #[test]
    fn the_emulated_disks_bytes_and_requests_are_read_from_its_stats_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut stats = serde_json::to_value(emulate::Stats::default()).unwrap();
        stats["bytes"] = serde_json::json!(8192 * 3);
        stats["requests"] = serde_json::json!(2);
        let path = dir.path().join(emulate::fs::STATS_NAME);
        std::fs::write(&path, stats.to_string()).unwrap();
        assert_eq!(emulated_counters(dir.path()).unwrap(), (8192 * 3, 2));
        std::fs::write(&path, "{}").unwrap();
        let err = emulated_counters(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no bytes counter"), "{err}");
    }

    /// Short queries run more pairs: up to `min_seconds` of stock time, never past `max_runs`, never
    /// fewer than `runs`.
    #[test]
    fn short_queries_run_until_their_stock_runs_add_up_to_min_seconds() {
        let opts = BenchOptions {
            db: PathBuf::from("unused.db"),
            ext: PathBuf::from("unused.so"),
            sql: PAPER_QUERY.to_string(),
            runs: 3,
            min_seconds: 1.0,
            max_runs: 21,
            runner: PathBuf::from("unused"),
            cgroup_bytes: None,
            time_scale: 1.0,
            whole_scans: false,
        };
        let pairs = |seconds: f64| {
            let mut stock = Vec::new();
            while more_runs(&opts, stock.len(), &stock) {
                stock.push(seconds);
            }
            stock.len()
        };
        assert_eq!(pairs(2.0), 3);
        assert_eq!(pairs(0.2), 5);
        assert_eq!(pairs(0.001), 21);
        assert_eq!(pair_order(1), [false, true]);
        assert_eq!(pair_order(2), [true, false]);
    }

    /// A query's run counts the CPU its thread spent inside it, and the page faults it took: a query
    /// that touches fresh memory counts its faults (a 64 MiB text, above glibc's largest mmap
    /// threshold, so mapped afresh whatever the process allocated before).
    #[test]
    fn a_query_run_counts_its_cpu_time_and_its_page_faults() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("q.db");
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            .unwrap();
        let run = run_query(&db, "SELECT hex(zeroblob(33554432)) FROM t", None, false).unwrap();
        assert_eq!(run.rows, 1);
        assert!(run.cpu_seconds > 0.0);
        assert!(run.minor_faults > 0, "{run:?}");
    }

    #[test]
    fn settings_parse_by_name() {
        assert_eq!("cgroup".parse::<Setting>(), Ok(Setting::Cgroup));
        assert!("tape".parse::<Setting>().is_err());
    }

    #[test]
    fn the_whole_scans_uri_escapes_what_a_uri_path_gives_a_meaning() {
        assert_eq!(
            whole_scans_uri(Path::new("/d/a?b#c%d.db")),
            "file:/d/a%3Fb%23c%25d.db?prefetch_scan=whole"
        );
    }

    #[test]
    fn a_file_that_is_not_a_database_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk");
        std::fs::write(&junk, vec![7u8; 8192]).unwrap();
        let opts = BenchOptions {
            db: junk,
            ext: PathBuf::from("unused.so"),
            sql: PAPER_QUERY.to_string(),
            runs: 1,
            min_seconds: 0.0,
            max_runs: 1,
            runner: PathBuf::from("unused"),
            cgroup_bytes: None,
            time_scale: 1.0,
            whole_scans: false,
        };
        let err = run(&opts, &[Setting::Disk], |_| {}).unwrap_err();
        assert!(
            err.to_string().contains("cannot run the benchmark's query"),
            "{err}"
        );
    }
}
