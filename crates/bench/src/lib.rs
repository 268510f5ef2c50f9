//! `prefetch bench`: the live library measured against plain reads, as in the libprefetch paper's
//! evaluation (sections 3.2 and 5; Figures 2, 8 and 9) and the slides' "Example - Getting it Wrong".
//!
//! A workload ([`workload`]) is a list of reads over a data file of real pseudo-random bytes
//! ([`datafile`]). Each mode ([`mode`]) reads the same list: `stock` (plain reads), `naive` (WILLNEED of
//! everything first) and `libprefetch` (the library given the list through a callback). The runner
//! ([`runner`]) empties the cache before every run ([`cache`]), optionally confines the runs to a memory
//! cgroup ([`cgroup`]), measures wall time and bytes read from disk ([`io_counters`]), and the report
//! ([`report`]) prints medians, speedups and the setting ([`setting`]) as a table or JSON, and a window
//! sweep as an SVG ([`plot`]).
//! [`replay`] measures the stock `sqlite3` shell recorded, plain and replayed by `prefetch run
//! --replay`; [`restore`] measures `prefetch restore` of a residency snapshot against `vmtouch -t`; [`streams`]
//! concurrent sequential readers, stock vs `prefetch run --competitive` (TR840). Sizes are checked against what the machine has ([`room`]) first.
//!
//! Deviations: the paper's disks were seek-bound hard drives; this machine's virtio disk has no seek
//! cost, so here the gains come from queue depth and larger requests (see DESIGN.md), and the
//! paper's seek-bound regime is reached through the emulated disk of `prefetch emulate`.

pub mod cache;
pub mod cgroup;
pub mod config;
pub mod datafile;
pub mod device_profile;
pub mod emulated;
pub mod io_counters;
pub mod libprefetch_mode;
pub mod limit;
pub mod mode;
pub mod optimum;
pub mod outcome;
pub mod plot;
pub mod progress;
pub mod replay;
pub mod report;
pub mod restore;
pub mod room;
pub mod runner;
pub mod setting;
pub mod size;
pub mod sqlite;
pub mod sqlite_optimum;
pub mod sqlite_queries;
pub mod sqlite_report;
pub mod sqlite_workloads;
pub mod streams;
pub mod workload;

pub use config::{BenchConfig, Launcher};
pub use mode::Mode;
pub use report::Report;
pub use runner::{run, serve_child};
pub use workload::Workload;
