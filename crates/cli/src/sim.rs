//! `prefetch sim`: run any policy of the simulator (crate `sim`: Cao et al. SIGMETRICS 1995,
//! DULO, competitive prefetching, libprefetch) on any trace and device; several policies,
//! cache sizes, devices or traces make a sweep, run on `--jobs` threads. `--list` prints the
//! policies, `--mrc` the miss-ratio curves, `--bench` the simulator's own speed. Thin: parses,
//! calls the crate, prints.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;

/// Arguments of `prefetch sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// Trace file(s), comma-separated (plain, gzip or zstd): reference traces, the project's
    /// CSV, MSR Cambridge, UMass SPC, libCacheSim's oracleGeneral (`*.oracleGeneral.bin`,
    /// `*.oracleGeneral.zst`), csv or txt (see docs/traces.md); a pipe or FIFO (`<(zcat t.gz)`)
    /// is read once into memory
    #[arg(long = "trace", value_delimiter = ',', num_args = 1.., required_unless_present_any = ["bench", "list"])]
    traces: Vec<PathBuf>,
    /// Trace format: blocks (txt), csv, msr, spc, oracle-general, libcachesim-csv, recording (default:
    /// recognised from the name for oracleGeneral, else from the first line)
    #[arg(long)]
    format: Option<::sim::Format>,
    /// Block size in bytes for request traces [default: 8192]; for object traces
    /// (oracle-general, libcachesim-csv), splits each request into blocks by its size instead of
    /// making it one reference to its object
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    block_size: Option<u64>,
    /// Cache size(s) in blocks (objects, for object traces); several values make a sweep
    /// [--bench: 8192]
    /// [--mrc: powers of two up to the number of distinct blocks]
    #[arg(long = "cache", value_delimiter = ',', num_args = 1.., required_unless_present_any = ["bench", "list", "mrc"])]
    caches: Vec<usize>,
    /// Fetch time(s) F in reference times: short for `--device unit:F`; several values make a
    /// sweep [--bench: 10]
    #[arg(long = "fetch-time", value_delimiter = ',', num_args = 1..)]
    fetch_times: Vec<u64>,
    /// Device(s), comma-separated: `unit:F` (Cao's model: a reference takes 1 unit, a fetch
    /// F), or a disk model of `prefetch disk profile` with an optional request scheduler,
    /// `MODEL[:SCHEDULER]` (e.g. `st3500320as:clook`, `ssd:100,8,500`; times in microseconds)
    #[arg(long = "device", num_args = 1..)]
    devices: Vec<String>,
    /// Take F from the trace: its mean response time per block, in microseconds (MSR
    /// Cambridge traces record it); for the realistic model, as in the paper's section 4.3
    #[arg(long, conflicts_with = "fetch_times", requires = "realistic")]
    fetch_time_from_trace: bool,
    /// Policies, comma-separated, each `NAME` or `NAME:key=value,...` (see --list), or "all"
    /// (every policy of Cao's but the exact `optimal`). Eviction policies, with libCacheSim's
    /// defaults and miss counts: sieve, s3fifo, arc, 2q, slru, lruk, lfu, lfuda, wtinylfu
    #[arg(long = "policy", num_args = 1.., default_values_t = ["all".to_string()])]
    policies: Vec<String>,
    /// List every policy with its paper section and options, and exit
    #[arg(long)]
    list: bool,
    /// Miss-ratio curves instead of a sweep: LRU's exact curve (one pass, stack distances) and
    /// OPT's (Belady's MIN), at each --cache size
    #[arg(long, conflicts_with_all = ["bench", "list", "policies", "devices", "fetch_times", "realistic"])]
    mrc: bool,
    /// Realistic model: each reference takes the compute time in the trace (microseconds) and
    /// --fetch-time is in microseconds
    #[arg(long)]
    realistic: bool,
    /// Draw each fetch time uniformly from F - S ..= F + S (seeded, so runs repeat) instead of
    /// a constant F
    #[arg(long, default_value_t = 0, value_name = "S")]
    fetch_spread: u64,
    /// Fetches in flight at most for Cao's policies; 1 is the paper's model (one disk, one fetch
    /// at a time)
    #[arg(long, default_value_t = 1)]
    depth: usize,
    /// Runs at a time (threads) [default: the number of cores; at most the number of runs and
    /// four per core]
    #[arg(long)]
    jobs: Option<usize>,
    /// Print the rows as JSON instead of a table
    #[arg(long)]
    json: bool,
    /// Draw the sweep (elapsed time and fetches against F, as in the paper's Figure 3; or the
    /// miss-ratio curves with --mrc) into this SVG file
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Measure the simulator's speed (references/second per policy) on a synthetic trace
    #[arg(long, conflicts_with = "traces")]
    bench: bool,
    /// Length of the synthetic trace for --bench
    #[arg(long, default_value_t = 10_000_000, requires = "bench")]
    refs: usize,
}

