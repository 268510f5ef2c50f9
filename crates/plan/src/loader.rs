//! The data loaders' schedules: an epoch's records advised WILLNEED in offset order, with no
//! access list and no client, for the Python package's `Records.epoch` and `RecordDataset`
//! workers and for the simulator's `loader-phases` policy (one schedule, both callers).
//!
//! - The sweep ([`union`], [`share`]): where an epoch's records fit in what the page cache may
//!   hold, their pages' union in offset order (libprefetch, ATC 2009, section 3.3's C-LOOK order
//!   over the whole list), each of N readers advising an N-th of it by pages.
//! - The phases ([`Phases`]): where they do not fit, one reader's list cut into phases of at
//!   most a budget of pages, each phase's union advised in offset order a phase ahead of the
//!   reads (section 4.5's window: a budget of unique pages, the next round once the reader is
//!   into the last one), at most two phases ahead, so the pages advised are read before the
//!   cache is full enough to evict them.
//!
//! Both cut their advice in calls of at most what one WILLNEED call loads on the device.
//!
//! Deviations from the paper's window: the budget is fixed at the start, not grown and cut by
//! AIMD (section 4.6); a phase's pages are not dropped after their read (the kernel reclaims
//! them, the oldest first).

use std::ops::Range;

/// Bytes `offset .. offset + length` of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Extent {
    /// First byte.
    pub offset: u64,
    /// Number of bytes.
    pub length: u64,
}

impl Extent {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.offset + self.length
    }
}

/// The whole pages a record of `length` bytes at `offset` touches, in bytes (`page` > 0); none
/// for an empty record.
pub fn record_pages(offset: u64, length: u64, page: u64) -> Option<Extent> {
    let pages = spanned(offset, length, page);
    (length > 0).then_some(pages)
}

/// The pages from the one holding `offset` to the one holding `offset + length`'s last byte (the
/// page `offset` falls in when it is inside one and the record is empty).
fn spanned(offset: u64, length: u64, page: u64) -> Extent {
    let first = offset - offset % page;
    let end = offset
        .saturating_add(length)
        .div_ceil(page)
        .saturating_mul(page);
    Extent {
        offset: first,
        length: end - first,
    }
}

/// The pages of `records` (`(offset, length)` pairs) as extents in offset order, extents that
/// touch or overlap merged, empty records left out.
pub fn union(records: impl IntoIterator<Item = (u64, u64)>, page: u64) -> Vec<Extent> {
    let mut pages: Vec<Extent> = records
        .into_iter()
        .filter_map(|(offset, length)| record_pages(offset, length, page))
        .collect();
    pages.sort_unstable();
    let mut merged: Vec<Extent> = Vec::with_capacity(pages.len());
    for extent in pages {
        match merged.last_mut() {
            Some(last) if extent.offset <= last.end() => {
                last.length = last.end().max(extent.end()) - last.offset;
            }
            _ => merged.push(extent),
        }
    }
    merged
}

/// Reader `worker` of `workers`' share of `extents` (whole pages, in offset order): its N-th of
/// their pages, counted in offset order, cut in calls of at most `call` bytes (`call` > 0).
pub fn share(extents: &[Extent], page: u64, worker: u64, workers: u64, call: u64) -> Vec<Extent> {
    let pages = extents.iter().map(|e| e.length).sum::<u64>() / page;
    let cut = |part: u64| (u128::from(pages) * u128::from(part) / u128::from(workers)) as u64;
    let (low, high) = (cut(worker) * page, cut(worker + 1) * page);
    let mut calls = Vec::new();
    let mut passed = 0;
    for extent in extents {
        let (start, end) = (low.max(passed), high.min(passed + extent.length));
        let mut at = start;
        while at < end {
            let length = call.min(end - at);
            calls.push(Extent {
                offset: extent.offset + at - passed,
                length,
            });
            at += length;
        }
        passed += extent.length;
    }
    calls
}

/// One reader's list of records cut into phases: phase `k + 1` is due once the reader enters
/// phase `k`, the first two at once, so the advice is at most two phases ahead of the reads.
#[derive(Clone, Debug)]
pub struct Phases {
    /// The records, `(offset, length)`, in the order they are read.
    records: Vec<(u64, u64)>,
    page: u64,
    /// The positions in `records` where phases start.
    starts: Vec<usize>,
    /// The last phase the reader has entered.
    entered: usize,
}

