//! `libprefetch._native.sim_run`: the simulator of crate `sim` (Cao et al. SIGMETRICS 1995, DULO,
//! competitive prefetching, libprefetch's planner), asked as `prefetch sim` asks it
//! ([`sim::options::Options`], [`sim::sweep::Plan::run_until`]), its rows returned as the JSON
//! `prefetch sim --json` prints; `libprefetch/sim.py` makes them dataclasses.
//!
//! The run works on a thread of its own with the GIL released; the calling thread wakes every
//! 50 ms to run Python's signal handlers, so Ctrl-C raises `KeyboardInterrupt` at once: no trace
//! read or run starts after it, and the runs under way end on their thread, unreported.
//!
//! Errors: a trace that cannot be opened raises `OSError` (with the errno); a malformed trace
//! (naming the file and line), an unknown policy or device, a bad setting raise `ValueError`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use sim::cache_size::CacheSize;
use sim::options::Options;
use sim::{Format, SimError, TraceError, TraceFile};

/// How often a waiting call runs Python's signal handlers.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

fn to_py(error: SimError) -> PyErr {
    match error {
        SimError::Trace(TraceError::Io { path, cause }) => PyOSError::new_err((
            cause.raw_os_error().unwrap_or(libc::EIO),
            format!("{}: {cause}", path.display()),
        )),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// A trace as Python gives it: a path, or `(name, iterable of block numbers)` kept in memory
/// as the `blocks` format's lines.
fn trace_file(trace: &Bound<'_, PyAny>) -> PyResult<TraceFile> {
    if let Ok(path) = trace.extract::<PathBuf>() {
        return Ok(TraceFile::new(path));
    }
    let (name, blocks): (String, Bound<'_, PyAny>) = trace.extract()?;
    let mut lines = Vec::new();
    for block in blocks.try_iter()? {
        let block: u64 = block?.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "trace {name}: a request is a block or object number (an int >= 0)"
            ))
        })?;
        writeln!(lines, "{block}").expect("writing to memory");
    }
    Ok(TraceFile {
        format: Some(Format::Blocks),
        content: Some(lines.into()),
        ..TraceFile::new(name)
    })
}

/// A cache size as Python gives it: an int (blocks), or a string as `--cache` takes it (`64M`, `1%`).
fn cache_size(size: &Bound<'_, PyAny>) -> PyResult<CacheSize> {
    if let Ok(blocks) = size.extract::<usize>() {
        return Ok(CacheSize::Blocks(blocks));
    }
    let text: String = size.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "cache size {size}: give an int or a string (64M, 1%)"
        ))
    })?;
    text.parse()
        .map_err(|e: SimError| PyValueError::new_err(e.to_string()))
}

/// Runs `prefetch sim` on `traces` and returns its `--json` rows (as one JSON text).
#[pyfunction]
#[pyo3(signature = (
    traces, policies, caches, fetch_times, devices, *, format=None, block_size=None,
    fetch_time_from_trace=false, realistic=false, fetch_spread=0, depth=1, jobs=None
))]
#[allow(clippy::too_many_arguments)] // `prefetch sim`'s options, each a keyword in Python
fn sim_run(
    py: Python<'_>,
    traces: Vec<Bound<'_, PyAny>>,
    policies: Vec<String>,
    caches: Vec<Bound<'_, PyAny>>,
    fetch_times: Vec<u64>,
    devices: Vec<String>,
    format: Option<String>,
    block_size: Option<u64>,
    fetch_time_from_trace: bool,
    realistic: bool,
    fetch_spread: u64,
    depth: usize,
    jobs: Option<usize>,
) -> PyResult<String> {
    let format = format
        .map(|f| f.parse::<Format>())
        .transpose()
        .map_err(PyValueError::new_err)?;
    if block_size == Some(0) {
        return Err(PyValueError::new_err("block_size must be at least 1 byte"));
    }
    let options = Options {
        traces: traces.iter().map(trace_file).collect::<PyResult<_>>()?,
        format,
        block_size,
        caches: caches.iter().map(cache_size).collect::<PyResult<_>>()?,
        fetch_times,
        devices,
        fetch_time_from_trace,
        policies,
        realistic,
        fetch_spread,
        depth,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (sender, receiver) = mpsc::channel();
    let stop_run = Arc::clone(&stop);
    std::thread::Builder::new()
        .name("libprefetch-sim".into())
        .spawn(move || {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let rows = options.plans().and_then(|plans| {
                let mut rows = Vec::new();
                for plan in plans {
                    let jobs = jobs.unwrap_or(cores).min(plan.len()).max(1);
                    rows.extend(plan.run_until(jobs, &|| {}, &stop_run)?);
                }
                Ok(rows)
            });
            // The caller may have gone (Ctrl-C): nobody wants these rows then.
            let _ = sender.send(rows.map(|rows| serde_json::to_string(&rows)));
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the simulator: {e}")))?;
    let mut receiver = receiver;
    loop {
        // The receiver moves to the detached closure and back: it may move between threads, not
        // be shared by them.
        let (received, back) = py.detach(move || (receiver.recv_timeout(SIGNAL_CHECK), receiver));
        receiver = back;
        match received {
            Ok(Ok(json)) => {
                return json.map_err(|e| PyRuntimeError::new_err(e.to_string()));
            }
            Ok(Err(error)) => return Err(to_py(error)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(signal) = py.check_signals() {
                    stop.store(true, Ordering::Relaxed);
                    return Err(signal);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err("the simulator's thread panicked"));
            }
        }
    }
}

/// Adds the simulator's functions to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(sim_run, module)?)
}
