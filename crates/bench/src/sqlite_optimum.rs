//! The optimum's fetch count for the SQLite benchmark's query, beside its measured pages: the query's
//! page sequence is recorded by running it once more under `prefetch record` (stock SQLite, the
//! interposer seeing every `pread` of the database), and the simulator's `opt-demand` (Belady's MIN
//! with demand fetching, Cao et al. section 2.1) counts the pages it must read with the setting's
//! memory ([`crate::optimum`]).
//!
//! A page read again soon after its previous read is left out of the recording (`--rereads-after` half
//! the memory): a page read again within half the cache's worth of reads is kept by any sensible cache,
//! and the optimum of a subsequence never exceeds that of the whole sequence, so the count stays a
//! lower bound while the recording stays small (a 1 GiB index scan reads interior pages millions of
//! times).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use plan::recording::Recording;

use crate::optimum::optimum_pages;
use crate::workload::{Read, PAGE_SIZE};

/// Pages the optimum reads for `sql` on `db` with `memory` bytes of cache (`None`: every page fits).
/// `runner` is the `prefetch` binary (its `record` and `sqlite query` commands).
pub fn query_optimum(runner: &Path, db: &Path, sql: &str, memory: Option<u64>) -> Result<u64> {
    let recording = TempFile(std::env::temp_dir().join(format!(
        "libprefetch-sqlite-optimum-{}.rec",
        std::process::id()
    )));
    record_query(runner, db, sql, memory, &recording.0)?;
    let text = std::fs::read_to_string(&recording.0)
        .with_context(|| format!("reading {}", recording.0.display()))?;
    let parsed = Recording::parse(&text).map_err(|e| anyhow!("{}: {e}", recording.0.display()))?;
    let reads = database_reads(&parsed, db)?;
    optimum_pages(&reads, memory)
}

/// Runs the query once under `prefetch record`, writing the recording to `out`.
fn record_query(
    runner: &Path,
    db: &Path,
    sql: &str,
    memory: Option<u64>,
    out: &Path,
) -> Result<()> {
    let mut cmd = Command::new(runner);
    cmd.arg("record").arg("-o").arg(out);
    if let Some(bytes) = memory {
        cmd.args(["--rereads-after", &(bytes / 2).max(PAGE_SIZE).to_string()]);
    }
    cmd.arg("--")
        .arg(runner)
        .args(["sqlite", "query", "--json", "--sql", sql, "--db"])
        .arg(db);
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("running {} record", runner.display()))?;
    if !status.success() {
        bail!("recording the query's reads failed: {status}");
    }
    Ok(())
}

/// The recorded page reads of the database file (matched by device and inode), in order.
fn database_reads(recording: &Recording, db: &Path) -> Result<Vec<Read>> {
    let meta = std::fs::metadata(db).with_context(|| format!("reading {}", db.display()))?;
    let (dev, ino) = (
        std::os::unix::fs::MetadataExt::dev(&meta),
        std::os::unix::fs::MetadataExt::ino(&meta),
    );
    let page_size = recording.page_size;
    let reads: Vec<Read> = recording
        .parts
        .iter()
        .flat_map(|part| {
            part.runs.iter().filter(move |run| {
                part.files
                    .get(run.file)
                    .is_some_and(|file| file.dev == dev && file.ino == ino)
            })
        })
        .map(|run| Read {
            offset: run.first * page_size,
            len: run.count * page_size,
        })
        .collect();
    if reads.is_empty() {
        bail!(
            "the recording holds no read of {} (was the interposer loaded?)",
            db.display()
        );
    }
    Ok(reads)
}

/// A file removed when the value is dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
