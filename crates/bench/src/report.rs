//! The benchmark's results: medians per mode, speedups over stock, the setting they were measured in,
//! and their renderings as a text table and JSON.
//!
//! Speedup is stock's median wall time divided by the mode's, within the same cache state (cold or
//! warm), as in the paper's Figures 8-10. Bytes read from disk are medians of /proc/self/io read_bytes.

use std::fmt::Write as _;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::config::BenchConfig;
use crate::mode::Mode;
use crate::optimum::optimum_pages;
use crate::outcome::Outcome;
use crate::setting::Storage;
use crate::size::format_bytes;
use crate::workload::{requested_bytes, Read, Workload, PAGE_SIZE};

/// Whether the cache was emptied before the measured runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheState {
    /// The data file was evicted before every run.
    Cold,
    /// The data file was left cached by a previous run.
    Warm,
}

impl CacheState {
    fn name(self) -> &'static str {
        match self {
            CacheState::Cold => "cold",
            CacheState::Warm => "warm",
        }
    }
}

/// The measurements of one pass: what a child process prints on stdout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Wall-clock seconds of the pass (advice, list hand-over and reads; not the list generation).
    pub wall_seconds: f64,
    /// Bytes read from storage during the pass (/proc/self/io read_bytes, or the emulated disk's counter).
    pub read_bytes: u64,
    /// Checksum and byte count of what was read.
    pub outcome: Outcome,
}

/// The measurements of one mode (and window) in one cache state.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The mode.
    pub mode: Mode,
    /// libprefetch's reorder-buffer cap, if one was set.
    pub window_bytes: Option<u64>,
    /// Cold or warm.
    pub cache: CacheState,
    /// The memory cgroup limit the runs had, if any.
    pub memory_limit_bytes: Option<u64>,
    /// Median wall time in seconds.
    pub median_wall_seconds: f64,
    /// Stock's median over this row's median (same cache state and memory limit); None without one.
    pub speedup_over_stock: Option<f64>,
    /// Median bytes read from storage per run.
    pub median_read_bytes: u64,
    /// Pages the optimum reads for the same list in the same memory (all instances together).
    pub optimum_pages: Option<u64>,
    /// Every run, in the order they ran.
    pub runs: Vec<RunResult>,
}

impl Row {
    /// A row from its runs (at least one), without a memory limit; [`Report::new`] fills in the speedup.
    pub fn new(
        mode: Mode,
        window_bytes: Option<u64>,
        cache: CacheState,
        runs: Vec<RunResult>,
    ) -> Row {
        let walls: Vec<f64> = runs.iter().map(|run| run.wall_seconds).collect();
        let reads: Vec<f64> = runs.iter().map(|run| run.read_bytes as f64).collect();
        Row {
            mode,
            window_bytes,
            cache,
            memory_limit_bytes: None,
            median_wall_seconds: median(&walls),
            speedup_over_stock: None,
            median_read_bytes: median(&reads).round() as u64,
            optimum_pages: None,
            runs,
        }
    }
}

/// The median of `values` (mean of the middle two for an even count; 0 for none).
pub use units::median;

/// A whole benchmark result: what was run, where, and the rows.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The access pattern's parameters.
    pub workload: Workload,
    /// One-line description of the workload.
    pub description: String,
    /// The data file.
    pub file: PathBuf,
    /// Its size in bytes.
    pub file_bytes: u64,
    /// The setting in words: storage, and the memory cgroups if any.
    pub setting: String,
    /// The storage under the data file.
    pub storage: Storage,
    /// The memory cgroups the runs were confined to, in row order (empty: none).
    pub memory_cgroups: Vec<String>,
    /// How the cache was emptied before each cold run.
    pub cold_cache: String,
    /// Measured runs per row.
    pub runs_per_row: usize,
    /// Concurrent instances per pass (each its own process and copy of the data file).
    pub instances: usize,
    /// libprefetch's infill if set by the caller (None: the library's default).
    pub infill_bytes: Option<u64>,
    /// Bytes every pass returns to the application (repeats counted).
    pub bytes_per_pass: u64,
    /// CRC-32 of the bytes every pass read (the same in every run of every mode).
    pub checksum: String,
    /// One row per mode (and window), cache state and memory limit.
    pub rows: Vec<Row>,
}

