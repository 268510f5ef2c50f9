//! `prefetch sim`: run prefetching and caching policies over a trace in the simulator
//! (crate `sim`, Cao et al. SIGMETRICS 1995), one row per policy, cache size and fetch time;
//! or `--bench` to measure the simulator's own speed. Thin: parses, calls the crate, prints.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::builder::PossibleValuesParser;
use clap::Args;

/// Arguments of `prefetch sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// Trace file (gzip or plain): reference traces, the project's CSV, MSR Cambridge or UMass SPC;
    /// a pipe or FIFO (`<(zcat t.gz)`) is read once into memory
    #[arg(long, required_unless_present = "bench")]
    trace: Option<PathBuf>,
    /// Trace format: blocks, csv, msr, spc, recording (default: recognised from the first line)
    #[arg(long)]
    format: Option<::sim::Format>,
    /// Block size in bytes for request traces
    #[arg(long, default_value_t = 8192)]
    block_size: u64,
    /// Cache size(s) in blocks; several values make a sweep [--bench: 8192]
    #[arg(long = "cache", value_delimiter = ',', num_args = 1.., required_unless_present = "bench")]
    caches: Vec<usize>,
    /// Fetch time(s) F in reference times; several values make a sweep [--bench: 10]
    #[arg(long = "fetch-time", value_delimiter = ',', num_args = 1.., required_unless_present_any = ["bench", "fetch_time_from_trace"])]
    fetch_times: Vec<u64>,
    /// Take F from the trace: its mean response time per block, in microseconds (MSR
    /// Cambridge traces record it); for the realistic model, as in the paper's section 4.3
    #[arg(long, conflicts_with = "fetch_times", requires = "realistic")]
    fetch_time_from_trace: bool,
    /// Policies, comma-separated, or "all" (every policy but the exact `optimal`)
    #[arg(long = "policy", value_delimiter = ',', num_args = 1.., default_values_t = ["all".to_string()],
          value_parser = PossibleValuesParser::new(std::iter::once("all").chain(::sim::POLICIES.iter().map(|p| p.name))))]
    policies: Vec<String>,
    /// Realistic model: each reference takes the compute time in the trace (microseconds) and
    /// --fetch-time is in microseconds
    #[arg(long)]
    realistic: bool,
    /// Draw each fetch time uniformly from F - S ..= F + S (seeded, so runs repeat) instead of
    /// a constant F
    #[arg(long, default_value_t = 0, value_name = "S")]
    fetch_spread: u64,
    /// Fetches in flight at most; 1 is the paper's model (one disk, one fetch at a time)
    #[arg(long, default_value_t = 1)]
    depth: usize,
    /// Print the rows as JSON instead of a table
    #[arg(long)]
    json: bool,
    /// Draw the sweep (elapsed time and fetches, as in the paper's Figure 3) into this SVG file
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Measure the simulator's speed (references/second per policy) on a synthetic trace
    #[arg(long, conflicts_with = "trace")]
    bench: bool,
    /// Length of the synthetic trace for --bench
    #[arg(long, default_value_t = 10_000_000, requires = "bench")]
    refs: usize,
}

/// Runs `prefetch sim`.
pub fn run(args: SimArgs) -> anyhow::Result<()> {
    if args.bench {
        return bench(&args);
    }
    let Some(path) = args.trace.clone() else {
        bail!("--trace is required")
    };
    let policies = policies(&args.policies)?;
    let mut trace = ::sim::TraceFile {
        format: args.format,
        block_size: args.block_size,
        ..::sim::TraceFile::new(path)
    };
    // A pipe or FIFO can be read only once: keep it for detection and every run.
    trace.read_once()?;
    let fetch_times = match args.fetch_time_from_trace {
        true => vec![trace
            .mean_service_time()?
            .context("the trace records no response times")?],
        false => args.fetch_times.clone(),
    };
    let sweep = ::sim::Sweep {
        policies,
        capacities: args.caches.clone(),
        fetch_times,
        realistic: args.realistic,
        fetch_spread: args.fetch_spread,
        depth: args.depth,
    };
    let rows = sweep.run(&trace)?;
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
    } else {
        let model = if args.realistic {
            "realistic model, times in microseconds"
        } else {
            "simplified model, one time unit per reference"
        };
        let depth = match args.depth {
            1 => "one fetch at a time".to_string(),
            d => format!("up to {d} fetches at a time"),
        };
        let header = format!("Simulated ({model}, {depth}): {}\n\n", trace.path.display());
        emit(&(header + &::sim::report::table(&rows)))?;
    }
    if let Some(svg) = &args.svg {
        ::sim::report::draw(svg, &::sim::report::sweep_panels(&rows))?;
        eprintln!("wrote {}", svg.display());
    }
    Ok(())
}

/// The named policies; "all" stands for every policy but `optimal`.
fn policies(names: &[String]) -> anyhow::Result<Vec<&'static ::sim::PolicyInfo>> {
    let mut out = Vec::new();
    for name in names {
        match name.as_str() {
            "all" => out.extend(::sim::POLICIES.iter().filter(|p| p.name != "optimal")),
            _ => out.push(::sim::find(name)?),
        }
    }
    Ok(out)
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
