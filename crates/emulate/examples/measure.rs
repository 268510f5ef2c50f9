//! Measures the emulated disk through a real mount and prints the results
//! beside the disk model's prediction: cold random 4 KiB reads spread over a
//! sparse file as large as most of the disk (so seeks span the platter, as in
//! the model's average-seek figure), and sequential reads with and without
//! the whole range queued.
//!
//! Run: `cargo run --release -p emulate --example measure -- --model st3500320as`
//! (needs /dev/fuse and fusermount3). The results table lives in docs/emulate.md.

use clap::Parser;
use emulate::measure::{self, PAGE};
use emulate::{Config, Placement};
use std::fs::{self, File};

/// Measure an emulated disk against its model.
#[derive(Parser)]
struct Args {
    /// Disk model name.
    #[arg(long, default_value = "st3500320as")]
    model: String,
    /// Wall seconds per model second.
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Cold random 4 KiB reads to time.
    #[arg(long, default_value_t = 200)]
    reads: usize,
    /// MiB read sequentially, in each of the two sequential runs.
    #[arg(long, default_value_t = 256)]
    sequential_mib: u64,
    /// Share of the disk's capacity the random reads spread over.
    #[arg(long, default_value_t = 0.9)]
    span: f64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    emulate::fuse_available()?;
    let capacity = disk::model_from_name(&args.model)?.capacity();
    let span = ((capacity as f64 * args.span) as u64 / PAGE) * PAGE;
    let dir = tempfile::tempdir()?;
    let backing = dir.path().join("backing");
    let mountpoint = dir.path().join("mnt");
    fs::create_dir(&backing)?;
    fs::create_dir(&mountpoint)?;
    // Sparse: the backing file takes no space; the contiguous layout still
    // places its bytes over `span` bytes of the emulated disk.
    File::create(backing.join("disk.img"))?.set_len(span)?;
    let mut config = Config::new(&args.model, &backing, &mountpoint);
    config.time_scale = args.time_scale;
    config.placement = Placement::Contiguous;
    let mounted = emulate::mount(&config)?;
    let path = mountpoint.join("disk.img");
    let setting = format!(
        "emulated disk {}, time scale {}, scheduler {}",
        args.model, args.time_scale, config.scheduler
    );

    let offsets = measure::random_pages(args.reads, span);
    let samples = measure::cold_random_reads(&mounted, &path, &offsets)?;
    let mean = |f: fn(&measure::Sample) -> f64| {
        samples.iter().map(f).sum::<f64>() / samples.len().max(1) as f64 * 1e3
    };
    println!(
        "{setting}: {} cold random 4 KiB reads over {:.0} GB",
        args.reads,
        span as f64 / 1e9
    );
    println!(
        "  latency  mean {:.3} ms, median {:.3} ms (measured through the mount)",
        mean(|s| s.latency),
        measure::median(samples.iter().map(|s| s.latency * 1e3).collect())
    );
    println!(
        "  model    mean {:.3} ms, median {:.3} ms (its service time for the same requests)",
        mean(|s| s.predicted),
        measure::median(samples.iter().map(|s| s.predicted * 1e3).collect())
    );

    let len = args.sequential_mib << 20;
    for (prefetch, label) in [
        (false, "plain (as cat)"),
        (true, "whole range queued (WILLNEED)"),
    ] {
        let start = span / 2 / PAGE * PAGE;
        let start = if prefetch { start + len } else { start };
        let result = measure::sequential_read(&mounted, &path, start, len, prefetch)?;
        println!(
            "{setting}: sequential {} MiB, {label}: {:.1} MB/s measured, {:.1} MB/s model ({} requests)",
            args.sequential_mib, result.measured_mb_s, result.predicted_mb_s, result.requests
        );
    }
    let stats = mounted.unmount()?;
    println!("{stats}");
    Ok(())
}
