//! Running policies over traces: one run over a trace in memory or streamed, and sweeps over
//! cache sizes and fetch times that report rows like the paper's Figure 3.

use serde::Serialize;

use crate::cache::{Block, Interner};
use crate::disksim::cao::Run;
pub use crate::disksim::cao::RunSetup;
use crate::future::Future;
use crate::metrics::Metrics;
use crate::policy::{opt_demand, Build, PolicyInfo};
use crate::refstring::RefString;
use crate::time::{FetchTime, ReferenceTime, Time, Timing};
use crate::trace::{Reference, TraceFile};
use crate::{SimError, TraceError};

/// Runs `policy` over a trace held in memory with its future.
pub fn run_future(
    policy: &PolicyInfo,
    future: &Future,
    setup: &RunSetup,
) -> Result<Metrics, SimError> {
    run_in_memory(policy, future.string(), Some(future), setup)
}

/// Runs `policy`, which must not need the future, over a trace held in memory: its blocks were
/// numbered once when it was read, so the run hashes nothing. Sweeps share one string between
/// their runs.
pub fn run_string(
    policy: &PolicyInfo,
    string: &RefString,
    setup: &RunSetup,
) -> Result<Metrics, SimError> {
    refuse_offline(policy)?;
    run_in_memory(policy, string, None, setup)
}

fn run_in_memory(
    policy: &PolicyInfo,
    string: &RefString,
    future: Option<&Future>,
    setup: &RunSetup,
) -> Result<Metrics, SimError> {
    setup.validate()?;
    let mut ids = string.ids().clone();
    let initial: Vec<Block> = setup.initial.iter().map(|&raw| ids.intern(raw)).collect();
    let build = Build {
        capacity: setup.capacity,
        timing: &setup.timing,
        future,
        initial: &initial,
        ids: &ids,
        depth: setup.depth,
    };
    let mut instance = (policy.build)(&build)?;
    let run = Run {
        name: policy.name,
        ids,
        future,
        setup,
        initial: &initial,
    };
    run.on_string(instance.as_mut(), string)
}

/// Refuses an offline policy where the future is not loaded.
fn refuse_offline(policy: &PolicyInfo) -> Result<(), SimError> {
    match policy.needs_future {
        true => Err(SimError::Config(format!(
            "{} needs the whole trace; use run_future",
            policy.name
        ))),
        false => Ok(()),
    }
}

/// Runs `policy`, which must not need the future, over a streamed trace: memory stays
/// proportional to the number of distinct blocks, not to the trace length.
pub fn run_stream<I>(
    policy: &PolicyInfo,
    references: I,
    setup: &RunSetup,
) -> Result<Metrics, SimError>
where
    I: Iterator<Item = Result<Reference, TraceError>>,
{
    setup.validate()?;
    refuse_offline(policy)?;
    let mut ids = Interner::default();
    let initial: Vec<Block> = setup.initial.iter().map(|&raw| ids.intern(raw)).collect();
    let build = Build {
        capacity: setup.capacity,
        timing: &setup.timing,
        future: None,
        initial: &initial,
        ids: &ids,
        depth: setup.depth,
    };
    let mut instance = (policy.build)(&build)?;
    let run = Run {
        name: policy.name,
        ids,
        future: None,
        setup,
        initial: &initial,
    };
    run.on_stream(instance.as_mut(), references)
}

/// A sweep: every policy at every cache size and fetch time.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Policies to run.
    pub policies: Vec<&'static PolicyInfo>,
    /// Cache sizes in blocks.
    pub capacities: Vec<usize>,
    /// Fetch times (ticks; one reference is one tick in the simplified model, microseconds in
    /// the realistic one).
    pub fetch_times: Vec<Time>,
    /// Use the trace's compute times (realistic model) instead of one tick per reference.
    pub realistic: bool,
    /// Draw each fetch time uniformly from `F - spread ..= F + spread` (seeded, repeatable)
    /// instead of a constant F; 0 for the constant.
    pub fetch_spread: Time,
    /// Fetches in flight at most (1: the paper's one disk).
    pub depth: usize,
}

