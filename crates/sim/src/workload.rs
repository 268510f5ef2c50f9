//! Synthetic workloads: reference strings generated from a seed, for benchmarks and tests.

use rand::{rngs::SmallRng, Rng, SeedableRng};

use crate::trace::Reference;

/// Blocks of the cold region that sequential runs start in.
const COLD_BLOCKS: u64 = 1 << 20;
/// Blocks of the hot set that bursts of re-references draw from.
const HOT_BLOCKS: u64 = 1 << 12;

/// `n` references mixing sequential runs of 8 to 64 blocks starting anywhere in a region of
/// 2^20 blocks (a quarter of the runs) and bursts of 8 to 64 uniform re-references to a hot
/// set of 2^12 blocks (three quarters). Deterministic for a given `seed`; generated lazily.
pub fn mixed(n: usize, seed: u64) -> impl Iterator<Item = Reference> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut run: Option<(u64, u64)> = None;
    let mut burst = 0u64;
    std::iter::repeat_with(move || {
        if run.is_none() && burst == 0 {
            let length = rng.gen_range(8..=64);
            match rng.gen_bool(0.25) {
                true => run = Some((HOT_BLOCKS + rng.gen_range(0..COLD_BLOCKS), length)),
                false => burst = length,
            }
        }
        let block = match run.as_mut() {
            Some((next, left)) => {
                let block = *next;
                *next += 1;
                *left -= 1;
                if *left == 0 {
                    run = None;
                }
                block
            }
            None => {
                burst -= 1;
                rng.gen_range(0..HOT_BLOCKS)
            }
        };
        Reference { block, think: None }
    })
    .take(n)
}
