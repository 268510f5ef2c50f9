//! `prefetch bench replay`'s measurement and table: the stock `sqlite3` shell, no extension, running one query on a cold
//! cache three ways in one session: under `prefetch record` (the first run, whose recording the
//! third replays), plain, and under `prefetch run --replay`. Each run starts with the database
//! evicted from the page cache (on the emulated disk: the mounted file and its backing file). The
//! three runs must print the same bytes; the table gives each run's time and its speed-up over the
//! plain run.
//!
//! Settings: `emulated` mounts `prefetch emulate` with the 7200 RPM disk model over the database's
//! directory (one mount for the three runs, so the file keeps its identity); `cgroup` runs each
//! `sqlite3` in a memory cgroup of a quarter of the database's size, on this machine's disk, and
//! records with `--rereads-after` a sixteenth of the database (a quarter of the cgroup), since
//! the cache cannot keep every page from its first read to its last.
//!
//! Follows libprefetch (ATC 2009) section 5.4 (the index scan of a TPC-C-like table).
//! Deviations: the paper modified SQLite to list its reads; here the unmodified shell is replayed
//! from a recording of its own earlier run.

use std::fmt::Write as _;
use std::hash::Hasher;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cache::Eviction;
use crate::cgroup::{join_before_exec, MemoryCgroup};

/// Where the runs read the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    /// The emulated 7200 RPM disk (`prefetch emulate --model st3500320as`)
    Emulated,
    /// This machine's disk, inside a memory cgroup of a quarter of the database
    Cgroup,
}

/// What `prefetch bench replay` measures.
#[derive(Clone, Debug)]
pub struct ReplayBench {
    /// Database made by `prefetch sqlite gen`.
    pub db: PathBuf,
    /// Where the runs read it.
    pub setting: Where,
    /// SQL the sqlite3 shell runs.
    pub sql: String,
    /// The libprefetch.so to preload.
    pub library: PathBuf,
    /// The `prefetch` executable that records, replays and emulates the disk.
    pub prefetch: PathBuf,
}

/// One measured run.
#[derive(Clone, Debug)]
pub struct Timed {
    /// `recorded`, `stock` or `replayed`.
    pub label: &'static str,
    /// Wall seconds.
    pub seconds: f64,
    output_hash: u64,
}

/// The three runs of one measurement, in the order they ran.
#[derive(Clone, Debug)]
pub struct Report {
    /// The database, as an absolute path.
    pub db: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// The recorded, stock and replayed runs.
    pub runs: Vec<Timed>,
}

/// Runs the three cold runs; they must print the same rows.
pub fn run(bench: &ReplayBench) -> Result<Report> {
    let (library, exe) = (&bench.library, &bench.prefetch);
    let db = std::path::absolute(&bench.db)?;
    let size = std::fs::metadata(&db)
        .with_context(|| {
            format!(
                "cannot open the database {}: make one with `prefetch sqlite gen`",
                db.display()
            )
        })?
        .len();
    let scratch = tempdir()?;
    let recording = scratch.0.join("recording");
    let (mount, cgroup) = match bench.setting {
        Where::Emulated => (Some(Mount::start(exe, &db, &scratch.0.join("mnt"))?), None),
        Where::Cgroup => (None, Some(MemoryCgroup::create(size / 4)?)),
    };
    let read_path = mount.as_ref().map_or(db.clone(), |m| m.path.clone());
    let evict = || -> Result<()> {
        for path in [&read_path, &db] {
            let file =
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
            Eviction::Fadvise.evict(&file)?;
        }
        Ok(())
    };
    let shell = ["sqlite3", "-readonly"];
    let query: Vec<std::ffi::OsString> =
        [read_path.as_os_str().into(), bench.sql.as_str().into()].into();
    let prefetch = |mode: &[&str]| {
        let mut command = Command::new(exe);
        command
            .args(mode)
            .arg("--library")
            .arg(library)
            .arg("--")
            .args(shell)
            .args(&query);
        command
    };
    let rec = recording.to_str().context("temporary path is not UTF-8")?;
    // In the cgroup the cache holds a quarter of the database: list the rereads that come after
    // a quarter of that (they may have been evicted), as well as the first reads.
    let rereads = format!("{}", size / 16);
    let mut record = vec!["record", "-o", rec];
    if bench.setting == Where::Cgroup {
        record.extend(["--rereads-after", &rereads]);
    }
    let mut plain = Command::new(shell[0]);
    plain.args(&shell[1..]).args(&query);
    let runs = [
        ("recorded", prefetch(&record)),
        ("stock", plain),
        ("replayed", prefetch(&["run", "--replay", rec])),
    ];
    let mut results = Vec::new();
    for (label, mut command) in runs {
        evict()?;
        if let Some(group) = &cgroup {
            join_before_exec(&mut command, group.dir())?;
        }
        results.push(timed(label, command)?);
    }
    if results
        .iter()
        .any(|r| r.output_hash != results[0].output_hash)
    {
        bail!("the three runs printed different rows");
    }
    Ok(Report {
        db,
        size,
        runs: results,
    })
}

