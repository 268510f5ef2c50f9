//! The settings of `prefetch bench sqlite` where the extension must cost nothing: a warm cache, a WAL
//! database with a concurrent writer, and a transaction that deletes a tenth of the rows. The extension
//! promises that SQLite behaves as without it, only faster when it reads cold data; these rows check the
//! "only" part.
//!
//! Each workload runs in this process on a copy of the database (the user's file is never written), in
//! the page cache, alternating SQLite's own `unix` VFS and the extension's `prefetch` VFS, and the medians
//! are compared (a speedup below 1 is a slowdown).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};
use rustix::fs::Advice;

use prefetch_sqlite::ext::load_extension;

use crate::sqlite_report::{BenchOptions, SettingResult, PAPER_QUERY};

/// SQLite's own VFS, the stock side of each comparison.
const STOCK_VFS: &str = "unix";

/// Which workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Warm cache: the paper's index scan, an UPDATE of a tenth of the rows rolled back, a range count.
    Warm,
    /// Warm cache with one page in [`RECLAIMED_EVERY`] dropped before each run, as the kernel reclaims
    /// pages of a file left idle: the paper's index scan.
    WarmReclaimed,
    /// WAL journal: three index scans while another connection commits small updates.
    WalWriter,
    /// A transaction deleting a tenth of the rows (rolled back, so every run deletes the same rows).
    Delete,
}

impl Workload {
    fn label(self) -> &'static str {
        match self {
            Workload::Warm => "warm cache: index scan + rolled-back UPDATE + range count",
            Workload::WarmReclaimed => "warm cache, one page in 200 reclaimed: index scan",
            Workload::WalWriter => "WAL: 3 index scans with a concurrent writer",
            Workload::Delete => "warm cache: transaction deleting 10% of the rows",
        }
    }
}

/// A copy of the database next to it, removed on drop.
struct Copy(PathBuf);

impl Copy {
    fn of(db: &Path) -> Result<Copy> {
        let path = db.with_extension(format!("bench-copy-{}.db", std::process::id()));
        std::fs::copy(db, &path).with_context(|| format!("copying {}", db.display()))?;
        Ok(Copy(path))
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Measures `workload`: `opts.runs` runs per VFS, alternating, on a cached copy of the database.
pub fn measure(
    opts: &BenchOptions,
    workload: Workload,
    log: &mut impl FnMut(&str),
) -> Result<SettingResult> {
    load_extension(&opts.ext)?;
    let copy = Copy::of(&opts.db)?;
    if workload == Workload::WalWriter {
        open(&copy.0, STOCK_VFS)?.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    }
    let label = workload.label();
    let (mut stock, mut extension) = (Vec::new(), Vec::new());
    for run in 0..=opts.runs {
        for vfs in [STOCK_VFS, "prefetch"] {
            let seconds = run_once(&copy.0, vfs, workload)?;
            if run == 0 {
                continue; // the first round only warms the cache
            }
            log(&format!(
                "{label}: run {run}/{} {vfs}: {seconds:.3} s",
                opts.runs
            ));
            let runs = if vfs == STOCK_VFS {
                &mut stock
            } else {
                &mut extension
            };
            runs.push(seconds);
        }
    }
    Ok(SettingResult::new(label.to_string(), stock, extension))
}

fn open(path: &Path, vfs: &str) -> Result<Connection> {
    Connection::open_with_flags_and_vfs(path, OpenFlags::SQLITE_OPEN_READ_WRITE, vfs)
        .with_context(|| format!("opening {}", path.display()))
}

/// Seconds one run of `workload` takes through `vfs`.
fn run_once(path: &Path, vfs: &str, workload: Workload) -> Result<f64> {
    match workload {
        Workload::WalWriter => empty_wal(path)?,
        Workload::WarmReclaimed => reclaim_some_pages(path)?,
        _ => {}
    }
    let conn = open(path, vfs)?;
    let start = Instant::now();
    match workload {
        Workload::Warm => {
            scan(&conn)?;
            conn.execute_batch(
                "BEGIN; UPDATE customer SET c_balance = c_balance + 1 WHERE c_zip < '1'; ROLLBACK;",
            )?;
            conn.query_row(
                "SELECT count(c_balance) FROM customer WHERE c_zip BETWEEN '2' AND '4'",
                [],
                |_| Ok(()),
            )?;
        }
        Workload::WarmReclaimed => scan(&conn)?,
        Workload::WalWriter => with_writer(path, vfs, || (0..3).try_for_each(|_| scan(&conn)))?,
        Workload::Delete => {
            conn.execute_batch("BEGIN; DELETE FROM customer WHERE c_zip < '1'; ROLLBACK;")?
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// The paper's query, every column of every row read.
fn scan(conn: &Connection) -> Result<()> {
    let mut stmt = conn.prepare(PAPER_QUERY)?;
    let columns = stmt.column_count();
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        for i in 0..columns {
            row.get_ref(i)?;
        }
    }
    Ok(())
}

/// One-row updates the writer commits in each WAL run, a millisecond apart: a fixed amount of work, so
/// that both VFSs are timed on the same commits (a writer that ran until the reader finished committed
/// 80-300 times a run).
const WAL_COMMITS: i64 = 300;

/// Runs `reader` while another connection through `vfs` commits [`WAL_COMMITS`] one-row updates; returns
/// when both are done.
fn with_writer(path: &Path, vfs: &str, reader: impl FnOnce() -> Result<()>) -> Result<()> {
    let writer = open(path, vfs)?;
    let writer = std::thread::spawn(move || -> Result<()> {
        let rows: i64 = writer.query_row("SELECT max(rowid) FROM customer", [], |r| r.get(0))?;
        for commit in 0..WAL_COMMITS {
            let rowid = commit * 7919 % rows.max(1) + 1;
            writer.execute(
                "UPDATE customer SET c_balance = c_balance + 1 WHERE rowid = ?1",
                [rowid],
            )?;
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(())
    });
    let outcome = reader();
    let written = writer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
    outcome.and(written)
}

/// Pages of the database dropped from the page cache before each run of [`Workload::WarmReclaimed`]:
/// one in this many.
const RECLAIMED_EVERY: u64 = 200;

/// Drops one page in [`RECLAIMED_EVERY`] of `path` from the page cache (the rest stays cached): what
/// a kernel reclaiming idle page cache leaves of a file (this machine's DAMON scheme does it within a
/// minute). A few missing pages are enough to wake the extension; it must then cost nothing more.
fn reclaim_some_pages(path: &Path) -> Result<()> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    file.sync_all()?;
    let pages = file.metadata()?.len() / 4096;
    for page in (0..pages).step_by(RECLAIMED_EVERY as usize) {
        crate::cache::advise(&file, page * 4096, Some(4096), Advice::DontNeed)
            .context("posix_fadvise(DONTNEED) of a page of the database copy")?;
    }
    Ok(())
}

/// Copies the WAL into the database and empties it (untimed, through SQLite's own VFS), so that every
/// run starts from the same empty log: otherwise SQLite's automatic checkpoint, every 1,000 frames, fell
/// in every other run, always the same VFS's, and made it 1.4x slower.
fn empty_wal(path: &Path) -> Result<()> {
    open(path, STOCK_VFS)?
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .context("checkpointing the WAL between runs")
}
