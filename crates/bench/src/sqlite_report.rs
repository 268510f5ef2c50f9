//! What `prefetch bench sqlite` is asked to measure ([`BenchOptions`], the paper's query) and what it
//! reports: the medians of each setting ([`SettingResult`]) and the table they print as ([`Report`]).

use std::path::PathBuf;

use serde::Serialize;
use units::{median, median_interval};

/// The query of paper section 5.4.
pub const PAPER_QUERY: &str = "SELECT * FROM customer ORDER BY c_zip";

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// The database (made by `prefetch sqlite gen`).
    pub db: PathBuf,
    /// The extension to load.
    pub ext: PathBuf,
    /// The query.
    pub sql: String,
    /// Runs per variant (at least).
    pub runs: usize,
    /// More alternated pairs past `runs`, until the stock runs add up to this many seconds: short
    /// queries, whose medians a few runs cannot settle, run more often.
    pub min_seconds: f64,
    /// The most runs per variant `min_seconds` may ask for.
    pub max_runs: usize,
    /// The `prefetch` binary, whose `sqlite query` subcommand is each measured child process.
    pub runner: PathBuf,
    /// Memory limit of the cgroup setting (default: a quarter of the database).
    pub cgroup_bytes: Option<u64>,
    /// Wall seconds per emulated second of the emulated disk (`prefetch emulate --time-scale`).
    pub time_scale: f64,
    /// Whether the extension's connections ask for full scans listed whole (`prefetch_scan=whole`).
    pub whole_scans: bool,
}

/// Medians of one setting.
#[derive(Debug, Clone, Serialize)]
pub struct SettingResult {
    /// Which setting, named for the reader ("this machine's disk", "memory cgroup of ...", ...).
    pub setting: String,
    /// Seconds of each stock run.
    pub stock_runs: Vec<f64>,
    /// Seconds of each run with the extension.
    pub extension_runs: Vec<f64>,
    /// Median stock seconds.
    pub stock: f64,
    /// Median seconds with the extension.
    pub extension: f64,
    /// stock / extension.
    pub speedup: f64,
    /// The 95% interval of the median of the pairs' ratios (each stock run over the extension run
    /// after it), distribution-free; None with fewer than 6 pairs.
    pub ratio_interval: Option<(f64, f64)>,
    /// Warm-cache seconds (stock, file fully cached), when measured.
    pub warm: Option<f64>,
    /// Seconds to read the file sequentially from a cold cache, when measured.
    pub sequential_read: Option<f64>,
    /// Median pages read from storage by a stock run, when measured.
    pub stock_pages: Option<u64>,
    /// Median pages read from storage by a run with the extension, when measured.
    pub extension_pages: Option<u64>,
    /// Pages the optimum reads for the query in the setting's memory, when computed.
    pub optimum_pages: Option<u64>,
    /// Median requests the emulated disk served to a stock run (emulated setting only).
    pub stock_requests: Option<u64>,
    /// Median requests the emulated disk served to a run with the extension (emulated setting only).
    pub extension_requests: Option<u64>,
}

/// The whole benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The query.
    pub sql: String,
    /// The database file.
    pub db: PathBuf,
    /// Its size in bytes.
    pub db_bytes: u64,
    /// Rows the query returns.
    pub rows: u64,
    /// Runs per variant.
    pub runs: usize,
    /// How the cache was emptied before each run.
    pub eviction: String,
    /// One entry per setting measured.
    pub results: Vec<SettingResult>,
    /// Settings that could not be measured, and why.
    pub skipped: Vec<(String, String)>,
}

impl SettingResult {
    pub(crate) fn new(
        setting: String,
        stock_runs: Vec<f64>,
        extension_runs: Vec<f64>,
    ) -> SettingResult {
        let stock = median(&stock_runs);
        let extension = median(&extension_runs);
        let ratios: Vec<f64> = stock_runs
            .iter()
            .zip(&extension_runs)
            .map(|(stock, ext)| stock / ext)
            .collect();
        SettingResult {
            ratio_interval: median_interval(&ratios, 0.95),
            setting,
            stock_runs,
            extension_runs,
            stock,
            extension,
            speedup: stock / extension,
            warm: None,
            sequential_read: None,
            stock_pages: None,
            extension_pages: None,
            optimum_pages: None,
            stock_requests: None,
            extension_requests: None,
        }
    }
}

impl Report {
    /// The report as a text table, each row naming its setting.
    pub fn table(&self) -> String {
        let mut out = format!(
            "SQLite index scan (paper s5.4): {}\non {} ({:.1} MiB, {} rows), median of at least {} runs each (cold, cache emptied by {}, unless the setting says warm or WAL)\n\n",
            self.sql,
            self.db.display(),
            self.db_bytes as f64 / f64::from(1 << 20),
            self.rows,
            self.runs,
            self.eviction
        );
        let width = self
            .results
            .iter()
            .map(|r| r.setting.len())
            .max()
            .unwrap_or(0)
            .max(7);
        out += &format!(
            "{:<width$} {:>10} {:>12} {:>8}  {}\n",
            "setting",
            "stock s",
            "extension s",
            "speedup",
            "pages read: stock / extension / optimum"
        );
        for r in &self.results {
            out += &format!(
                "{:<width$} {:>10.2} {:>12.2} {:>7.2}x  {}\n",
                r.setting,
                r.stock,
                r.extension,
                r.speedup,
                pages_column(r)
            );
        }
        for r in &self.results {
            if let (Some(warm), Some(seq)) = (r.warm, r.sequential_read) {
                let bound = warm.max(seq);
                out += &format!(
                    "\nlower bounds on {}: warm cache {warm:.2} s, sequential read {seq:.2} s;\n\
                     extension / max(warm, sequential) = {:.2}x, extension / (sequential + warm) = {:.2}x\n",
                    r.setting,
                    r.extension / bound,
                    r.extension / (seq + warm)
                );
            }
        }
        for (setting, why) in &self.skipped {
            out += &format!("\n{setting}: not measured: {why}\n");
        }
        out
    }
}

/// "840123 / 672001 / 233000 (2.88x)": pages read by stock and the extension, the optimum's, and the
/// extension's against the optimum ("-" where not measured), then the emulated disk's requests.
fn pages_column(r: &SettingResult) -> String {
    let show = |pages: Option<u64>| pages.map_or("-".to_string(), |p| p.to_string());
    let ratio = match (r.extension_pages, r.optimum_pages) {
        (Some(ext), Some(opt)) if opt > 0 => format!(" ({:.2}x)", ext as f64 / opt as f64),
        _ => String::new(),
    };
    format!(
        "{} / {} / {}{ratio}{}",
        show(r.stock_pages),
        show(r.extension_pages),
        show(r.optimum_pages),
        requests_column(r)
    )
}

/// "[0.95, 1.04]": the 95% interval of the pairs' ratio, or "-" with too few pairs.
pub fn interval_column(r: &SettingResult) -> String {
    r.ratio_interval.map_or("-".to_string(), |(low, high)| {
        format!("[{low:.2}, {high:.2}]")
    })
}

/// "; requests 12590 / 512": the emulated disk's requests, stock's and the extension's; "" where not
/// counted.
pub fn requests_column(r: &SettingResult) -> String {
    match (r.stock_requests, r.extension_requests) {
        (Some(stock), Some(ext)) => format!("; requests {stock} / {ext}"),
        _ => String::new(),
    }
}
