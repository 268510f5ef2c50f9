//! DULO (FAST'05) s4.1: execution time, hit ratio and disk request ("sequence") size CDF of
//! DULO against CLOCK (the paper's "LRU") over a range of cache sizes, with Linux-style
//! read-ahead, on mixed traces (glimpse-like `gli`, `multi1`, `multi2`) and on almost-all-random
//! and almost-all-sequential synthetic ones; then the bank-size and evicting-section-size
//! sensitivity of Tables 3 and 4.
//!
//! Settings: disk `hitachi-18zx` (the paper simulated a Seagate ST39102LW, 10K RPM, with
//! DiskSim; the Hitachi 18ZX of its Table 1 is the nearest preset), Linux deadline scheduler,
//! 4 KiB blocks, one stream with no think time (the traces have no timing), so the execution
//! time is the time spent waiting for the disk.
//!
//! Deviations: our traces are the LIRS set, about 64 times smaller than the paper's (gli: 2,530
//! distinct blocks, 10 MB, against glimpse's 669 MB; multi1 10 MB against 792 MB; multi2 22 MB
//! against 1,855 MB), so every size is the paper's divided by [`SCALE`] = 64: bank and evicting
//! section 8 MB / 64 MB -> 128 KB / 1 MB, and 4 MB / 16 MB -> 64 KB / 256 KB for caches below
//! 80 MB / 64 (the paper's rule for small memories, s4.1.1); the sensitivity tables run at the
//! paper's memory sizes divided by 64 and scale their rows the same way. Cache sizes of the main
//! sweep are fractions of each trace's footprint. The traces have no file boundaries, so
//! read-ahead sees one file per trace.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::synthetic::{almost_all_random, almost_all_sequential};
use super::{mib, Output, Report};
use crate::disksim::engine::EngineConfig;
use crate::disksim::prefetch::readahead;
use crate::disksim::replace::{clock, dulo};
use crate::disksim::run::{self, disk_named, run_pair};
use crate::disksim::workload::Workload;
use crate::metrics::{seconds, Metrics};
use crate::report::{Panel, Series};
use crate::SimError;

/// Cache sizes, as fractions of each workload's distinct blocks.
pub const FRACTIONS: [f64; 6] = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7];
/// The mixed-pattern reference traces.
pub const MIXED: [&str; 3] = ["gli", "multi1", "multi2"];
/// The scale between the paper's sizes (bank, evicting section, memory) and ours.
pub const SCALE: u64 = 64;
/// Memory sizes of the paper's Tables 3 and 4 (MB, paper scale) for our stand-ins.
pub const SENSITIVITY_MEMORY_MB: [(&str, u64); 4] = [
    ("gli", 640),
    ("multi1", 160),
    ("multi2", 640),
    ("almost-all-random", 128),
];
/// Table 3's bank sizes (MB, paper scale).
pub const BANK_MB: [u64; 6] = [1, 2, 4, 8, 16, 32];
/// Table 4's evicting-section sizes (MB, paper scale).
pub const EVICT_MB: [u64; 6] = [32, 64, 128, 192, 256, 320];
/// Bank of the small-cache check (KB): half the paper's small-memory bank (4 MB / 64).
pub const SMALL_BANK_KB: u64 = 32;
/// Evicting section of the small-cache check (KB): a quarter of the paper's small-memory
/// evicting section (16 MB / 64).
pub const SMALL_EVICT_KB: u64 = 64;
/// Request sizes at which the CDF is tabulated.
pub const CDF_SIZES: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Where and how to run.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Directory of the reference traces.
    pub traces: PathBuf,
    /// Disk model name.
    pub disk: String,
    /// Disk scheduler name.
    pub scheduler: String,
}

impl Setup {
    /// The defaults above, reading `traces`.
    pub fn new(traces: &Path) -> Setup {
        Setup {
            traces: traces.to_path_buf(),
            disk: "hitachi-18zx".into(),
            scheduler: "deadline".into(),
        }
    }
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Workload name.
    pub workload: String,
    /// Cache size in blocks.
    pub cache_blocks: usize,
    /// Replacement policy spec.
    pub policy: String,
    /// What was measured.
    pub metrics: Metrics,
}

