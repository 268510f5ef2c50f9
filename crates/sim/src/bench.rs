//! Speed of the simulator: references per second of each policy on a synthetic trace
//! ([`workload::mixed`](crate::workload::mixed())), one thread.
//!
//! The trace is generated into memory first, so generation is not timed. Streaming policies
//! read it as a stream; offline policies get it as a [`Future`], whose O(n) next-reference
//! precomputation is timed once and reported on its own. A policy's time includes everything
//! it does itself (conservative and LRU-sensible include recording their demand schedule).

use std::time::Instant;

use serde::Serialize;

use crate::catalog::reference_policies;
use crate::future::Future;
use crate::runner::RunSetup;
use crate::runner::{run_future, run_stream};
use crate::time::Time;
use crate::trace::Reference;
use crate::workload;
use crate::SimError;

/// Speed of one policy.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// Policy name.
    pub policy: &'static str,
    /// References simulated.
    pub references: u64,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// References per second.
    pub references_per_second: f64,
    /// Fetches the policy made (a sanity check that it did the work).
    pub fetches: u64,
}

/// Speeds of every policy that runs on large traces (all but `optimal`).
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Where it was measured.
    pub setting: &'static str,
    /// Trace length.
    pub references: usize,
    /// Cache size in blocks.
    pub capacity: usize,
    /// Fetch time F.
    pub fetch_time: Time,
    /// Seconds to build the future (next-reference links) once.
    pub future_seconds: f64,
    /// One row per policy.
    pub rows: Vec<BenchRow>,
}

/// Refuses a trace of `references` that the memory available cannot hold: the block numbers
/// (8 bytes each), the future built from them, and a block's state for each.
fn check_fits(references: usize) -> Result<(), SimError> {
    use crate::memory::{available, human, BYTES_PER_BLOCK, BYTES_PER_REFERENCE};
    let room = available();
    let per_reference = 8 + BYTES_PER_REFERENCE + BYTES_PER_BLOCK;
    match (references as u64).checked_mul(per_reference) {
        Some(bytes) if bytes <= room => Ok(()),
        _ => Err(SimError::TooLarge(format!(
            "a synthetic trace of {references} references does not fit in the memory available \
             ({}); lower --refs",
            human(room)
        ))),
    }
}

/// Times every policy over `references` synthetic references (seed `seed`).
pub fn run(
    references: usize,
    capacity: usize,
    fetch_time: Time,
    seed: u64,
) -> Result<BenchReport, SimError> {
    check_fits(references)?;
    let blocks: Vec<u64> = workload::mixed(references, seed).map(|r| r.block).collect();
    let setup = RunSetup::simplified(capacity, fetch_time);
    let started = Instant::now();
    let future = Future::from_blocks(&blocks);
    let future_seconds = started.elapsed().as_secs_f64();
    let mut rows = Vec::new();
    for policy in reference_policies().filter(|p| p.name != "optimal") {
        let started = Instant::now();
        let metrics = match policy.needs_future {
            true => run_future(policy, &future, &setup)?,
            false => {
                let stream = blocks
                    .iter()
                    .map(|&block| Ok(Reference { block, think: None }));
                run_stream(policy, stream, &setup)?
            }
        };
        let seconds = started.elapsed().as_secs_f64();
        rows.push(BenchRow {
            policy: policy.name,
            references: metrics.references,
            seconds,
            references_per_second: metrics.references as f64 / seconds.max(1e-9),
            fetches: metrics.fetches(),
        });
    }
    Ok(BenchReport {
        setting: "simulated (wall-clock speed of the simulator on this machine)",
        references,
        capacity,
        fetch_time,
        future_seconds,
        rows,
    })
}

impl BenchReport {
    /// A Markdown table of the speeds.
    pub fn table(&self) -> String {
        let mut out = format!(
            "Simulator speed, one thread: {} synthetic references, cache {} blocks, F = {} \
             (next-reference precomputation for offline policies: {:.2} s, {:.1} M refs/s)\n\n\
             | policy | seconds | references / s | fetches |\n|---|---:|---:|---:|\n",
            self.references,
            self.capacity,
            self.fetch_time,
            self.future_seconds,
            self.references as f64 / self.future_seconds.max(1e-9) / 1e6
        );
        for r in &self.rows {
            out += &format!(
                "| {} | {:.2} | {:.2} M | {} |\n",
                r.policy,
                r.seconds,
                r.references_per_second / 1e6,
                r.fetches
            );
        }
        out
    }
}
