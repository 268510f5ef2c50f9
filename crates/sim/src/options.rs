//! What a simulation is asked as `prefetch sim` and the Python package's `libprefetch.sim` both
//! take it (trace files, policy names, cache sizes, fetch times, device names, the time model),
//! turned into [`Plan`]s: both front ends call [`Options::plans`] and then [`Plan::run`], so
//! they read the same traces with the same defaults and report the same numbers.

use crate::cache_size::CacheSize;
use crate::catalog::{self, Device};
use crate::choice::{self, Choice};
use crate::refstring::{RefString, Times};
use crate::sweep::Plan;
use crate::time::Time;
use crate::trace::{Format, TraceFile};
use crate::SimError;

/// A simulation as asked: every policy at every cache size on every device and trace.
#[derive(Clone, Debug)]
pub struct Options {
    /// The traces (a path, or bytes kept in [`TraceFile::content`]); [`Options::plans`] sets
    /// their block size from the fields below, and their format where they name none.
    pub traces: Vec<TraceFile>,
    /// Trace format; `None` recognises it from each trace.
    pub format: Option<Format>,
    /// Block size in bytes for request traces (8192 when `None`); given, it also splits the
    /// requests of object traces into blocks.
    pub block_size: Option<u64>,
    /// Cache sizes: blocks (objects, for object traces), bytes, or shares of the working set.
    pub caches: Vec<CacheSize>,
    /// Fetch times F: one `unit:F` device each, before [`Options::devices`].
    pub fetch_times: Vec<Time>,
    /// Devices as named (`unit:F`, `MODEL[:SCHEDULER]`), each a comma-separated list.
    pub devices: Vec<String>,
    /// Take F from the (one) trace: its mean response time per block (MSR Cambridge).
    pub fetch_time_from_trace: bool,
    /// Policies as named, each a comma-separated list of `NAME[:key=value,...]`; "all" (also
    /// what none means) stands for every policy of Cao's but the exact `optimal`.
    pub policies: Vec<String>,
    /// Realistic model: references take the trace's compute times (microseconds).
    pub realistic: bool,
    /// On `unit:F` devices, draw each fetch time from `F - spread ..= F + spread` (seeded).
    pub fetch_spread: Time,
    /// Fetches in flight at most for Cao's policies (1: the paper's model).
    pub depth: usize,
}

impl Default for Options {
    /// No trace, cache or device; every policy ("all"), the simplified model, depth 1.
    fn default() -> Self {
        Options {
            traces: Vec::new(),
            format: None,
            block_size: None,
            caches: Vec::new(),
            fetch_times: Vec::new(),
            devices: Vec::new(),
            fetch_time_from_trace: false,
            policies: vec!["all".to_string()],
            realistic: false,
            fetch_spread: 0,
            depth: 1,
        }
    }
}

impl Options {
    /// The plans: traces made re-readable (a pipe is read once into memory), policies and
    /// devices parsed, cache sizes in blocks; one plan over every trace, or one per trace when a
    /// size is a share of the working set (its blocks depend on the trace). Errors name the bad
    /// trace, policy or device.
    pub fn plans(&self) -> Result<Vec<Plan>, SimError> {
        let traces = self.trace_files()?;
        let plan = Plan {
            choices: self.choices()?,
            capacities: Vec::new(),
            devices: self.parse_devices(&traces)?,
            traces: Vec::new(),
            realistic: self.realistic,
            fetch_spread: self.fetch_spread,
            depth: self.depth,
        };
        if !self.caches.iter().any(CacheSize::needs_working_set) {
            let block_size = self.block_size.unwrap_or(8192);
            let capacities = self
                .caches
                .iter()
                .map(|c| c.blocks(block_size, 0))
                .collect();
            return Ok(vec![Plan {
                capacities,
                traces,
                ..plan
            }]);
        }
        traces
            .into_iter()
            .map(|trace| {
                Ok(Plan {
                    capacities: self.capacities(&trace)?,
                    traces: vec![trace],
                    ..plan.clone()
                })
            })
            .collect()
    }

    /// The cache sizes of `trace` in blocks (its working set read once if a size is a share).
    pub fn capacities(&self, trace: &TraceFile) -> Result<Vec<usize>, SimError> {
        let distinct = match self.caches.iter().any(CacheSize::needs_working_set) {
            true => RefString::read(trace, Times::Drop)?.distinct(),
            false => 0,
        };
        Ok(self
            .caches
            .iter()
            .map(|c| c.blocks(trace.block_size, distinct))
            .collect())
    }

    /// The traces with this format and block size, each made re-readable if it is a pipe.
    pub fn trace_files(&self) -> Result<Vec<TraceFile>, SimError> {
        self.traces
            .iter()
            .map(|trace| {
                let mut trace = TraceFile {
                    format: trace.format.or(self.format),
                    block_size: self.block_size.unwrap_or(8192),
                    split_objects: self.block_size.is_some(),
                    ..trace.clone()
                };
                if trace.content.is_none() {
                    trace.read_once()?;
                }
                Ok(trace)
            })
            .collect()
    }

    /// The devices: one `unit:F` per fetch time (or the trace's mean response time), then the
    /// named ones; `unit:1` (demand fetching at unit time) when there is none.
    fn parse_devices(&self, traces: &[TraceFile]) -> Result<Vec<Device>, SimError> {
        let mut fetch_times = self.fetch_times.clone();
        if self.fetch_time_from_trace {
            let [trace] = traces else {
                return Err(SimError::Config(
                    "--fetch-time-from-trace takes one trace".into(),
                ));
            };
            fetch_times.push(
                trace.mean_service_time()?.ok_or_else(|| {
                    SimError::Config("the trace records no response times".into())
                })?,
            );
        }
        let mut devices: Vec<Device> = fetch_times
            .iter()
            .map(|&fetch| Device::Unit { fetch })
            .collect();
        for list in &self.devices {
            devices.extend(catalog::parse_devices(list)?);
        }
        if devices.is_empty() {
            devices.push(Device::Unit { fetch: 1 });
        }
        Ok(devices)
    }

    /// The named policies; "all" (or none) stands for every policy of Cao's but `optimal`.
    pub fn choices(&self) -> Result<Vec<Choice>, SimError> {
        let all = ["all".to_string()];
        let policies = match self.policies.is_empty() {
            true => &all[..],
            false => &self.policies[..],
        };
        let all: Vec<&str> = crate::reference_policies()
            .map(|p| p.name)
            .filter(|name| *name != "optimal")
            .collect();
        let expanded: Vec<String> = policies
            .iter()
            .flat_map(|list| list.split(','))
            .map(|item| match item {
                "all" => all.join(","),
                item => item.to_string(),
            })
            .collect();
        choice::parse_choices(&expanded.join(","))
    }
}
