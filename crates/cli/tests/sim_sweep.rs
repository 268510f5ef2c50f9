//! `prefetch sim` as a user runs it on the shipped traces: --list names every policy, a sweep
//! of Cao's policies and replacement-and-prefetcher ones on a disk model and on unit time,
//! libCacheSim's oracleGeneral form read by name, --mrc, and malformed traces (one line naming
//! the file and the record or line, even with RUST_BACKTRACE=1).

use std::path::{Path, PathBuf};
use std::process::Command;

fn trace(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces")
        .join(name)
}

/// Runs `prefetch sim ARGS` and returns its standard output, failing on an error.
fn sim(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .arg("sim")
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn json(args: &[&str]) -> Vec<serde_json::Value> {
    serde_json::from_str(&sim(args)).unwrap()
}

#[test]
fn list_names_every_policy_with_its_section() {
    let list = sim(&["--list"]);
    for name in [
        "| lru |",
        "| fifo |",
        "| clock |",
        "| aggressive |",
        "| dulo |",
        "| linux-readahead |",
        "| ap |",
        "| cp |",
        "| cpem |",
        "| libprefetch-window |",
        "| libprefetch-aggressive |",
        "| libprefetch-conservative |",
    ] {
        assert!(list.contains(name), "{name} missing from\n{list}");
    }
}

#[test]
fn a_sweep_mixes_kinds_of_policy_devices_and_cache_sizes() {
    let gli = trace("gli.trace.gz");
    let rows = json(&[
        "--trace",
        gli.to_str().unwrap(),
        "--policy",
        "lru,dulo:bank=1M,evict=4M,libprefetch-window",
        "--cache",
        "200,800",
        "--device",
        "unit:10,st3500320as:clook",
        "--jobs",
        "2",
        "--json",
    ]);
    assert_eq!(rows.len(), 3 * 2 * 2);
    let policies: Vec<&str> = rows[..3]
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        policies,
        ["lru", "dulo:bank=1M,evict=4M", "libprefetch-window"]
    );
    for row in &rows {
        assert_eq!(row["references"], 6015, "{row}");
    }
    assert!(rows.iter().all(|r| r.get("engine").is_none()), "one loop");
    assert_eq!(rows.last().unwrap()["device"], "st3500320as:clook");
}

#[test]
fn an_oracle_general_trace_is_recognised_by_name_and_matches_its_block_form() {
    let count = |path: PathBuf| {
        json(&[
            "--trace",
            path.to_str().unwrap(),
            "--policy",
            "lru,fifo,clock",
            "--cache",
            "500",
            "--fetch-time",
            "1",
            "--json",
        ])
        .iter()
        .map(|r| r["misses"].as_u64().unwrap())
        .collect::<Vec<_>>()
    };
    assert_eq!(
        count(trace("multi2.oracleGeneral.zst")),
        count(trace("multi2.trace.gz"))
    );
}

#[test]
fn mrc_gives_lru_and_opt_at_each_size() {
    let points = json(&[
        "--mrc",
        "--trace",
        trace("multi2.lcs.csv.gz").to_str().unwrap(),
        "--cache",
        "500,2000",
        "--json",
    ]);
    // libCacheSim's LRU misses on this trace (traces/libcachesim_expected.json).
    let lru: Vec<u64> = points
        .iter()
        .map(|p| p["lru_misses"].as_u64().unwrap())
        .collect();
    assert_eq!(lru, [16845, 13419]);
    assert!(points
        .iter()
        .all(|p| p["opt_misses"].as_u64() <= p["lru_misses"].as_u64()));
}

