//! `prefetch fincore`, `prefetch snapshot` and `prefetch restore`: the page-cache residency tools
//! of crate `residency` (formats and examples in docs/residency.md).
//!
//! Follows libprefetch (ATC 2009) section 4.5 (`fincore`) and sections 3.3 and 4.6 for restore's
//! C-LOOK order, infill and memory budget; see crate `residency`.

use std::path::PathBuf;

use ::bench::size::{format_bytes, parse_size};
use ::residency::probe::page_size;
use ::residency::restore::{BudgetFrom, Options, Summary};
use ::residency::Snapshot;
use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

/// Arguments of `prefetch fincore`.
#[derive(Args)]
pub struct FincoreArgs {
    /// Files to probe; directories are recursed (regular files only, links inside not followed)
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Also list the resident page ranges (inclusive page numbers, e.g. 0-15,32)
    #[arg(long)]
    pages: bool,
    /// Print JSON (one object with a "files" array) instead of a table
    #[arg(long)]
    json: bool,
}

/// Arguments of `prefetch snapshot`.
#[derive(Args)]
pub struct SnapshotArgs {
    /// Snapshot file to write (JSON, see docs/residency.md)
    #[arg(short, long)]
    output: PathBuf,
    /// Files to snapshot; directories are recursed
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// Arguments of `prefetch restore`.
#[derive(Args)]
pub struct RestoreArgs {
    /// Snapshot file written by `prefetch snapshot`
    snapshot: PathBuf,
    /// Most memory the restore may fill (K, M, G suffixes); capped by the room the system and the
    /// memory cgroup have [default: that room]
    #[arg(long, value_parser = parse_size)]
    max_memory: Option<u64>,
    /// Largest gap between two runs read to join them (infill); a device's break-even gap is its
    /// per-request cost times its transfer rate (about 512K on a 7200 RPM disk reading forward)
    #[arg(long, default_value = "32K", value_parser = parse_size)]
    infill: u64,
    /// Read only the snapshot's pages (same as --infill 0)
    #[arg(long, conflicts_with = "infill")]
    no_infill: bool,
    /// Print the summary as JSON
    #[arg(long)]
    json: bool,
    /// Do not draw the progress bar (it is drawn only on a terminal anyway)
    #[arg(long)]
    no_progress: bool,
}

/// What `prefetch fincore --json` prints.
#[derive(serde::Serialize)]
struct FincoreJson<'a> {
    page_size: u64,
    files: &'a [::residency::fincore::Row],
}

/// Runs `prefetch fincore`: rows for the files that could be probed, one error line for each
/// that could not (the last one is the command's error, so the exit status says so).
pub fn fincore(args: FincoreArgs) -> Result<()> {
    let (rows, mut errors) = ::residency::fincore::fincore(&args.paths, args.pages);
    if args.json {
        let output = FincoreJson {
            page_size: page_size(),
            files: &rows,
        };
        println!("{}", serde_json::to_string(&output)?);
    } else if !rows.is_empty() {
        print!("{}", ::residency::fincore::table(&rows));
    }
    let last = errors.pop();
    for error in errors {
        eprintln!("prefetch: fincore: {error}");
    }
    match last {
        Some(error) => Err(anyhow::Error::new(error).context("fincore")),
        None => Ok(()),
    }
}

/// Runs `prefetch snapshot`.
pub fn snapshot(args: SnapshotArgs) -> Result<()> {
    let snapshot = Snapshot::take(&args.paths).context("snapshot")?;
    snapshot.save(&args.output).context("snapshot")?;
    let pages = snapshot.page_count();
    println!(
        "{}: {} file(s), {pages} cached pages ({})",
        args.output.display(),
        snapshot.files.len(),
        format_bytes(pages * page_size())
    );
    Ok(())
}

/// Runs `prefetch restore`.
pub fn restore(args: RestoreArgs) -> Result<()> {
    let snapshot = Snapshot::load(&args.snapshot).context("restore")?;
    let options = Options {
        max_memory: args.max_memory,
        infill_bytes: if args.no_infill { 0 } else { args.infill },
    };
    let bar = progress_bar(!args.no_progress);
    let summary = ::residency::restore(&snapshot, &options, &mut |done, total| {
        bar.set_length(total * page_size());
        bar.set_position(done * page_size());
    })
    .context("restore")?;
    bar.finish_and_clear();
    for skipped in &summary.skipped {
        eprintln!(
            "prefetch: restore: warning: skipped {}: {}",
            skipped.path.display(),
            skipped.reason
        );
    }
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        println!("{}", summary_text(&summary));
    }
    Ok(())
}

