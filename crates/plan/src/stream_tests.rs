//! Tests of the streams (`stream.rs`): slow start's exact windows, the kernel's windows left to
//! it, strided records, evictions and the thrash cap, a full queue, the memory cap, and advice
//! within the file and the target (property).

use super::*;
use proptest::prelude::*;

const PAGE: u64 = 4096;
const READ: u64 = 64 << 10;
const BIG: u64 = 1 << 40;

/// Reads `reads` (offset, len) of a file of `size` bytes with depth `target` and nothing ever
/// evicted; returns the advice of each read.
fn advice(reads: &[(u64, u64)], size: u64, target: u64) -> Vec<Vec<Range<u64>>> {
    let mut stream = Stream::new(PAGE);
    reads
        .iter()
        .map(|&(offset, len)| stream.on_read(offset, len, size, target, &mut Roomy).advise)
        .collect()
}

fn sequential(count: u64) -> Vec<(u64, u64)> {
    (0..count).map(|i| (i * READ, READ)).collect()
}

/// 64 KiB reads (16 pages): nothing at the first read; at the second, the first window of 16
/// pages after it; then each read that reaches the last window advises the next one, doubling
/// to the target (132 pages, the IBM drive's 540 KB) and staying there.
#[test]
fn a_sequential_reader_gets_slow_start_windows_up_to_the_target() {
    let got = advice(&sequential(12), BIG, 132);
    let expected: Vec<Vec<Range<u64>>> = vec![
        vec![],
        vec![32..48],
        vec![48..80],
        vec![80..144],
        vec![],
        vec![144..272],
        vec![],
        vec![],
        vec![],
        vec![272..404],
        vec![],
        vec![],
    ];
    assert_eq!(got, expected);
    let more = advice(&sequential(40), BIG, 132);
    let windows: Vec<u64> = more.iter().flatten().map(|r| r.end - r.start).collect();
    assert_eq!(windows[..6], [16, 32, 64, 128, 132, 132]);
}

/// On a device whose kernel read-ahead window is 32 pages, the depths of 16 and 32 pages are
/// the kernel's already: the first window advised is 64 pages, then 128, then the target; a
/// target below the kernel's window is advised at once.
#[test]
fn slow_start_skips_the_depths_the_kernel_reads_ahead_itself() {
    let depths = |target: u64| {
        let mut stream = Stream::new(PAGE).with_kernel_window(32);
        sequential(40)
            .into_iter()
            .flat_map(|(offset, len)| stream.on_read(offset, len, BIG, target, &mut Roomy).advise)
            .map(|range| range.end - range.start)
            .collect::<Vec<u64>>()
    };
    assert_eq!(depths(132)[..4], [64, 128, 132, 132]);
    assert_eq!(depths(20)[..3], [20, 20, 20]);
    let mut stream = Stream::new(PAGE).with_kernel_window(32);
    let first = stream.on_read(READ, READ, BIG, 126, &mut Roomy);
    assert!(first.advise.is_empty());
    let first = stream.on_read(2 * READ, READ, BIG, 126, &mut Roomy);
    assert_eq!(first.advise, vec![48..112]);
}

/// One-page reads on a device whose kernel window is 32 pages: the kernel's windows of 16
/// and 32 pages are followed from the run's first read, none advised; the first advice, 64
/// pages from the read's end, comes when the reader reaches the second of them (page 16),
/// where TR840's slow start issues its 64-page window.
#[test]
fn small_reads_get_no_advice_before_slow_start_reaches_past_the_kernels_windows() {
    let mut stream = Stream::new(PAGE).with_kernel_window(32);
    let got: Vec<Vec<Range<u64>>> = (0..20)
        .map(|page| {
            stream
                .on_read(page * PAGE, PAGE, BIG, 126, &mut Roomy)
                .advise
        })
        .collect();
    assert!(got[..16].iter().all(Vec::is_empty), "{got:?}");
    assert_eq!(got[16], vec![17..81]);
    assert_eq!(got[17], vec![81..207]);
}

/// The reader never catches up with the advice, and the advice never runs more than two
/// windows ahead of it.
#[test]
fn the_advice_stays_one_to_two_windows_ahead() {
    let mut stream = Stream::new(PAGE);
    let mut advised_to = 0;
    for (offset, len) in sequential(200) {
        let step = stream.on_read(offset, len, BIG, 132, &mut Roomy);
        if let Some(last) = step.advise.last() {
            advised_to = last.end * PAGE;
        }
        if offset >= 2 * READ {
            let ahead = advised_to - (offset + len);
            let depth = stream.last_depth().unwrap() * PAGE;
            assert!(ahead > 0 && ahead <= 2 * depth, "at {offset}: {ahead}");
        }
    }
}

