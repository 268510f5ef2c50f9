//! Cao et al. section 4.3: does the simplified model (unit references, constant F) predict a
//! realistic one? The paper compared the two on its Ultrix traces, taking the trace's average
//! reference time as the time unit and F as the ratio of the average disk time to it, and found
//! them within 2%.
//!
//! Our traces are untimed, so the realistic runs get synthetic times: each reference takes a
//! compute time drawn uniformly from 500 to 1500 us (mean 1000 us, standard deviation 29% of
//! the mean), and each fetch takes F x 1000 us +-10%, both from fixed seeds. The realistic
//! elapsed time, in units of the mean reference time, is set against the simplified one.
//!
//! Deviations: synthetic rather than measured times (the paper's Table 1 has standard
//! deviations from 1% to 330% of the mean reference time; ours is one middle value).

use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde::Serialize;

use crate::future::Future;
use crate::policy::PolicyInfo;
use crate::runner::run_future;
use crate::runner::RunSetup;
use crate::time::{FetchTime, ReferenceTime, Time, Timing};
use crate::trace::Reference;
use crate::SimError;

/// Mean compute time of a reference in the realistic runs, in microseconds.
pub const REFERENCE_US: Time = 1000;

/// One policy at one fetch time in both models.
#[derive(Clone, Debug, Serialize)]
pub struct ModelCheck {
    /// Trace name.
    pub trace: String,
    /// Cache size in blocks.
    pub capacity: usize,
    /// F, in mean reference times.
    pub fetch_time: Time,
    /// Policy name.
    pub policy: &'static str,
    /// Elapsed time in the simplified model (references).
    pub simplified: Time,
    /// Elapsed time in the realistic model, in mean reference times.
    pub realistic: f64,
    /// (realistic - simplified) / simplified.
    pub difference: f64,
}

/// Runs `policies` on `future` at each of `fetch_times` in both models.
pub fn compare(
    name: &str,
    future: &Future,
    capacity: usize,
    fetch_times: &[Time],
    policies: &[&'static PolicyInfo],
) -> Result<Vec<ModelCheck>, SimError> {
    let timed = with_compute_times(future)?;
    let mut checks = Vec::new();
    for &f in fetch_times {
        let realistic = RunSetup {
            capacity,
            timing: Timing {
                reference: ReferenceTime::FromTrace,
                fetch: FetchTime::Uniform {
                    mean: f * REFERENCE_US,
                    spread: f * REFERENCE_US / 10,
                    seed: 2,
                },
            },
            initial: Vec::new(),
            depth: 1,
        };
        for &policy in policies {
            let simplified =
                run_future(policy, future, &RunSetup::simplified(capacity, f))?.elapsed;
            let realistic =
                run_future(policy, &timed, &realistic)?.elapsed as f64 / REFERENCE_US as f64;
            checks.push(ModelCheck {
                trace: name.to_string(),
                capacity,
                fetch_time: f,
                policy: policy.name,
                simplified,
                realistic,
                difference: (realistic - simplified as f64) / simplified.max(1) as f64,
            });
        }
    }
    Ok(checks)
}

/// `future` with a compute time drawn for every reference (seeded).
fn with_compute_times(future: &Future) -> Result<Future, SimError> {
    let mut rng = SmallRng::seed_from_u64(1);
    let references = future.blocks().iter().map(|&block| {
        let think = rng.gen_range(REFERENCE_US / 2..=REFERENCE_US * 3 / 2);
        Ok(Reference {
            block: future.ids().raw(block),
            think: Some(think),
        })
    });
    Future::load(references)
}
