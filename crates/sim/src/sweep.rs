//! Sweeps over any policies of the [`catalog`](crate::catalog), cache sizes, devices and
//! traces, run in parallel (rayon), one [`Run`] per point in a fixed order whatever the number
//! of threads.
//!
//! Each trace is read once before the runs, and every run (on any thread) borrows what was
//! read: a [`Future`] if a policy needs the whole string (offline policies; the rows are then
//! normalised by OPT-demand's fetches, as the paper's Figure 3), otherwise a [`RefString`] when
//! a policy of Cao's runs (its blocks numbered once, so no run re-reads, re-parses or
//! hashes), and a disk-timed [`Workload`] if a replacement-and-prefetcher policy is chosen
//! (built from that string, so the file is read once for both kinds). A trace too large for
//! memory as a string is streamed from its file by each run instead.

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use serde::Serialize;

use crate::catalog::{run_parts, Device, Form};
use crate::choice::Choice;
use crate::disksim::Workload;
use crate::future::Future;
use crate::metrics::Metrics;
use crate::policy::opt_demand;
use crate::refstring::{RefString, Times};
use crate::runner::RunSetup;
use crate::runner::{run_future, run_stream, run_string};
use crate::time::{FetchTime, ReferenceTime, Time, Timing};
use crate::trace::TraceFile;
use crate::SimError;

/// What to run: every policy at every cache size on every device and trace.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The traces.
    pub traces: Vec<TraceFile>,
    /// The policies.
    pub choices: Vec<Choice>,
    /// Cache sizes in blocks.
    pub capacities: Vec<usize>,
    /// The devices.
    pub devices: Vec<Device>,
    /// Realistic model: references take the trace's compute times (microseconds).
    pub realistic: bool,
    /// On `unit:F` devices, draw each fetch time from `F - spread ..= F + spread` (seeded).
    pub fetch_spread: Time,
    /// Fetches in flight at most for Cao's policies (1: the paper's model).
    pub depth: usize,
}

/// One point of a sweep.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// Always "simulated".
    pub setting: &'static str,
    /// Trace file name.
    pub trace: String,
    /// The policy as named, with its options.
    pub policy: String,
    /// The device, as named.
    pub device: String,
    /// Unit of `elapsed` and `stall`: "units" (unit:F) or "us" (disk models).
    pub time_unit: &'static str,
    /// Cache size in blocks.
    pub capacity: usize,
    /// The counters (a reference to a block in flight is a miss).
    #[serde(flatten)]
    pub metrics: Metrics,
    /// OPT-demand's fetch count on this trace and cache, when the trace was loaded whole.
    pub min_fetches: Option<u64>,
    /// Elapsed / (min_fetches x F) on unit:F devices, as in Cao et al. Figure 3.
    pub normalized_elapsed: Option<f64>,
}

/// A trace read for the runs.
struct Loaded {
    file: TraceFile,
    name: String,
    future: Option<Future>,
    /// The reference string, when no future was loaded and a policy of Cao's runs the trace.
    string: Option<RefString>,
    workload: Option<Workload>,
}

impl Loaded {
    /// The trace in memory as dense blocks, if it was read so.
    fn in_memory(&self) -> Option<&RefString> {
        self.future
            .as_ref()
            .map(Future::string)
            .or(self.string.as_ref())
    }
}

/// One point before it runs.
struct Point<'a> {
    trace: &'a Loaded,
    choice: &'a Choice,
    capacity: usize,
    device: &'a Device,
    min_fetches: Option<u64>,
}

impl Plan {
    /// Number of runs.
    pub fn len(&self) -> usize {
        self.traces.len() * self.choices.len() * self.capacities.len() * self.devices.len()
    }

    /// Whether the plan has no run.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs every point on `jobs` threads, calling `done` after each; the runs come back in
    /// the order trace, device, cache size, policy. One job starts no thread.
    pub fn run(&self, jobs: usize, done: &(dyn Fn() + Sync)) -> Result<Vec<Run>, SimError> {
        self.run_until(jobs, done, &AtomicBool::new(false))
    }

    /// [`Plan::run`], starting no trace read and no run once `stop` is set (those under way
    /// finish), and then failing with [`SimError::Stopped`]: how a caller interrupts a sweep.
    pub fn run_until(
        &self,
        jobs: usize,
        done: &(dyn Fn() + Sync),
        stop: &AtomicBool,
    ) -> Result<Vec<Run>, SimError> {
        let stopped = || match stop.load(Ordering::Relaxed) {
            true => Err(SimError::Stopped),
            false => Ok(()),
        };
        let loaded: Vec<Loaded> = self
            .traces
            .iter()
            .map(|t| stopped().and_then(|()| self.load(t, jobs)))
            .collect::<Result<_, _>>()?;
        let run_all = |parallel: bool| -> Result<Vec<Run>, SimError> {
            let minima = self.minima(&loaded, parallel)?;
            let points = self.points(&loaded, &minima);
            let one = |point: &Point<'_>| {
                stopped()?;
                let run = self.run_point(point);
                done();
                run
            };
            match parallel {
                true => points.par_iter().map(one).collect(),
                false => points.iter().map(one).collect(),
            }
        };
        if jobs <= 1 || self.len() <= 1 {
            return run_all(false);
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .build()
            .map_err(|e| SimError::Config(format!("cannot start {jobs} threads: {e}")))?;
        pool.install(|| run_all(true))
    }

