//! Trace-driven simulator of integrated prefetching and caching.
//!
//! It follows Cao, Felten, Karlin and Li, "A Study of Integrated Prefetching and Caching
//! Strategies" (SIGMETRICS 1995): a program walks a reference string, a cache of k blocks holds
//! what it needs, one fetch at a time takes F time units, and a policy decides when to fetch,
//! what, and what to discard. The pieces, each replaceable:
//!
//! ```text
//!   trace (readers, streaming) --> loop (streams, clock, cache) <--> policy (one file each)
//!   workload (synthetic)             |   disk model, scheduler        future/oracle (offline)
//!                                    v   time (reference time, device for fetch time)
//!                                 metrics --> runner (sweeps) --> report (tables, SVG), repro
//! ```
//!
//! - [`time`]: the simplified and realistic models; fetch durations come from a device, a
//!   `disk::DiskModel` (a fixed-time device for Cao's F).
//! - [`cache`]: residency, the view of the cache a policy reads, dense block ids.
//! - [`refstring`]: a trace read once into dense block ids, shared by the runs of a sweep;
//!   [`future`]: that string with O(n)-precomputed next references.
//! - [`disksim`]: the one event loop (many streams, an I/O scheduler, a disk model) where
//!   every policy runs: Cao's offered every opportunity when the device is idle (rule 4, their
//!   programs and device in [`disksim::cao`]); DULO, competitive prefetching and
//!   libprefetch's reorder buffer as a replacement policy plus a prefetcher
//!   ([`disksim::Paired`]), judged by time on disk.
//! - [`policy`]: the [`Policy`] trait, the one interface the loop drives, and Cao's policies,
//!   one file each.
//! - [`trace`], [`workload`]: where references come from.
//! - [`catalog`]: every policy in one table (`prefetch sim --list`), and the devices
//!   (`unit:F`, disk models); [`sweep`]: any policies, caches, devices and traces, in
//!   parallel, as [`options`] asks them (`prefetch sim` and Python's `libprefetch.sim`);
//!   [`mrc`]: LRU's and OPT's miss-ratio curves.
//! - [`runner`], [`report`], [`bench`](mod@bench), [`repro`], [`experiment`]: Cao sweeps,
//!   tables and charts, speed, the papers' experiments behind one interface.
//!
//! Every result here is *simulated*; the report says so.

pub mod bench;
pub mod cache;
pub mod cache_size;
pub mod catalog;
pub mod choice;
pub mod disk_report;
pub mod disksim;
mod error;
pub mod experiment;
pub mod future;
pub mod memory;
pub mod metrics;
pub mod mrc;
pub mod options;
pub mod policy;
pub mod refstring;
pub mod report;
pub mod repro;
pub mod runner;
pub mod shards;
pub mod sweep;
pub mod time;
pub mod trace;
pub mod workload;

pub use catalog::{find, reference_policies};
pub use disksim::Policy;
pub use error::{SimError, TraceError};
pub use future::Future;
pub use metrics::Metrics;
pub use policy::{AtIdle, PolicyInfo};
pub use refstring::RefString;
pub use runner::{run_future, run_stream, run_string, Row, RunSetup, Sweep};
pub use time::{FetchTime, ReferenceTime, Time, Timing};
pub use trace::{Format, TraceFile};
