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
    /// Cache size(s): blocks (objects, for object traces), a byte size (`64M`, divided by the
    /// block size) or a share of the trace's working set (`1%`); several values make a sweep
    /// [--bench: 8192]
    /// [--mrc: powers of two up to the number of distinct blocks, or --mrc-sizes shares]
    #[arg(long = "cache", value_delimiter = ',', num_args = 1.., required_unless_present_any = ["bench", "list", "mrc"])]
    caches: Vec<::sim::cache_size::CacheSize>,
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
    /// Policies, comma-separated, each `NAME` or `NAME:key=value,...` (see --list), any
    /// replacement with any prefetcher as `REPLACEMENT+PREFETCHER` (`fifo+obl`,
    /// `clock+linux-readahead`, `lru+planner`, `lru+none`), or "all" (every policy of Cao's but
    /// the exact `optimal`) [default: all; with --mrc: LRU's and OPT's curves]. Eviction
    /// policies, with libCacheSim's defaults and miss counts: sieve, s3fifo, arc, 2q, slru,
    /// lruk, lfu, lfuda, wtinylfu, lirs; clockpro (go-clockpro's counts)
    #[arg(long = "policy", num_args = 1..)]
    policies: Vec<String>,
    /// List every policy with its paper section and options, and exit
    #[arg(long)]
    list: bool,
    /// Miss-ratio curves instead of a sweep, demand fetching at unit time, at each --cache
    /// size: of each --policy (any policy of --list or pairing), sampled when the trace is
    /// large (see --sample), or without --policy LRU's exact curve (one pass, stack
    /// distances) and OPT's (Belady's MIN)
    #[arg(long, conflicts_with_all = ["bench", "list", "devices", "fetch_times", "realistic"])]
    mrc: bool,
    /// With --mrc and --policy: sizes from 1/N to N/N of the working set, instead of powers
    /// of two
    #[arg(long, requires = "mrc", conflicts_with = "caches", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    mrc_sizes: Option<u64>,
    /// With --mrc and --policy: SHARDS spatial sampling at this rate (0 < RATE <= 1; 1 runs
    /// every size exactly) [default: exact unless sizes x references exceed 5e7, then about
    /// 20,000 sampled blocks]; the sampled curve is checked against exact runs at a few sizes
    /// and the error printed
    #[arg(long, requires = "mrc")]
    sample: Option<f64>,
    /// With a sampled --mrc: sizes at which to run the full trace and print the sampling error
    #[arg(long, default_value_t = 2, requires = "mrc")]
    mrc_checks: usize,
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
    if options.fetch_times.is_empty() && options.devices.is_empty() {
        eprintln!(
            "prefetch sim: no --device or --fetch-time: demand fetching at unit time (unit:1); \
             misses do not depend on the device, times do"
        );
    }
    let mut runs = Vec::new();
    for plan in options.plans()? {
        runs.extend(run_with_progress(&plan, args.jobs)?);
    }
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
/// terminal and the sweep takes over a second.
fn run_with_progress(
    plan: &::sim::sweep::Plan,
    jobs: Option<usize>,
) -> anyhow::Result<Vec<::sim::sweep::Run>> {
    let jobs = pool_size(jobs, plan.len());
    let bar = progress(plan.len() as u64, "runs");
    let runs = plan.run(jobs, &|| bar.inc(1));
    bar.finish_and_clear();
    Ok(runs?)
}

/// A bar of `len` steps on standard error, drawn from one second on and only when standard
/// error is a terminal (so short runs and redirected output show nothing).
fn progress(len: u64, what: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::hidden(),
    );
    let template =
        format!("{{spinner}} {{bar:40}} {{pos}}/{{len}} {what}, {{elapsed}} ({{eta}} left)");
    bar.set_style(indicatif::ProgressStyle::with_template(&template).expect("a valid template"));
    if std::io::stderr().is_terminal() {
        let shown = bar.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(1));
            if !shown.is_finished() {
                shown.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                shown.enable_steady_tick(std::time::Duration::from_millis(200));
            }
        });
    }
    bar
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