/// One row of a sweep.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Where it was measured: always "simulated" here.
    pub setting: &'static str,
    /// The time model: "simplified" (times in references) or "realistic" (microseconds).
    pub model: &'static str,
    /// Fetches in flight at most (1 in the paper's model).
    pub depth: usize,
    /// Trace file name.
    pub trace: String,
    /// Policy name.
    pub policy: &'static str,
    /// Cache size in blocks.
    pub capacity: usize,
    /// Fetch time F.
    pub fetch_time: Time,
    /// The counters.
    #[serde(flatten)]
    pub metrics: Metrics,
    /// OPT-demand's fetch count for this trace and cache (the minimum), when computed.
    pub min_fetches: Option<u64>,
    /// Elapsed time / (min_fetches x F), as in Figure 3.
    pub normalized_elapsed: Option<f64>,
}

impl Sweep {
    /// The setup of one run of the sweep: `capacity` blocks, fetches of `fetch` ticks, an
    /// empty cache at the start.
    fn setup(&self, capacity: usize, fetch: Time) -> RunSetup {
        RunSetup {
            capacity,
            timing: self.timing(fetch),
            initial: Vec::new(),
            depth: self.depth,
        }
    }

    fn timing(&self, fetch: Time) -> Timing {
        let reference = if self.realistic {
            ReferenceTime::FromTrace
        } else {
            ReferenceTime::Uniform(1)
        };
        let fetch = match self.fetch_spread {
            0 => FetchTime::Constant(fetch),
            spread => FetchTime::Uniform {
                mean: fetch,
                spread,
                seed: 1,
            },
        };
        Timing { reference, fetch }
    }

    /// Runs the sweep over `trace`. The trace is loaded into memory once if any policy needs
    /// the future (then rows are normalised by OPT-demand's fetches); otherwise it is streamed
    /// again for every run and rows are not normalised.
    pub fn run(&self, trace: &TraceFile) -> Result<Vec<Row>, SimError> {
        let name = trace
            .path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        if self.policies.iter().any(|p| p.needs_future) {
            let future = Future::load(trace.open()?)?;
            return self.run_future(&name, &future);
        }
        let mut rows = Vec::new();
        for &capacity in &self.capacities {
            for &fetch in &self.fetch_times {
                let setup = self.setup(capacity, fetch);
                for &policy in &self.policies {
                    let metrics = run_stream(policy, trace.open()?, &setup)?;
                    rows.push(Row::new(&name, policy.name, &setup, metrics, None));
                }
            }
        }
        Ok(rows)
    }

    /// Runs the sweep over a trace in memory; rows are normalised by OPT-demand's fetches.
    pub fn run_future(&self, name: &str, future: &Future) -> Result<Vec<Row>, SimError> {
        let mut rows = Vec::new();
        for &capacity in &self.capacities {
            let min = run_future(
                &opt_demand::INFO,
                future,
                &RunSetup::simplified(capacity, 1),
            )?
            .fetches();
            for &fetch in &self.fetch_times {
                let setup = self.setup(capacity, fetch);
                for &policy in &self.policies {
                    let metrics = run_future(policy, future, &setup)?;
                    rows.push(Row::new(name, policy.name, &setup, metrics, Some(min)));
                }
            }
        }
        Ok(rows)
    }
}

impl Row {
    fn new(
        trace: &str,
        policy: &'static str,
        setup: &RunSetup,
        metrics: Metrics,
        min_fetches: Option<u64>,
    ) -> Self {
        let fetch_time = setup.timing.mean_fetch();
        let normalized_elapsed =
            min_fetches.and_then(|m| metrics.normalized_elapsed(m, fetch_time));
        let model = match setup.timing.reference {
            ReferenceTime::Uniform(_) => "simplified",
            ReferenceTime::FromTrace => "realistic",
        };
        Row {
            setting: "simulated",
            model,
            depth: setup.depth,
            trace: trace.to_string(),
            policy,
            capacity: setup.capacity,
            fetch_time,
            metrics,
            min_fetches,
            normalized_elapsed,
        }
    }
}
