//! `prefetch repro competitive`: the competitive-prefetching paper's microbenchmarks (TR840
//! s5.2, Figures 5-7) in the disk-timed simulator: throughput against concurrency (1 to 512)
//! for One-Whole-0, One-Rand-10, Two-Rand-0 and Four-64KB-0 under Linux read-ahead, AP, CP and
//! CPEM, with FIFO, C-LOOK and anticipatory scheduling, on the simulated IBM 36Z15. The logic
//! is `sim::disksim::tr840`; this prints and writes.

use std::fs;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use sim::disksim::tr840::{self, Config};

use crate::repro::Dirs;

/// Runs every point, then writes `competitive.md` (tables), `competitive.json` (rows) and one
/// SVG per benchmark into `dirs.out`, and prints the headline comparisons.
pub fn run(dirs: &Dirs) -> anyhow::Result<()> {
    let config = Config::default();
    let points = config.benches.len()
        * config.concurrency.len()
        * config.schedulers.len()
        * config.kernels.len();
    let bar = ProgressBar::new(points as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}").context("progress style")?,
    );
    let rows = tr840::run(&config, |row| {
        bar.set_message(format!(
            "{} {} {} N={}",
            row.bench, row.scheduler, row.kernel, row.concurrency
        ));
        bar.inc(1);
    })
    .context("prefetch repro competitive")?;
    bar.finish_and_clear();

    fs::create_dir_all(&dirs.out).with_context(|| format!("creating {}", dirs.out.display()))?;
    let mut files = Vec::new();
    let tables = dirs.out.join("competitive.md");
    fs::write(&tables, tr840::tables(&rows, &config))
        .with_context(|| format!("writing {}", tables.display()))?;
    files.push(tables);
    let json = dirs.out.join("competitive.json");
    fs::write(&json, serde_json::to_string_pretty(&rows)?)
        .with_context(|| format!("writing {}", json.display()))?;
    files.push(json);
    for (bench, panels) in tr840::figures(&rows, &config.disk) {
        let svg = dirs
            .out
            .join(format!("competitive-{}.svg", bench.to_lowercase()));
        sim::report::draw(&svg, &panels).with_context(|| format!("writing {}", svg.display()))?;
        files.push(svg);
    }
    print!("{}", tr840::summary(&rows, &config));
    println!("\nwrote:");
    for file in &files {
        println!("  {}", file.display());
    }
    Ok(())
}