/// A workload and its footprint.
struct Named {
    name: String,
    workload: Workload,
    distinct: usize,
}

fn workloads(traces: &Path) -> Result<Vec<Named>, SimError> {
    let mut all = Vec::new();
    for name in MIXED {
        let path = traces.join(format!("{name}.trace.gz"));
        all.push(named(name, Workload::from_trace(&path, 4096)?));
    }
    all.push(named(
        "almost-all-random",
        almost_all_random(16_384, 30_000, 0.03, 1),
    ));
    all.push(named(
        "almost-all-sequential",
        almost_all_sequential(6, 2_048, 2, 0.01, 2),
    ));
    Ok(all)
}

fn named(name: &str, workload: Workload) -> Named {
    let distinct = workload.streams[0]
        .iter()
        .map(|s| s.block)
        .collect::<BTreeSet<_>>()
        .len();
    Named {
        name: name.to_string(),
        workload,
        distinct,
    }
}

/// A policy of this reproduction, over Linux read-ahead (16 -> 32 blocks): CLOCK, or DULO with
/// a bank and an evicting section in KiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arm {
    Clock,
    Dulo { bank_kb: u64, evict_kb: u64 },
}

impl Arm {
    /// Its name in the rows, as `prefetch sim --policy` would take it.
    fn label(self) -> String {
        match self {
            Arm::Clock => "clock".into(),
            Arm::Dulo { bank_kb, evict_kb } => format!("dulo:bank={bank_kb}K,evict={evict_kb}K"),
        }
    }

    /// Its replacement policy and prefetcher.
    fn pair(self) -> run::Pair {
        let readahead = readahead::Options::LINUX;
        match self {
            Arm::Clock => run::Pair::new(clock::Options, readahead),
            Arm::Dulo { bank_kb, evict_kb } => {
                let (bank, evict) = (bank_kb << 10, evict_kb << 10);
                run::Pair::new(dulo::Options { bank, evict }, readahead)
            }
        }
    }
}

fn dulo_arm(bank_kb: u64, evict_kb: u64) -> Arm {
    Arm::Dulo { bank_kb, evict_kb }
}

/// KiB at our scale of `mb` MB at the paper's.
fn scaled_kb(mb: u64) -> u64 {
    mb * 1024 / SCALE
}

/// The paper's DULO parameters for a cache of `blocks` 4 KiB blocks, scaled: 8 MB / 64 MB, or
/// 4 MB / 16 MB below 80 MB of memory.
fn default_dulo(blocks: usize) -> Arm {
    if (blocks as u64) * 4 < scaled_kb(80) {
        dulo_arm(scaled_kb(4), scaled_kb(16))
    } else {
        dulo_arm(scaled_kb(8), scaled_kb(64))
    }
}