/// Random reads, and a read that jumps, advise nothing; after a jump the stream starts over
/// with 16 pages.
#[test]
fn a_non_sequential_reader_gets_nothing_and_a_jump_restarts_slow_start() {
    let random = [
        (40 * PAGE, PAGE),
        (7 * PAGE, PAGE),
        (90 * PAGE, PAGE),
        (3 * PAGE, PAGE),
    ];
    assert!(advice(&random, BIG, 132).iter().all(Vec::is_empty));
    let mut reads = sequential(6);
    reads.extend([(1000 * PAGE, READ), (1000 * PAGE + READ, READ)]);
    let got = advice(&reads, BIG, 132);
    assert_eq!(got[6], Vec::<Range<u64>>::new());
    assert_eq!(got[7], vec![1032..1048]);
}

/// Windows stop at the end of the file.
#[test]
fn windows_stop_at_the_end_of_the_file() {
    let got = advice(&sequential(4), 40 * PAGE + 100, 132);
    assert_eq!(got[1], vec![32..41]);
    assert!(got[2..].iter().all(Vec::is_empty));
}

/// Reads of 16 KiB every 64 KiB, whose gaps of 48 KiB are worth a far request on a device
/// whose `S_p` is 12 pages: after the third, the next records adding up to 12 pages (three
/// of them), each its own range; the window after that starts at the next record.
#[test]
fn a_strided_reader_gets_the_next_records() {
    let reads: Vec<(u64, u64)> = (0..4).map(|i| (i * READ, 4 * PAGE)).collect();
    let got = advice(&reads, BIG, 12);
    assert!(got[..2].iter().all(Vec::is_empty));
    assert_eq!(got[2], vec![48..52, 64..68, 80..84]);
    assert_eq!(got[3], vec![96..100, 112..116, 128..132]);
}

/// The same reads where a far request costs more than the gaps (`S_p` of 132 pages): each
/// window is one range over its records and their gaps, of the slow-start depth (16 pages,
/// then 32, then 64), from the next record's start to the end of its last record. The kernel reads
/// nothing ahead of a strided reader, so slow start begins at 16 pages even where its
/// window is 32.
#[test]
fn a_strided_reader_with_gaps_cheaper_than_a_far_request_gets_one_range() {
    let reads: Vec<(u64, u64)> = (0..5).map(|i| (i * READ, 4 * PAGE)).collect();
    let mut stream = Stream::new(PAGE).with_kernel_window(32);
    let got: Vec<Vec<Range<u64>>> = reads
        .iter()
        .map(|&(offset, len)| stream.on_read(offset, len, BIG, 132, &mut Roomy).advise)
        .collect();
    assert!(got[..2].iter().all(Vec::is_empty));
    assert_eq!(got[2], vec![48..52]);
    assert_eq!(got[3], vec![64..84]);
    assert_eq!(got[4], vec![96..148]);
}

/// Reads with a constant step but varying lengths, or overlapping, are not strided.
#[test]
fn unequal_or_overlapping_reads_are_not_strided() {
    let unequal = [
        (0, PAGE),
        (READ, 2 * PAGE),
        (2 * READ, PAGE),
        (3 * READ, PAGE),
    ];
    assert!(advice(&unequal, BIG, 132)[..3].iter().all(Vec::is_empty));
    let overlapping: Vec<(u64, u64)> = (0..5).map(|i| (i * PAGE, 2 * PAGE)).collect();
    assert!(advice(&overlapping, BIG, 132).iter().all(Vec::is_empty));
}

/// Fake probes: pages missing per call, in order, and whether the device took the advice.
#[derive(Default)]
struct Fake {
    missing: Vec<u64>,
    asked: Vec<Range<u64>>,
    full_queue: bool,
    memory: Option<MemoryShare>,
}

impl Probes for Fake {
    fn missing(&mut self, pages: Range<u64>) -> u64 {
        self.asked.push(pages);
        match self.missing.is_empty() {
            true => 0,
            false => self.missing.remove(0),
        }
    }
    fn queue_has_room(&mut self) -> bool {
        !self.full_queue
    }
    fn memory(&mut self) -> Option<MemoryShare> {
        self.memory
    }
}

/// The windows of a sequential reader grow to the smaller of the target and half the
/// stream's share of the prefetch memory: a quarter of 2,000 pages over 2 streams is 250
/// pages, so a target of 400 is cut to 125, and a target of 100 is not cut; a share below
/// slow start's first window still lets windows of 16 pages through.
#[test]
fn windows_stay_within_the_streams_share_of_memory() {
    let largest = |target: u64, memory: MemoryShare| {
        let mut stream = Stream::new(PAGE);
        let mut probes = Fake {
            memory: Some(memory),
            ..Fake::default()
        };
        sequential(200)
            .into_iter()
            .flat_map(|(offset, len)| stream.on_read(offset, len, BIG, target, &mut probes).advise)
            .map(|r| r.end - r.start)
            .max()
    };
    assert_eq!(largest(400, MemoryShare::of_memory(2000, 2)), Some(125));
    assert_eq!(largest(100, MemoryShare::of_memory(2000, 2)), Some(100));
    assert_eq!(largest(400, MemoryShare::of_memory(2000, 1000)), Some(16));
}

