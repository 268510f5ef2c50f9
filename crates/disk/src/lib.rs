//! Disk models and request schedulers: one model, two worlds (the FUSE emulator and the simulator).
//!
//! Pure: no I/O, no clock. Time is passed in as an absolute [`Duration`](std::time::Duration)
//! since an arbitrary epoch (the caller's start), so a model can track platter rotation and
//! on-disk read-ahead from it.
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
mod types;

pub use preset::{spec_from_name, Spec};
pub use types::{DiskModel, Error, Request, Scheduler, MODEL_NAMES, SCHEDULER_NAMES};
