//! `prefetch bench random|strided|sequential`: parses the options, runs crate `bench`, prints the result.
//!
//! The workloads and modes follow the libprefetch paper's sections 3.2 and 5 (see crates/bench).
//! The hidden `prefetch bench __child` is how `--memory-limit` and `--instances` run a pass in another
//! process: the benchmark re-executes this binary (moving the child into the memory cgroup first, if
//! any), sends it the pass as JSON and reads its JSON result.

use std::path::PathBuf;

use ::bench::cache::Eviction;
use ::bench::cgroup::parse_memory_limit;
use ::bench::size::parse_size;
use ::bench::{BenchConfig, Launcher, Mode, Workload};
use anyhow::Result;
use clap::{Args, Subcommand};

/// The arguments after `prefetch` that start a child run.
const CHILD_ARGS: [&str; 2] = ["bench", "__child"];

/// A benchmark workload.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Random 4 KiB pages with repeats (the paper's Figure 2 workload)
    Random(RandomArgs),
    /// A tiled 2-D array stored row-major, read column by column (the paper's GIMP case, Figure 9)
    Strided(StridedArgs),
    /// The file from start to end (the paper's Figure 8)
    Sequential(SequentialArgs),
    /// SQLite scanning a table through a secondary index, stock vs the prefetch extension (paper section 5.4)
    Sqlite(crate::sqlite::bench::BenchArgs),
    /// Restoring a residency snapshot (25% of a file's pages) vs vmtouch -t, emulated disk and this disk
    Restore(crate::residency::RestoreBenchArgs),
    /// The stock sqlite3 shell on a cold cache: plain vs `prefetch run --replay` of its own recording
    Replay(crate::bench_replay::ReplayArgs),
    /// Concurrent sequential readers on the emulated IBM 36Z15: stock vs `prefetch run --competitive` (TR840)
    Streams(crate::bench_streams::StreamsArgs),
    /// Internal: one measured pass in a child process (request on stdin, JSON result on stdout)
    #[command(name = "__child", hide = true)]
    Child,
}

/// Options every workload shares.
#[derive(Args)]
pub struct CommonArgs {
    /// Data file; written (pseudo-random bytes) if missing, reused if it has --file-size bytes;
    /// files of another size are replaced only in /tmp/libprefetch-bench
    /// [default: /tmp/libprefetch-bench/data-SIZE.bin]
    #[arg(long)]
    file: Option<PathBuf>,
    /// Size of the data file (K, M, G suffixes)
    #[arg(long, default_value = "2G", value_parser = parse_size)]
    file_size: u64,
    /// Measured runs per mode; the table shows the median
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Modes to compare, comma-separated [default: all of stock, naive, libprefetch, limit-cache (the same list, every distinct page advised at once in offset order first: the page cache's best; not with --memory-limit, where it only thrashes), limit (the same pages, O_DIRECT at queue depth 32: the device's best)]; also `whole-list` (the library given the list with PF_WHOLE_LIST: the paper's start)
    #[arg(long, value_delimiter = ',', value_parser = parse_mode)]
    modes: Vec<Mode>,
    /// Empty all caches (sync; echo 3 > /proc/sys/vm/drop_caches) instead of evicting only the data file
    #[arg(long)]
    drop_caches: bool,
    /// Also measure warm runs (nothing evicted)
    #[arg(long)]
    warm: bool,
    /// Run each pass inside a memory cgroup of this size (e.g. 100M), created and removed here;
    /// several, comma-separated, make a sweep (the paper's Figure 9 axis: data size over memory)
    #[arg(long, value_delimiter = ',', value_parser = |text: &str| parse_memory_limit(text).map_err(|error| error.to_string()))]
    memory_limit: Vec<u64>,
    /// libprefetch reorder window (cap on its memory budget); several, comma-separated, make a sweep
    /// (the paper's Figure 2), e.g. 1M,4M,16M,64M [default: the library's own budget]
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    window: Vec<u64>,
    /// libprefetch infill: largest gap merged into one prefetch (0 disables) [default: the library's, the break-even gap of the data file's device profile, measured once if missing]
    #[arg(long, value_parser = parse_size)]
    infill: Option<u64>,
    /// Concurrent instances, each a process reading its own copy of the data file (paper section 5.6)
    #[arg(long, default_value_t = 1)]
    instances: usize,
    /// Where the data file lives: `this-disk` (--file, or the default path) or `emulated` (a
    /// fresh file on the emulated seek-bound disk of `prefetch emulate`, mounted for the run)
    #[arg(long, default_value = "this-disk", value_parser = ["this-disk", "emulated"])]
    setting: String,
    /// --setting emulated: the disk model (see `prefetch disk models`)
    #[arg(long, default_value = "st3500320as")]
    model: String,
    /// --setting emulated: wall seconds per model second (0.1 runs the disk ten times faster)
    #[arg(long, default_value_t = 0.1)]
    time_scale: f64,
    /// Print the result as JSON instead of a table
    #[arg(long)]
    json: bool,
    /// Write the sweep as an SVG plot (needs several --window or several --memory-limit sizes)
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Do not draw progress bars
    #[arg(long)]
    no_progress: bool,
}

/// Options of `prefetch bench random`.
#[derive(Args)]
pub struct RandomArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Number of 4 KiB page reads
    #[arg(long, default_value_t = 100_000)]
    pages: u64,
    /// Seed of the page sequence
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop after this many reads, the library given the whole list (a LIMIT query abandoning
    /// its index scan) [default: read them all]
    #[arg(long)]
    abandon_after: Option<u64>,
}

/// Options of `prefetch bench strided`.
#[derive(Args)]
pub struct StridedArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Bytes per tile (GIMP: 64x64 RGBA pixels = 16K)
    #[arg(long, default_value = "16K", value_parser = parse_size)]
    tile_size: u64,
    /// Tiles per row and per column [default: the largest square that fits in the file]
    #[arg(long)]
    tiles_per_side: Option<u64>,
}