    /// Reads `file` for the runs, on `jobs` threads where the format allows it.
    fn load(&self, file: &TraceFile, jobs: usize) -> Result<Loaded, SimError> {
        let name = file
            .path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let future = match self.choices.iter().any(Choice::needs_future) {
            true => Some(Future::link(RefString::read_on(file, self.times(), jobs)?)),
            false => None,
        };
        let string = match future.is_none() && self.runs_cao_policy() {
            true => self.load_string(file, jobs)?,
            false => None,
        };
        let disk_timed = self
            .choices
            .iter()
            .any(|c| matches!(c.configured.0, Form::Pair(_)));
        let mut loaded = Loaded {
            file: file.clone(),
            name,
            future,
            string,
            workload: None,
        };
        if disk_timed {
            loaded.workload = Some(self.workload(&loaded)?);
        }
        Ok(loaded)
    }

    /// The workload of a trace for a replacement policy and a prefetcher: built from the
    /// reference string when the trace is in memory with what the run needs (its compute times,
    /// realistic model), so the file is read once for both kinds of policy; read from the file
    /// otherwise.
    fn workload(&self, loaded: &Loaded) -> Result<Workload, SimError> {
        let block_size = loaded.file.block_size;
        let workload = match loaded.in_memory() {
            Some(string) if !self.realistic || string.timed() => {
                Workload::from_references(string.references(), block_size, self.realistic)
            }
            _ => Workload::from_file(&loaded.file, self.realistic),
        };
        Ok(workload?)
    }

    /// Which compute times a trace read into memory keeps: the realistic model's only.
    fn times(&self) -> Times {
        match self.realistic {
            true => Times::Keep,
            false => Times::Drop,
        }
    }

    /// Whether any policy is one of Cao's.
    fn runs_cao_policy(&self) -> bool {
        self.choices
            .iter()
            .any(|c| matches!(c.configured.0, Form::AtIdle(_)))
    }

    /// The trace as a reference string, or `None` (stream it for each run) when it is larger
    /// than the memory available.
    fn load_string(&self, file: &TraceFile, jobs: usize) -> Result<Option<RefString>, SimError> {
        match RefString::read_on(file, self.times(), jobs) {
            Ok(string) => Ok(Some(string)),
            Err(SimError::TooLarge(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// OPT-demand's fetches for each loaded future and cache size.
    fn minima(&self, loaded: &[Loaded], parallel: bool) -> Result<Vec<Vec<Option<u64>>>, SimError> {
        let minimum = |future: Option<&Future>, capacity: usize| match future {
            Some(future) => Ok(Some(
                run_future(
                    &opt_demand::INFO,
                    future,
                    &RunSetup::simplified(capacity, 1),
                )?
                .fetches(),
            )),
            None => Ok(None),
        };
        loaded
            .iter()
            .map(|trace| {
                let future = trace.future.as_ref();
                match parallel {
                    true => self
                        .capacities
                        .par_iter()
                        .map(|&c| minimum(future, c))
                        .collect(),
                    false => self
                        .capacities
                        .iter()
                        .map(|&c| minimum(future, c))
                        .collect(),
                }
            })
            .collect()
    }

    fn points<'a>(&'a self, loaded: &'a [Loaded], minima: &[Vec<Option<u64>>]) -> Vec<Point<'a>> {
        let mut points = Vec::with_capacity(self.len());
        for (trace, minima) in loaded.iter().zip(minima) {
            for device in &self.devices {
                for (&capacity, &min_fetches) in self.capacities.iter().zip(minima) {
                    for choice in &self.choices {
                        points.push(Point {
                            trace,
                            choice,
                            capacity,
                            device,
                            min_fetches,
                        });
                    }
                }
            }
        }
        points
    }

    fn run_point(&self, point: &Point<'_>) -> Result<Run, SimError> {
        let metrics = match &point.choice.configured.0 {
            Form::AtIdle(info) => {
                let setup = RunSetup {
                    capacity: point.capacity,
                    timing: self.timing(point.device, point.trace.file.block_size),
                    initial: Vec::new(),
                    depth: self.depth,
                };
                let trace = point.trace;
                match (&trace.future, trace.in_memory()) {
                    (Some(future), _) if info.needs_future => run_future(info, future, &setup)?,
                    (_, Some(string)) => run_string(info, string, &setup)?,
                    _ => run_stream(info, trace.file.open()?, &setup)?,
                }
            }
            Form::Pair(pair) => {
                let workload = point.trace.workload.as_ref().ok_or_else(|| {
                    SimError::Config("the trace was not loaded as a workload".into())
                })?;
                let device = (point.device, self.realistic);
                run_parts(pair, workload, point.capacity, device).map_err(|e| match e {
                    SimError::BadOption { reason, .. } => SimError::BadOption {
                        spec: point.choice.label(),
                        reason,
                    },
                    e => e,
                })?
            }
        };
        let normalized_elapsed = match point.device {
            Device::Unit { fetch } => point
                .min_fetches
                .and_then(|m| metrics.normalized_elapsed(m, *fetch)),
            Device::Disk { .. } => None,
        };
        Ok(Run {
            setting: "simulated",
            trace: point.trace.name.clone(),
            policy: point.choice.label(),
            device: point.device.label(),
            time_unit: point.device.time_unit(),
            capacity: point.capacity,
            metrics,
            min_fetches: point.min_fetches,
            normalized_elapsed,
        })
    }

    /// The time model of Cao's policies on `device`.
    fn timing(&self, device: &Device, block_size: u64) -> Timing {
        let reference = match self.realistic {
            true => ReferenceTime::FromTrace,
            false => ReferenceTime::Uniform(1),
        };
        let fetch = match device {
            Device::Unit { fetch } if self.fetch_spread > 0 => FetchTime::Uniform {
                mean: *fetch,
                spread: self.fetch_spread,
                seed: 1,
            },
            device => device.fetch_time(block_size),
        };
        Timing { reference, fetch }
    }
}
