//! `prefetch repro competitive`: the competitive-prefetching paper's microbenchmarks (TR840
//! s5.2, Figures 5-7) in the disk-timed simulator: throughput against concurrency (1 to 512)
//! for One-Whole-0, One-Rand-10, Two-Rand-0 and Four-64KB-0 under Linux read-ahead, AP, CP and
//! CPEM, with FIFO, C-LOOK and anticipatory scheduling, on the simulated IBM 36Z15. The logic
//! is `sim::disksim::tr840`; this prints and writes.

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use sim::disksim::tr840::{self, Config};

use crate::repro::{wrote, Dirs};
use crate::sim::emit;

/// Runs every point, then writes `competitive.md` (tables), `competitive.json` (rows) and one
/// SVG per benchmark into `dirs.out` (`tr840::write`), and prints the headline comparisons.
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
    let files = tr840::write(&rows, &config, &dirs.out).context("prefetch repro competitive")?;
    emit(&(tr840::summary(&rows, &config) + &wrote(&files)))
}