impl Report {
    /// Assembles a report, checking that every run read the same bytes and computing speedups.
    pub fn new(
        config: &BenchConfig,
        storage: Storage,
        memory_cgroups: Vec<String>,
        mut rows: Vec<Row>,
    ) -> Result<Report> {
        let checksum = common_checksum(&rows)?;
        fill_speedups(&mut rows);
        fill_optimum(&mut rows, &config.workload.reads(), config.instances)?;
        let setting = match memory_cgroups.as_slice() {
            [] => storage.describe(),
            [group] => format!("{} inside a {group}", storage.describe()),
            [first, ..] => format!(
                "{} inside memory cgroups of {} (one per size, column \"memory\"{}",
                storage.describe(),
                memory_sizes(&rows),
                first
                    .split_once(" (")
                    .map_or_else(|| ")".to_string(), |(_, kind)| format!("; {kind}")),
            ),
        };
        Ok(Report {
            description: config.workload.describe(),
            workload: config.workload.clone(),
            file: config.file.clone(),
            file_bytes: config.file_size,
            setting,
            storage,
            memory_cgroups,
            cold_cache: config.eviction.describe().to_string(),
            runs_per_row: config.runs,
            instances: config.instances,
            infill_bytes: config.infill_bytes,
            bytes_per_pass: requested_bytes(&config.workload.reads()),
            checksum: format!("{checksum:#010x}"),
            rows,
        })
    }