/// Runs `command`, hashing its stdout, and times it.
fn timed(label: &'static str, mut command: Command) -> Result<Timed> {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .context("starting sqlite3 (is the sqlite3 shell installed?)")?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = stdout.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.write(&buffer[..n]);
    }
    let status = child.wait()?;
    let seconds = started.elapsed().as_secs_f64();
    if !status.success() {
        bail!("the {label} run failed: {status}");
    }
    Ok(Timed {
        label,
        seconds,
        output_hash: hasher.finish(),
    })
}

/// The report as a Markdown table under lines saying what was measured.
pub fn table(bench: &ReplayBench, report: &Report) -> String {
    let (db, size, results) = (&report.db, report.size, &report.runs);
    let setting = match bench.setting {
        Where::Emulated => "emulated 7200 RPM disk (st3500320as, prefetch emulate)".to_string(),
        Where::Cgroup => format!(
            "this machine's disk, memory cgroup of {} MiB",
            (size / 4) >> 20
        ),
    };
    let mut out = format!(
        "stock sqlite3 shell, {} ({} MiB), cold cache, {setting}\n",
        db.display(),
        size >> 20
    );
    let _ = writeln!(out, "query: {}\n", bench.sql);
    out.push_str("| run | seconds | speed-up over stock |\n");
    out.push_str("|---|---:|---:|\n");
    let stock = results
        .iter()
        .find(|r| r.label == "stock")
        .map_or(1.0, |r| r.seconds);
    for result in results {
        let _ = writeln!(
            out,
            "| {} | {:.2} | {:.2}x |",
            result.label,
            result.seconds,
            stock / result.seconds
        );
    }
    out
}

/// A temporary directory, removed (with what is left in it) on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir() -> Result<TempDir> {
    let dir = std::env::temp_dir().join(format!("prefetch-bench-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(TempDir(dir))
}

/// `prefetch emulate` over the database's directory, unmounted on drop.
struct Mount {
    daemon: Child,
    path: PathBuf,
}

impl Mount {
    fn start(prefetch: &Path, db: &Path, mountpoint: &Path) -> Result<Mount> {
        let backing = db.parent().context("the database has no directory")?;
        std::fs::create_dir_all(mountpoint)?;
        let daemon = Command::new(prefetch)
            .args([
                "emulate",
                "--model",
                crate::sqlite::EMULATED_MODEL,
                "--backing",
            ])
            .arg(backing)
            .arg(mountpoint)
            .stdout(Stdio::null())
            .spawn()
            .context("starting `prefetch emulate`")?;
        let mount = Mount {
            daemon,
            path: mountpoint.join(db.file_name().unwrap_or_default()),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !mount.path.exists() {
            if Instant::now() > deadline {
                bail!(
                    "`prefetch emulate` did not show {} within 20 s",
                    mount.path.display()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(mount)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our own child's.
        unsafe { libc::kill(self.daemon.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.daemon.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_each_run_its_speed_up_over_stock() {
        let bench = ReplayBench {
            db: "/db/tpcc.db".into(),
            setting: Where::Cgroup,
            sql: "SELECT 1;".into(),
            library: "libprefetch.so".into(),
            prefetch: "prefetch".into(),
        };
        let run = |label, seconds| Timed {
            label,
            seconds,
            output_hash: 0,
        };
        let report = Report {
            db: bench.db.clone(),
            size: 64 << 20,
            runs: vec![
                run("recorded", 4.0),
                run("stock", 3.0),
                run("replayed", 1.5),
            ],
        };
        assert_eq!(
            table(&bench, &report),
            "stock sqlite3 shell, /db/tpcc.db (64 MiB), cold cache, this machine's disk, memory \
             cgroup of 16 MiB\nquery: SELECT 1;\n\n| run | seconds | speed-up over stock |\n\
             |---|---:|---:|\n| recorded | 4.00 | 0.75x |\n| stock | 3.00 | 1.00x |\n\
             | replayed | 1.50 | 2.00x |\n"
        );
    }
}
