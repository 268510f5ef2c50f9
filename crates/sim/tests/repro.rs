//! Sweeps and the Cao et al. reproduction on real reference traces from the repository's `traces/`
//! (a test fails, naming the directory, when it is absent).

use std::path::{Path, PathBuf};

use sim::experiment::Content;
use sim::{find, Sweep, TraceFile};

fn traces() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    assert!(
        dir.is_dir(),
        "the reference traces are missing: {} is not a directory",
        dir.display()
    );
    dir
}

/// Two of the reference traces, linked into a scratch directory (never copied into the repo).
fn scratch_with(names: &[&str]) -> tempfile::TempDir {
    let source = traces();
    let dir = tempfile::tempdir().unwrap();
    for name in names {
        std::os::unix::fs::symlink(source.join(name), dir.path().join(name)).unwrap();
    }
    dir
}

#[test]
fn reproduction_returns_figures_and_keeps_the_papers_fetch_identities() {
    let input = scratch_with(&["cs.trace.gz", "cpp.trace.gz"]);
    let report = sim::repro::cao::run(input.path()).unwrap();
    assert_eq!(report.groups.len(), 2, "two application cache sizes");
    let names: Vec<&str> = report.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names.len(), 4 + 2 + 3, "{names:?}");
    assert!(
        names.ends_with(&["summary.md", "tables.md", "rows.json"]),
        "{names:?}"
    );
    let group = report
        .outputs
        .iter()
        .find(|o| o.name == "applications-20pct.svg")
        .expect("the group's figure");
    assert!(matches!(&group.content, Content::Figure(panels) if !panels.is_empty()));
    let fetches = |policy: &str, r: &sim::Row| {
        report
            .rows
            .iter()
            .find(|o| {
                o.policy == policy
                    && o.trace == r.trace
                    && o.capacity == r.capacity
                    && o.fetch_time == r.fetch_time
            })
            .unwrap()
            .metrics
            .fetches()
    };
    for row in &report.rows {
        assert_eq!(row.setting, "simulated");
        match row.policy {
            "conservative" => assert_eq!(row.metrics.fetches(), fetches("opt-demand", row)),
            "lru-sensible" => assert_eq!(row.metrics.fetches(), fetches("lru-demand", row)),
            _ => {}
        }
    }
    assert!(report
        .bounds
        .iter()
        .all(|b| b.aggressive_over_lower_bound >= 1.0
            && b.aggressive_over_lower_bound <= b.paper_bound + 1e-9));
}

#[test]
fn a_sweep_without_offline_policies_streams_and_is_not_normalised() {
    let dir = traces();
    let sweep = Sweep {
        policies: vec![find("lru-demand").unwrap(), find("lru-obl").unwrap()],
        capacities: vec![100, 400],
        fetch_times: vec![5],
        realistic: false,
        fetch_spread: 0,
        depth: 1,
    };
    let rows = sweep
        .run(&TraceFile::new(dir.join("cpp.trace.gz")))
        .unwrap();
    assert_eq!(rows.len(), 4);
    assert!(rows
        .iter()
        .all(|r| r.normalized_elapsed.is_none() && r.metrics.references == 9_047));
    assert!(
        rows[2].metrics.fetches() < rows[0].metrics.fetches(),
        "a larger cache fetches less"
    );
}

#[test]
fn a_missing_trace_directory_is_an_error_naming_it() {
    let error = sim::repro::cao::run(Path::new("/nonexistent/traces")).unwrap_err();
    assert!(error.to_string().contains("/nonexistent/traces"), "{error}");
}
