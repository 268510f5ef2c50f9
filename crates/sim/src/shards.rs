//! Miss-ratio curves of any policy of the [`catalog`](crate::catalog), exact or sampled.
//!
//! Exact: one demand-paging run (`unit:1`) per cache size, in parallel. Sampled, for traces too
//! large to run at every size: SHARDS' spatial sampling (Waldspurger et al., FAST'15 s3) run as
//! miniature simulations (Waldspurger et al., USENIX ATC'17 s3). A reference is kept when its
//! block's hash falls below a threshold, `hash(block) mod P < T`, so a block is kept with all
//! of its references or not at all and the kept trace is a rate `R = T / P` sample of the
//! blocks; a cache of `c` blocks is simulated as a cache of `c R` blocks on the kept
//! references, and its miss ratio stands for the full trace's. The sampled curve's error is
//! measured, not assumed: [`error_check`] runs the full trace at a few of the sizes and
//! compares.
//!
//! A policy with a prefetcher follows runs of adjacent blocks, which a sample of single blocks
//! would break; for those the sample keeps or drops aligned runs of 64 blocks whole.
//!
//! A sample holds `N R` references in expectation, but a skewed trace's few hottest blocks
//! carry so many references that holding one more or one less moves the count far from it. As
//! SHARDS' adjustment (`SHARDS_adj`, FAST'15 s4.2) counts the difference as references to the
//! first bucket of LRU's histogram (hits at every size), the sampled miss ratio is the sample's
//! misses over `N R`, the references it was expected to hold. On a 10M-request zipf trace this
//! takes the error at the smallest of 100 sizes from 0.18 to under 0.01.
//!
//! Deviations: the adjustment is applied to every policy, assuming, as SHARDS does for LRU,
//! that the references a sample holds beyond or short of `N R` are hits at every size. The
//! scaled size is rounded to the nearest block (at least one), so sizes below `1 / R` blocks
//! are simulated as one block.

use std::hash::Hasher;

use rayon::prelude::*;
use rustc_hash::FxHasher;
use serde::Serialize;

use crate::catalog::{run_parts, Device, Form};
use crate::choice::Choice;
use crate::disksim::Workload;
use crate::future::Future;
use crate::refstring::RefString;
use crate::runner::{run_future, run_string, RunSetup};
use crate::SimError;

/// The modulus `P` of the hash: rates are kept to 1 part in 2^24.
const MODULUS_BITS: u32 = 24;

/// One point of a policy's curve.
#[derive(Clone, Debug, Serialize)]
pub struct CurvePoint {
    /// Trace file name.
    pub trace: String,
    /// The policy, as named.
    pub policy: String,
    /// Cache size in blocks (objects, for object traces).
    pub capacity: usize,
    /// The size simulated: `capacity` x `rate`, rounded (the capacity when exact).
    pub simulated_capacity: usize,
    /// References simulated (those kept by the sample).
    pub references: u64,
    /// Misses among them.
    pub misses: u64,
    /// Misses over the references the sample was expected to hold (the trace's times the
    /// rate; all of them when exact): the curve's value.
    pub miss_ratio: f64,
    /// The sampling rate (1 when exact).
    pub rate: f64,
}

/// A sampled point next to the exact run at the same size.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// The policy.
    pub policy: String,
    /// Cache size in blocks.
    pub capacity: usize,
    /// The full trace's miss ratio.
    pub exact: f64,
    /// The sampled curve's.
    pub sampled: f64,
}

impl Check {
    /// `|sampled - exact|`.
    pub fn error(&self) -> f64 {
        (self.sampled - self.exact).abs()
    }
}

/// Blocks sampled together by a policy with a prefetcher: runs of adjacent blocks (what a
/// prefetcher follows) are kept or dropped whole, up to 64 blocks.
const REGION_BITS: u32 = 6;

/// The references of `string` whose block (or, with `region_bits`, aligned run of
/// `2^region_bits` blocks) is in a rate-`rate` spatial sample (all of them at rate 1). The
/// hash is `FxHasher`'s multiplicative one, whose top bits mix every input bit.
pub fn sample(string: &RefString, rate: f64, region_bits: u32) -> RefString {
    if rate >= 1.0 {
        return string.clone();
    }
    let threshold = (rate * (1u64 << MODULUS_BITS) as f64) as u64;
    let ids = string.ids();
    let kept: Vec<bool> = (0..ids.len() as u32)
        .map(|id| {
            let mut hasher = FxHasher::default();
            hasher.write_u64(ids.raw(id) >> region_bits);
            hasher.finish() >> (64 - MODULUS_BITS) < threshold
        })
        .collect();
    let blocks: Vec<u64> = string
        .blocks()
        .iter()
        .filter(|&&b| kept[b as usize])
        .map(|&b| ids.raw(b))
        .collect();
    RefString::from_blocks(&blocks)
}

/// A policy ready to run on one (possibly sampled) reference string at any size.
enum Runner {
    AtIdle(&'static crate::PolicyInfo, Option<Future>),
    Pair(crate::disksim::Pair, Workload),
}

impl Runner {
    fn new(choice: &Choice, string: &RefString, block_size: u64) -> Result<Runner, SimError> {
        Ok(match &choice.configured.0 {
            Form::AtIdle(info) => {
                let future = info.needs_future.then(|| Future::link(string.clone()));
                Runner::AtIdle(info, future)
            }
            Form::Pair(pair) => {
                let workload = Workload::from_references(string.references(), block_size, false)?;
                Runner::Pair(pair.clone(), workload)
            }
        })
    }