/// Runs `prefetch sim`.
pub fn run(args: SimArgs) -> anyhow::Result<()> {
    if args.list {
        return emit(&::sim::report::catalog_table());
    }
    if args.bench {
        return bench(&args);
    }
    if args.traces.is_empty() {
        bail!("--trace is required")
    }
    let options = options(&args);
    if args.mrc {
        return mrc(&args, &options.trace_files()?);
    }
    let plan = options.plan()?;
    let runs = run_with_progress(&plan, args.jobs)?;
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&runs)?))?;
    } else {
        let model = if args.realistic {
            "realistic model: references take the trace's compute times"
        } else {
            "simplified model: a reference takes one unit (1 us on a disk)"
        };
        emit(&format!(
            "Simulated ({model}):\n\n{}",
            ::sim::report::runs_table(&runs)
        ))?;
    }
    if let Some(svg) = &args.svg {
        ::sim::report::draw(svg, &::sim::report::run_panels(&runs))?;
        eprintln!("wrote {}", svg.display());
    }
    Ok(())
}

/// The simulation asked, as crate `sim` takes it from every front end.
fn options(args: &SimArgs) -> ::sim::options::Options {
    ::sim::options::Options {
        traces: args.traces.iter().map(::sim::TraceFile::new).collect(),
        format: args.format,
        block_size: args.block_size,
        caches: args.caches.clone(),
        fetch_times: args.fetch_times.clone(),
        devices: args.devices.clone(),
        fetch_time_from_trace: args.fetch_time_from_trace,
        policies: args.policies.clone(),
        realistic: args.realistic,
        fetch_spread: args.fetch_spread,
        depth: args.depth,
    }
}

/// Runs the plan on `jobs` threads, with a progress bar on standard error when it is a
/// terminal and the sweep has more than one run.
fn run_with_progress(
    plan: &::sim::sweep::Plan,
    jobs: Option<usize>,
) -> anyhow::Result<Vec<::sim::sweep::Run>> {
    use std::io::IsTerminal;
    let jobs = pool_size(jobs, plan.len());
    let bar = match plan.len() > 1 && std::io::stderr().is_terminal() {
        true => indicatif::ProgressBar::new(plan.len() as u64),
        false => indicatif::ProgressBar::hidden(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} runs, {elapsed} ({eta} left)",
        )
        .expect("a valid template"),
    );
    let runs = plan.run(jobs, &|| bar.inc(1));
    bar.finish_and_clear();
    Ok(runs?)
}

/// Threads for `runs` runs: `--jobs` (default: the number of cores), at most `runs` and four per
/// core, saying so on stderr when `--jobs` asked for more (threads beyond those only wait, and
/// thousands of them slow every run).
fn pool_size(jobs: Option<usize>, runs: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let limit = runs.min(4 * cores).max(1);
    match jobs {
        None => cores.min(limit),
        Some(asked) if asked > limit => {
            eprintln!(
                "prefetch sim: --jobs {asked} lowered to {limit}: no more threads than runs, nor four per core ({cores} cores)"
            );
            limit
        }
        Some(asked) => asked.max(1),
    }
}

/// `--mrc`: the curves of each trace, as a table, JSON or SVG.
fn mrc(args: &SimArgs, traces: &[::sim::TraceFile]) -> anyhow::Result<()> {
    let jobs = pool_size(args.jobs, usize::MAX);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    let mut points = Vec::new();
    for trace in traces {
        let future = ::sim::Future::load(trace.open()?)?;
        let capacities = match args.caches.is_empty() {
            true => ::sim::mrc::default_capacities(&future),
            false => args.caches.clone(),
        };
        let name = trace
            .path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        points.extend(pool.install(|| ::sim::mrc::curve(&name, &future, &capacities))?);
    }
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&points)?))?;
    } else {
        emit(&format!(
            "Miss-ratio curves (simulated, demand paging):\n\n{}",
            ::sim::report::mrc_table(&points)
        ))?;
    }
    if let Some(svg) = &args.svg {
        ::sim::report::draw(svg, &::sim::report::mrc_panels(&points))?;
        eprintln!("wrote {}", svg.display());
    }
    Ok(())
}

fn bench(args: &SimArgs) -> anyhow::Result<()> {
    let capacity = args.caches.first().copied().unwrap_or(8192);
    let fetch = args.fetch_times.first().copied().unwrap_or(10);
    let report = ::sim::bench::run(args.refs, capacity, fetch, 1)?;
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else {
        emit(&report.table())?;
    }
    Ok(())
}

/// Writes `text` to standard output; a reader that went away (`prefetch sim ... | head`) ends
/// the output quietly instead of panicking as `print!` does.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => Ok(result?),
    }
}
