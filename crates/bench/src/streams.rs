//! `prefetch bench streams`: TR840's concurrent sequential microbenchmark, live. N processes
//! (1, 4, 16, 64 by default) each read their own file from start to end with 64 KiB reads
//! (`dd bs=64K`, an unmodified program), all starting together, on the emulated IBM 36Z15 disk
//! (`prefetch emulate --model ibm-36z15`); the aggregate throughput of plain reads (the kernel's
//! read-ahead: 128 KiB on a FUSE mount, Linux's default) is measured against the same reads
//! under `prefetch run --competitive`, side by side in one run.
//!
//! The files lie evenly spaced over [`SPAN_BYTES`] of the disk, as TR840's data set of 6000
//! files of 4 MB spreads over its drive: the mount uses the contiguous layout (files end to end
//! in path order), with a sparse spacer file (no disk space on the host) after each data file.
//! With fewer readers than files, the readers take files spread evenly among them. Each run
//! starts with the files evicted from the mount's page cache (posix_fadvise DONTNEED) and the
//! emulated drive's own read-ahead cache filled with other data (scattered reads of a spacer),
//! so that no run finds the previous run's reads of the same files in the drive; their
//! backing files are read into the host's cache once first, so that only the model's time is
//! measured. The mount's device profile (`device_profile::ModelProfile`) gives the library its
//! competitive depth, reported with the table; the emulated disk's counters give each mode's
//! requests, mean request size and seeks.
//!
//! Follows TR840 section 5.1's *One-Whole-0* microbenchmark (each request handler reads a whole
//! file with 64 KiB reads, no think time) and Figure 5's axis (concurrency).
//! Deviations: files of 4 MiB as TR840's, but one per process and read once (TR840's handlers
//! pick files at random from 6000, for a fixed time); processes, not threads; the kernel's own
//! read-ahead stays on in both modes (the library advises ahead of it).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use libprefetch::profile::DeviceProfile;

use crate::cache::Eviction;
use crate::device_profile::ModelProfile;
use crate::size::format_bytes;

/// Disk model of the benchmark: TR840's IBM drive.
pub const MODEL: &str = "ibm-36z15";

/// Bytes per read (TR840's 64 KB blocks).
pub const READ_BYTES: u64 = 64 << 10;

/// Stretch of the disk the files are spread over (TR840's 6000 files of 4 MB).
pub const SPAN_BYTES: u64 = 24 << 30;

/// The two ways the readers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// Plain `dd`.
    Stock,
    /// `prefetch run --competitive -- dd`.
    Competitive,
}

/// What to measure.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamsBench {
    /// Numbers of concurrent readers, one row each.
    pub counts: Vec<usize>,
    /// The emulated disk's request schedulers, one mount and one set of rows each.
    pub schedulers: Vec<String>,
    /// Bytes of each reader's file.
    pub file_bytes: u64,
    /// Measured runs per mode and count; the table shows the median.
    pub runs: usize,
    /// Wall seconds per model second of the emulated disk.
    pub time_scale: f64,
    /// The `prefetch` executable (for `prefetch run --competitive`).
    pub prefetch: PathBuf,
    /// The `libprefetch.so` it preloads.
    pub library: PathBuf,
    /// Draw progress bars.
    pub show_progress: bool,
}

/// One mode at one concurrency (the median run).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// Wall seconds from the first reader's start to the last one's exit.
    pub seconds: f64,
    /// Aggregate throughput, bytes per second.
    pub bytes_per_second: f64,
    /// Requests the emulated disk served.
    pub requests: u64,
    /// Bytes it served.
    pub bytes: u64,
    /// Requests that started away from the head.
    pub seeks: u64,
}

/// One row: a scheduler and a concurrency, both modes.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The emulated disk's request scheduler.
    pub scheduler: String,
    /// Concurrent readers.
    pub streams: usize,
    /// Plain reads.
    pub stock: Measured,
    /// Under `prefetch run --competitive`.
    pub competitive: Measured,
}

impl Row {
    /// Competitive throughput over stock.
    pub fn speedup(&self) -> f64 {
        self.competitive.bytes_per_second / self.stock.bytes_per_second
    }
}

/// The result: the rows and the depth the library used.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The emulated disk's profile (cost per request, rate).
    pub profile: DeviceProfile,
    /// One row per concurrency.
    pub rows: Vec<Row>,
}

