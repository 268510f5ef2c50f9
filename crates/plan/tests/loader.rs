//! The data loaders' schedules (`plan::loader`) over random record lists: every listed page
//! advised exactly once per phase, in offset order, in calls within the limit; each phase within
//! its bytes; the advice at most two phases ahead of the reader and never behind it; the readers'
//! shares of a sweep covering the union once.

use std::collections::BTreeSet;

use plan::loader::{record_pages, share, union, Extent, Phases};
use proptest::prelude::*;

const PAGE: u64 = 4096;

/// Records of up to 40 KiB anywhere in a 4 MiB file (some overlapping, some empty).
fn records() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((0..(4u64 << 20), 0..(40u64 << 10)), 0..200)
}

fn pages(extents: &[Extent]) -> Vec<u64> {
    extents
        .iter()
        .flat_map(|e| (e.offset / PAGE..e.end() / PAGE).collect::<Vec<_>>())
        .collect()
}

fn listed_pages(records: &[(u64, u64)]) -> BTreeSet<u64> {
    let spans = records
        .iter()
        .filter_map(|&(o, n)| record_pages(o, n, PAGE));
    spans
        .flat_map(|e| e.offset / PAGE..e.end() / PAGE)
        .collect()
}

/// Calls in offset order, none overlapping another, none empty or over `call` bytes.
fn in_offset_order(calls: &[Extent], call: u64) -> bool {
    let sized = calls.iter().all(|c| c.length > 0 && c.length <= call);
    sized && calls.windows(2).all(|w| w[0].end() <= w[1].offset)
}

proptest! {
    #[test]
    fn each_phase_advises_its_records_pages_once_in_offset_order_within_its_bytes(
        records in records(),
        phase_pages in 1u64..40,
        call_pages in 1u64..20,
    ) {
        let (budget, call) = (phase_pages * PAGE, call_pages * PAGE);
        let phases = Phases::new(records.clone(), PAGE, budget);
        let starts = phases.starts();
        prop_assert_eq!(starts.first().copied(), (!records.is_empty()).then_some(0));
        for (phase, &start) in starts.iter().enumerate() {
            let end = starts.get(phase + 1).copied().unwrap_or(records.len());
            prop_assert!(start < end);
            let held = &records[start..end];
            let sizes: Vec<u64> = held.iter().map(|&(o, n)| (o + n).div_ceil(PAGE) * PAGE - o / PAGE * PAGE).collect();
            let beyond = sizes.iter().filter(|&&size| size > 0).count();
            prop_assert!(sizes.iter().sum::<u64>() <= budget || beyond == 1);
            let calls = phases.calls(phase, call);
            prop_assert!(in_offset_order(&calls, call));
            let advised = pages(&calls);
            prop_assert_eq!(advised.len(), advised.iter().collect::<BTreeSet<_>>().len());
            prop_assert_eq!(advised.into_iter().collect::<BTreeSet<_>>(), listed_pages(held));
        }
    }

    #[test]
    fn the_advice_is_at_most_two_phases_ahead_of_the_reader_and_never_behind(
        records in records(),
        phase_pages in 1u64..40,
        stride in 1usize..8,
    ) {
        let mut phases = Phases::new(records.clone(), PAGE, phase_pages * PAGE);
        let starts = phases.starts().to_vec();
        let mut due: Vec<usize> = phases.first_due().collect();
        for position in (0..records.len()).step_by(stride).chain([records.len()]) {
            if position >= phases.next_start() || position == records.len() {
                due.extend(phases.enter(position));
            }
            let reading = starts.iter().rposition(|&s| s <= position).unwrap_or(0);
            let ahead = due.iter().max().copied().unwrap_or(0);
            prop_assert!(ahead <= reading + 1);
            prop_assert!(ahead + 1 >= (reading + 2).min(starts.len()));
        }
        prop_assert_eq!(due, (0..starts.len()).collect::<Vec<_>>());
    }

    #[test]
    fn the_readers_shares_of_the_union_cover_it_once_in_offset_order(
        records in records(),
        workers in 1u64..9,
        call_pages in 1u64..20,
    ) {
        let extents = union(records.iter().copied(), PAGE);
        prop_assert!(in_offset_order(&extents, u64::MAX));
        let calls: Vec<Extent> = (0..workers)
            .flat_map(|worker| share(&extents, PAGE, worker, workers, call_pages * PAGE))
            .collect();
        prop_assert!(in_offset_order(&calls, call_pages * PAGE));
        prop_assert_eq!(pages(&calls), pages(&extents));
        prop_assert_eq!(pages(&extents).into_iter().collect::<BTreeSet<_>>(), listed_pages(&records));
    }
}