impl Phases {
    /// The phases of `records` (`(offset, length)` in reading order): a phase holds records from
    /// its start on while their pages (each record's whole pages) come to at most `phase_bytes`,
    /// and at least one record. `page` > 0.
    pub fn new(records: Vec<(u64, u64)>, page: u64, phase_bytes: u64) -> Phases {
        let mut starts = Vec::new();
        let mut filled = 0u64;
        for (position, &(offset, length)) in records.iter().enumerate() {
            let size = spanned(offset, length, page).length;
            if position == 0 || (filled > 0 && filled.saturating_add(size) > phase_bytes) {
                starts.push(position);
                filled = 0;
            }
            filled = filled.saturating_add(size);
        }
        Phases {
            records,
            page,
            starts,
            entered: 0,
        }
    }

    /// The positions where phases start (the first is 0 unless there is no record).
    pub fn starts(&self) -> &[usize] {
        &self.starts
    }

    /// The phases due before the first read: the first two.
    pub fn first_due(&self) -> Range<usize> {
        0..self.starts.len().min(2)
    }

    /// The reader is at `position`: the phases that become due (the one after each phase it
    /// entered since the last call), none when it is still in the phase it was in.
    pub fn enter(&mut self, position: usize) -> Range<usize> {
        let before = self.entered;
        while self.entered + 1 < self.starts.len() && position >= self.starts[self.entered + 1] {
            self.entered += 1;
        }
        (before + 2).min(self.starts.len())..(self.entered + 2).min(self.starts.len())
    }

    /// The position at which the reader enters the next phase; past the last record when none
    /// is left.
    pub fn next_start(&self) -> usize {
        self.starts
            .get(self.entered + 1)
            .copied()
            .unwrap_or(self.records.len() + 1)
    }

    /// The WILLNEED calls of `phase`: its records' pages in offset order, touching ones merged,
    /// cut in calls of at most `call` bytes; none past the last phase.
    pub fn calls(&self, phase: usize, call: u64) -> Vec<Extent> {
        let Some(&start) = self.starts.get(phase) else {
            return Vec::new();
        };
        let end = self
            .starts
            .get(phase + 1)
            .copied()
            .unwrap_or(self.records.len());
        let pages = union(self.records[start..end].iter().copied(), self.page);
        share(&pages, self.page, 0, 1, call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(offset: u64, length: u64) -> Extent {
        Extent { offset, length }
    }

    #[test]
    fn the_union_merges_touching_and_overlapping_pages_and_leaves_empty_records_out() {
        let records = [
            (20000, 10),
            (0, 100),
            (4096, 1),
            (13000, 0),
            (100, 4000),
            (9000, 9),
        ];
        assert_eq!(union(records, 4096), vec![at(0, 12288), at(16384, 4096)]);
    }

    #[test]
    fn shares_split_the_pages_in_offset_order_and_calls_are_cut_at_the_limit() {
        let extents = [at(0, 3 * 4096), at(10 * 4096, 5 * 4096)];
        assert_eq!(
            share(&extents, 4096, 0, 2, 1 << 20),
            vec![at(0, 3 * 4096), at(10 * 4096, 4096)]
        );
        assert_eq!(
            share(&extents, 4096, 1, 2, 8192),
            vec![at(11 * 4096, 8192), at(13 * 4096, 8192)]
        );
    }

    #[test]
    fn phases_close_before_the_record_that_overflows_and_hold_one_at_least() {
        let records = vec![(0, 4096), (8192, 4097), (40960, 100_000), (4096, 1)];
        let phases = Phases::new(records, 4096, 3 * 4096);
        assert_eq!(phases.starts(), &[0, 2, 3]);
        assert_eq!(phases.calls(0, 1 << 20), vec![at(0, 4096), at(8192, 8192)]);
        assert_eq!(phases.calls(3, 1 << 20), vec![]);
    }

    #[test]
    fn a_reader_entering_phases_makes_the_next_one_due_and_skips_none() {
        let records = (0..10).map(|r| (r * 4096, 4096)).collect();
        let mut phases = Phases::new(records, 4096, 2 * 4096);
        assert_eq!((phases.first_due(), phases.next_start()), (0..2, 2));
        assert_eq!(phases.enter(1), 2..2);
        assert_eq!((phases.enter(2), phases.next_start()), (2..3, 4));
        assert_eq!((phases.enter(9), phases.next_start()), (3..5, 11));
        assert_eq!(phases.enter(10), 5..5);
    }
}
