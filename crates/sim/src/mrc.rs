//! Miss-ratio curves of demand paging: LRU's exact curve for every cache size from one pass
//! over the trace (Mattson et al.'s stack distances, 1970), and OPT's (Belady's MIN, Cao et
//! al.'s OPT-demand) at the sizes asked for.
//!
//! LRU is a stack algorithm: a cache of c blocks holds the c most recently used blocks, so a
//! reference hits exactly when its block's depth in the recency stack (its *stack distance*,
//! 1 for the block used last) is at most c. One pass records the histogram of distances; the
//! misses at size c are the first references plus the references at a distance above c. The
//! distance of a reference is 1 plus the number of distinct blocks used since the block's
//! previous use: the positions holding the latest use of some block are marked in a Fenwick
//! tree, and the marks after the previous use are counted, O(log n) per reference.
//!
//! Deviations: OPT's curve is not computed in one pass; each size is one run of OPT-demand
//! (run in parallel by the caller's thread pool).

use rayon::prelude::*;
use serde::Serialize;

use crate::future::Future;
use crate::policy::opt_demand;
use crate::runner::run_future;
use crate::runner::RunSetup;
use crate::SimError;

/// LRU stack distances of a reference string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackDistances {
    /// References in the trace.
    pub references: u64,
    /// First references to a block (misses at any size).
    pub cold: u64,
    /// `histogram[d]`: references at stack distance `d` (index 0 unused).
    pub histogram: Vec<u64>,
}

impl StackDistances {
    /// Measures the distances of every reference of `future`.
    pub fn of(future: &Future) -> StackDistances {
        let blocks = future.blocks();
        let mut latest = Fenwick::new(blocks.len());
        let mut last_use: Vec<Option<usize>> = vec![None; future.distinct()];
        let mut histogram = vec![0u64; future.distinct() + 1];
        let mut cold = 0;
        for (now, &block) in blocks.iter().enumerate() {
            match last_use[block as usize] {
                Some(previous) => {
                    let between = latest.sum_to(now) - latest.sum_to(previous + 1);
                    histogram[between as usize + 1] += 1;
                    latest.add(previous, -1);
                }
                None => cold += 1,
            }
            latest.add(now, 1);
            last_use[block as usize] = Some(now);
        }
        StackDistances {
            references: blocks.len() as u64,
            cold,
            histogram,
        }
    }

    /// LRU's misses with a cache of `capacity` blocks.
    pub fn lru_misses(&self, capacity: usize) -> u64 {
        let beyond: u64 = self.histogram.iter().skip(capacity + 1).sum();
        self.cold + beyond
    }
}

/// A Fenwick (binary indexed) tree of counts over positions `0..n`.
struct Fenwick(Vec<i64>);

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick(vec![0; n + 1])
    }

    fn add(&mut self, position: usize, delta: i64) {
        let mut i = position + 1;
        while i < self.0.len() {
            self.0[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum of positions `0..end`.
    fn sum_to(&self, end: usize) -> i64 {
        let (mut i, mut sum) = (end, 0);
        while i > 0 {
            sum += self.0[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }
}

/// One point of the curves.
#[derive(Clone, Debug, Serialize)]
pub struct MrcPoint {
    /// Trace file name.
    pub trace: String,
    /// Cache size in blocks.
    pub capacity: usize,
    /// References in the trace.
    pub references: u64,
    /// LRU's misses.
    pub lru_misses: u64,
    /// LRU's misses over references.
    pub lru_miss_ratio: f64,
    /// OPT's (Belady's MIN) misses.
    pub opt_misses: u64,
    /// OPT's misses over references.
    pub opt_miss_ratio: f64,
}

/// The sizes of a curve when none are given: powers of two up to the number of distinct
/// blocks, and that number (where every curve reaches its cold misses).
pub fn default_capacities(future: &Future) -> Vec<usize> {
    let distinct = future.distinct().max(1);
    let mut sizes: Vec<usize> = std::iter::successors(Some(1usize), |s| s.checked_mul(2))
        .take_while(|&s| s < distinct)
        .collect();
    sizes.push(distinct);
    sizes
}

/// LRU's and OPT's misses on `future` at each of `capacities` (OPT's runs in parallel on the
/// current rayon pool).
pub fn curve(name: &str, future: &Future, capacities: &[usize]) -> Result<Vec<MrcPoint>, SimError> {
    let distances = StackDistances::of(future);
    let ratio = |misses: u64| match distances.references {
        0 => 0.0,
        n => misses as f64 / n as f64,
    };
    capacities
        .par_iter()
        .map(|&capacity| {
            let opt = run_future(
                &opt_demand::INFO,
                future,
                &RunSetup::simplified(capacity, 1),
            )?;
            let lru_misses = distances.lru_misses(capacity);
            Ok(MrcPoint {
                trace: name.to_string(),
                capacity,
                references: distances.references,
                lru_misses,
                lru_miss_ratio: ratio(lru_misses),
                opt_misses: opt.misses,
                opt_miss_ratio: ratio(opt.misses),
            })
        })
        .collect()
}
