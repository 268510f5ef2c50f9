//! The papers' experiments in one shape: each is an [`Experiment`] that runs from a [`Setup`]
//! (trace directory, progress) and returns a [`Report`] (the summary to print, its section of
//! `docs/repro.md`, its files as data), listed once in [`EXPERIMENTS`]. The library writes no
//! file: `prefetch repro NAME` looks the name up here, prints the report and writes its files
//! and section.
//!
//! - `cao`: Cao et al. SIGMETRICS'95 Figure 3 and section 4.3 ([`crate::repro::cao`]);
//! - `dulo`: DULO FAST'05 section 5 ([`crate::disksim::experiments::dulo`]);
//! - `libprefetch`: the ATC'09 paper's Figures 2 and 3
//!   ([`crate::disksim::experiments::libprefetch`]);
//! - `competitive`: TR840 section 5.2, Figures 5-7 ([`crate::disksim::tr840`]).

use std::path::Path;

use crate::disksim::experiments::{dulo, libprefetch};
pub use crate::disksim::experiments::{Content, Output, Report};
use crate::disksim::tr840;
use crate::SimError;

/// What an experiment is given.
pub struct Setup<'a> {
    /// The reference traces (`traces/` of the repository).
    pub traces: &'a Path,
    /// Called as runs finish: runs done, runs in all, what just ran.
    pub progress: &'a dyn Fn(u64, u64, &str),
}

/// One reproduction.
pub trait Experiment: Sync {
    /// Runs it; its files are in the report.
    fn run(&self, setup: &Setup<'_>) -> Result<Report, SimError>;
}

/// A registered experiment.
pub struct Entry {
    /// Name on the command line.
    pub name: &'static str,
    /// Whether it reads the reference traces.
    pub needs_traces: bool,
    /// The heading of its section of `docs/repro.md`, if it writes one.
    pub doc_heading: Option<&'static str>,
    /// The experiment.
    pub experiment: &'static dyn Experiment,
}

/// Every experiment; adding one is one line here.
pub const EXPERIMENTS: &[Entry] = &[
    Entry {
        name: "cao",
        needs_traces: true,
        doc_heading: None,
        experiment: &Cao,
    },
    Entry {
        name: "dulo",
        needs_traces: true,
        doc_heading: Some("DULO"),
        experiment: &Dulo,
    },
    Entry {
        name: "libprefetch",
        needs_traces: false,
        doc_heading: Some("libprefetch reorder buffer and infill (simulated)"),
        experiment: &Libprefetch,
    },
    Entry {
        name: "competitive",
        needs_traces: false,
        doc_heading: None,
        experiment: &Competitive,
    },
];

/// Cao et al.'s Figure 3 and model comparison on the reference traces.
struct Cao;

impl Experiment for Cao {
    fn run(&self, setup: &Setup<'_>) -> Result<Report, SimError> {
        let report = crate::repro::cao::run(setup.traces)?;
        Ok(Report {
            summary: report.summary,
            section: String::new(),
            outputs: report.outputs,
        })
    }
}

/// DULO against CLOCK on the mixed traces and synthetic ones, with sensitivity tables.
struct Dulo;

impl Experiment for Dulo {
    fn run(&self, setup: &Setup<'_>) -> Result<Report, SimError> {
        dulo::run(&dulo::Setup::new(setup.traces))
    }
}

/// libprefetch's Figures 2 and 3 on the simulated disk.
struct Libprefetch;

impl Experiment for Libprefetch {
    fn run(&self, _setup: &Setup<'_>) -> Result<Report, SimError> {
        libprefetch::run(&libprefetch::Setup::default())
    }
}

/// TR840's microbenchmarks: throughput against concurrency under Linux read-ahead, AP, CP and
/// CPEM, with three disk schedulers.
struct Competitive;

impl Experiment for Competitive {
    fn run(&self, setup: &Setup<'_>) -> Result<Report, SimError> {
        let config = tr840::Config::default();
        let total = (config.benches.len()
            * config.concurrency.len()
            * config.schedulers.len()
            * config.kernels.len()) as u64;
        let mut done = 0;
        let rows = tr840::run(&config, |row| {
            done += 1;
            let what = format!(
                "{} {} {} N={}",
                row.bench, row.scheduler, row.kernel, row.concurrency
            );
            (setup.progress)(done, total, &what);
        })?;
        Ok(Report {
            summary: tr840::summary(&rows, &config),
            section: String::new(),
            outputs: tr840::outputs(&rows, &config)?,
        })
    }
}