/// Options of `prefetch bench sequential`.
#[derive(Args)]
pub struct SequentialArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Bytes per read call (cat uses 128K)
    #[arg(long, default_value = "128K", value_parser = parse_size)]
    read_size: u64,
}

fn parse_mode(name: &str) -> Result<Mode, String> {
    Mode::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Mode::ALL
            .iter()
            .chain([&Mode::WholeList])
            .map(|mode| mode.name())
            .collect();
        format!("unknown mode {name:?} (known: {})", known.join(", "))
    })
}

/// Runs one `prefetch bench` subcommand.
pub fn run(command: BenchCommand) -> Result<()> {
    let (common, workload) = match command {
        BenchCommand::Child => return ::bench::serve_child(),
        BenchCommand::Sqlite(args) => return crate::sqlite::bench::run(args),
        BenchCommand::Restore(args) => return crate::residency::bench(args),
        BenchCommand::Replay(args) => return crate::bench_replay::run(args),
        BenchCommand::Streams(args) => return crate::bench_streams::run(args),
        BenchCommand::Random(args) => {
            let workload = Workload::Random {
                pages: args.pages,
                seed: args.seed,
                span_bytes: args.common.file_size,
                abandon_after: args.abandon_after,
            };
            (args.common, workload)
        }
        BenchCommand::Strided(args) => {
            let side = args
                .tiles_per_side
                .unwrap_or_else(|| (args.common.file_size / args.tile_size.max(1)).isqrt());
            let workload = Workload::Strided {
                tile_bytes: args.tile_size,
                tiles_per_side: side,
            };
            (args.common, workload)
        }
        BenchCommand::Sequential(args) => {
            let workload = Workload::Sequential {
                span_bytes: args.common.file_size,
                read_bytes: args.read_size,
            };
            (args.common, workload)
        }
    };
    let (json, svg) = (common.json, common.svg.clone());
    if svg.is_some() && common.window.len() < 2 && common.memory_limit.len() < 2 {
        anyhow::bail!("--svg needs a sweep: several sizes for --window (e.g. 1M,4M,16M,64M) or for --memory-limit");
    }
    let emulated = (common.setting == "emulated").then(|| ::bench::emulated::EmulatedDisk {
        model: common.model.clone(),
        time_scale: common.time_scale,
    });
    let config = config(common, workload)?;
    let report = match emulated {
        Some(disk) => ::bench::emulated::run_emulated(&config, &disk)?,
        None => ::bench::run(&config)?,
    };
    if let Some(path) = svg {
        ::bench::plot::sweep_svg(&report, &path)?;
        eprintln!("wrote {}", path.display());
    }
    if json {
        println!("{}", report.json()?);
    } else {
        println!("$ {}", command_line());
        print!("{}", report.table());
    }
    Ok(())
}

/// Every mode, but `limit-cache` only without a memory limit: advising every page at once is the
/// page cache's best only while the pages fit (under a limit it thrashes, as `naive` does).
fn default_modes(memory_limited: bool) -> Vec<Mode> {
    Mode::ALL
        .into_iter()
        .filter(|&mode| !(memory_limited && mode == Mode::LimitCache))
        .collect()
}

fn config(common: CommonArgs, workload: Workload) -> Result<BenchConfig> {
    Ok(BenchConfig {
        workload,
        file: common
            .file
            .unwrap_or_else(|| ::bench::datafile::default_path(common.file_size)),
        file_size: common.file_size,
        modes: if common.modes.is_empty() {
            default_modes(!common.memory_limit.is_empty())
        } else {
            common.modes
        },
        runs: common.runs,
        eviction: if common.drop_caches {
            Eviction::DropCaches
        } else {
            Eviction::Fadvise
        },
        warm: common.warm,
        memory_limits: common.memory_limit,
        windows: common.window,
        infill_bytes: common.infill,
        show_progress: !common.no_progress,
        instances: common.instances,
        launcher: Some(Launcher::current_exe(&CHILD_ARGS)?),
    })
}

/// The command as typed, with the program shown as `prefetch`, for the table's first line.
fn command_line() -> String {
    let rest: Vec<String> = std::env::args().skip(1).collect();
    format!("prefetch {}", rest.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_cache_is_left_out_of_memory_limited_runs_by_default() {
        assert_eq!(default_modes(false), Mode::ALL.to_vec());
        let limited = default_modes(true);
        assert!(!limited.contains(&Mode::LimitCache));
        assert_eq!(limited.len(), Mode::ALL.len() - 1);
    }
}