/// `--mrc` draws curves of demand fetching at unit time: a device it would ignore is an error.
#[test]
fn mrc_refuses_a_device_it_would_ignore() {
    let ps = trace("ps.trace.gz");
    for extra in [["--device", "unit:3"], ["--fetch-time", "3"]] {
        let output = Command::new(env!("CARGO_BIN_EXE_prefetch"))
            .args(["sim", "--mrc", "--trace", ps.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{extra:?}");
        assert!(stderr.contains("cannot be used with"), "{stderr}");
    }
}

/// `--mrc --policy` draws any policy's curve; on a small trace every size runs exactly, so
/// the counts are libCacheSim's (traces/libcachesim_expected.json), and a shares list sizes
/// the cache from the working set.
#[test]
fn mrc_of_any_policy_gives_its_exact_misses_on_a_small_trace() {
    let output = sim(&[
        "--mrc",
        "--policy",
        "fifo,clock,lru+obl",
        "--trace",
        trace("cpp.oracleGeneral.zst").to_str().unwrap(),
        "--cache",
        "100,1000",
        "--json",
    ]);
    let curves: serde_json::Value = serde_json::from_str(&output).unwrap();
    let misses = |policy: &str| -> Vec<u64> {
        let points = curves["points"].as_array().unwrap();
        let of = points.iter().filter(|p| p["policy"] == policy);
        of.map(|p| p["misses"].as_u64().unwrap()).collect()
    };
    assert_eq!(misses("fifo"), [4086, 1351]);
    assert_eq!(misses("clock"), [2591, 1229]);
    assert_eq!(misses("lru+obl").len(), 2);
    assert!(curves["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["rate"] == 1.0));
    assert_eq!(curves["checks"].as_array().unwrap().len(), 0);
}

/// A sampled curve prints its error against exact runs at the sizes checked.
#[test]
fn a_sampled_curve_prints_its_error() {
    let table = sim(&[
        "--mrc",
        "--policy",
        "fifo",
        "--sample",
        "0.5",
        "--mrc-sizes",
        "4",
        "--trace",
        trace("cs.trace.gz").to_str().unwrap(),
    ]);
    let errors = table
        .lines()
        .filter(|l| l.starts_with("sampling error of fifo"));
    assert_eq!(errors.count(), 2, "{table}");
}

/// Plain miss counts need no device (unit time, said so), sizes may be shares of the working
/// set or bytes, and any replacement pairs with any prefetcher on any device.
#[test]
fn miss_counts_need_no_device_and_sizes_may_be_shares_or_bytes() {
    let cpp = trace("cpp.trace.gz");
    let rows = json(&[
        "--trace",
        cpp.to_str().unwrap(),
        "--cache",
        "10%,800K",
        "--policy",
        "lru,lru+none",
        "--json",
    ]);
    let cells: Vec<(String, String, u64, u64)> = rows
        .iter()
        .map(|r| {
            let text = |k: &str| r[k].as_str().unwrap().to_string();
            (
                text("device"),
                text("policy"),
                r["capacity"].as_u64().unwrap(),
                r["misses"].as_u64().unwrap(),
            )
        })
        .collect();
    // cpp's working set is 1223 blocks (its misses at any size past it, libCacheSim's too).
    let pair = |policy: &str, capacity, misses| {
        ("unit:1".to_string(), policy.to_string(), capacity, misses)
    };
    assert_eq!(cells[0], pair("lru", 122, cells[1].3));
    assert_eq!(cells[1].1, "lru+none");
    assert_eq!(cells[2], pair("lru", 100, 2740));
    assert_eq!(cells[3], pair("lru+none", 100, 2740));
    let rows = json(&[
        "--trace",
        cpp.to_str().unwrap(),
        "--cache",
        "256",
        "--policy",
        "fifo+obl,clock+linux-readahead,lru+planner",
        "--device",
        "st3500320as",
        "--json",
    ]);
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r["prefetches"].as_u64().unwrap() > 0));
}

/// DULO, read-ahead and CP beside Cao's policies on Cao's own device, in one command.
#[test]
fn caos_policies_and_the_others_compare_on_unit_time_in_one_sweep() {
    let rows = json(&[
        "--trace",
        trace("cs.trace.gz").to_str().unwrap(),
        "--policy",
        "lru,aggressive,dulo,linux-readahead,cp:depth=256K,cpem:depth=256K",
        "--cache",
        "256",
        "--device",
        "unit:10",
        "--json",
    ]);
    let policies: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(
        policies,
        [
            "lru",
            "aggressive",
            "dulo",
            "linux-readahead",
            "cp:depth=256K",
            "cpem:depth=256K"
        ]
    );
    assert!(rows
        .iter()
        .all(|r| r["references"] == 6781 && r["time_unit"] == "units"));
}

#[test]
fn svg_draws_the_sweep_and_the_curves() {
    let dir = tempfile::tempdir().unwrap();
    let (sweep, curves) = (dir.path().join("sweep.svg"), dir.path().join("mrc.svg"));
    let cs = trace("cs.trace.gz");
    let cs = cs.to_str().unwrap();
    sim(&[
        "--trace",
        cs,
        "--policy",
        "lru,clock",
        "--cache",
        "100,400",
        "--fetch-time",
        "5",
        "--svg",
        sweep.to_str().unwrap(),
    ]);
    sim(&[
        "--mrc",
        "--trace",
        cs,
        "--cache",
        "100,400",
        "--svg",
        curves.to_str().unwrap(),
    ]);
    let sweep = std::fs::read_to_string(sweep).unwrap();
    assert!(
        sweep.contains("clock") && sweep.contains("miss ratio"),
        "{sweep}"
    );
    let curves = std::fs::read_to_string(curves).unwrap();
    assert!(curves.contains("LRU cs.trace.gz") && curves.contains("OPT cs.trace.gz"));
}

/// A truncated zstd or gzip stream, a file not made of whole records and a bad line each stop
/// `prefetch sim` with one line naming the file and where (for a cut zstd stream, how many records
/// were read whole before it), and no backtrace.
#[test]
fn malformed_traces_fail_with_one_line_naming_file_and_record() {
    let dir = tempfile::tempdir().unwrap();
    let cut = |name: &str, from: &str, len: usize| {
        let bytes = std::fs::read(trace(from)).unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes[..len.min(bytes.len() / 2)]).unwrap();
        path
    };
    let short_record = dir.path().join("short.oracleGeneral.bin");
    std::fs::write(&short_record, [0u8; 24 * 3 + 5]).unwrap();
    let bad_line = dir.path().join("bad.txt");
    std::fs::write(&bad_line, "1\n2\nthree\n").unwrap();
    let cases = [
        (
            cut("zst.oracleGeneral.zst", "ps.oracleGeneral.zst", 30_000),
            ": read failed after ",
            "whole records: incomplete frame",
        ),
        (
            cut("cut.trace.gz", "sprite.trace.gz", 100_000),
            ":",
            "incomplete deflate stream",
        ),
        (
            short_record.clone(),
            ": record 4: ",
            "cut short: 5 of 24 bytes",
        ),
        (bad_line.clone(), ":3: ", "\"three\""),
    ];
    for (path, at, what) in cases {
        for policies in ["lru", "lru,opt-demand,dulo"] {
            let output = Command::new(env!("CARGO_BIN_EXE_prefetch"))
                .args([
                    "sim",
                    "--trace",
                    path.to_str().unwrap(),
                    "--policy",
                    policies,
                ])
                .args(["--cache", "100", "--device", "unit:10"])
                .env("RUST_BACKTRACE", "1")
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "{stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            let named = format!("prefetch: {}{at}", path.display());
            assert!(stderr.starts_with(&named), "{named} not in: {stderr}");
            assert!(stderr.contains(what), "{what} not in: {stderr}");
        }
    }
}
