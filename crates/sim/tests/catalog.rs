//! Every policy of the catalog runs on a shipped trace, on Cao's unit device and on a disk
//! model, through one sweep; a sweep gives the same runs on one thread and on several; Cao's
//! policies and the replacement-and-prefetcher ones count a reference to a block still in
//! flight as a miss; a trace read once serves both.

use std::path::Path;

use sim::catalog::{Device, CATALOG};
use sim::choice::{parse_choices, Choice};
use sim::sweep::Plan;
use sim::TraceFile;

fn trace() -> TraceFile {
    TraceFile::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/cs.trace.gz"))
}

/// Every policy but the exact optimum (exhaustive search does not scale to a real trace).
fn every_policy() -> Vec<Choice> {
    let names: Vec<&str> = CATALOG
        .iter()
        .map(|e| e.name)
        .filter(|n| *n != "optimal")
        .collect();
    parse_choices(&names.join(",")).unwrap()
}

fn plan(choices: Vec<Choice>, device: &str) -> Plan {
    Plan {
        traces: vec![trace()],
        choices,
        capacities: vec![200, 800],
        devices: vec![device.parse::<Device>().unwrap()],
        realistic: false,
        fetch_spread: 0,
        depth: 1,
    }
}

#[test]
fn every_policy_runs_on_a_disk_model_and_serves_every_reference() {
    let plan = plan(every_policy(), "st3500320as:clook");
    let runs = plan.run(2, &|| {}).unwrap();
    assert_eq!(runs.len(), plan.len());
    for run in &runs {
        let m = &run.metrics;
        assert_eq!(m.references, 6781, "{}", run.policy);
        assert_eq!(m.hits + m.misses, m.references, "{}", run.policy);
        assert!(
            m.elapsed >= m.stall && m.fetches() > 0,
            "{}: {m:?}",
            run.policy
        );
        assert_eq!(run.time_unit, "us");
    }
}

/// CP and CPEM size their prefetch depth from the disk's transfer rate, which unit:F lacks: there
/// they take it as an option, and without it the error names the policy and says what to give.
#[test]
fn every_policy_runs_on_unit_time_the_competitive_ones_with_a_given_depth() {
    let mut choices: Vec<Choice> = every_policy()
        .into_iter()
        .filter(|c| !matches!(c.entry.name, "cp" | "cpem"))
        .collect();
    choices.extend(parse_choices("cp:depth=32K,cpem:depth=32K,threshold=5").unwrap());
    let runs = plan(choices, "unit:10").run(1, &|| {}).unwrap();
    for run in &runs {
        assert_eq!(run.metrics.references, 6781, "{}", run.policy);
        assert!(run.normalized_elapsed.is_some(), "{}", run.policy);
        let largest = run.metrics.disk.request_sizes.keys().max();
        if run.policy.starts_with("cpem") {
            assert_eq!(largest, Some(&4), "{}: 32 KiB of 8 KiB blocks", run.policy);
        } else if run.policy.starts_with("cp") {
            // The live CP: the kernel's read-ahead (32 blocks) with advice no deeper than it.
            assert_eq!(largest, Some(&32), "{}: the kernel's window", run.policy);
        }
    }
    let cp = plan(parse_choices("cp").unwrap(), "unit:10").run(1, &|| {});
    let refused = cp.unwrap_err().to_string();
    assert!(
        refused.starts_with("policy `cp`: ") && refused.contains("depth="),
        "{refused}"
    );
}

#[test]
fn a_sweep_gives_the_same_runs_on_one_thread_and_on_two() {
    let choices =
        parse_choices("lru,fifo,clock,dulo:bank=1M,evict=4M,ap:depth=64,lru-obl").unwrap();
    let plan = plan(choices, "fixed:5:fifo");
    let json = |jobs| serde_json::to_string(&plan.run(jobs, &|| {}).unwrap()).unwrap();
    assert_eq!(json(1), json(2));
}

#[test]
fn demand_lru_on_unit_time_costs_one_unit_per_reference_and_f_per_miss() {
    let runs = plan(parse_choices("lru").unwrap(), "unit:10")
        .run(1, &|| {})
        .unwrap();
    assert!(runs[0].policy == "lru" && CATALOG[0].name == "lru");
    for run in runs {
        let m = run.metrics;
        assert_eq!(m.demand_fetches, m.misses);
        assert_eq!(m.elapsed, m.references + 10 * m.misses);
    }
}

/// A policy of Cao's on a disk model: each fetch is one request to the model, so on `fixed:5`
/// (every request 5 ms) demand LRU takes 1 us per reference plus 5,000 us per miss.
#[test]
fn a_policy_of_caos_on_a_fixed_time_disk_pays_the_disk_per_fetch() {
    let runs = plan(parse_choices("lru").unwrap(), "fixed:5")
        .run(1, &|| {})
        .unwrap();
    for run in runs {
        let m = run.metrics;
        assert_eq!(
            m.elapsed,
            m.references + 5_000 * m.misses,
            "{}",
            run.capacity
        );
    }
}

/// One definition for every policy: a reference to a block still in flight is a miss (the
/// program waits for it), though it needs no demand fetch. On a sequential trace with fetches
/// a hundred times as long as a reference, one-block lookahead (Cao's) and Linux read-ahead
/// (a replacement policy and a prefetcher) both have blocks still arriving when the program
/// reaches them.
#[test]
fn a_reference_to_a_block_in_flight_is_a_miss_for_every_policy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sequential.txt");
    let lines: Vec<String> = (0..256).map(|b| b.to_string()).collect();
    std::fs::write(&path, lines.join("\n")).unwrap();
    let plan = Plan {
        traces: vec![TraceFile::new(&path)],
        capacities: vec![256],
        ..plan(
            parse_choices("lru-obl,linux-readahead").unwrap(),
            "unit:100",
        )
    };
    let runs = plan.run(1, &|| {}).unwrap();
    assert_eq!(
        runs.iter().map(|r| r.policy.as_str()).collect::<Vec<_>>(),
        ["lru-obl", "linux-readahead"]
    );
    for run in runs {
        let m = run.metrics;
        assert_eq!(m.hits + m.misses, 256, "{}: {m:?}", run.policy);
        assert!(m.misses > m.demand_fetches, "{}: {m:?}", run.policy);
    }
}

/// A replacement-and-prefetcher policy gives the same run whether its workload was read from
/// the file (alone) or built from the reference string read for a policy of Cao's beside it.
#[test]
fn a_replacement_and_prefetcher_run_is_the_same_beside_a_policy_of_caos() {
    for device in ["unit:10", "st3500320as:clook"] {
        let alone = plan(parse_choices("dulo,ap").unwrap(), device);
        let beside = plan(parse_choices("lru,dulo,ap").unwrap(), device);
        let alone = alone.run(1, &|| {}).unwrap();
        let beside = beside.run(1, &|| {}).unwrap();
        let disk_timed: Vec<_> = beside.iter().filter(|r| r.policy != "lru").collect();
        assert_eq!(alone.len(), disk_timed.len());
        for (a, b) in alone.iter().zip(disk_timed) {
            assert_eq!((&a.policy, &a.metrics), (&b.policy, &b.metrics), "{device}");
        }
    }
}
