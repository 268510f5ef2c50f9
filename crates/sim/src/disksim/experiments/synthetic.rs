//! Synthetic workloads standing in for DULO's two single-pattern traces (FAST'05 s4.1.1,
//! Table 2), which are not among our reference traces:
//!
//! * *almost all random* (for `tpc-h`, "only 3% references to consecutive blocks"): references
//!   to uniformly random blocks of one large file, 3% of them continuing the previous block;
//! * *almost all sequential* (for `viewperf`, "over 99% of its references are to consecutive
//!   blocks within a few large files"): a few large files read from start to end, twice, with
//!   1% of the references to random blocks of another file.
//!
//! Deterministic for a given seed.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::disksim::workload::{Layout, Step, Workload};

/// Uniformly random references to a file of `blocks` blocks; a fraction `sequential` of them
/// read the block after the previous one instead.
pub fn almost_all_random(blocks: u64, references: usize, sequential: f64, seed: u64) -> Workload {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut previous = 0;
    let steps = (0..references)
        .map(|_| {
            previous = if rng.gen_bool(sequential) && previous + 1 < blocks {
                previous + 1
            } else {
                rng.gen_range(0..blocks)
            };
            Step::at(0, previous)
        })
        .collect();
    Workload {
        layout: Layout::contiguous(&[blocks], 0, 4096),
        streams: vec![steps],
    }
}

/// `files` files of `file_blocks` blocks each read sequentially `passes` times; a fraction
/// `random` of the references go to random blocks of an extra file of `file_blocks` blocks.
pub fn almost_all_sequential(
    files: u32,
    file_blocks: u64,
    passes: usize,
    random: f64,
    seed: u64,
) -> Workload {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    for _ in 0..passes {
        for file in 0..files {
            for block in 0..file_blocks {
                if rng.gen_bool(random) {
                    steps.push(Step::at(files, rng.gen_range(0..file_blocks)));
                }
                steps.push(Step::at(file, block));
            }
        }
    }
    let sizes = vec![file_blocks; files as usize + 1];
    Workload {
        layout: Layout::contiguous(&sizes, 64, 4096),
        streams: vec![steps],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consecutive_fraction(workload: &Workload) -> f64 {
        let steps = &workload.streams[0];
        let next = steps
            .windows(2)
            .filter(|w| {
                w[1].block.file == w[0].block.file && w[1].block.block == w[0].block.block + 1
            })
            .count();
        next as f64 / (steps.len() - 1) as f64
    }

    #[test]
    fn patterns_have_the_papers_sequential_fractions() {
        let random = almost_all_random(20_000, 20_000, 0.03, 1);
        assert!((0.02..0.04).contains(&consecutive_fraction(&random)));
        let sequential = almost_all_sequential(4, 2_000, 2, 0.01, 1);
        assert!(consecutive_fraction(&sequential) > 0.97);
        assert!(random.validate().is_ok() && sequential.validate().is_ok());
    }
}