/// `--mrc`: the curves of each trace, as a table, JSON or SVG: LRU's and OPT's without
/// --policy, else each policy's.
fn mrc(args: &SimArgs, traces: &[::sim::TraceFile]) -> anyhow::Result<()> {
    if !args.policies.is_empty() {
        return policy_curves(args, traces);
    }
    let jobs = pool_size(args.jobs, usize::MAX);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    let mut points = Vec::new();
    for trace in traces {
        let future = ::sim::Future::load(trace.open()?)?;
        let capacities = match args.caches.is_empty() {
            true => ::sim::mrc::default_capacities(&future),
            false => options(args).capacities(trace)?,
        };
        points
            .extend(pool.install(|| ::sim::mrc::curve(&trace_name(trace), &future, &capacities))?);
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

/// The file name of `trace`.
fn trace_name(trace: &::sim::TraceFile) -> String {
    trace
        .path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// `--mrc --policy`: each policy's curve on each trace, sampled where the trace is large, with
/// the sampling error measured against exact runs.
fn policy_curves(args: &SimArgs, traces: &[::sim::TraceFile]) -> anyhow::Result<()> {
    use ::sim::refstring::{RefString, Times};
    if args.sample.is_some_and(|r| !(r > 0.0 && r <= 1.0)) {
        bail!("--sample takes a rate above 0 and at most 1 (0.01 keeps 1% of the blocks)")
    }
    let choices = options(args).choices()?;
    let jobs = pool_size(args.jobs, usize::MAX);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    let (mut points, mut checks) = (Vec::new(), Vec::new());
    for trace in traces {
        let string = RefString::read_on(trace, Times::Drop, jobs)?;
        let distinct = string.distinct();
        let capacities: Vec<usize> = match (args.mrc_sizes, args.caches.is_empty()) {
            (Some(n), _) => (1..=n)
                .map(|i| ((i as f64 / n as f64 * distinct as f64) as usize).max(1))
                .collect(),
            (None, true) => ::sim::mrc::default_capacities(&::sim::Future::link(string.clone())),
            (None, false) => args
                .caches
                .iter()
                .map(|c| c.blocks(trace.block_size, distinct))
                .collect(),
        };
        let rate = args
            .sample
            .unwrap_or_else(|| ::sim::shards::auto_rate(string.len(), distinct, capacities.len()));
        let name = trace_name(trace);
        let bar = progress(choices.len() as u64, "curves");
        for choice in &choices {
            let at = (name.as_str(), &string, trace.block_size);
            let curve = pool.install(|| ::sim::shards::curve(at, choice, &capacities, rate))?;
            if rate < 1.0 {
                let check = (&string, trace.block_size);
                checks.extend(pool.install(|| {
                    ::sim::shards::error_check(check, choice, &curve, args.mrc_checks)
                })?);
            }
            points.extend(curve);
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    if args.json {
        let out = serde_json::json!({ "points": points, "checks": checks });
        emit(&format!("{}\n", serde_json::to_string_pretty(&out)?))?;
    } else {
        emit(&format!(
            "Miss-ratio curves (simulated, demand fetching at unit time):\n\n{}",
            ::sim::report::curve_table(&points)
        ))?;
        for check in &checks {
            emit(&format!(
                "sampling error of {} at cache {}: exact {:.4}, sampled {:.4}, |error| {:.4}\n",
                check.policy,
                check.capacity,
                check.exact,
                check.sampled,
                check.error()
            ))?;
        }
    }
    if let Some(svg) = &args.svg {
        ::sim::report::draw(svg, &::sim::report::curve_panels(&points))?;
        eprintln!("wrote {}", svg.display());
    }
    Ok(())
}

fn bench(args: &SimArgs) -> anyhow::Result<()> {
    let capacity = args
        .caches
        .first()
        .map_or(8192, |c| c.blocks(args.block_size.unwrap_or(8192), 0));
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
