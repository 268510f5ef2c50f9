//! Speed of the simulator on an `oracleGeneral` trace (a benchmark, not a test): end to end
//! (reading the file and simulating, through the same `sweep::Plan` that `prefetch sim` runs)
//! for LRU at one cache size, printing the miss count to compare with libCacheSim's; the engine
//! alone on the trace already in memory (a [`RefString`]: blocks numbered once when read, as a
//! sweep shares it between its runs); and a 4-point sweep on 1 and on 2 threads, alternated
//! three times (the ratio is of the best times), with the CPU time each took.
//!
//! `cargo run --release -p sim --example speed -- TRACE CACHE [alone [POLICY]]` (see
//! scripts/bench_speed.sh); with `alone`, only the engine alone, three times, for LRU or
//! another online policy of Cao's.

use std::time::Instant;

use sim::catalog::Device;
use sim::choice::parse_choices;
use sim::refstring::Times;
use sim::sweep::Plan;
use sim::{find, run_string, RefString, RunSetup, TraceFile};

/// How many times the sweep runs on 1 and then on 2 threads: on a shared machine the best of
/// each is the speed of the code, the others carry the neighbours' load.
const SWEEP_PAIRS: usize = 3;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(cache)) = (args.next(), args.next()) else {
        return Err("usage: speed TRACE CACHE [alone [POLICY]]".into());
    };
    let cache: usize = cache.parse()?;
    let trace = TraceFile::new(&path);
    if args.next().as_deref() == Some("alone") {
        let policy = args.next().unwrap_or_else(|| "lru-demand".into());
        let string = RefString::read(&trace, Times::Drop)?;
        for _ in 0..SWEEP_PAIRS {
            engine_alone(&string, cache, &policy)?;
        }
        return Ok(());
    }
    let plan = |choices: &str, capacities: Vec<usize>| -> Result<Plan, sim::SimError> {
        Ok(Plan {
            traces: vec![trace.clone()],
            choices: parse_choices(choices)?,
            capacities,
            devices: vec!["unit:1".parse::<Device>()?],
            realistic: false,
            fetch_spread: 0,
            depth: 1,
        })
    };

    let begin = Instant::now();
    let runs = plan("lru", vec![cache])?.run(1, &|| {})?;
    let end_to_end = begin.elapsed().as_secs_f64();
    let m = &runs[0].metrics;
    println!(
        "end to end: lru, cache {cache}: {} references, {} misses in {end_to_end:.3} s ({:.1} M refs/s)",
        m.references,
        m.misses,
        m.references as f64 / end_to_end / 1e6
    );

    let string = RefString::read(&trace, Times::Drop)?;
    engine_alone(&string, cache, "lru-demand")?;
    sweeps(plan("lru,fifo,clock,lru-obl", vec![cache])?)
}

/// Online `policy` of Cao's on the simulator's loop, the trace in memory.
fn engine_alone(
    string: &RefString,
    cache: usize,
    policy: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let name = policy.strip_suffix("-demand").unwrap_or(policy);
    let begin = Instant::now();
    let alone = run_string(find(policy)?, string, &RunSetup::simplified(cache, 1))?;
    let engine = begin.elapsed().as_secs_f64();
    println!(
        "engine alone: {name}, trace in memory as dense ids: {} misses in {engine:.3} s ({:.1} M refs/s)",
        alone.misses,
        alone.references as f64 / engine / 1e6
    );
    Ok(())
}

/// The 4-point sweep on 1 and 2 threads, alternated [`SWEEP_PAIRS`] times.
fn sweeps(sweep: Plan) -> Result<(), Box<dyn std::error::Error>> {
    let mut pairs = Vec::new();
    for _ in 0..SWEEP_PAIRS {
        let mut pair = [Timed::default(); 2];
        for (jobs, slot) in [1, 2].into_iter().zip(&mut pair) {
            let (begin, cpu) = (Instant::now(), cpu_seconds());
            sweep.run(jobs, &|| {})?;
            *slot = Timed {
                wall: begin.elapsed().as_secs_f64(),
                cpu: cpu_seconds() - cpu,
            };
        }
        pairs.push(pair);
    }
    let best = |i: usize| {
        pairs
            .iter()
            .map(|p| p[i])
            .min_by(|a, b| a.wall.total_cmp(&b.wall))
            .unwrap_or_default()
    };
    let shown: Vec<String> = pairs
        .iter()
        .map(|[one, two]| {
            format!(
                "{:.3}/{:.3} s (CPU {:.2}/{:.2} s)",
                one.wall, two.wall, one.cpu, two.cpu
            )
        })
        .collect();
    let (one, two) = (best(0), best(1));
    println!(
        "4-point sweep, 1/2 threads alternated {SWEEP_PAIRS} times: {}; best {:.3} s / {:.3} s: \
         {:.2}x ({:.2} cores busy on 2 threads)",
        shown.join(", "),
        one.wall,
        two.wall,
        one.wall / two.wall,
        two.cpu / two.wall
    );
    Ok(())
}

/// Wall-clock and CPU time (all threads) of one sweep, in seconds.
#[derive(Clone, Copy, Default)]
struct Timed {
    wall: f64,
    cpu: f64,
}

/// CPU time (user and system, all threads) this process has used so far, in seconds: on a
/// shared machine, CPU over wall time says how many cores a run really had.
fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain integers, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the struct it is given, which lives for the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