/// Runs the whole reproduction.
pub fn run(setup: &Setup) -> Result<Report, SimError> {
    let workloads = workloads(&setup.traces)?;
    let mut rows = Vec::new();
    let mut report = Report::default();
    let mut time_table = String::from(
        "| workload | cache (blocks) | cache (MiB) | CLOCK time (s) | DULO time (s) | DULO vs CLOCK | CLOCK hit ratio | DULO hit ratio | CLOCK mean request (blocks) | DULO mean request (blocks) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut cdf_table = String::from(
        "| workload | cache (blocks) | policy | blocks in requests of <= 1 | <= 2 | <= 4 | <= 8 | <= 16 | <= 32 | <= 64 |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for w in &workloads {
        let caches = cache_sizes(w);
        let mut pairs = Vec::new();
        for &cache in &caches {
            let clock = run_one(setup, w, Arm::Clock, cache)?;
            let dulo = run_one(setup, w, default_dulo(cache), cache)?;
            write_time_row(&mut time_table, w, cache, &clock, &dulo);
            pairs.push((cache, clock, dulo));
        }
        let (best, worst) = extreme_gaps(&pairs);
        for &(cache, ref clock, ref dulo) in [best, worst].iter().copied() {
            write_cdf_row(&mut cdf_table, &w.name, cache, "CLOCK", clock);
            write_cdf_row(&mut cdf_table, &w.name, cache, "DULO", dulo);
        }
        let name = format!("dulo-{}.svg", w.name);
        let figure = panels(&w.name, &setup.disk, &pairs, best);
        report.outputs.push(Output::figure(name, figure));
        for (cache, clock, dulo) in pairs {
            rows.push(row(w, cache, "clock", clock));
            rows.push(row(w, cache, &default_dulo(cache).label(), dulo));
        }
    }
    let (bank_table, evict_table) = sensitivity(setup, &workloads, &mut rows)?;
    let buffer_table = small_cache_check(setup, &workloads, &mut rows)?;
    let paper_tables = format!(
        "### Table 3: bank size (execution time in s, evicting section 64 MB / {SCALE}; memory = the paper's / {SCALE})\n\n{bank_table}\n### Table 4: evicting-section size (execution time in s, bank 8 MB / {SCALE}; - where bank + section exceed the memory)\n\n{evict_table}\n### Small caches: the correlation buffer (execution time in s, hit ratio)\n\n{buffer_table}"
    );
    let summary = format!(
        "DULO vs CLOCK (simulated, model {disk}, scheduler {sched}, Linux read-ahead 16->32 blocks; DULO bank / evicting section = the paper's 8 MB / 64 MB divided by {SCALE}, 4 MB / 16 MB below 80 MB / {SCALE} of cache)\n\n### Execution time\n\n{time_table}\n### Disk request size CDF (fraction of fetched blocks in requests of at most N blocks; caches with the largest and smallest DULO gain)\n\n{cdf_table}\n{paper_tables}",
        disk = setup.disk,
        sched = setup.scheduler,
    );
    report
        .outputs
        .push(Output::text("dulo.md", summary.clone()));
    report.outputs.push(Output::json("dulo.json", &rows)?);
    report.section = section(setup, &rows, &paper_tables);
    report.summary = summary;
    Ok(report)
}

fn run_one(setup: &Setup, w: &Named, arm: Arm, cache: usize) -> Result<Metrics, SimError> {
    let disk = disk_named(&setup.disk)?;
    let config = EngineConfig::with_cache(cache);
    run_pair(&arm.pair(), &w.workload, (&disk, &setup.scheduler), config)
}

fn row(w: &Named, cache: usize, policy: &str, metrics: Metrics) -> Row {
    Row {
        workload: w.name.clone(),
        cache_blocks: cache,
        policy: policy.to_string(),
        metrics,
    }
}

/// Relative change of DULO's time against CLOCK's (negative: DULO faster).
fn change(clock: &Metrics, dulo: &Metrics) -> f64 {
    let c = seconds(clock.elapsed);
    if c == 0.0 {
        0.0
    } else {
        seconds(dulo.elapsed) / c - 1.0
    }
}

type Pair = (usize, Metrics, Metrics);

/// The cache sizes where DULO gains most and least.
fn extreme_gaps(pairs: &[Pair]) -> (&Pair, &Pair) {
    let by_change = |a: &&Pair, b: &&Pair| change(&a.1, &a.2).total_cmp(&change(&b.1, &b.2));
    let best = pairs.iter().min_by(by_change).unwrap_or(&pairs[0]);
    let worst = pairs.iter().max_by(by_change).unwrap_or(&pairs[0]);
    (best, worst)
}

fn write_time_row(out: &mut String, w: &Named, cache: usize, clock: &Metrics, dulo: &Metrics) {
    let _ = writeln!(
        out,
        "| {} | {cache} | {:.1} | {:.3} | {:.3} | {:+.1}% | {:.3} | {:.3} | {:.2} | {:.2} |",
        w.name,
        mib(cache as u64, 4096),
        seconds(clock.elapsed),
        seconds(dulo.elapsed),
        change(clock, dulo) * 100.0,
        clock.found_ratio(),
        dulo.found_ratio(),
        clock.disk.avg_request_blocks(),
        dulo.disk.avg_request_blocks(),
    );
}

