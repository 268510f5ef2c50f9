//! libprefetch (ATC'09) s3.2-3.3, Figures 2 and 3: runtime and average seek distance of
//! uniform random reads against the reorder buffer size, and runtime against the infill limit,
//! with the reorder-buffer policy (crate `plan`'s window, C-LOOK and infill code).
//!
//! Settings: disk `st3500320as` (the paper's Disk 2 class, Seagate 500 GB 7200 RPM), FIFO queue
//! (the policy orders the requests itself), a 256 MB file (65,536 pages of 4 KiB) at the start
//! of the disk, 65,536 reads of uniformly random pages (256 MB in all), one stream, no think
//! time. Each buffer's pages are dropped when the next buffer starts (the live library's
//! DONTNEED), so little is reused across buffers, as with the paper's Direct I/O.
//!
//! Deviations: pages repeated inside one buffer are read once (the paper's Direct I/O reads
//! them again); the disk is a model, so Figure 1's geometry oscillations are smoothed.

use std::fmt::Write as _;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use plan::Schedule;

use super::{Output, Report};
use crate::disksim::engine::EngineConfig;
use crate::disksim::prefetch::planner;
use crate::disksim::prefetch::reorder::{self, Sweep};
use crate::disksim::replace::clock;
use crate::disksim::run::{disk_named, run_pair, Pair};
use crate::disksim::workload::{Layout, Step, Workload};
use crate::metrics::{seconds, Metrics};
use crate::report::{Panel, Series};
use crate::SimError;

/// File size and number of reads, in 4 KiB pages.
pub const PAGES: u64 = 65_536;
/// Figure 2's reorder buffer sizes (KiB).
pub const BUFFERS_KB: [u64; 12] = [
    4, 16, 64, 128, 384, 1024, 4096, 16_384, 18_432, 65_536, 131_072, 262_144,
];
/// Figure 3's infill limits (KiB).
pub const INFILL_KB: [u64; 13] = [0, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 16_384];
/// Figure 3's reorder buffer sizes (KiB).
pub const INFILL_BUFFERS_KB: [u64; 4] = [384, 16_384, 65_536, 262_144];

/// Where and how to run.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Disk model name.
    pub disk: String,
}

impl Default for Setup {
    /// The defaults above.
    fn default() -> Setup {
        Setup {
            disk: "st3500320as".into(),
        }
    }
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Reorder buffer in KiB.
    pub buffer_kb: u64,
    /// Infill limit in KiB.
    pub infill_kb: u64,
    /// `buffer` (each buffer by increasing position), `continuous` (C-LOOK across buffers) or
    /// `planner` (the live library's `plan::Planner` with its `window` schedule: C-LOOK from the next
    /// page needed).
    pub sweep: String,
    /// What was measured.
    pub metrics: Metrics,
}

/// 2N(K-1)/K(K+1) pages (s3.5), for K >= 2.
pub fn formula_pages(n: u64, k: u64) -> Option<f64> {
    (k >= 2).then(|| {
        let (n, k) = (n as f64, k as f64);
        2.0 * n * (k - 1.0) / (k * (k + 1.0))
    })
}

/// Uniform random reads of a `PAGES`-page file.
pub fn random_reads(seed: u64) -> Workload {
    let mut rng = SmallRng::seed_from_u64(seed);
    Workload {
        layout: Layout::contiguous(&[PAGES], 0, 4096),
        streams: vec![(0..PAGES)
            .map(|_| Step::at(0, rng.gen_range(0..PAGES)))
            .collect()],
    }
}

