//! The runner on a small real file: every mode reads the same bytes, cold and warm, and the report
//! says where it was measured. No wall-clock thresholds: the tests check bytes, rows and counters.

// The read interposers: the libprefetch mode's preads are followed by the library, as in `prefetch`.
use interposers as _;

use bench::cache::Eviction;
use bench::report::CacheState;
use bench::{BenchConfig, Mode, Workload};

fn config(dir: &std::path::Path, workload: Workload) -> BenchConfig {
    BenchConfig {
        workload,
        file: dir.join("data.bin"),
        file_size: 1 << 20,
        modes: Mode::ALL.to_vec(),
        runs: 2,
        eviction: Eviction::Fadvise,
        warm: true,
        memory_limits: Vec::new(),
        windows: Vec::new(),
        infill_bytes: None,
        show_progress: false,
        instances: 1,
        launcher: None,
    }
}

fn workloads() -> Vec<Workload> {
    vec![
        Workload::Random {
            pages: 300,
            seed: 3,
            span_bytes: 1 << 20,
            abandon_after: None,
        },
        Workload::Strided {
            tile_bytes: 16384,
            tiles_per_side: 8,
        },
        Workload::Sequential {
            span_bytes: 1 << 20,
            read_bytes: 65536,
        },
    ]
}

#[test]
fn every_mode_reads_the_same_bytes_cold_and_warm() {
    let dir = tempfile::tempdir().unwrap();
    for workload in workloads() {
        let report = bench::run(&config(dir.path(), workload.clone())).unwrap();
        assert_eq!(report.rows.len(), 2 * Mode::ALL.len(), "{workload:?}");
        let list_rows = || report.rows.iter().filter(|row| row.mode.reads_the_list());
        let checksums: Vec<u32> = list_rows()
            .flat_map(|row| row.runs.iter().map(|run| run.outcome.checksum))
            .collect();
        assert_eq!(checksums.len(), 2 * 2 * (Mode::ALL.len() - 1));
        assert!(
            checksums.iter().all(|&sum| sum == checksums[0]),
            "{workload:?}"
        );
        let expected_bytes = bench::workload::requested_bytes(&workload.reads());
        assert!(list_rows()
            .flat_map(|row| &row.runs)
            .all(|run| run.outcome.bytes == expected_bytes));
        let mut distinct = bench::workload::access_pages(&workload.reads());
        distinct.sort_unstable();
        distinct.dedup();
        let limit = report
            .rows
            .iter()
            .find(|row| row.mode == Mode::Limit)
            .unwrap();
        assert!(
            limit
                .runs
                .iter()
                .all(|run| run.outcome.bytes == distinct.len() as u64 * 4096),
            "the limit reads each distinct page once: {workload:?}"
        );
        assert!(
            report
                .rows
                .iter()
                .all(|row| row.optimum_pages == Some(distinct.len() as u64)),
            "without a memory limit the optimum reads each distinct page once: {workload:?}"
        );
        let stock = &report.rows[0];
        assert_eq!((stock.mode, stock.cache), (Mode::Stock, CacheState::Cold));
        assert_eq!(stock.speedup_over_stock, Some(1.0));
    }
}

#[test]
fn the_checksum_is_the_crc32_of_the_file_read_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut sequential = config(
        dir.path(),
        Workload::Sequential {
            span_bytes: 1 << 20,
            read_bytes: 4096,
        },
    );
    sequential.warm = false;
    sequential.runs = 1;
    let report = bench::run(&sequential).unwrap();
    let contents = std::fs::read(&sequential.file).unwrap();
    assert_eq!(
        report.checksum,
        format!("{:#010x}", crc32fast::hash(&contents))
    );
}

#[test]
fn the_table_and_json_name_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let mut random = config(dir.path(), workloads().remove(0));
    random.warm = false;
    random.runs = 1;
    let report = bench::run(&random).unwrap();
    let table = report.table();
    assert!(
        table.contains("measured on: this machine's disk"),
        "{table}"
    );
    assert!(
        table.contains("stock") && table.contains("naive"),
        "{table}"
    );
    let json: serde_json::Value = serde_json::from_str(&report.json().unwrap()).unwrap();
    assert_eq!(json["workload"]["kind"], "random");
    assert_eq!(json["storage"]["kind"], "disk");
    assert_eq!(json["rows"].as_array().unwrap().len(), Mode::ALL.len());
}

