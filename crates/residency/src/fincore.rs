//! `prefetch fincore`: which pages of files are in the page cache, as util-linux `fincore`
//! and `vmtouch` print it: one row per file with its resident size, resident pages, file size
//! and percentage, optionally the resident page ranges; or the same as JSON.
//!
//! ```text
//!      RES   PAGES    SIZE  PERCENT  FILE
//!     256K      64      1M    25.0%  data.bin
//! ```
//!
//! Follows libprefetch (ATC 2009) section 4.5's `fincore` (see [`crate::probe`]).

use std::fs::File;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::files::expand_past_errors;
use crate::probe::{page_size, probe_file, CacheCounters, Probe};
use crate::Error;

/// The residency of one file, as a row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The path, as given or as found under a directory given.
    pub path: PathBuf,
    /// File size, bytes.
    pub size: u64,
    /// Pages the file spans.
    pub pages: u64,
    /// Pages in the cache.
    pub resident_pages: u64,
    /// Bytes in the cache (resident pages times the page size, at most the size).
    pub resident_bytes: u64,
    /// Resident pages over pages, in percent (0 for an empty file).
    pub percent: f64,
    /// How the kernel was asked.
    pub probe: Probe,
    /// cachestat's dirty, writeback and evicted counts (absent with mincore).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub counters: Option<CacheCounters>,
    /// Resident page runs `[start, end)`, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranges: Option<Vec<[u64; 2]>>,
}

/// The rows of the files `paths` name (directories recursed), and the paths that failed with
/// why. `ranges` adds each file's resident page runs.
pub fn fincore(paths: &[PathBuf], ranges: bool) -> (Vec<Row>, Vec<Error>) {
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for given in paths {
        let (files, unreadable) = expand_past_errors(std::slice::from_ref(given));
        errors.extend(unreadable);
        for path in files {
            match row(&path, ranges) {
                Ok(row) => rows.push(row),
                Err(error) => errors.push(error),
            }
        }
    }
    (rows, errors)
}

/// The row of one regular file.
pub fn row(path: &Path, ranges: bool) -> Result<Row, Error> {
    let file = File::open(path).map_err(|source| Error::Open {
        path: path.to_path_buf(),
        action: "open",
        source,
    })?;
    let probing = |source| Error::Probe {
        path: path.to_path_buf(),
        source,
    };
    let size = file.metadata().map_err(probing)?.len();
    let residency = probe_file(&file, size, Probe::detect(&file)).map_err(probing)?;
    let resident_pages = residency.resident.page_count();
    Ok(Row {
        path: path.to_path_buf(),
        size,
        pages: residency.pages,
        resident_pages,
        resident_bytes: (resident_pages * page_size()).min(size),
        percent: percent(resident_pages, residency.pages),
        probe: residency.probe,
        counters: residency.counters,
        ranges: ranges.then(|| {
            residency
                .resident
                .runs()
                .iter()
                .map(|run| [run.start, run.end])
                .collect()
        }),
    })
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The rows as a table, with a total line when there are several; ranges as `0-15,32` when
/// the rows carry them.
pub fn table(rows: &[Row]) -> String {
    let with_ranges = rows.iter().any(|row| row.ranges.is_some());
    let mut out = format!(
        "{:>8} {:>10} {:>8} {:>8}  FILE{}\n",
        "RES",
        "PAGES",
        "SIZE",
        "PERCENT",
        if with_ranges { "  RANGES" } else { "" }
    );
    for row in rows {
        out += &line(
            row.resident_bytes,
            row.resident_pages,
            row.size,
            percent(row.resident_pages, row.pages),
            &row.path.display().to_string(),
        );
        if let Some(ranges) = &row.ranges {
            out += "  ";
            out += &ranges_text(ranges);
        }
        out += "\n";
    }
    if rows.len() > 1 {
        let sum = |f: fn(&Row) -> u64| rows.iter().map(f).sum::<u64>();
        out += &line(
            sum(|r| r.resident_bytes),
            sum(|r| r.resident_pages),
            sum(|r| r.size),
            percent(sum(|r| r.resident_pages), sum(|r| r.pages)),
            &format!("total ({} files)", rows.len()),
        );
        out += "\n";
    }
    out
}

fn line(resident: u64, pages: u64, size: u64, percent: f64, name: &str) -> String {
    format!(
        "{:>8} {pages:>10} {:>8} {:>7.1}%  {name}",
        human(resident),
        human(size),
        percent
    )
}

/// Runs `[start, end)` as util-linux prints page ranges: inclusive, `"0-15,32"`; `"-"` if none.
pub fn ranges_text(ranges: &[[u64; 2]]) -> String {
    let runs = crate::runs::PageRuns::from_unsorted(ranges.iter().map(|&[s, e]| s..e).collect());
    runs.to_ranges_text()
}

/// Bytes with a binary suffix, as util-linux prints sizes: `0B`, `4K`, `1.5M`, `1G`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "K", "M", "G", "T", "P"];
    let (value, unit) = units::scale(bytes as f64, 1024.0, 1024.0, UNITS.len());
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}{}", UNITS[unit])
    } else {
        format!("{rounded:.1}{}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_util_linux_does() {
        assert_eq!(human(0), "0B");
        assert_eq!(human(4096), "4K");
        assert_eq!(human(3 << 19), "1.5M");
        assert_eq!(human(1 << 30), "1G");
    }

    #[test]
    fn table_of_the_module_example() {
        let row = Row {
            path: PathBuf::from("data.bin"),
            size: 1 << 20,
            pages: 256,
            resident_pages: 64,
            resident_bytes: 256 << 10,
            percent: 25.0,
            probe: Probe::Cachestat,
            counters: None,
            ranges: None,
        };
        assert_eq!(
            table(&[row]),
            "     RES      PAGES     SIZE  PERCENT  FILE\n    256K         64       1M    25.0%  data.bin\n"
        );
    }
}