fn run_one(
    setup: &Setup,
    workload: &Workload,
    buffer_kb: u64,
    infill_kb: u64,
    sweep: &str,
) -> Result<Row, SimError> {
    let (buffer, infill) = (buffer_kb << 10, infill_kb << 10);
    let pair = match sweep {
        "planner" => {
            let planner = planner::Options {
                buffer: Some(buffer),
                infill: Some(infill),
                schedule: Schedule::Window,
                batch: 0,
                reserve: None,
            };
            Pair::new(clock::Options, planner)
        }
        _ => {
            let sweep = match sweep {
                "continuous" => Sweep::Continuous,
                _ => Sweep::Buffer,
            };
            let buffer = Some(buffer);
            Pair::new(
                clock::Options,
                reorder::Options {
                    buffer,
                    infill,
                    sweep,
                },
            )
        }
    };
    let cache = 2 * PAGES as usize + 16;
    let disk = disk_named(&setup.disk)?;
    let config = EngineConfig::with_cache(cache);
    let metrics = run_pair(&pair, workload, (&disk, "fifo"), config)?;
    Ok(Row {
        buffer_kb,
        infill_kb,
        sweep: sweep.into(),
        metrics,
    })
}

/// Runs Figures 2 and 3.
pub fn run(setup: &Setup) -> Result<Report, SimError> {
    let workload = random_reads(2009);
    let mut rows = Vec::new();
    let mut fig2 = String::from(
        "| buffer (KiB) | runtime (s) | avg seek (KiB) | formula 2N(K-1)/K(K+1) (KiB) | requests | runtime, C-LOOK across buffers (s) | avg seek, across (KiB) | runtime, live planner (s) | avg seek, live planner (KiB) |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut fig2_points = Vec::new();
    for kb in BUFFERS_KB {
        let per_buffer = run_one(setup, &workload, kb, 0, "buffer")?;
        let across = run_one(setup, &workload, kb, 0, "continuous")?;
        let live = run_one(setup, &workload, kb, 0, "planner")?;
        let formula = formula_pages(PAGES, kb / 4)
            .map_or_else(|| "-".to_string(), |p| format!("{:.1}", p * 4.0));
        let m = &per_buffer.metrics;
        let _ = writeln!(
            fig2,
            "| {kb} | {:.2} | {:.1} | {formula} | {} | {:.2} | {:.1} | {:.2} | {:.1} |",
            seconds(m.elapsed),
            m.disk.avg_seek_bytes() / 1024.0,
            m.disk.requests,
            seconds(across.metrics.elapsed),
            across.metrics.disk.avg_seek_bytes() / 1024.0,
            seconds(live.metrics.elapsed),
            live.metrics.disk.avg_seek_bytes() / 1024.0,
        );
        fig2_points.push((kb, seconds(m.elapsed), m.disk.avg_seek_bytes() / 1024.0));
        rows.push(per_buffer);
        rows.push(across);
        rows.push(live);
    }
    let mut fig3 = String::from("| infill (KiB) |");
    for kb in INFILL_BUFFERS_KB {
        let _ = write!(fig3, " runtime, {kb} KiB buffer (s) | MiB read |");
    }
    fig3.push_str("\n|---:|");
    fig3.push_str(&"---:|---:|".repeat(INFILL_BUFFERS_KB.len()));
    fig3.push('\n');
    let mut fig3_series: Vec<Series> = INFILL_BUFFERS_KB
        .iter()
        .map(|kb| Series {
            name: format!("{kb} KiB buffer"),
            points: Vec::new(),
        })
        .collect();
    for infill in INFILL_KB {
        let _ = write!(fig3, "| {infill} |");
        for (i, kb) in INFILL_BUFFERS_KB.iter().enumerate() {
            let row = run_one(setup, &workload, *kb, infill, "buffer")?;
            let m = &row.metrics;
            let _ = write!(
                fig3,
                " {:.2} | {:.0} |",
                seconds(m.elapsed),
                (m.disk.blocks_fetched * 4096) as f64 / f64::from(1 << 20)
            );
            fig3_series[i]
                .points
                .push((((infill + 1) as f64).log2(), seconds(m.elapsed)));
            rows.push(row);
        }
        fig3.push('\n');
    }
    let mut report = Report::default();
    let figure2 = figure2_panels(&setup.disk, &fig2_points);
    let figure3 = vec![Panel {
        title: format!("Figure 3: infill (simulated, {})", setup.disk),
        x_label: "log2(1 + infill KiB)".into(),
        y_label: "runtime (s)".into(),
        series: fig3_series,
    }];
    let summary = format!(
        "libprefetch reorder buffer and infill (simulated, model {disk}; 65,536 uniform random 4 KiB reads of a 256 MB file)\n\n### Figure 2: reorder buffer size\n\n{fig2}\n### Figure 3: infill\n\n{fig3}",
        disk = setup.disk
    );
    report.outputs = vec![
        Output::figure("libprefetch-figure2.svg", figure2),
        Output::figure("libprefetch-figure3.svg", figure3),
        Output::text("libprefetch.md", summary.clone()),
        Output::json("libprefetch.json", &rows)?,
    ];
    report.section = section(setup, &rows, &summary);
    report.summary = summary;
    Ok(report)
}

fn figure2_panels(disk: &str, points: &[(u64, f64, f64)]) -> Vec<Panel> {
    let x = |kb: u64| (kb as f64).log2();
    vec![
        Panel {
            title: format!("Figure 2: runtime (simulated, {disk})"),
            x_label: "log2(reorder buffer KiB)".into(),
            y_label: "runtime (s)".into(),
            series: vec![Series {
                name: "runtime".into(),
                points: points.iter().map(|&(kb, t, _)| (x(kb), t)).collect(),
            }],
        },
        Panel {
            title: format!("Figure 2: average seek distance (simulated, {disk})"),
            x_label: "log2(reorder buffer KiB)".into(),
            y_label: "log10(avg seek KiB)".into(),
            series: vec![
                Series {
                    name: "measured".into(),
                    points: points
                        .iter()
                        .map(|&(kb, _, s)| (x(kb), s.max(1e-3).log10()))
                        .collect(),
                },
                Series {
                    name: "2N(K-1)/K(K+1)".into(),
                    points: points
                        .iter()
                        .filter_map(|&(kb, _, _)| {
                            formula_pages(PAGES, kb / 4).map(|p| (x(kb), (p * 4.0).log10()))
                        })
                        .collect(),
                },
            ],
        },
    ]
}

fn find<'a>(rows: &'a [Row], buffer_kb: u64, infill_kb: u64, sweep: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.buffer_kb == buffer_kb && r.infill_kb == infill_kb && r.sweep == sweep)
}

