//! What a simulation is asked as `prefetch sim` and the Python package's `libprefetch.sim` both
//! take it (trace files, policy names, cache sizes, fetch times, device names, the time model),
//! turned into one [`Plan`]: both front ends call [`Options::plan`] and then [`Plan::run`], so
//! they read the same traces with the same defaults and report the same numbers.

use crate::catalog::{self, Choice, Device};
use crate::sweep::Plan;
use crate::time::Time;
use crate::trace::{Format, TraceFile};
use crate::SimError;

/// A simulation as asked: every policy at every cache size on every device and trace.
#[derive(Clone, Debug)]
pub struct Options {
    /// The traces (a path, or bytes kept in [`TraceFile::content`]); [`Options::plan`] sets
    /// their block size from the fields below, and their format where they name none.
    pub traces: Vec<TraceFile>,
    /// Trace format; `None` recognises it from each trace.
    pub format: Option<Format>,
    /// Block size in bytes for request traces (8192 when `None`); given, it also splits the
    /// requests of object traces into blocks.
    pub block_size: Option<u64>,
    /// Cache sizes in blocks (objects, for object traces).
    pub caches: Vec<usize>,
    /// Fetch times F: one `unit:F` device each, before [`Options::devices`].
    pub fetch_times: Vec<Time>,
    /// Devices as named (`unit:F`, `MODEL[:SCHEDULER]`), each a comma-separated list.
    pub devices: Vec<String>,
    /// Take F from the (one) trace: its mean response time per block (MSR Cambridge).
    pub fetch_time_from_trace: bool,
    /// Policies as named, each a comma-separated list of `NAME[:key=value,...]`; "all" stands
    /// for every policy of Cao's but the exact `optimal`.
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
    /// The plan: traces made re-readable (a pipe is read once into memory), policies and
    /// devices parsed. Errors name the bad trace, policy or device, or say what to give.
    pub fn plan(&self) -> Result<Plan, SimError> {
        let traces = self.trace_files()?;
        Ok(Plan {
            choices: self.choices()?,
            capacities: self.caches.clone(),
            devices: self.parse_devices(&traces)?,
            traces,
            realistic: self.realistic,
            fetch_spread: self.fetch_spread,
            depth: self.depth,
        })
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
    /// named ones; an error saying what to give when there is none.
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
            return Err(SimError::Config(
                "give the device: --fetch-time F or --device unit:F|MODEL[:SCHEDULER]".into(),
            ));
        }
        Ok(devices)
    }

    /// The named policies; "all" stands for every policy of Cao's but `optimal`.
    fn choices(&self) -> Result<Vec<Choice>, SimError> {
        let all: Vec<&str> = crate::reference_policies()
            .map(|p| p.name)
            .filter(|name| *name != "optimal")
            .collect();
        let expanded: Vec<String> = self
            .policies
            .iter()
            .flat_map(|list| list.split(','))
            .map(|item| match item {
                "all" => all.join(","),
                item => item.to_string(),
            })
            .collect();
        catalog::parse_choices(&expanded.join(","))
    }
}
