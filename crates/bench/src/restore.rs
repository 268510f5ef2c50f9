//! `prefetch bench restore`: restoring a residency snapshot (crate `residency`) against
//! `vmtouch -t` of the same file, on the emulated disk and on this machine's disk.
//!
//! The snapshot holds `--fraction` (25%) of a file's pages, in runs of `--run-size` placed at
//! seeded random slots (the file is cut into run-sized slots and a fraction of them chosen): the
//! residency a random-access program leaves behind. Each run empties the file's cache
//! (posix_fadvise DONTNEED), then either restores the snapshot (by default without infill: only
//! the missing pages; C-LOOK order, WILLNEED at depth) or runs `vmtouch -t` (touches every page
//! of the file, which is what vmtouch can do without a snapshot of pages), and times it. Modes
//! alternate, the median of `--runs` is reported. Besides the time:
//!
//! - **pages read**: from the disk's own counter: the emulated disk's `bytes` served, or
//!   `/proc/self/io` `read_bytes` for the restore (its WILLNEED reads are submitted in this
//!   process) and the children's `ru_inblock` for vmtouch, on this machine's disk;
//! - **outside snapshot**: pages cached after the run that the snapshot does not hold (probed),
//!   which must be 0 for the restore without infill (and is the infill with it).
//!
//! The emulated disk (`prefetch emulate`, crate `emulate`) is mounted in this process over a
//! directory holding only a hard link to the data file, whose backing pages are read into the
//! cache once first so that only the model's time is measured.
//!
//! No paper section (vmtouch's and pgfincore's snapshot requests).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use residency::probe::{page_size, probe_file, Probe};
use residency::restore::Options;
use residency::{FileIdentity, PageRuns, Snapshot};
use rustix::fs::{fadvise, Advice};

use crate::size::format_bytes;

/// Disk model of the emulated setting: a 7200 RPM drive, as `bench sqlite` uses.
pub const EMULATED_MODEL: &str = "st3500320as";

/// Where the benchmark's data file is kept by default.
pub const DEFAULT_DIR: &str = "/tmp/libprefetch-bench/restore";

/// What to measure.
#[derive(Clone, Debug, PartialEq)]
pub struct RestoreBench {
    /// Data file (written if missing, see `datafile::ensure`).
    pub file: PathBuf,
    /// Its size, bytes.
    pub file_size: u64,
    /// Share of the file's pages the snapshot holds.
    pub fraction: f64,
    /// Length of each run of the snapshot, bytes.
    pub run_bytes: u64,
    /// Seed of the runs' places.
    pub seed: u64,
    /// Measured runs per mode.
    pub runs: usize,
    /// Measure on the emulated disk.
    pub emulated: bool,
    /// Measure on this machine's disk.
    pub disk: bool,
    /// Wall seconds per model second of the emulated disk.
    pub time_scale: f64,
    /// Infill of the restore, bytes (0: `--no-infill`, only the snapshot's pages).
    pub infill_bytes: u64,
    /// Draw progress bars.
    pub show_progress: bool,
}

/// The result on one disk.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Row {
    /// Which disk.
    pub setting: String,
    /// Median seconds of `vmtouch -t`.
    pub vmtouch_seconds: f64,
    /// Median seconds of the restore.
    pub restore_seconds: f64,
    /// Pages the snapshot holds.
    pub snapshot_pages: u64,
    /// Pages vmtouch read (disk counter, median run).
    pub vmtouch_pages_read: u64,
    /// Pages the restore read (disk counter, median run).
    pub restore_pages_read: u64,
    /// Most pages cached after a restore that the snapshot does not hold.
    pub restore_pages_outside: u64,
}

impl Row {
    /// vmtouch's time over the restore's.
    pub fn speedup(&self) -> f64 {
        self.vmtouch_seconds / self.restore_seconds
    }
}

/// The snapshot's runs: `fraction` of the run-sized slots of a file of `pages` pages, chosen at
/// seeded random.
pub fn scattered_runs(pages: u64, run_pages: u64, fraction: f64, seed: u64) -> PageRuns {
    let run_pages = run_pages.max(1);
    let slots = pages / run_pages;
    let chosen = ((slots as f64) * fraction).round() as u64;
    let mut order: Vec<u64> = (0..slots).collect();
    let mut rng = StdRng::seed_from_u64(seed);
    for i in 0..order.len().min(chosen as usize) {
        let j = rng.random_range(i..order.len());
        order.swap(i, j);
    }
    PageRuns::from_unsorted(
        order[..chosen as usize]
            .iter()
            .map(|slot| slot * run_pages..(slot + 1) * run_pages)
            .collect(),
    )
}