fn write_cdf_row(out: &mut String, name: &str, cache: usize, policy: &str, m: &Metrics) {
    let _ = write!(out, "| {name} | {cache} | {policy} |");
    for size in CDF_SIZES {
        let _ = write!(out, " {:.3} |", m.disk.blocks_in_requests_below(size + 1));
    }
    out.push('\n');
}

fn panels(name: &str, disk: &str, pairs: &[Pair], best: &Pair) -> Vec<Panel> {
    let line = |label: &str, f: &dyn Fn(&Pair) -> (f64, f64)| Series {
        name: label.to_string(),
        points: pairs.iter().map(f).collect(),
    };
    let cdf = |label: &str, m: &Metrics| Series {
        name: label.to_string(),
        points: m
            .disk
            .size_cdf_by_blocks()
            .into_iter()
            .map(|(size, fraction)| (size as f64, fraction))
            .collect(),
    };
    let x = |p: &Pair| mib(p.0 as u64, 4096);
    vec![
        Panel {
            title: format!("{name}: execution time (simulated, {disk})"),
            x_label: "cache (MiB)".into(),
            y_label: "time (s)".into(),
            series: vec![
                line("CLOCK", &|p| (x(p), seconds(p.1.elapsed))),
                line("DULO", &|p| (x(p), seconds(p.2.elapsed))),
            ],
        },
        Panel {
            title: format!("{name}: hit ratio"),
            x_label: "cache (MiB)".into(),
            y_label: "hit ratio".into(),
            series: vec![
                line("CLOCK", &|p| (x(p), p.1.found_ratio())),
                line("DULO", &|p| (x(p), p.2.found_ratio())),
            ],
        },
        Panel {
            title: format!("{name}: request size CDF at {:.1} MiB", x(best)),
            x_label: "request size (blocks)".into(),
            y_label: "fraction of blocks".into(),
            series: vec![cdf("CLOCK", &best.1), cdf("DULO", &best.2)],
        },
    ]
}

/// Tables 3 and 4 on the mixed traces and the random one, at the paper's memory sizes.
fn sensitivity(
    setup: &Setup,
    workloads: &[Named],
    rows: &mut Vec<Row>,
) -> Result<(String, String), SimError> {
    let chosen: Vec<(&Named, usize)> = SENSITIVITY_MEMORY_MB
        .iter()
        .filter_map(|&(name, mb)| {
            let blocks = (scaled_kb(mb) / 4) as usize;
            workloads
                .iter()
                .find(|w| w.name == name)
                .map(|w| (w, blocks))
        })
        .collect();
    let header = |first: &str| {
        let mut h = format!("| {first} (paper MB) | ours (KB) |");
        for (w, cache) in &chosen {
            let _ = write!(h, " {} ({cache} blocks) |", w.name);
        }
        h.push_str("\n|---:|---:|");
        h.push_str(&"---:|".repeat(chosen.len()));
        h.push('\n');
        h
    };
    let mut bank_table = header("bank");
    for mb in BANK_MB {
        let _ = write!(bank_table, "| {mb} | {} |", scaled_kb(mb));
        for &(w, cache) in &chosen {
            let cell = sensitivity_cell(setup, w, cache, scaled_kb(mb), scaled_kb(64), rows)?;
            let _ = write!(bank_table, " {cell} |");
        }
        bank_table.push('\n');
    }
    let mut evict_table = header("evicting");
    for mb in EVICT_MB {
        let _ = write!(evict_table, "| {mb} | {} |", scaled_kb(mb));
        for &(w, cache) in &chosen {
            let cell = sensitivity_cell(setup, w, cache, scaled_kb(8), scaled_kb(mb), rows)?;
            let _ = write!(evict_table, " {cell} |");
        }
        evict_table.push('\n');
    }
    Ok((bank_table, evict_table))
}