    /// Misses of demand fetching at unit time with a cache of `capacity` blocks.
    fn misses(&self, string: &RefString, capacity: usize) -> Result<u64, SimError> {
        let setup = RunSetup::simplified(capacity, 1);
        Ok(match self {
            Runner::AtIdle(info, Some(future)) => run_future(info, future, &setup)?.misses,
            Runner::AtIdle(info, None) => run_string(info, string, &setup)?.misses,
            Runner::Pair(pair, workload) => {
                let device = Device::Unit { fetch: 1 };
                run_parts(pair, workload, capacity, (&device, false))?.misses
            }
        })
    }
}

/// `choice`'s curve on `string` (the trace `name`) at each of `capacities`, on a rate-`rate`
/// sample (exact at rate 1); sizes run in parallel on the current rayon pool.
pub fn curve(
    (name, string, block_size): (&str, &RefString, u64),
    choice: &Choice,
    capacities: &[usize],
    rate: f64,
) -> Result<Vec<CurvePoint>, SimError> {
    let region_bits = match choice.configured.0 {
        Form::AtIdle(_) => 0,
        Form::Pair(_) => REGION_BITS,
    };
    let sampled = sample(string, rate, region_bits);
    let rate = rate.min(1.0);
    let runner = Runner::new(choice, &sampled, block_size)?;
    let references = sampled.len() as u64;
    let expected = string.len() as f64 * rate;
    capacities
        .par_iter()
        .map(|&capacity| {
            let simulated_capacity = ((capacity as f64 * rate).round() as usize).max(1);
            let misses = runner.misses(&sampled, simulated_capacity)?;
            Ok(CurvePoint {
                trace: name.to_string(),
                policy: choice.label(),
                capacity,
                simulated_capacity,
                references,
                misses,
                miss_ratio: match expected > 0.0 {
                    true => (misses as f64 / expected).min(1.0),
                    false => 0.0,
                },
                rate,
            })
        })
        .collect()
}

/// The sampled `points` of one policy checked against exact runs of the full `string` at
/// `count` of their sizes, spread from the smallest (where sampling errs most) up.
pub fn error_check(
    (string, block_size): (&RefString, u64),
    choice: &Choice,
    points: &[CurvePoint],
    count: usize,
) -> Result<Vec<Check>, SimError> {
    let chosen: Vec<&CurvePoint> = match (points.len(), count) {
        (0, _) | (_, 0) => Vec::new(),
        (n, 1) => vec![&points[n / 2]],
        (n, count) => (0..count.min(n))
            .map(|i| &points[i * (n - 1) / (count.min(n) - 1).max(1)])
            .collect(),
    };
    let runner = Runner::new(choice, string, block_size)?;
    let references = string.len().max(1) as f64;
    chosen
        .par_iter()
        .map(|point| {
            let misses = runner.misses(string, point.capacity)?;
            Ok(Check {
                policy: point.policy.clone(),
                capacity: point.capacity,
                exact: misses as f64 / references,
                sampled: point.miss_ratio,
            })
        })
        .collect()
}

/// The rate that keeps about `blocks` distinct blocks of a trace of `distinct`, when running
/// `sizes` sizes over `references` exactly would simulate more than `budget` references; 1
/// (exact) otherwise. At least 0.001.
pub fn auto_rate(references: usize, distinct: usize, sizes: usize) -> f64 {
    const BUDGET: f64 = 5e7;
    const BLOCKS: f64 = 20_000.0;
    match (references as f64) * (sizes as f64) > BUDGET {
        true => (BLOCKS / distinct.max(1) as f64).clamp(0.001, 1.0),
        false => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_keeps_every_reference_of_the_blocks_it_keeps() {
        let raw: Vec<u64> = (0..20_000u64).map(|i| (i * 7919) % 3000).collect();
        let string = RefString::from_blocks(&raw);
        let sampled = sample(&string, 0.1, 0);
        let kept: std::collections::HashSet<u64> = sampled
            .blocks()
            .iter()
            .map(|&b| sampled.ids().raw(b))
            .collect();
        let expected = raw.iter().filter(|b| kept.contains(b)).count();
        assert_eq!(sampled.len(), expected);
        let share = kept.len() as f64 / 3000.0;
        assert!((0.05..0.15).contains(&share), "kept {share} of the blocks");
        assert_eq!(sample(&string, 1.0, 0).len(), raw.len());
    }

    #[test]
    fn a_sampled_fifo_curve_is_close_to_the_exact_one() {
        let mut state = 12345u64;
        let raw: Vec<u64> = (0..200_000)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                (50_000.0 * u.powf(1.5)) as u64
            })
            .collect();
        let string = RefString::from_blocks(&raw);
        let fifo: Choice = "fifo".parse().unwrap();
        let sizes = [1000, 4000, 10_000];
        let sampled = curve(("t", &string, 4096), &fifo, &sizes, 0.1).unwrap();
        let checks = error_check((&string, 4096), &fifo, &sampled, 3).unwrap();
        assert_eq!(checks.len(), 3);
        for check in &checks {
            assert!(check.error() < 0.02, "{check:?}");
        }
        let exact = curve(("t", &string, 4096), &fifo, &sizes, 1.0).unwrap();
        for (point, check) in exact.iter().zip(&checks) {
            assert_eq!(point.miss_ratio, check.exact);
        }
    }
}
