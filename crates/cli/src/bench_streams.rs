//! `prefetch bench streams`: parses the options, runs `bench::streams` (TR840's concurrent
//! sequential readers on the emulated IBM 36Z15, stock vs `prefetch run --competitive`), prints
//! its table.
//!
//! Follows TR840 section 5.1 (One-Whole-0) through crate bench.

use ::bench::size::parse_size;
use ::bench::streams::{self, StreamsBench};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// Options of `prefetch bench streams`.
#[derive(Args)]
pub struct StreamsArgs {
    /// Numbers of concurrent readers, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    streams: Vec<usize>,
    /// Request schedulers of the emulated disk, comma-separated: `fifo` serves requests in
    /// arrival order (Linux's `none`, as behind a RAID controller); `deadline` sweeps by address
    /// (Linux's mq-deadline), letting one sequential reader run on while its next request waits
    #[arg(long, value_delimiter = ',', default_value = "fifo,deadline")]
    scheduler: Vec<String>,
    /// Size of each reader's file (TR840's files hold 4 MB)
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    file_size: u64,
    /// Measured runs per mode and concurrency; the table shows the median
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Wall seconds per emulated second (0.5 runs the disk twice as fast)
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// The libprefetch.so to preload [default: as `prefetch run` finds it]
    #[arg(long, value_name = "PATH")]
    library: Option<PathBuf>,
    /// Do not draw progress bars
    #[arg(long)]
    no_progress: bool,
}

/// Runs the benchmark and prints its table.
pub fn run(args: StreamsArgs) -> Result<()> {
    anyhow::ensure!(
        args.runs > 0 && args.streams.iter().all(|&n| n > 0),
        "--runs and every --streams count must be at least 1"
    );
    let bench = StreamsBench {
        counts: args.streams,
        schedulers: args.scheduler,
        file_bytes: args.file_size,
        runs: args.runs,
        time_scale: args.time_scale,
        prefetch: std::env::current_exe()?,
        library: match args.library {
            Some(path) => std::path::absolute(path)?,
            None => launch::exec::find_library()?,
        },
        show_progress: !args.no_progress,
    };
    let report = streams::run(&bench)?;
    print!("{}", streams::table(&bench, &report));
    Ok(())
}