/// DULO with a larger correlation buffer: bank and evicting section of [`SMALL_BANK_KB`] and
/// [`SMALL_EVICT_KB`], against CLOCK and the paper's rule, at each mixed trace's smallest cache.
fn small_cache_check(
    setup: &Setup,
    workloads: &[Named],
    rows: &mut Vec<Row>,
) -> Result<String, SimError> {
    let mut table = format!(
        "| workload | cache (blocks) | CLOCK | DULO, paper's rule | DULO, bank {SMALL_BANK_KB} KB + evicting {SMALL_EVICT_KB} KB |\n|---|---:|---:|---:|---:|\n"
    );
    for w in workloads
        .iter()
        .filter(|w| MIXED.contains(&w.name.as_str()))
    {
        let cache = smallest_cache(w);
        let _ = write!(table, "| {} | {cache} |", w.name);
        let small = dulo_arm(SMALL_BANK_KB, SMALL_EVICT_KB);
        for arm in [Arm::Clock, default_dulo(cache), small] {
            let m = run_one(setup, w, arm, cache)?;
            let _ = write!(
                table,
                " {:.3} s, {:.3} |",
                seconds(m.elapsed),
                m.found_ratio()
            );
            if arm == small {
                rows.push(row(w, cache, &arm.label(), m));
            }
        }
        table.push('\n');
    }
    Ok(table)
}

/// The smallest cache of the main sweep for `w`.
fn smallest_cache(w: &Named) -> usize {
    cache_sizes(w)[0]
}

/// The cache sizes of the main sweep for `w`.
fn cache_sizes(w: &Named) -> Vec<usize> {
    FRACTIONS
        .iter()
        .map(|f| ((w.distinct as f64 * f).round() as usize).max(64))
        .collect()
}

/// Execution time of DULO with the given sizes, or `-` when they exceed the memory.
fn sensitivity_cell(
    setup: &Setup,
    w: &Named,
    cache: usize,
    bank_kb: u64,
    evict_kb: u64,
    rows: &mut Vec<Row>,
) -> Result<String, SimError> {
    if (bank_kb + evict_kb) / 4 > cache as u64 {
        return Ok("-".into());
    }
    let arm = dulo_arm(bank_kb, evict_kb);
    let m = run_one(setup, w, arm, cache)?;
    let cell = format!("{:.3}", seconds(m.elapsed));
    rows.push(row(w, cache, &arm.label(), m));
    Ok(cell)
}

/// The `docs/repro.md` section: the paper's findings point by point, then ours, and the
/// paper's Tables 3 and 4 (`tables`); the execution times and request sizes of every run are in
/// the output's `dulo.md`.
fn section(setup: &Setup, rows: &[Row], tables: &str) -> String {
    let gains = |name: &str| -> (f64, f64) {
        let reductions: Vec<f64> = rows
            .iter()
            .filter(|r| r.workload == name && r.policy == "clock")
            .filter_map(|c| {
                rows.iter()
                    .find(|d| {
                        d.workload == name
                            && d.cache_blocks == c.cache_blocks
                            && d.policy == default_dulo(c.cache_blocks).label()
                    })
                    .map(|d| -change(&c.metrics, &d.metrics) * 100.0)
            })
            .collect();
        let best = reductions.iter().copied().fold(f64::MIN, f64::max);
        let least = reductions.iter().copied().fold(f64::MAX, f64::min);
        (best, least)
    };
    let mut points = String::new();
    for name in MIXED
        .iter()
        .copied()
        .chain(["almost-all-random", "almost-all-sequential"])
    {
        let (best, least) = gains(name);
        let _ = writeln!(points, "| {name} | {best:.1}% | {least:.1}% |");
    }
    format!(
        "Simulated, model {disk} (scheduler {sched}). Re-run with `cargo run --release -p cli -- repro dulo` \
(tables, JSON and SVGs in `target/repro/dulo/`; `--traces DIR` to read the traces elsewhere). \
DULO and CLOCK both use Linux-style read-ahead (16 -> 32 blocks). The traces have no timing, \
so they run as one stream with no think time and the execution time is the time spent waiting for \
the disk. The paper's bank and evicting \
sizes (8 MB / 64 MB, and 4 MB / 16 MB below 80 MB of memory) are divided by {SCALE}, the ratio of \
the paper's trace footprints to ours (gli 10 MB against glimpse's 669 MB); \
the synthetic almost-all-random and almost-all-sequential workloads stand in for tpc-h and viewperf.\n\n\
Worked example (DULO Table 1), exact: traditional (strict LRU) 95.0 ms with 10 fetches, DULO \
66.5 ms with 7, cache contents equal to the table row by row (test `crates/sim/tests/disksim_table1.rs`). \
CLOCK, which the paper evaluates as \"LRU\", also pays 95.0 ms but ends with Y1-Y4 cached instead of \
X1-X4, because a hit does not move a block. DULO with only size-1 sequences behaves exactly as \
CLOCK (property tests in `plan::evict::dulo` \
and, with read-ahead, `disksim_dulo_clock.rs`); the replacement is `plan::evict::dulo`, which \
the live page-cache budget also runs (`docs/cache-budget.md`).\n\n\
| workload | DULO's largest time reduction over the cache sizes | smallest (negative: DULO slower) |\n|---|---:|---:|\n{points}\n\
Paper vs ours, point by point:\n\n{commentary}\n\nThe execution time and request sizes of every run are in `dulo.md` of the output.\n\n{tables}",
        disk = setup.disk,
        sched = setup.scheduler,
        commentary = COMMENTARY,
    )
}