/// Runs the benchmark; one row per disk.
pub fn run(bench: &RestoreBench) -> Result<Vec<Row>> {
    which_vmtouch()?;
    if let Some(dir) = bench.file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    crate::datafile::ensure(&bench.file, bench.file_size, false, bench.show_progress)?;
    let runs = scattered_runs(
        bench.file_size / page_size(),
        bench.run_bytes / page_size(),
        bench.fraction,
        bench.seed,
    );
    let mut rows = Vec::new();
    if bench.emulated {
        rows.push(on_emulated_disk(bench, &runs)?);
    }
    if bench.disk {
        let label = "this machine's disk".to_string();
        rows.push(measure(
            bench,
            &bench.file,
            &runs,
            label,
            &Counter::OwnDisk,
        )?);
    }
    Ok(rows)
}

fn which_vmtouch() -> Result<()> {
    let found = Command::new("vmtouch")
        .arg("-h")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if found.is_err() {
        bail!(
            "vmtouch is not installed: install it (apt-get install vmtouch) to compare against it"
        );
    }
    Ok(())
}

/// Where the pages read are counted.
enum Counter {
    /// The emulated disk's `bytes`.
    Emulated(PathBuf),
    /// This process's `read_bytes` (restore) and its children's `ru_inblock` (vmtouch).
    OwnDisk,
}

impl Counter {
    fn bytes(&self, child: bool) -> Result<u64> {
        match self {
            Counter::Emulated(mount) => {
                crate::io_counters::DiskCounter::Emulated(mount.join(".emulate-stats")).read()
            }
            Counter::OwnDisk if child => Ok(children_inblock_bytes()),
            Counter::OwnDisk => crate::io_counters::own_read_bytes(),
        }
    }
}

/// Bytes the reaped children read from storage (`ru_inblock`, 512-byte units).
fn children_inblock_bytes() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a valid value anyway.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    usage.ru_inblock as u64 * 512
}

/// Mounts the emulated disk over a directory holding a hard link to the data file, measures,
/// unmounts.
fn on_emulated_disk(bench: &RestoreBench, runs: &PageRuns) -> Result<Row> {
    let scratch =
        std::env::temp_dir().join(format!("prefetch-bench-restore-{}", std::process::id()));
    let backing = scratch.join("backing");
    let mountpoint = scratch.join("mnt");
    std::fs::create_dir_all(&backing)?;
    std::fs::create_dir_all(&mountpoint)?;
    let linked = backing.join("data.bin");
    let outcome = std::fs::hard_link(&bench.file, &linked)
        .with_context(|| {
            format!(
                "linking {} into {} (the data file must be on the file system of {})",
                bench.file.display(),
                backing.display(),
                scratch.display()
            )
        })
        .and_then(|()| {
            touch_all(&linked)?;
            let mut config = emulate::Config::new(EMULATED_MODEL, &backing, &mountpoint);
            config.time_scale = bench.time_scale;
            let mounted = emulate::mount(&config)?;
            let label = format!("emulated 7200 RPM disk ({EMULATED_MODEL}, prefetch emulate)");
            let counter = Counter::Emulated(mountpoint.clone());
            let row = measure(bench, &mountpoint.join("data.bin"), runs, label, &counter);
            mounted.unmount()?;
            row
        });
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}

/// Reads the backing file into the cache once (sequential reads), so that the emulated disk's
/// time is the model's only.
fn touch_all(path: &Path) -> Result<()> {
    let mut file = File::open(path)?;
    std::io::copy(&mut file, &mut std::io::sink())?;
    Ok(())
}

