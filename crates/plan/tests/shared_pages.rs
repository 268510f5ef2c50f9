//! Records that share pages, read by four planners as DataLoader's workers read a shuffled
//! epoch (batches handed round-robin): a page holding the end of one worker's record and the
//! start of another's must be read from the device once. The page cache is a set with no limit,
//! advice takes effect at once, and reads go through the planner as the live library's
//! accounting does (first page placed, the others continued, a page the read begins or ends
//! inside noted as partly read), so the pages read are exact: only drops can make a page be
//! read twice. Given with `SHARED_EDGES`, the lists read every page once; without it the
//! workers' drops of their records' edge pages make the others read them again.

use std::collections::HashSet;

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, RoundPlan};

const PAGE: u64 = 4096;
const WORKERS: usize = 4;
const BATCH: usize = 8;

/// Records of 1-12 pages and a few bytes more, packed: most pages between two records are
/// shared (`(offset, length)` in bytes).
fn records(count: usize) -> Vec<(u64, u64)> {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let mut at = 0;
    (0..count)
        .map(|_| {
            let length = (1 + next() % 12) * PAGE + next() % PAGE + 1;
            at += length;
            (at - length, length)
        })
        .collect()
}

/// A shuffled order of `count` records (Fisher-Yates with a fixed generator).
fn shuffled(count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..count).collect();
    let mut seed: u64 = 12_345;
    for i in (1..count).rev() {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        order.swap(i, (seed >> 33) as usize % (i + 1));
    }
    order
}

fn pages(record: (u64, u64)) -> std::ops::RangeInclusive<u64> {
    let (offset, length) = record;
    offset / PAGE..=(offset + length - 1) / PAGE
}

fn key(page: u64) -> PageKey {
    PageKey { fd: 3, page }
}

/// The device and its page cache: pages read from it, and what is cached.
#[derive(Default)]
struct Device {
    cached: HashSet<u64>,
    reads: u64,
}

impl Device {
    fn apply(&mut self, plan: &RoundPlan) {
        for range in &plan.evict {
            for page in range.start..range.start + range.len {
                self.cached.remove(&page);
            }
        }
        for range in &plan.fetch {
            for page in range.start..range.start + range.len {
                self.bring(page);
            }
        }
    }

    fn bring(&mut self, page: u64) {
        if self.cached.insert(page) {
            self.reads += 1;
        }
    }
}

/// One worker: its planner, told its whole list up front, and how it reads a record.
fn worker(list: &[(u64, u64)], mode: Mode, device: &mut Device) -> Planner {
    let mut planner = Planner::new(PlannerConfig {
        page_size: PAGE,
        // A budget of about 64 pages: the window is far shorter than the epoch.
        available_bytes: 72 * PAGE,
        floor_bytes: 16 * PAGE,
        infill_bytes: 0,
        ..PlannerConfig::default()
    });
    let entries: Vec<Entry> = list
        .iter()
        .flat_map(|&record| pages(record))
        .map(|page| Entry {
            key: key(page),
            mark: false,
        })
        .collect();
    planner.request(&entries, mode | Mode::SET | Mode::DONE);
    device.apply(&planner.plan_round());
    planner
}

/// One record read the way the live library accounts it (`client.rs`, `account`).
fn read(planner: &mut Planner, record: (u64, u64), device: &mut Device) {
    let (offset, length) = record;
    let span = pages(record);
    let (first, last) = (*span.start(), *span.end());
    let (_, mut outcome) = planner.on_read(key(first), device.cached.contains(&first));
    for page in first + 1..=last {
        outcome.start_round |= planner.on_read_continued(key(page)).start_round;
    }
    if !offset.is_multiple_of(PAGE) {
        planner.note_partly_read(key(first));
    }
    if !(offset + length).is_multiple_of(PAGE) {
        planner.note_partly_read(key(last));
    }
    for page in span {
        device.bring(page);
    }
    if outcome.start_round {
        device.apply(&planner.plan_round());
    }
}

/// Pages read from the device, and the distinct pages of the records, when four workers
/// given their lists with `mode` read a shuffled epoch.
fn epoch_reads(mode: Mode) -> (u64, usize) {
    let all = records(2_000);
    let order = shuffled(all.len());
    let batches: Vec<&[usize]> = order.chunks(BATCH).collect();
    let lists: Vec<Vec<(u64, u64)>> = (0..WORKERS)
        .map(|w| {
            let mine = batches.iter().skip(w).step_by(WORKERS);
            mine.flat_map(|batch| batch.iter().map(|&i| all[i]))
                .collect()
        })
        .collect();
    let distinct: HashSet<u64> = all.iter().flat_map(|&r| pages(r)).collect();
    let per_list: usize = lists
        .iter()
        .map(|list| {
            list.iter()
                .flat_map(|&r| pages(r))
                .collect::<HashSet<_>>()
                .len()
        })
        .sum();
    assert!(
        per_list > distinct.len() + distinct.len() / 10,
        "the layout shares pages between workers' lists ({per_list} against {})",
        distinct.len()
    );
    let mut device = Device::default();
    let mut planners: Vec<Planner> = lists.iter().map(|l| worker(l, mode, &mut device)).collect();
    // The batches in the order DataLoader's workers read them at equal speed.
    for (t, batch) in batches.iter().enumerate() {
        for &i in batch.iter() {
            read(&mut planners[t % WORKERS], all[i], &mut device);
        }
    }
    let dropped: u64 = planners.iter().map(|p| p.stats().pages_dropped).sum();
    assert!(dropped > 0, "the planners dropped the pages behind them");
    (device.reads, distinct.len())
}

#[test]
fn pages_shared_by_two_workers_records_are_read_once() {
    let (reads, distinct) = epoch_reads(Mode::SHARED_EDGES);
    assert_eq!(reads, distinct as u64, "every page read once");
    let (reads, distinct) = epoch_reads(Mode::default());
    assert!(
        reads > distinct as u64 + distinct as u64 / 20,
        "without the flag the edge pages are dropped and read again ({reads} for {distinct})"
    );
}
