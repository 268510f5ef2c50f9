//! Disk models and request schedulers: one model, two worlds (the FUSE emulator and the simulator).
//!
//! Pure: no I/O, no clock. Time is passed in as an absolute [`Duration`] since an arbitrary epoch
//! (the caller's start), so a model can track platter rotation and on-disk read-ahead from it.
//!
//! # Contract for callers (emulator, simulator)
//! * Build a model with [`model_from_name`] and a scheduler with [`scheduler_from_name`].
//! * Queue requests with [`Scheduler::push`]. When the actuator is free at time `now`, take the
//!   next one with [`Scheduler::pop`]`(model.head(), now)` and ask the model how long it takes:
//!   [`DiskModel::service`]`(now, &req)`. The request completes at `now + service`; the actuator is
//!   free again then. Calls to `service` must come in non-decreasing `now`.
//! * Set [`Request::arrival`] to when the request was queued. An HDD processes the command of a
//!   request that waited in the queue while the previous one was served (tagged command
//!   queueing), so such a request does not pay the controller overhead again; a request issued
//!   when the actuator is idle (arrival = now) pays it in full. A call with `now` earlier than
//!   the end of the previous request waits for the actuator (the returned time includes it).
//! * [`DiskModel::parallelism`] (an addition to the brief's API, default 1) says how many
//!   requests the device can serve at once: 1 for disks with one actuator; more for SSDs, whose
//!   `service` then accounts for channel and bus contention between overlapping requests.
//! * [`spec_from_name`] gives a model's description ([`Spec`]), from which fresh copies can be
//!   built; [`profile`] runs the paper checks of `prefetch disk profile` on it.
//!
//! Papers: libprefetch (ATC'09) s3.1-3.5 and Figure 1 (seek cost vs distance, reads cheaper than
//! seeks below ~32 KiB, C-LOOK); competitive prefetching (TR840) for the IBM 36Z15; DULO (FAST'05)
//! Table 1 for the fixed cost model.
//! Deviations: see each model's module.

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

/// The model names [`model_from_name`] accepts, for help texts.
pub const MODEL_NAMES: &str = "st3500320as, ibm-36z15, hitachi-18zx, nvme, fixed:MS, \
ssd:LATENCY_US,CHANNELS,MB_PER_S, hdd:RPM,AVG_SEEK_MS,MB_PER_S (append :nocache to an HDD to \
disable its read-ahead)";

/// The scheduler names [`scheduler_from_name`] accepts, for help texts.
pub const SCHEDULER_NAMES: &str = "fifo, clook, sstf, deadline, deadline:EXPIRE_MS";

/// Builds a disk model from a preset or parameterised name (see [`MODEL_NAMES`]).
pub fn model_from_name(name: &str) -> Result<Box<dyn DiskModel>, Error> {
    preset::spec_from_name(name)?.build()
}

/// Builds a scheduler from its name (see [`SCHEDULER_NAMES`]).
pub fn scheduler_from_name(name: &str) -> Result<Box<dyn Scheduler>, Error> {
    sched::from_name(name)
}

pub mod model;
pub mod preset;
pub mod profile;
pub mod sched;

pub use preset::{spec_from_name, Spec};
