//! Cross-check with an independent simulator: LRU, FIFO and CLOCK miss counts on the shipped
//! traces, in libCacheSim's csv and oracleGeneral forms, at several cache sizes, equal the
//! counts libCacheSim itself computed (traces/libcachesim_expected.json, written by
//! scripts/libcachesim_expected.py; one object per cache slot, as its `ignore_obj_size`).

use std::path::{Path, PathBuf};

use sim::catalog::Device;
use sim::choice::parse_choices;
use sim::sweep::Plan;
use sim::{find, run_stream, RunSetup, TraceFile};

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces")
}

/// The file of `form` for trace `name`.
fn form_path(name: &str, form: &str) -> PathBuf {
    match form {
        "oracleGeneral" => traces().join(format!("{name}.oracleGeneral.zst")),
        "csv" => traces().join(format!("{name}.lcs.csv.gz")),
        other => panic!("unknown form {other} in the expected file"),
    }
}

/// The simulator's policy for libCacheSim's.
fn policy(name: &str) -> &'static sim::PolicyInfo {
    find(if name == "lru" { "lru-demand" } else { name }).unwrap()
}

#[test]
fn lru_fifo_and_clock_miss_exactly_as_in_libcachesim() {
    let path = traces().join("libcachesim_expected.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run scripts/libcachesim_expected.py)",
            path.display()
        )
    });
    let expected: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut compared = 0;
    for (name, trace) in expected["traces"].as_object().unwrap() {
        for (form, by_policy) in trace["misses"].as_object().unwrap() {
            let file = TraceFile::new(form_path(name, form));
            for (policy_name, by_size) in by_policy.as_object().unwrap() {
                for (size, misses) in by_size.as_object().unwrap() {
                    let setup = RunSetup::simplified(size.parse().unwrap(), 1);
                    let metrics =
                        run_stream(policy(policy_name), file.open().unwrap(), &setup).unwrap();
                    assert_eq!(
                        (metrics.references, metrics.misses),
                        (
                            trace["references"].as_u64().unwrap(),
                            misses.as_u64().unwrap()
                        ),
                        "{name} ({form}), {policy_name}, cache {size}"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared >= 6 * 2 * 3 * 5, "only {compared} counts compared");
}

/// The same counts from one sweep per trace file over every policy and cache size, on two
/// threads: the trace is read once into memory and shared by the runs.
#[test]
fn a_sweep_sharing_one_read_of_the_trace_misses_as_libcachesim() {
    let text = std::fs::read_to_string(traces().join("libcachesim_expected.json")).unwrap();
    let expected: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut compared = 0;
    for (name, trace) in expected["traces"].as_object().unwrap() {
        for (form, by_policy) in trace["misses"].as_object().unwrap() {
            let policies: Vec<&String> = by_policy.as_object().unwrap().keys().collect();
            let sizes: Vec<usize> = by_policy[policies[0]]
                .as_object()
                .unwrap()
                .keys()
                .map(|s| s.parse().unwrap())
                .collect();
            let names: Vec<&str> = policies.iter().map(|p| p.as_str()).collect();
            let plan = Plan {
                traces: vec![TraceFile::new(form_path(name, form))],
                choices: parse_choices(&names.join(",")).unwrap(),
                capacities: sizes,
                devices: vec!["unit:1".parse::<Device>().unwrap()],
                realistic: false,
                fetch_spread: 0,
                depth: 1,
            };
            for run in plan.run(2, &|| {}).unwrap() {
                let misses = &by_policy[run.policy.as_str()][run.capacity.to_string()];
                assert_eq!(
                    Some(run.metrics.misses),
                    misses.as_u64(),
                    "{name} ({form}), {}, cache {}",
                    run.policy,
                    run.capacity
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 6 * 2 * 3 * 5, "only {compared} counts compared");
}