#[test]
fn a_workload_larger_than_the_file_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let mut strided = config(
        dir.path(),
        Workload::Strided {
            tile_bytes: 16384,
            tiles_per_side: 100,
        },
    );
    strided.file_size = 1 << 20;
    let error = bench::run(&strided).unwrap_err().to_string();
    assert!(error.contains("raise --file-size"), "{error}");
}

#[test]
fn the_library_follows_every_read_of_the_libprefetch_mode() {
    let dir = tempfile::tempdir().unwrap();
    for workload in workloads() {
        let mut only_library = config(dir.path(), workload.clone());
        only_library.modes = vec![Mode::Libprefetch];
        only_library.warm = false;
        only_library.runs = 1;
        let report = bench::run(&only_library).unwrap();
        let run = &report.rows[0].runs[0];
        let stats = run.outcome.library.expect("libprefetch counters");
        assert_eq!(
            stats.tracked_reads,
            workload.reads().len() as u64,
            "{workload:?}"
        );
        assert!(
            stats.callbacks >= 1 && stats.rounds >= 1,
            "{workload:?}: {stats:?}"
        );
        assert!(stats.pages_prefetched >= 1, "{workload:?}: {stats:?}");
    }
}

#[test]
fn a_window_sweep_gives_one_libprefetch_row_per_window() {
    let dir = tempfile::tempdir().unwrap();
    let mut sweep = config(dir.path(), workloads().remove(0));
    sweep.warm = false;
    sweep.runs = 1;
    sweep.windows = vec![64 << 10, 256 << 10, 1 << 20];
    let report = bench::run(&sweep).unwrap();
    let windows: Vec<Option<u64>> = report.rows.iter().map(|row| row.window_bytes).collect();
    assert_eq!(
        windows,
        vec![
            None,
            None,
            Some(64 << 10),
            Some(256 << 10),
            Some(1 << 20),
            None,
            None
        ]
    );
    let rounds = |index: usize| report.rows[index].runs[0].outcome.library.unwrap().rounds;
    assert!(rounds(2) > rounds(4), "a smaller window needs more rounds");
    let svg = dir.path().join("sweep.svg");
    bench::plot::sweep_svg(&report, &svg).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("libprefetch window (MiB)"));
    let without_sweep = bench::run(&BenchConfig {
        windows: Vec::new(),
        ..sweep
    })
    .unwrap();
    let error = bench::plot::sweep_svg(&without_sweep, &svg).unwrap_err();
    assert!(error.to_string().contains("needs a sweep"), "{error}");
}

#[test]
fn zero_sized_reads_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let zero_tiles = config(
        dir.path(),
        Workload::Strided {
            tile_bytes: 0,
            tiles_per_side: 4,
        },
    );
    let error = bench::run(&zero_tiles).unwrap_err().to_string();
    assert!(error.contains("--tile-size must be more than 0"), "{error}");
    let zero_reads = config(
        dir.path(),
        Workload::Sequential {
            span_bytes: 4096,
            read_bytes: 0,
        },
    );
    let error = bench::run(&zero_reads).unwrap_err().to_string();
    assert!(error.contains("--read-size must be more than 0"), "{error}");
}

#[test]
fn the_whole_list_mode_starts_at_the_papers_window() {
    let dir = tempfile::tempdir().unwrap();
    let mut both = config(dir.path(), workloads().remove(0));
    both.modes = vec![Mode::Libprefetch, Mode::WholeList];
    both.warm = false;
    both.runs = 1;
    let report = bench::run(&both).unwrap();
    let run = |mode: Mode| {
        let row = report.rows.iter().find(|row| row.mode == mode).unwrap();
        row.runs[0].outcome.clone()
    };
    let (small_start, whole) = (run(Mode::Libprefetch), run(Mode::WholeList));
    assert_eq!(small_start.checksum, whole.checksum);
    let rounds = |outcome: &bench::outcome::Outcome| outcome.library.unwrap().rounds;
    let (small, whole) = (rounds(&small_start), rounds(&whole));
    assert!(
        whole < small,
        "{whole} rounds given the whole list, {small} from a small start"
    );
}
