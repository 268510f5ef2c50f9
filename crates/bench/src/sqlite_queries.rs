//! `prefetch bench sqlite --queries FILE`: a user's own workload, one query a line, each run in a child
//! process with stock SQLite and with the extension, alternated, in every setting asked for; every run of
//! a query must return the same rows (count and checksum of every value), or the benchmark fails.
//!
//! Settings: `disk` and `cgroup` (cold, as for the paper's query, the cgroup a quarter of the database
//! unless `--cgroup-bytes` says), `emulated` (cold, the emulated 7200 RPM disk), and `warm` (the file
//! in the page cache: the same children, no eviction), where the extension must cost nothing.

use std::path::Path;

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use crate::sqlite::{
    child_run, cold_in_cgroup, measure_emulated, stock_vs_extension, BenchOptions, Cache, Setting,
    SettingResult,
};
use crate::sqlite_report::{interval_column, requests_column};

/// The queries of `path`: one a line; blank lines and lines starting with `--` are skipped.
pub fn read_queries(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the queries file {}", path.display()))?;
    let queries: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("--"))
        .map(str::to_string)
        .collect();
    if queries.is_empty() {
        bail!(
            "{} holds no query: write one SQL query a line (lines starting with -- are comments)",
            path.display()
        );
    }
    Ok(queries)
}

/// One query in one setting.
#[derive(Debug, Clone, Serialize)]
pub struct QueryRow {
    /// The query.
    pub sql: String,
    /// Where it was measured: disk, cgroup, emulated or warm.
    pub setting: String,
    /// Rows it returns.
    pub rows: u64,
    /// Medians and pages.
    pub result: SettingResult,
}

/// Measures every query of `queries` in every setting of `settings` (disk, cgroup, emulated, warm).
pub fn run(
    opts: &BenchOptions,
    queries: &[String],
    settings: &[Setting],
    mut log: impl FnMut(&str),
) -> Result<Vec<QueryRow>> {
    if opts.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if let Some(other) = settings.iter().find(|s| !QUERY_SETTINGS.contains(s)) {
        bail!("setting {other:?} measures the paper's query only: with --queries use disk, cgroup, emulated or warm");
    }
    let db_bytes = std::fs::metadata(&opts.db)
        .with_context(|| format!("reading {}", opts.db.display()))?
        .len();
    for sql in queries {
        check_prepares(&opts.db, sql)?;
    }
    let mut rows = Vec::new();
    for sql in queries {
        let opts = BenchOptions {
            sql: sql.clone(),
            ..opts.clone()
        };
        for &setting in settings {
            log(&format!("{sql}: {setting:?}"));
            let (result, count) = match setting {
                Setting::Disk => {
                    stock_vs_extension(&opts, &opts.db, None, Cache::Cold, "disk", &mut log)?
                }
                Setting::Cgroup => cold_in_cgroup(&opts, db_bytes, &mut log)?,
                Setting::Emulated => measure_emulated(&opts, &mut log)?,
                _ => warm(&opts, &mut log)?,
            };
            rows.push(QueryRow {
                sql: sql.clone(),
                setting: format!("{setting:?}").to_lowercase(),
                rows: count,
                result,
            });
        }
    }
    Ok(rows)
}

/// The settings `--queries` measures.
const QUERY_SETTINGS: [Setting; 4] = [
    Setting::Disk,
    Setting::Cgroup,
    Setting::Emulated,
    Setting::Warm,
];

/// The query with the database in the page cache (one stock run first brings it in).
fn warm(opts: &BenchOptions, log: &mut impl FnMut(&str)) -> Result<(SettingResult, u64)> {
    child_run(opts, &opts.db, false, None)?;
    stock_vs_extension(opts, &opts.db, None, Cache::Warm, "warm", log)
}

/// Fails with one clear line unless stock SQLite can prepare `sql` on `db`.
fn check_prepares(db: &Path, sql: &str) -> Result<()> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", db.display()))?;
    if let Err(err) = conn.prepare(sql) {
        bail!(
            "{} cannot run the query {sql:?} ({err}): fix that line of the queries file",
            db.display()
        );
    }
    Ok(())
}

/// The rows as a text table: query, setting, runs, medians, ratio and its interval, pages read.
pub fn table(rows: &[QueryRow]) -> String {
    let mut out = String::from(
        "stock SQLite against SQLite with the prefetch extension, medians of alternated runs, identical rows checked;\n\
         95%: the distribution-free interval of the median of the pairs' ratios (stock run / the extension run after it)\n\n",
    );
    out += &format!(
        "{:>4} {:>9} {:>11} {:>9} {:>14} {:>7}  {:>17}  {:>8}  {}\n",
        "runs",
        "stock s",
        "extension s",
        "stock/ext",
        "95%",
        "rows",
        "pages stock/ext",
        "setting",
        "query"
    );
    for row in rows {
        let r = &row.result;
        let pages = match (r.stock_pages, r.extension_pages) {
            (Some(stock), Some(ext)) => format!("{stock}/{ext}"),
            _ => "-".to_string(),
        };
        out += &format!(
            "{:>4} {:>9.4} {:>11.4} {:>8.2}x {:>14} {:>7}  {:>17}  {:>8}  {}{}\n",
            r.stock_runs.len(),
            r.stock,
            r.extension,
            r.speedup,
            interval_column(r),
            row.rows,
            pages,
            row.setting,
            row.sql,
            requests_column(r)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queries_file_keeps_one_query_a_line_and_skips_comments() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("q.sql");
        std::fs::write(&file, "-- a comment\nSELECT 1\n\n  SELECT 2  \n").unwrap();
        assert_eq!(read_queries(&file).unwrap(), ["SELECT 1", "SELECT 2"]);
        std::fs::write(&file, "-- only a comment\n").unwrap();
        let err = read_queries(&file).unwrap_err().to_string();
        assert!(err.contains("holds no query"), "{err}");
    }
}
