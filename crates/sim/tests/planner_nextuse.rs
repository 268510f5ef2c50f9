//! The live planner's schedules replayed on random lists and memory sizes
//! (`sim::planner_replay`, the same `plan::Planner` the library runs):
//! Cao et al.'s rules (SIGMETRICS 1995, section 2.2) hold at every round,
//! and the default schedule reads no more pages than the paper's window
//! and within 1.3x of Belady's optimum (`opt-demand`) for the memory the
//! plan may use.

use plan::{PageKey, PlannerConfig, Schedule};
use proptest::prelude::*;
use sim::planner_replay::{replay, ReplayCounts};
use sim::{policy, run_future, Future, RunSetup};

/// A list over a small set of pages, so that pages come back.
fn list() -> impl Strategy<Value = Vec<u64>> {
    (4u64..120).prop_flat_map(|pages| proptest::collection::vec(0..pages, 1..400))
}

fn keys(pages: &[u64]) -> Vec<PageKey> {
    pages.iter().map(|&page| PageKey { fd: 1, page }).collect()
}

fn run(schedule: Schedule, pages: &[u64], memory: usize, infill_pages: u64) -> ReplayCounts {
    let config = PlannerConfig {
        schedule,
        infill_bytes: infill_pages * 4096,
        ..PlannerConfig::default()
    };
    replay(config, &keys(pages), memory)
}

fn opt_demand(pages: &[u64], capacity: usize) -> u64 {
    let opt = policy::find("opt-demand").unwrap();
    run_future(
        opt,
        &Future::from_blocks(pages),
        &RunSetup::simplified(capacity.max(1), 1),
    )
    .unwrap()
    .fetches()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_schedule_stays_in_its_budget_and_does_no_harm(
        pages in list(),
        memory in 2usize..100,
        infill in 0u64..4,
    ) {
        for schedule in Schedule::ALL {
            let counts = run(schedule, &pages, memory, infill);
            prop_assert!(
                counts.max_held <= counts.budget_at_max,
                "{}: kept {} pages with a budget of {}",
                schedule.name(), counts.max_held, counts.budget_at_max
            );
            if schedule != Schedule::Window {
                prop_assert_eq!(counts.harmful_rounds, 0, "{}", schedule.name());
            }
        }
    }

    #[test]
    fn the_default_reads_no_more_than_the_window_and_near_the_optimum(
        pages in list(),
        memory in 2usize..100,
    ) {
        let default = run(Schedule::default(), &pages, memory, 0);
        let window = run(Schedule::Window, &pages, memory, 0);
        prop_assert!(
            default.fetches <= window.fetches,
            "{} pages read, the window {}", default.fetches, window.fetches
        );
        // The budget is AIMD's 90% of the memory.
        let best = opt_demand(&pages, memory * 9 / 10);
        prop_assert!(
            default.fetches as f64 <= 1.3 * best as f64,
            "{} pages read, opt-demand {}", default.fetches, best
        );
    }
}
