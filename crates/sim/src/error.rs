//! The simulator's one error type, [`SimError`]: bad trace input (naming the file and line, a
//! [`TraceError`]), bad settings, unknown policies and options, workloads outside their disk
//! layout, disk models that cannot be built, policy decisions that break the model's rules, and
//! output files that cannot be written. Every run, sweep and experiment returns it.

use std::path::PathBuf;

/// A trace could not be read. Every variant names the file; parse errors also name the line
/// (text formats) or the record (binary formats).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{path}: {cause}")]
    Io {
        /// The trace file.
        path: PathBuf,
        /// What the operating system said.
        cause: std::io::Error,
    },
    /// A line does not follow the trace format.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong with the line.
        message: String,
    },
    /// A record of a binary trace is malformed, cut short or unreadable.
    #[error("{path}: record {record}: {message}")]
    Record {
        /// The trace file.
        path: PathBuf,
        /// 1-based record number.
        record: u64,
        /// What is wrong with the record.
        message: String,
    },
}

/// A simulation could not run or a policy broke the model.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A setting is out of range (cache of 0 blocks, fetch time 0, unknown policy, ...).
    #[error("invalid setting: {0}")]
    Config(String),
    /// A policy option is not `key=value`, is not known to the policy, or has a bad value.
    #[error("policy `{spec}`: {reason}")]
    BadOption {
        /// The whole policy spec as given.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// A reference of a disk-timed workload is outside its layout.
    #[error(transparent)]
    Layout(#[from] OutOfLayout),
    /// A disk model or request scheduler cannot be built from its name.
    #[error(transparent)]
    Disk(#[from] disk::Error),
    /// The trace needs more memory than this machine has available.
    #[error("{0}")]
    TooLarge(String),
    /// A policy asked for something the model forbids (a programming error in the policy).
    #[error("policy {policy} broke the model: {message}")]
    Policy {
        /// Policy name.
        policy: &'static str,
        /// Which rule was broken.
        message: String,
    },
    /// The caller stopped the run (`Plan::run_until`).
    #[error("stopped before every run was done")]
    Stopped,
    /// An output file could not be written.
    #[error("{path}: {message}")]
    Output {
        /// The output file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// A workload whose references do not fit its layout.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("stream {stream}, reference {index}: block {block} of file {file} is outside the layout")]
pub struct OutOfLayout {
    /// The stream.
    pub stream: usize,
    /// 0-based position in the stream.
    pub index: usize,
    /// The file referenced.
    pub file: u32,
    /// The block referenced.
    pub block: u64,
}