fn progress_bar(enabled: bool) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(
        "restoring [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// The summary as a few lines of words.
fn summary_text(summary: &Summary) -> String {
    let bytes = |pages: u64| format_bytes(pages * page_size());
    let mut text = format!(
        "restored {} missing pages ({}) and {} infill pages ({}) in {:.2} s; \
         {} of the snapshot's {} pages were cached already",
        summary.missing_pages_read,
        bytes(summary.missing_pages_read),
        summary.infill_pages,
        bytes(summary.infill_pages),
        summary.seconds,
        summary.resident_pages,
        summary.snapshot_pages,
    );
    text += &format!(
        "\nfiles: {} in the snapshot, {} skipped",
        summary.files,
        summary.skipped.len()
    );
    if summary.over_budget_pages > 0 {
        let source = match summary.budget_from {
            BudgetFrom::MaxMemory => "--max-memory",
            BudgetFrom::Room => "the memory the system and its memory cgroup have room for",
        };
        text += &format!(
            "\n{} pages ({}) not restored: over the memory budget of {} ({source})",
            summary.over_budget_pages,
            bytes(summary.over_budget_pages),
            bytes(summary.budget_pages)
        );
    }
    if summary.not_loaded_pages > 0 {
        text += &format!(
            "\n{} advised pages were not cached at the end (evicted again after loading)",
            summary.not_loaded_pages
        );
    }
    text
}

/// Arguments of `prefetch bench restore`.
#[derive(Args)]
pub struct RestoreBenchArgs {
    /// Data file; written (pseudo-random bytes) if missing
    /// [default: /tmp/libprefetch-bench/restore/data-SIZE.bin]
    #[arg(long)]
    file: Option<PathBuf>,
    /// Size of the data file (K, M, G suffixes)
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    file_size: u64,
    /// Share of the file's pages the snapshot holds
    #[arg(long, default_value_t = 0.25)]
    fraction: f64,
    /// Length of each run of cached pages in the snapshot, placed at random
    #[arg(long, default_value = "1M", value_parser = parse_size)]
    run_size: u64,
    /// Seed of the runs' places
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Measured runs per mode; the table shows the median
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Where to measure, comma-separated: emulated (the 7200 RPM model), disk (this machine's)
    #[arg(long, value_delimiter = ',', default_value = "emulated,disk", value_parser = ["emulated", "disk"])]
    settings: Vec<String>,
    /// Wall seconds per model second of the emulated disk
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Infill of the restore (0: only the snapshot's pages, as `restore --no-infill`)
    #[arg(long, default_value = "0", value_parser = parse_size)]
    infill: u64,
    /// Do not draw progress bars
    #[arg(long)]
    no_progress: bool,
}

/// Runs `prefetch bench restore` and prints its table.
pub fn bench(args: RestoreBenchArgs) -> Result<()> {
    anyhow::ensure!(
        args.fraction > 0.0 && args.fraction <= 1.0,
        "--fraction must be more than 0 and at most 1, e.g. 0.25"
    );
    let file = args.file.unwrap_or_else(|| {
        PathBuf::from(::bench::restore::DEFAULT_DIR).join(format!("data-{}.bin", args.file_size))
    });
    let config = ::bench::restore::RestoreBench {
        file,
        file_size: args.file_size,
        fraction: args.fraction,
        run_bytes: args.run_size.max(page_size()),
        seed: args.seed,
        runs: args.runs.max(1),
        emulated: args.settings.iter().any(|s| s == "emulated"),
        disk: args.settings.iter().any(|s| s == "disk"),
        time_scale: args.time_scale,
        infill_bytes: args.infill,
        show_progress: !args.no_progress,
    };
    let rows = ::bench::restore::run(&config).context("bench restore")?;
    print!("{}", ::bench::restore::table(&config, &rows));
    Ok(())
}
