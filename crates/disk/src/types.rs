//! The types every model and scheduler shares: a [`Request`], the [`DiskModel`] and
//! [`Scheduler`] traits, and the [`Error`] of parsing their names (with the name lists it
//! prints). Re-exported at the crate root, where callers name them; in a file of their own so
//! that the models and schedulers the root builds do not import from the root.

use std::time::Duration;

/// One read request as the device sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Caller's identifier, returned unchanged by schedulers.
    pub id: u64,
    /// Byte address on the disk of the first byte.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// When the request entered the queue (absolute time); used by the deadline scheduler, and
    /// by HDDs to hide the command overhead of requests that waited in the queue.
    pub arrival: Duration,
}

impl Request {
    /// Byte address one past the last byte of the request.
    pub fn end(&self) -> u64 {
        self.addr.saturating_add(self.len)
    }
}

/// A storage device's timing model. Stateful: head position, rotation, on-disk cache.
pub trait DiskModel: Send {
    /// Time to serve `req` if the actuator starts it at absolute time `now`;
    /// updates head position, rotation and cache state. Never panics: requests past the end of
    /// the disk are clamped to its last byte.
    fn service(&mut self, now: Duration, req: &Request) -> Duration;
    /// Where the head is (byte address), for schedulers: the byte after the last request served
    /// (the drive's own read-ahead may have moved on since).
    fn head(&self) -> u64;
    /// Capacity in bytes.
    fn capacity(&self) -> u64;
    /// How many requests the device can serve at the same time (1 for one actuator).
    fn parallelism(&self) -> usize {
        1
    }
}

/// A request queue ordered by a disk scheduling policy.
pub trait Scheduler: Send {
    /// Adds a request to the queue.
    fn push(&mut self, req: Request);
    /// Removes and returns the request to serve next, given the head position and the time.
    fn pop(&mut self, head: u64, now: Duration) -> Option<Request>;
    /// Number of queued requests.
    fn len(&self) -> usize;
    /// True when no request is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Errors from parsing model and scheduler names.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Error {
    /// The model name is not a preset nor a parameterised form.
    #[error("unknown disk model `{0}` (try: {MODEL_NAMES})")]
    UnknownModel(String),
    /// The scheduler name is unknown.
    #[error("unknown scheduler `{0}` (try: {SCHEDULER_NAMES})")]
    UnknownScheduler(String),
    /// A parameter of a model or scheduler is malformed or out of range.
    #[error("bad parameter in `{name}`: {reason}")]
    BadParameter {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The model names [`crate::model_from_name`] accepts, for help texts.
pub const MODEL_NAMES: &str = "st3500320as, ibm-36z15, hitachi-18zx, nvme, fixed:MS, \
ssd:LATENCY_US,CHANNELS,MB_PER_S, hdd:RPM,AVG_SEEK_MS,MB_PER_S (append :nocache to an HDD to \
disable its read-ahead)";

/// The scheduler names [`crate::scheduler_from_name`] accepts, for help texts.
pub const SCHEDULER_NAMES: &str = "fifo, clook, sstf, deadline, deadline:EXPIRE_MS";