/// One disk: alternating runs of restore and vmtouch from an empty cache.
fn measure(
    bench: &RestoreBench,
    path: &Path,
    runs: &PageRuns,
    setting: String,
    counter: &Counter,
) -> Result<Row> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut snapshot = Snapshot::new();
    snapshot.add(path.to_path_buf(), FileIdentity::of(&file)?, runs);
    let options = Options {
        max_memory: None,
        infill_bytes: bench.infill_bytes,
    };
    let bar = crate::progress::runs_bar(2 * bench.runs as u64, bench.show_progress);
    bar.set_message(setting.clone());
    let (mut restores, mut touches) = (Vec::new(), Vec::new());
    for _ in 0..bench.runs {
        evict(&file)?;
        let before = counter.bytes(false)?;
        let started = Instant::now();
        let summary = residency::restore(&snapshot, &options, &mut |_, _| {})?;
        let seconds = started.elapsed().as_secs_f64();
        let read = counter.bytes(false)? - before;
        if !summary.skipped.is_empty() || summary.not_loaded_pages > 0 {
            bail!("the restore did not load the snapshot: {summary:?}");
        }
        let outside = cached(&file)?.minus(runs).page_count();
        restores.push((seconds, read / page_size(), outside));
        bar.inc(1);

        evict(&file)?;
        let before = counter.bytes(true)?;
        let started = Instant::now();
        vmtouch(path, bench.file_size)?;
        let seconds = started.elapsed().as_secs_f64();
        touches.push((seconds, (counter.bytes(true)? - before) / page_size(), 0));
        bar.inc(1);
    }
    bar.finish_and_clear();
    evict(&file)?;
    let median_run = |runs: &[(f64, u64, u64)]| {
        units::median_by(runs, |run| run.0).context("no measured runs: --runs must be at least 1")
    };
    let (restore, touch) = (median_run(&restores)?, median_run(&touches)?);
    Ok(Row {
        setting,
        vmtouch_seconds: touch.0,
        restore_seconds: restore.0,
        snapshot_pages: runs.page_count(),
        vmtouch_pages_read: touch.1,
        restore_pages_read: restore.1,
        restore_pages_outside: restores.iter().map(|r| r.2).max().unwrap_or(0),
    })
}

fn evict(file: &File) -> Result<()> {
    fadvise(file, 0, None, Advice::DontNeed).context("posix_fadvise(DONTNEED) of the data file")
}

fn cached(file: &File) -> Result<PageRuns> {
    let size = file.metadata()?.len();
    Ok(probe_file(file, size, Probe::detect(file))?.resident)
}

/// `vmtouch -t` of the file (with `-m` raised above vmtouch's 500 MiB default maximum).
fn vmtouch(path: &Path, size: u64) -> Result<()> {
    let status = Command::new("vmtouch")
        .args(["-t", "-q", "-m"])
        .arg(format!("{}K", size.div_ceil(1024) + 1))
        .arg(path)
        .status()
        .context("running vmtouch")?;
    if !status.success() {
        bail!("vmtouch -t {} failed: {status}", path.display());
    }
    Ok(())
}

/// The rows as a Markdown table under a line saying what was measured.
pub fn table(bench: &RestoreBench, rows: &[Row]) -> String {
    let mut out = format!(
        "restore of a snapshot holding {:.0}% of a {} file's pages (runs of {} at random places, seed {}) \
         vs vmtouch -t; cache emptied by posix_fadvise(DONTNEED) before each run; median of {} runs\n\n",
        bench.fraction * 100.0,
        format_bytes(bench.file_size),
        format_bytes(bench.run_bytes),
        bench.seed,
        bench.runs
    );
    let restore = match bench.infill_bytes {
        0 => "restore --no-infill".to_string(),
        bytes => format!("restore --infill {}", format_bytes(bytes)),
    };
    out += &format!("| setting | vmtouch -t | {restore} | speedup | pages read: vmtouch, restore (snapshot holds) | restore's pages outside the snapshot |\n");
    out += "|---|---|---|---|---|---|\n";
    for row in rows {
        out += &format!(
            "| {} | {:.2} s | {:.2} s | **{:.2}x** | {}, {} ({}) | {} |\n",
            row.setting,
            row.vmtouch_seconds,
            row.restore_seconds,
            row.speedup(),
            row.vmtouch_pages_read,
            row.restore_pages_read,
            row.snapshot_pages,
            row.restore_pages_outside
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_holds_the_fraction_in_whole_runs() {
        let runs = scattered_runs(1024, 16, 0.25, 1);
        assert_eq!(runs.page_count(), 256);
        let starts: Vec<u64> = runs.pages().filter(|p| p % 16 == 0).collect();
        assert_eq!(starts.len() as u64 * 16, runs.page_count());
        assert_eq!(runs, scattered_runs(1024, 16, 0.25, 1));
        assert_ne!(runs, scattered_runs(1024, 16, 0.25, 2));
    }
}