/// The `docs/repro.md` section: the paper's findings point by point, then ours.
fn section(setup: &Setup, rows: &[Row], tables: &str) -> String {
    let secs = |b: u64, i: u64| {
        find(rows, b, i, "buffer").map_or(f64::NAN, |r| seconds(r.metrics.elapsed))
    };
    let seek_kb = |b: u64| {
        find(rows, b, 0, "buffer").map_or(f64::NAN, |r| r.metrics.disk.avg_seek_bytes() / 1024.0)
    };
    let planner_seek = find(rows, 18_432, 0, "planner")
        .map_or(f64::NAN, |r| r.metrics.disk.avg_seek_bytes() / 1024.0);
    let best_infill = |b: u64| {
        INFILL_KB
            .iter()
            .copied()
            .min_by(|&x, &y| secs(b, x).total_cmp(&secs(b, y)))
            .unwrap_or(0)
    };
    format!(
        "Simulated, model {disk}. Re-run with `cargo run --release -p cli -- repro libprefetch` \
(tables, JSON and SVGs in `target/repro/libprefetch/`). 65,536 uniform random 4 KiB reads of a \
256 MB file, one reorder buffer at a time, each buffer fetched by increasing disk position with \
crate `plan`'s window, infill and C-LOOK code (the live library's).\n\n\
| point | paper (Disk 2, measured) | ours (simulated) |\n|---|---|---|\n\
| avg seek distance, 384 KB buffer | 5.2 MB | {s384:.0} KiB |\n\
| avg seek distance, 18 MB buffer | 112 KB | {s18:.0} KiB |\n\
| runtime, 18 MB buffer | 37.6 s | {t18:.1} s |\n\
| runtime, 256 MB buffer | 8.4 s (4.7x faster than 18 MB) | {t256:.1} s ({x:.1}x faster) |\n\
| runtime, 4 KB buffer (no reordering) | not given | {t4:.1} s |\n\
| best infill, 384 KiB buffer (avg seek ~5 MB) | - | {b384} KiB: {i0:.2} s -> {ib:.2} s |\n\
| infill, 16 MB buffer (avg seek ~128 KB) | very little effect | {f0:.2} s at 0, {f32:.2} s at 32 KiB, {fb:.2} s at best ({b16} KiB) |\n\
| infill, 64 MiB buffer (avg seek ~32 KiB) | - | {g0:.2} s at 0, {g32:.2} s at 32 KiB, {gb:.2} s at best ({b64} KiB) |\n\
| best infill overall (Disk 2) | 32 KB; 32 KB - 2 MB no further effect | see rows above |\n\
| infill beyond 2 MB | hurts | {h2:.2} s at 2 MiB and {h16:.2} s at 16 MiB (384 KiB buffer, against {i0:.2} s) |\n\n\
Paper vs ours, point by point:\n\n\
- Seek distance against buffer size: ours follows the formula 2N(K-1)/K(K+1) (tested within 5%: \
`crates/sim/tests/disksim_reorder.rs`), and so do the paper's two quoted distances (the formula gives \
5.2 MB and 114 KB). Above 16 MB our distances sit 10-40% over the formula: repeated and adjacent pages \
of a large buffer are fetched once or merged, so there are fewer, longer seeks (Direct I/O would \
re-read them).\n\
- Runtime against buffer size: ours falls steeply between 384 KB and 18 MB as in the paper, and our \
18 MB runtime is close to the paper's; beyond it we fall faster (to {t256:.1} s at 256 MB, the paper \
8.4 s) because our 256 MB buffer reads the 41,000 distinct pages in one pass and the model's on-disk \
read-ahead absorbs short forward skips.\n\
- Infill: as in the paper, infill does nothing where seeks are long (384 KB buffer), has very \
little effect at 16 MB, and hurts once it exceeds about 1-2 MB. We disagree on the size that helps: \
32 KiB changes nothing on the `st3500320as` model, whose profile (`prefetch disk profile --model \
st3500320as`) charges a forward skip of up to 32 KiB the same 0.36 ms as reading the gap (the \
drive's read-ahead serves it) and a skip of 64-512 KiB about what reading it costs; the gain we see \
appears at 128-512 KiB of infill on the 64 MiB buffer (seeks of ~32 KiB on average), from fewer, \
longer requests. We have not isolated that mechanism further. The paper's Disk 2 evidently charged \
short seeks more than reading (its Disk 1 showed no infill effect at all).\n\
- C-LOOK across buffers (`sweep=continuous`) is slightly shorter than restarting each buffer at its \
lowest page, which the paper's benchmark and formula do. The live library's planner (last two \
columns of the Figure 2 table: `plan::Planner` whole, `window` schedule, AIMD capped at the buffer size) starts each \
round at the page the application needs next, to shorten its first wait; that costs about one \
random seek (N/3) per buffer, {live:+.0}% of seek distance at 18 MB ({lt:.1} s against {t18:.1} s): a \
trade the paper does not measure (tested: `the_live_planner_pays_one_random_seek_per_round`).\n\n\
<details><summary>All tables</summary>\n\n{tables}\n</details>\n",
        disk = setup.disk,
        s384 = seek_kb(384),
        s18 = seek_kb(18_432),
        t18 = secs(18_432, 0),
        t256 = secs(262_144, 0),
        x = secs(18_432, 0) / secs(262_144, 0),
        t4 = secs(4, 0),
        b384 = best_infill(384),
        i0 = secs(384, 0),
        ib = secs(384, best_infill(384)),
        f0 = secs(16_384, 0),
        f32 = secs(16_384, 32),
        fb = secs(16_384, best_infill(16_384)),
        b16 = best_infill(16_384),
        g0 = secs(65_536, 0),
        g32 = secs(65_536, 32),
        gb = secs(65_536, best_infill(65_536)),
        b64 = best_infill(65_536),
        h2 = secs(384, 2048),
        h16 = secs(384, 16_384),
        live = (planner_seek / seek_kb(18_432) - 1.0) * 100.0,
        lt = find(rows, 18_432, 0, "planner").map_or(f64::NAN, |r| seconds(r.metrics.elapsed)),
    )
}