/// Pages advised but evicted before the read reaches them halve the depth (not below 16
/// pages); clean windows then raise the cap by 16 pages at a time until it no longer binds.
#[test]
fn evicted_pages_lower_the_depth_and_clean_windows_raise_it_again() {
    let mut stream = Stream::new(PAGE);
    let mut depths = Vec::new();
    for (i, (offset, len)) in sequential(60).into_iter().enumerate() {
        let mut probes = Fake {
            missing: vec![if i == 20 { 3 } else { 0 }],
            ..Fake::default()
        };
        let step = stream.on_read(offset, len, BIG, 132, &mut probes);
        assert!(probes
            .asked
            .iter()
            .all(|pages| pages.end - pages.start <= 16));
        if !step.advise.is_empty() {
            depths.push(stream.last_depth().unwrap());
        }
    }
    assert_eq!(stream.evicted_total(), 3);
    assert_eq!(depths[..5], [16, 32, 64, 128, 132]);
    let after = depths.iter().position(|&d| d == 66).expect("halved");
    assert_eq!(depths[after..after + 5], [66, 82, 98, 114, 130]);
    assert_eq!(depths[after + 5], 132);
    assert_eq!(stream.cap(), None);
}

/// A read that finds advised pages evicted takes the advice past it as lost as well: the
/// next window, of the halved depth, is advised at once from the read's end, not after
/// the old windows (whose evicted pages the reader would otherwise fetch one by one).
#[test]
fn an_eviction_restarts_the_advice_at_the_reader() {
    let mut stream = Stream::new(PAGE);
    let got: Vec<Vec<Range<u64>>> = sequential(7)
        .into_iter()
        .enumerate()
        .map(|(i, (offset, len))| {
            let mut probes = Fake {
                missing: vec![if i == 6 { 3 } else { 0 }],
                ..Fake::default()
            };
            stream.on_read(offset, len, BIG, 132, &mut probes).advise
        })
        .collect();
    assert_eq!(got[5], vec![144..272]);
    assert_eq!(got[6], vec![112..176]);
    assert_eq!(stream.cap(), Some(64));
}

/// The probe is asked only about pages the stream advised, and only once per read.
#[test]
fn only_advised_pages_are_probed() {
    let mut stream = Stream::new(PAGE);
    let mut probes = Fake::default();
    for (offset, len) in sequential(4) {
        stream.on_read(offset, len, BIG, 132, &mut probes);
    }
    assert_eq!(probes.asked, vec![32..48, 48..64]);
}

/// While the device's queue is full nothing is advised; once it has room the advice goes on
/// from the reader's position, with the slow-start depth where it was.
#[test]
fn a_full_queue_stops_the_advice_until_it_has_room_again() {
    let mut stream = Stream::new(PAGE);
    let got: Vec<Vec<Range<u64>>> = sequential(10)
        .into_iter()
        .enumerate()
        .map(|(i, (offset, len))| {
            let mut probes = Fake {
                full_queue: (3..7).contains(&i),
                ..Fake::default()
            };
            stream.on_read(offset, len, BIG, 132, &mut probes).advise
        })
        .collect();
    let expected: Vec<Vec<Range<u64>>> = vec![
        vec![],
        vec![32..48],
        vec![48..80],
        vec![],
        vec![],
        vec![],
        vec![],
        vec![128..192],
        vec![192..320],
        vec![],
    ];
    assert_eq!(got, expected);
}

proptest! {
    /// Whatever the reads, advice stays inside the file, and a window never exceeds the
    /// target (nor MAX_RECORDS_PER_WINDOW records).
    #[test]
    fn advice_stays_in_the_file_and_within_the_target(
        reads in proptest::collection::vec((0u64..64, 1u64..8), 1..60),
        target in 1u64..200,
        size_pages in 1u64..80,
    ) {
        let mut stream = Stream::new(PAGE);
        for (page, pages) in reads {
            let step = stream.on_read(page * PAGE, pages * PAGE, size_pages * PAGE, target, &mut Roomy);
            let total: u64 = step.advise.iter().map(|r| r.end - r.start).sum();
            prop_assert!(step.advise.len() as u64 <= MAX_RECORDS_PER_WINDOW);
            for range in &step.advise {
                prop_assert!(range.start < range.end && range.end <= size_pages);
            }
            if stream.pattern() == Some(Pattern::Sequential) {
                prop_assert!(total <= target);
            }
        }
    }
}
