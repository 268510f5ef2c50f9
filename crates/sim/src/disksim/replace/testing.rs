//! Helpers for the replacement policies' unit tests: a demand-paging replay as libCacheSim's
//! `cache_get_base` runs it (look up; on a miss, make room, then insert).

use std::time::Duration;

use rustc_hash::FxHashSet;

use super::{Replacement, Touch};

/// A demand reference at time zero.
pub fn touch() -> Touch {
    Touch {
        stream: 0,
        now: Duration::ZERO,
        prefetched: false,
    }
}

/// A cache of `capacity` slots replaying references on one policy, phase after phase.
pub struct Replay {
    capacity: usize,
    held: FxHashSet<u64>,
}

impl Replay {
    /// An empty cache of `capacity` slots.
    pub fn new(capacity: usize) -> Self {
        Replay {
            capacity,
            held: FxHashSet::default(),
        }
    }

    /// Replays `blocks` on `policy`; returns the misses.
    pub fn run(&mut self, policy: &mut dyn Replacement, blocks: &[u64]) -> usize {
        let mut misses = 0;
        for &block in blocks {
            if self.held.contains(&block) {
                policy.on_hit(block, touch());
                while policy.owes_eviction() {
                    let victim = policy.evict(Duration::ZERO, block).expect("an owed victim");
                    assert!(self.held.remove(&victim), "evicted {victim}, not held");
                }
                continue;
            }
            misses += 1;
            policy.on_miss(block, touch());
            while self.held.len() >= self.capacity || policy.owes_eviction() {
                let victim = policy
                    .evict(Duration::ZERO, block)
                    .expect("a full cache has a victim");
                assert!(self.held.remove(&victim), "evicted {victim}, not held");
            }
            self.held.insert(block);
            policy.on_insert(block, touch());
        }
        misses
    }
}

/// Replays `blocks` on `policy` with `capacity` slots, from empty; returns the misses.
pub fn replay(policy: &mut dyn Replacement, capacity: usize, blocks: &[u64]) -> usize {
    Replay::new(capacity).run(policy, blocks)
}
