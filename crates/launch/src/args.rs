//! The options of `prefetch run`, as values: what the full command line's parser (clap, in the
//! `cli` crate) and the front's own ([`crate::parse`]) both produce.
//!
//! No paper section (the command line of `prefetch run`).

use std::ffi::OsString;
use std::path::PathBuf;

/// `prefetch run`'s options (their help is the full command line's `RunArgs`).
pub struct Run {
    /// `--replay FILE`
    pub replay: Option<PathBuf>,
    /// `--restore SNAPSHOT`
    pub restore: Option<PathBuf>,
    /// `--competitive`
    pub competitive: bool,
    /// `--cache-budget SIZE`, in bytes
    pub cache_budget: Option<u64>,
    /// `--cache-policy NAME`
    pub cache_policy: String,
    /// `--cache-writeback`
    pub cache_writeback: bool,
    /// What `run` and `record` share.
    pub common: Common,
}

/// What `prefetch run` and `prefetch record` share.
pub struct Common {
    /// `--no-children`
    pub no_children: bool,
    /// `--library PATH`
    pub library: Option<PathBuf>,
    /// The program and its arguments (after `--`; never empty).
    pub command: Vec<OsString>,
}
