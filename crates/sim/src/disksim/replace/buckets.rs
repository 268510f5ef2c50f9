//! Blocks by frequency, first in first out within a frequency: the frequency lists of
//! libCacheSim's LFUDA (`freq_node_t`, a block appended to the tail of its frequency's list
//! each time its frequency changes), kept as one ordered set keyed by (frequency, order of
//! entry), so that "the oldest block of the smallest frequency in a range" is one range query.
//!
//! `BTreeMap` rather than a list per frequency: LFU-DA's keys jump by the cache's age, grow to
//! millions on skewed traces, and it asks for the smallest non-empty key above a bound, which
//! a hash map of lists can only answer by scanning. (LFU's counts grow by one, so its lists
//! are linked in order instead, [`super::lfu`].)

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::disksim::workload::DiskBlock;

/// Held blocks by (frequency, entry order).
#[derive(Debug, Default)]
pub struct Buckets {
    by_freq: BTreeMap<(u64, u64), DiskBlock>,
    key: FxHashMap<DiskBlock, (u64, u64)>,
    entered: u64,
}

impl Buckets {
    /// The frequency of `block`, if held.
    pub fn freq(&self, block: DiskBlock) -> Option<u64> {
        self.key.get(&block).map(|&(freq, _)| freq)
    }

    /// Puts `block` at the tail of frequency `freq`'s list (moving it if held).
    pub fn set(&mut self, block: DiskBlock, freq: u64) {
        if let Some(old) = self.key.remove(&block) {
            self.by_freq.remove(&old);
        }
        self.entered += 1;
        let key = (freq, self.entered);
        self.by_freq.insert(key, block);
        self.key.insert(block, key);
    }

    /// Forgets `block`; false if it was not held.
    pub fn remove(&mut self, block: DiskBlock) -> bool {
        match self.key.remove(&block) {
            Some(key) => self.by_freq.remove(&key).is_some(),
            None => false,
        }
    }

    /// The oldest block of the smallest frequency in `from..=to`, with its frequency.
    pub fn first_in(&self, from: u64, to: u64) -> Option<(u64, DiskBlock)> {
        let (&(freq, _), &block) = self.by_freq.range((from, 0)..).next()?;
        (freq <= to).then_some((freq, block))
    }

    /// Whether frequency `freq`'s list is empty.
    pub fn is_empty_at(&self, freq: u64) -> bool {
        self.first_in(freq, freq).is_none()
    }

    /// Held blocks, from the most to the least protected (highest frequency first).
    pub fn order(&self) -> Vec<DiskBlock> {
        self.by_freq.values().rev().copied().collect()
    }
}