/// Our reading of the results against the paper's claims, checked against the run recorded in
/// `docs/repro.md` (the numbers in the tables are regenerated on every run).
const COMMENTARY: &str = "\
- Mixed workloads. Paper: DULO cuts execution time on glimpse, multi1 and multi2, by up to 55% \
(multi1 at 160 MB), by making disk requests longer. Ours: DULO is faster on multi1 (up to about \
11%) and multi2 (up to about 10%) at most cache sizes (multi2 at its largest cache, 3,979 \
blocks, is the exception: 12% slower), but the gains are smaller and come mostly from a higher \
hit ratio (up to 3 points): the mean request size barely moves (multi2 1.6-1.8 blocks either \
way, multi1 2.6-3.6 either way), where the paper credits longer sequences. On gli it is neutral \
to slightly slower (-2% to +6.5%). We disagree with the paper on gli and on the size of the \
gains, for reasons we can name: our traces are not the paper's (our multi1 is cscope+cpp, \
theirs cscope+gcc+viewperf; our multi2 is cscope+cpp+postgres, theirs glimpse+tpc-h) and are 64 \
times smaller; gli is short (6,016 references to 2,530 blocks), so once the cache holds a tenth \
of it read-ahead gives CLOCK a hit ratio above 0.92 and what remains is mostly cold misses that \
no replacement policy can avoid; and at the smallest cache (126 blocks) DULO leaves more \
read-ahead blocks unused (4,715 against 3,966 in the recorded run) and misses more (hit ratio \
0.42 against 0.54): read-ahead windows (16 + 32 blocks) no longer fit in the 46-block \
correlation buffer, so prefetched blocks reach the bank before they are used, form long \
sequences and leave first. With a larger buffer DULO wins on gli at that size too (table \
\"Small caches\": bank 32 KB + evicting section 64 KB leave a 102-block buffer at 126 blocks), \
but the same sizes give back part of DULO's gain on multi1 and multi2: no single small-memory \
setting is best for all three.\n\
- Almost-all-random (paper: tpc-h). Paper: almost no change. Ours: the same within 0.1% at every \
cache size, and identical request-size CDFs: with nothing sequential to sink, DULO is CLOCK.\n\
- Almost-all-sequential (paper: viewperf). Paper: 4.4% faster (up to 8%), little room. Ours: 0.7% to \
2.5% faster; DULO's requests are longer (about 24 blocks against 9-23) and its hit ratio higher.\n\
- Bank size (Table 3). Paper: an optimum between 4 and 16 MB. Ours: multi1 keeps improving up to \
the largest bank (32 MB equivalent); multi2 has no clear trend (within about 7%); gli and the random \
workload do not move (at 640 MB equivalent, gli fits in memory: only cold misses remain).\n\
- Evicting-section size (Table 4). Paper: larger is better, saturating beyond 64-128 MB. Ours: \
the same trend on multi2 (10.1 s at 64 MB equivalent, 6.3-6.5 s at 256-320 MB) and multi1 (4.5 \
s to 4.1 s), flat on gli and the random workload.";
