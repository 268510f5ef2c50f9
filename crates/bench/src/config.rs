//! What one `prefetch bench` invocation is asked to do ([`BenchConfig`]), and how it starts the
//! child processes its passes run in ([`Launcher`]; the runner starts and reads them).

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::cache::Eviction;
use crate::mode::Mode;
use crate::workload::Workload;

/// Everything one `prefetch bench` invocation needs.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// The access pattern.
    pub workload: Workload,
    /// The data file (made if missing or of the wrong size).
    pub file: PathBuf,
    /// Size of the data file in bytes (at least the workload's span).
    pub file_size: u64,
    /// The modes to compare, in report order.
    pub modes: Vec<Mode>,
    /// Measured runs per variant; the report shows the median.
    pub runs: usize,
    /// How the cache is emptied before each cold run.
    pub eviction: Eviction,
    /// Also measure warm runs (nothing evicted).
    pub warm: bool,
    /// Run every pass inside a memory cgroup of this many bytes; several: a sweep, one group each.
    pub memory_limits: Vec<u64>,
    /// libprefetch reorder-buffer caps; empty: the library's own budget; several: a sweep.
    pub windows: Vec<u64>,
    /// libprefetch infill (largest merged gap); None: the library's default.
    pub infill_bytes: Option<u64>,
    /// Draw progress bars on stderr.
    pub show_progress: bool,
    /// Concurrent instances (section 5.6): each a child process reading its own copy of the data file.
    pub instances: usize,
    /// How to start child runs (needed with `memory_limits` or several `instances`).
    pub launcher: Option<Launcher>,
}

/// How to start a child that runs [`serve_child`]: a program and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launcher {
    /// The executable (normally this very binary).
    pub program: PathBuf,
    /// Arguments that select the hidden child subcommand.
    pub args: Vec<String>,
}

impl Launcher {
    /// This running executable with `args` (the path of its hidden child subcommand).
    pub fn current_exe(args: &[&str]) -> Result<Launcher> {
        Ok(Launcher {
            program: std::env::current_exe().context("finding this executable to re-run it")?,
            args: args.iter().map(|arg| arg.to_string()).collect(),
        })
    }
}