impl Report {
    /// The competitive depth `S_p` in bytes (what the library advises ahead once past slow start).
    pub fn depth_bytes(&self) -> u64 {
        self.profile.break_even_gap_bytes()
    }
}

/// Runs the benchmark: writes the files, mounts the emulated disk, measures, unmounts, removes
/// the files.
pub fn run(bench: &StreamsBench) -> Result<Report> {
    check_programs(bench)?;
    let scratch = Scratch::new()?;
    let outcome = measure_all(bench, &scratch);
    drop(scratch);
    outcome
}

fn check_programs(bench: &StreamsBench) -> Result<()> {
    if Command::new("dd").arg("--version").output().is_err() {
        bail!("dd is not installed: install coreutils");
    }
    for (what, path) in [
        ("prefetch", &bench.prefetch),
        ("libprefetch.so", &bench.library),
    ] {
        if !path.is_file() {
            bail!("{what} not found at {}", path.display());
        }
    }
    Ok(())
}

/// The benchmark's directory (backing files and mount point), removed on drop.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new() -> Result<Scratch> {
        let dir =
            std::env::temp_dir().join(format!("prefetch-bench-streams-{}", std::process::id()));
        for sub in ["backing", "mnt"] {
            std::fs::create_dir_all(dir.join(sub))
                .with_context(|| format!("creating {}", dir.join(sub).display()))?;
        }
        Ok(Scratch { dir })
    }

    fn backing(&self) -> PathBuf {
        self.dir.join("backing")
    }

    fn mountpoint(&self) -> PathBuf {
        self.dir.join("mnt")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn file_name(index: usize) -> String {
    format!("stream-{index:03}.bin")
}

/// The sparse file after data file `index` (path order puts it right after).
fn spacer_name(index: usize) -> String {
    format!("stream-{index:03}.spacer")
}

/// The files `readers` readers read, out of `files`: spread evenly among them.
pub fn files_for(readers: usize, files: usize) -> Vec<usize> {
    (0..readers).map(|i| i * files / readers.max(1)).collect()
}

/// Writes the data files (read once into the host's cache) and their spacers.
fn write_files(bench: &StreamsBench, scratch: &Scratch, files: usize) -> Result<()> {
    let spacer = (SPAN_BYTES / files.max(1) as u64).saturating_sub(bench.file_bytes);
    for index in 0..files {
        let path = scratch.backing().join(file_name(index));
        crate::datafile::ensure(&path, bench.file_bytes, true, false)?;
        std::io::copy(&mut std::fs::File::open(&path)?, &mut std::io::sink())?;
        let spacer_path = scratch.backing().join(spacer_name(index));
        std::fs::File::create(&spacer_path)
            .and_then(|file| file.set_len(spacer))
            .with_context(|| format!("creating {}", spacer_path.display()))?;
    }
    Ok(())
}

fn measure_all(bench: &StreamsBench, scratch: &Scratch) -> Result<Report> {
    let most = bench.counts.iter().copied().max().unwrap_or(0);
    write_files(bench, scratch, most)?;
    let mut rows = Vec::new();
    let mut profile = None;
    for scheduler in &bench.schedulers {
        let mut config = emulate::Config::new(MODEL, &scratch.backing(), &scratch.mountpoint());
        config.time_scale = bench.time_scale;
        config.placement = emulate::Placement::Contiguous;
        config.scheduler = scheduler.clone();
        let mounted = emulate::mount(&config)?;
        let measured = ModelProfile::save(&config).and_then(|saved| {
            profile = Some(saved.profile());
            measure_rows(bench, &mounted, &config, most)
        });
        mounted.unmount()?;
        rows.extend(measured?);
    }
    Ok(Report {
        profile: profile.context("no scheduler given")?,
        rows,
    })
}

fn measure_rows(
    bench: &StreamsBench,
    mounted: &emulate::Mounted,
    config: &emulate::Config,
    files: usize,
) -> Result<Vec<Row>> {
    let flush = config.mountpoint.join(spacer_name(files.saturating_sub(1)));
    let total: usize = bench.counts.iter().sum::<usize>() * bench.runs * 2;
    let bar = crate::progress::bytes_bar(
        total as u64 * bench.file_bytes,
        "streams",
        bench.show_progress,
    );
    let mount = &config.mountpoint;
    let mut rows = Vec::new();
    for &streams in &bench.counts {
        let read: Vec<PathBuf> = files_for(streams, files)
            .into_iter()
            .map(|i| mount.join(file_name(i)))
            .collect();
        let (mut stock, mut competitive) = (Vec::new(), Vec::new());
        for run in 0..bench.runs {
            // Alternate which mode goes first, so neither always follows the other.
            let order = match run % 2 {
                0 => [Reads::Stock, Reads::Competitive],
                _ => [Reads::Competitive, Reads::Stock],
            };
            for reads in order {
                flush_drive_cache(&flush)?;
                let measured = measure_once(bench, mounted, &read, reads)?;
                bar.inc(streams as u64 * bench.file_bytes);
                match reads {
                    Reads::Stock => stock.push(measured),
                    Reads::Competitive => competitive.push(measured),
                }
            }
        }
        rows.push(Row {
            scheduler: config.scheduler.clone(),
            streams,
            stock: median_run(&stock)?,
            competitive: median_run(&competitive)?,
        });
    }
    bar.finish_and_clear();
    Ok(rows)
}

/// Pieces read to flush the emulated drive's own cache, and their spacing: more than any
/// preset's cache segments (16), each further apart than a segment (2 MiB at most).
const FLUSH_PIECES: u64 = 16;
const FLUSH_SPACING: u64 = 4 << 20;

/// Fills the emulated drive's read-ahead cache with pages of `spacer` (the last file's sparse
/// spacer, which no reader reads), so that a run does not find the previous run's reads of the
/// same files there (the page cache is emptied separately); then drops those pages from the
/// page cache again.
fn flush_drive_cache(spacer: &Path) -> Result<()> {
    let file =
        std::fs::File::open(spacer).with_context(|| format!("opening {}", spacer.display()))?;
    let mut page = vec![0u8; 4096];
    for piece in 0..FLUSH_PIECES {
        std::os::unix::fs::FileExt::read_at(&file, &mut page, piece * FLUSH_SPACING)?;
    }
    Eviction::Fadvise.evict(&file)
}

/// One cold run: every file evicted, then one reader per file, all at once.
fn measure_once(
    bench: &StreamsBench,
    mounted: &emulate::Mounted,
    files: &[PathBuf],
    reads: Reads,
) -> Result<Measured> {
    for path in files {
        let file =
            std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        Eviction::Fadvise.evict(&file)?;
    }
    let mut readers: Vec<Child> = files
        .iter()
        .map(|path| reader(bench, path, reads))
        .collect::<Result<_>>()?;
    for child in &mut readers {
        wait_until_ready(child)?;
    }
    let before = mounted.stats();
    let started = Instant::now();
    for child in &mut readers {
        // The line each reader's shell waits for: all start reading together.
        let mut go = child.stdin.take().context("the reader's stdin")?;
        go.write_all(b"go\n")?;
    }
    for mut child in readers {
        let status = child.wait()?;
        if !status.success() {
            bail!("a {reads:?} reader failed: {status}");
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = mounted.stats();
    let read = files.len() as u64 * bench.file_bytes;
    Ok(Measured {
        seconds,
        bytes_per_second: read as f64 / seconds.max(1e-9),
        requests: after.requests - before.requests,
        bytes: after.bytes - before.bytes,
        seeks: after.seeks - before.seeks,
    })
}

/// `dd` reading `path` with 64 KiB reads, plainly or under `prefetch run --competitive`,
/// started by a shell that says it is ready on its stdout and then waits for a line on its
/// stdin, so that every reader (and `prefetch run`, which execs the shell) is loaded before the
/// clock starts; the shell's own reads of the pipe are not file reads. What `dd`'s exec costs
/// (loading the library, under `--competitive`) is measured.
fn reader(bench: &StreamsBench, path: &Path, reads: Reads) -> Result<Child> {
    let script = format!(
        "echo ready && read go && exec dd if=\"$0\" of=/dev/null bs={READ_BYTES} status=none"
    );
    let mut command = match reads {
        Reads::Stock => Command::new("sh"),
        Reads::Competitive => {
            let mut command = Command::new(&bench.prefetch);
            command
                .args(["run", "--competitive", "--library"])
                .arg(&bench.library)
                .args(["--", "sh"]);
            command
        }
    };
    command
        .args(["-c", &script])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting sh and dd")
}

/// Waits for a reader's shell to say it is ready (its first line on stdout).
fn wait_until_ready(child: &mut Child) -> Result<()> {
    let stdout = child.stdout.as_mut().context("the reader's stdout")?;
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    if line.trim() != "ready" {
        bail!("a reader's shell did not start: {line:?}");
    }
    Ok(())
}

/// The run with the median time (the lower middle one for an even count: `units::median_by`).
fn median_run(runs: &[Measured]) -> Result<Measured> {
    units::median_by(runs, |run| run.seconds).context("no measured runs: --runs must be at least 1")
}

/// The report as a Markdown table under lines saying what was measured.
pub fn table(bench: &StreamsBench, report: &Report) -> String {
    let depth = report.depth_bytes();
    let mut out = format!(
        "N processes each read their own {} file with `dd bs=64K`, all at once, on the emulated \
         {MODEL} disk (prefetch emulate, time scale {}; files spread evenly over {}); cache \
         emptied with posix_fadvise(DONTNEED) before each run; median of {} \
         runs\n\
         competitive depth from the mount's profile ({:.2} ms per request x {:.1} MB/s): {} \
         ({} pages), reached after slow start (64, 128 pages: the kernel's own read-ahead \
         window of 32 pages covers the depths below)\n\n",
        format_bytes(bench.file_bytes),
        bench.time_scale,
        format_bytes(SPAN_BYTES),
        bench.runs,
        report.profile.request_seconds * 1e3,
        report.profile.bytes_per_second / 1e6,
        format_bytes(depth),
        depth.div_ceil(4096),
    );
    out += "| scheduler | streams | stock MB/s | --competitive MB/s | speed-up | stock: requests, mean size, seeks | --competitive: requests, mean size, seeks |\n";
    out += "|---|---:|---:|---:|---:|---|---|\n";
    for row in &report.rows {
        out += &format!(
            "| {} | {} | {:.1} | {:.1} | **{:.2}x** | {} | {} |\n",
            row.scheduler,
            row.streams,
            row.stock.bytes_per_second / 1e6,
            row.competitive.bytes_per_second / 1e6,
            row.speedup(),
            disk_side(&row.stock),
            disk_side(&row.competitive),
        );
    }
    out
}

fn disk_side(measured: &Measured) -> String {
    let mean = measured.bytes / measured.requests.max(1);
    format!(
        "{}, {}, {}",
        measured.requests,
        format_bytes(mean),
        measured.seeks
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(seconds: f64) -> Measured {
        Measured {
            seconds,
            bytes_per_second: 1e6 / seconds,
            requests: 8,
            bytes: 8 << 17,
            seeks: 3,
        }
    }

    #[test]
    fn readers_take_files_spread_evenly() {
        assert_eq!(files_for(1, 64), [0]);
        assert_eq!(files_for(4, 64), [0, 16, 32, 48]);
        assert_eq!(files_for(64, 64), (0..64).collect::<Vec<_>>());
    }

    #[test]
    fn the_median_run_is_the_middle_one_by_time() {
        let runs = vec![measured(3.0), measured(1.0), measured(2.0)];
        assert_eq!(median_run(&runs).unwrap().seconds, 2.0);
        assert_eq!(
            median_run(&[measured(4.0), measured(1.0)]).unwrap().seconds,
            1.0
        );
    }

    #[test]
    fn the_table_names_the_setting_and_the_depth() {
        let bench = StreamsBench {
            counts: vec![16],
            schedulers: vec!["fifo".to_string()],
            file_bytes: 4 << 20,
            runs: 1,
            time_scale: 1.0,
            prefetch: PathBuf::new(),
            library: PathBuf::new(),
            show_progress: false,
        };
        let report = Report {
            profile: DeviceProfile {
                request_seconds: 0.01,
                near_request_seconds: None,
                bytes_per_second: 51.2e6,
                mount_id: None,
            },
            rows: vec![Row {
                scheduler: "fifo".to_string(),
                streams: 16,
                stock: measured(2.0),
                competitive: measured(1.0),
            }],
        };
        let table = table(&bench, &report);
        assert!(table.contains("ibm-36z15"), "{table}");
        assert!(table.contains("(125 pages)"), "{table}");
        assert!(
            table.contains("| fifo | 16 | 0.5 | 1.0 | **2.00x** | 8, 128.0 KiB, 3 |"),
            "{table}"
        );
    }
}
