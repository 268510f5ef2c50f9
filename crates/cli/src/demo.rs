//! `prefetch demo` (what `make demo` runs): writes a 1 GiB data file if missing and prints the random-read
//! benchmark table, stock vs naive vs libprefetch, cold cache, on this machine's disk.
//!
//! The workload is the paper's Figure 2 pattern (section 3.2): 100,000 random 4 KiB pages with repeats.
//! Deviations: 1 GiB instead of the benchmark's 2 GiB default, so that a fresh machine finishes in
//! well under two minutes (`--file-size` makes it smaller still, for a quick check).

use std::path::PathBuf;

use ::bench::cache::Eviction;
use ::bench::size::{format_bytes, parse_size};
use ::bench::{BenchConfig, Launcher, Mode, Workload};
use anyhow::Result;
use clap::Args;

/// Options of `prefetch demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Data file [default: /tmp/libprefetch-bench/data-SIZE.bin, kept for the next run]
    #[arg(long)]
    file: Option<PathBuf>,
    /// Size of the data file
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    file_size: u64,
    /// Measured runs per mode
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

/// Random page reads in the demo.
const PAGES: u64 = 100_000;

/// Runs the demo and prints its table.
pub fn run(args: DemoArgs) -> Result<()> {
    let size = format_bytes(args.file_size);
    println!(
        "libprefetch demo: {PAGES} random 4 KiB reads (with repeats) of a {size} file, cold cache,"
    );
    println!("read three ways: stock preads, naive WILLNEED-everything-first, and libprefetch.");
    println!(
        "Same as: prefetch bench random --file-size {} --pages {PAGES} --runs {}",
        args.file_size, args.runs
    );
    let file = args
        .file
        .unwrap_or_else(|| ::bench::datafile::default_path(args.file_size));
    println!(
        "Data file: {} ({size}, written on the first run, kept for the next ones)\n",
        file.display()
    );
    let config = BenchConfig {
        workload: Workload::Random {
            pages: PAGES,
            seed: 1,
            span_bytes: args.file_size,
            abandon_after: None,
        },
        file: file.clone(),
        file_size: args.file_size,
        modes: Mode::ALL.to_vec(),
        runs: args.runs,
        eviction: Eviction::Fadvise,
        warm: false,
        memory_limits: Vec::new(),
        windows: Vec::new(),
        infill_bytes: None,
        show_progress: true,
        instances: 1,
        launcher: Some(Launcher::current_exe(&["bench", "__child"])?),
    };
    print!("{}", ::bench::run(&config)?.table());
    println!("\nNext: prefetch bench random --memory-limit 100M   (data larger than memory: naive falls behind)");
    println!("      prefetch bench strided --memory-limit 256M  (the paper's GIMP case, Figure 9)");
    println!(
        "\nThe {size} data file stays for the next run; delete it with: rm {}",
        file.display()
    );
    Ok(())
}