    /// The report as an aligned text table with its header lines.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.description);
        let _ = writeln!(out, "measured on: {}", self.setting);
        let _ = writeln!(
            out,
            "data file: {} ({}); cold cache: {} before each run; median of {} run(s)",
            self.file.display(),
            format_bytes(self.file_bytes),
            self.cold_cache,
            self.runs_per_row
        );
        if self.instances > 1 {
            let _ = writeln!(
                out,
                "{} concurrent instances, each its own process and copy of the data file: wall = the slowest, read from disk = all",
                self.instances
            );
        }
        if let Some(infill) = self.infill_bytes {
            let _ = writeln!(out, "libprefetch infill: {}", format_bytes(infill));
        }
        out.push('\n');
        let sweep = self.is_memory_sweep();
        let mut header = vec![
            "mode",
            "cache",
            "wall (s)",
            "vs stock",
            "read from disk",
            "pages read / optimum's",
            "runs (s)",
        ];
        if sweep {
            header.insert(1, "memory");
        }
        let header: Vec<String> = header.into_iter().map(String::from).collect();
        let lines: Vec<Vec<String>> = self.rows.iter().map(|row| row_cells(row, sweep)).collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|column| {
                lines
                    .iter()
                    .map(|cells| cells[column].len())
                    .chain([header[column].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        push_line(&mut out, &header, &widths);
        for cells in &lines {
            push_line(&mut out, cells, &widths);
        }
        out.push('\n');
        for line in self.headlines() {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "every run of every mode read the same {} (crc32 {})",
            format_bytes(self.bytes_per_pass),
            self.checksum
        );
        if matches!(self.storage, Storage::Emulated { .. }) {
            out.push_str("read from disk: bytes the emulated disk served (its .emulate-stats)\n");
        }
        out
    }

    /// One sentence per cache state comparing libprefetch (library budget) with stock and naive,
    /// e.g. "cold: libprefetch is 4.52x stock and 4.75x naive and 0.80x limit-cache and 0.64x limit"
    /// (each mode's median time over the library's: below 1 against a limit is the gap left).
    pub fn headlines(&self) -> Vec<String> {
        let mut settings: Vec<(CacheState, Option<u64>)> = Vec::new();
        for row in &self.rows {
            if !settings.contains(&(row.cache, row.memory_limit_bytes)) {
                settings.push((row.cache, row.memory_limit_bytes));
            }
        }
        settings
            .into_iter()
            .filter_map(|(cache, memory)| self.headline(cache, memory))
            .collect()
    }

    /// The headline of one cache state and memory limit, if it has a libprefetch row to compare.
    fn headline(&self, cache: CacheState, memory: Option<u64>) -> Option<String> {
        let median = |mode: Mode| {
            self.rows
                .iter()
                .find(|row| {
                    row.mode == mode
                        && row.cache == cache
                        && row.memory_limit_bytes == memory
                        && row.window_bytes.is_none()
                })
                .map(|row| row.median_wall_seconds)
        };
        let library = median(Mode::Libprefetch).filter(|&seconds| seconds > 0.0)?;
        let ratios: Vec<String> = [Mode::Stock, Mode::Naive, Mode::LimitCache, Mode::Limit]
            .into_iter()
            .filter_map(|mode| Some(format!("{:.2}x {}", median(mode)? / library, mode.name())))
            .collect();
        let label = match memory.filter(|_| self.is_memory_sweep()) {
            Some(bytes) => format!("{}, memory {}", cache.name(), format_bytes(bytes)),
            None => cache.name().to_string(),
        };
        (!ratios.is_empty()).then(|| format!("{label}: libprefetch is {}", ratios.join(" and ")))
    }

    /// True if the rows come from several memory limits (a memory sweep).
    pub fn is_memory_sweep(&self) -> bool {
        self.memory_cgroups.len() > 1
    }

    /// The report as pretty-printed JSON.
    pub fn json(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(self)?)
    }
}

fn row_cells(row: &Row, with_memory: bool) -> Vec<String> {
    let mode = match row.window_bytes {
        Some(bytes) => format!("{} (window {})", row.mode.name(), format_bytes(bytes)),
        None => row.mode.name().to_string(),
    };
    let speedup = row
        .speedup_over_stock
        .map_or_else(|| "-".to_string(), |speedup| format!("{speedup:.2}x"));
    let runs: Vec<String> = row
        .runs
        .iter()
        .map(|run| format!("{:.3}", run.wall_seconds))
        .collect();
    let mut cells = vec![
        mode,
        row.cache.name().to_string(),
        format!("{:.3}", row.median_wall_seconds),
        speedup,
        format_bytes(row.median_read_bytes),
        pages_against_optimum(row),
        runs.join(" "),
    ];
    if with_memory {
        cells.insert(
            1,
            row.memory_limit_bytes
                .map_or_else(|| "-".into(), format_bytes),
        );
    }
    cells
}

/// "24414 / 22100 (1.10x)": the row's pages read from disk against the optimum's.
fn pages_against_optimum(row: &Row) -> String {
    let pages = row.median_read_bytes / PAGE_SIZE;
    match row.optimum_pages {
        Some(optimum) if optimum > 0 => {
            format!(
                "{pages} / {optimum} ({:.2}x)",
                pages as f64 / optimum as f64
            )
        }
        _ => format!("{pages} / -"),
    }
}

/// Fills every row's optimum: `opt-demand`'s fetches for the list, in the row's memory limit shared
/// by `instances` copies of the workload (each with its own file), times `instances`.
fn fill_optimum(rows: &mut [Row], reads: &[Read], instances: usize) -> Result<()> {
    let instances = instances.max(1) as u64;
    let mut known: Vec<(Option<u64>, u64)> = Vec::new();
    for row in rows.iter_mut() {
        let limit = row.memory_limit_bytes;
        let optimum = match known.iter().find(|(memory, _)| *memory == limit) {
            Some(&(_, pages)) => pages,
            None => {
                let pages = optimum_pages(reads, limit.map(|bytes| bytes / instances))? * instances;
                known.push((limit, pages));
                pages
            }
        };
        row.optimum_pages = Some(optimum);
    }
    Ok(())
}

fn push_line(out: &mut String, cells: &[String], widths: &[usize]) {
    let padded: Vec<String> = cells
        .iter()
        .zip(widths)
        .map(|(cell, &width)| format!("{cell:<width$}"))
        .collect();
    out.push_str(padded.join("  ").trim_end());
    out.push('\n');
}

/// The distinct memory limits of `rows`, in order: "256.0 MiB, 512.0 MiB, 1.00 GiB".
fn memory_sizes(rows: &[Row]) -> String {
    let mut sizes: Vec<String> = Vec::new();
    for size in rows
        .iter()
        .filter_map(|row| row.memory_limit_bytes)
        .map(format_bytes)
    {
        if !sizes.contains(&size) {
            sizes.push(size);
        }
    }
    sizes.join(", ")
}

/// The checksum all runs share, or an error naming the mode that read different bytes.
fn common_checksum(rows: &[Row]) -> Result<u32> {
    let mut expected: Option<(u32, &str)> = None;
    for row in rows.iter().filter(|row| row.mode.reads_the_list()) {
        for run in &row.runs {
            match expected {
                None => expected = Some((run.outcome.checksum, row.mode.name())),
                Some((checksum, first)) if checksum != run.outcome.checksum => bail!(
                    "{} read different bytes than {first} (crc32 {:#010x} vs {checksum:#010x}): a mode changed the data",
                    row.mode.name(),
                    run.outcome.checksum
                ),
                Some(_) => {}
            }
        }
    }
    expected
        .map(|(checksum, _)| checksum)
        .ok_or_else(|| anyhow::anyhow!("no runs were measured"))
}

fn fill_speedups(rows: &mut [Row]) {
    let stock = |of: &Row, rows: &[Row]| {
        rows.iter()
            .find(|row| {
                row.mode == Mode::Stock
                    && row.cache == of.cache
                    && row.memory_limit_bytes == of.memory_limit_bytes
            })
            .map(|row| row.median_wall_seconds)
    };
    let baselines: Vec<Option<f64>> = rows.iter().map(|row| stock(row, rows)).collect();
    for (row, baseline) in rows.iter_mut().zip(baselines) {
        row.speedup_over_stock = baseline
            .filter(|_| row.median_wall_seconds > 0.0)
            .map(|base| base / row.median_wall_seconds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cache::Eviction;
    use crate::outcome::Outcome;

    fn run_taking(seconds: f64) -> RunResult {
        RunResult {
            wall_seconds: seconds,
            read_bytes: 0,
            outcome: Outcome {
                checksum: 1,
                bytes: 4096,
                library: None,
            },
        }
    }

    fn row(mode: Mode, memory: u64, seconds: f64) -> Row {
        Row {
            memory_limit_bytes: Some(memory << 20),
            ..Row::new(mode, None, CacheState::Cold, vec![run_taking(seconds)])
        }
    }

    #[test]
    fn a_memory_sweep_compares_each_mode_with_stock_at_the_same_limit() {
        let config = BenchConfig {
            workload: Workload::Sequential {
                span_bytes: 4096,
                read_bytes: 4096,
            },
            file: PathBuf::from("/tmp/data"),
            file_size: 4096,
            modes: Mode::ALL.to_vec(),
            runs: 1,
            eviction: Eviction::Fadvise,
            warm: false,
            memory_limits: vec![64 << 20, 256 << 20],
            windows: Vec::new(),
            infill_bytes: None,
            show_progress: false,
            instances: 1,
            launcher: None,
        };
        let rows = vec![
            row(Mode::Stock, 64, 8.0),
            row(Mode::Naive, 64, 16.0),
            row(Mode::Libprefetch, 64, 2.0),
            row(Mode::Stock, 256, 3.0),
            row(Mode::Naive, 256, 1.5),
            row(Mode::Libprefetch, 256, 1.0),
        ];
        let groups = vec![
            "memory cgroup of 64.0 MiB (v1 memory.limit_in_bytes)".into(),
            "memory cgroup of 256.0 MiB (v1 memory.limit_in_bytes)".into(),
        ];
        let report = Report::new(&config, Storage::of(Path::new("/")), groups, rows).unwrap();
        let speedups: Vec<f64> = report
            .rows
            .iter()
            .map(|row| row.speedup_over_stock.unwrap())
            .collect();
        assert_eq!(speedups, vec![1.0, 0.5, 4.0, 1.0, 2.0, 3.0]);
        assert_eq!(
            report.headlines(),
            vec![
                "cold, memory 64.0 MiB: libprefetch is 4.00x stock and 8.00x naive",
                "cold, memory 256.0 MiB: libprefetch is 3.00x stock and 1.50x naive",
            ]
        );
        let table = report.table();
        assert!(
            table.contains("inside memory cgroups of 64.0 MiB, 256.0 MiB (one per size, column \"memory\"; v1 memory.limit_in_bytes)"),
            "{table}"
        );
        assert!(
            table
                .lines()
                .any(|line| line.starts_with("mode ") && line.contains("memory")),
            "{table}"
        );
    }

    #[test]
    fn runs_that_read_different_bytes_fail_the_report() {
        let mut rows = vec![
            Row::new(Mode::Stock, None, CacheState::Cold, vec![run_taking(1.0)]),
            Row::new(
                Mode::Libprefetch,
                None,
                CacheState::Cold,
                vec![run_taking(1.0)],
            ),
        ];
        rows[1].runs[0].outcome.checksum = 2;
        let error = common_checksum(&rows).unwrap_err().to_string();
        assert!(
            error.contains("libprefetch read different bytes than stock"),
            "{error}"
        );
    }

    #[test]
    fn median_of_odd_even_and_empty_lists() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}
