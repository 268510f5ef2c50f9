//! Output of sweeps: Markdown tables and SVG line charts in the style of Cao et al. Figure 3
//! (normalised elapsed time and number of fetches against the fetch time F), and the policy
//! list of `prefetch sim --list`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::runner::Row;
use crate::sweep::Run;
use crate::SimError;

/// A Markdown table of sweep rows, one per line, saying the numbers are simulated.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| policy | cache | F | elapsed | stall | fetches | demand | prefetch | unused | hits | misses | elapsed / (min fetches x F) |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let m = &r.metrics;
        let normalized = r
            .normalized_elapsed
            .map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.policy,
            r.capacity,
            r.fetch_time,
            m.elapsed,
            m.stall,
            m.fetches(),
            m.demand_fetches,
            m.prefetches,
            m.unused_prefetches,
            m.hits,
            m.misses,
            normalized
        );
    }
    out
}

/// One line of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in x order.
    pub points: Vec<(f64, f64)>,
}

/// One chart of a figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    /// Title above the chart.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
}

/// Draws `panels` side by side into an SVG file at `path`.
pub fn draw(path: &Path, panels: &[Panel]) -> Result<(), SimError> {
    let failed = |e: &dyn std::fmt::Display| SimError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let width = 560 * panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (width, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    for (area, panel) in root
        .split_evenly((1, panels.len().max(1)))
        .iter()
        .zip(panels)
    {
        draw_panel(area, panel).map_err(|e| failed(&e))?;
    }
    root.present().map_err(|e| failed(&e))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_panel(area: &Area<'_>, panel: &Panel) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let points = panel.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0f64);
    for &(x, y) in points {
        (x0, x1, y1) = (x0.min(x), x1.max(x), y1.max(y));
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x0 == x1 {
        x1 = x0 + 1.0;
    }
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x0..x1, 0f64..(y1 * 1.08).max(1e-9))?;
    chart
        .configure_mesh()
        .x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .draw()?;
    for (i, series) in panel.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                series.points.iter().copied(),
                color.stroke_width(2),
            ))?
            .label(series.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
}

/// A figure of a sweep: normalised elapsed time (or elapsed time when not normalised) and
/// fetches, against F when several fetch times were run, else against the cache size. With
/// both varying, one line per policy and cache size.
pub fn sweep_panels(rows: &[Row]) -> Vec<Panel> {
    let fetches: BTreeSet<_> = rows.iter().map(|r| r.fetch_time).collect();
    let caches: BTreeSet<_> = rows.iter().map(|r| r.capacity).collect();
    let by_fetch = fetches.len() > 1 || caches.len() == 1;
    let normalized = rows.iter().all(|r| r.normalized_elapsed.is_some());
    let x = |r: &Row| {
        if by_fetch {
            r.fetch_time as f64
        } else {
            r.capacity as f64
        }
    };
    let name = |r: &Row| match by_fetch && caches.len() > 1 {
        true => format!("{} k={}", r.policy, r.capacity),
        false => r.policy.to_string(),
    };
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        if !names.contains(&name(r)) {
            names.push(name(r));
        }
    }
    let series = |value: &dyn Fn(&Row) -> f64| -> Vec<Series> {
        names
            .iter()
            .map(|n| Series {
                name: n.clone(),
                points: rows
                    .iter()
                    .filter(|r| name(r) == *n)
                    .map(|r| (x(r), value(r)))
                    .collect(),
            })
            .collect()
    };
    let x_label = if by_fetch {
        "fetch time F (references)"
    } else {
        "cache size (blocks)"
    };
    let trace = rows.first().map_or("", |r| r.trace.as_str());
    vec![
        Panel {
            title: format!("{trace}: elapsed time (simulated)"),
            x_label: x_label.into(),
            y_label: if normalized {
                "elapsed / (min fetches x F)"
            } else {
                "elapsed time"
            }
            .into(),
            series: series(&|r| r.normalized_elapsed.unwrap_or(r.metrics.elapsed as f64)),
        },
        Panel {
            title: format!("{trace}: fetches (simulated)"),
            x_label: x_label.into(),
            y_label: "fetches".into(),
            series: series(&|r| r.metrics.fetches() as f64),
        },
    ]
}

/// A Markdown table of the runs of a [`crate::sweep::Plan`], one per line.
pub fn runs_table(runs: &[Run]) -> String {
    let mut out = String::from(
        "| trace | policy | device | cache | elapsed | stall | time unit | fetches | demand | prefetch | unused | hits | misses | miss ratio | elapsed / (min fetches x F) |\n\
         |---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in runs {
        let m = &r.metrics;
        let normalized = r
            .normalized_elapsed
            .map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.4} | {} |",
            r.trace,
            r.policy,
            r.device,
            r.capacity,
            m.elapsed,
            m.stall,
            r.time_unit,
            m.fetches(),
            m.demand_fetches,
            m.prefetches,
            m.unused_prefetches,
            m.hits,
            m.misses,
            m.miss_ratio(),
            normalized
        );
    }
    out
}

/// A figure of a sweep of runs: elapsed time (normalised when every run is) and miss ratio,
/// against F when only `unit:F` devices vary, else against the cache size; one line per
/// policy, and per device, trace or cache size when those vary too.
pub fn run_panels(runs: &[Run]) -> Vec<Panel> {
    let distinct = |key: &dyn Fn(&Run) -> String| -> usize {
        runs.iter().map(key).collect::<BTreeSet<_>>().len()
    };
    let fetch = |r: &Run| {
        r.device
            .strip_prefix("unit:")
            .and_then(|f| f.parse::<f64>().ok())
    };
    let caches = distinct(&|r| r.capacity.to_string());
    let devices = distinct(&|r| r.device.clone());
    let traces = distinct(&|r| r.trace.clone());
    let by_fetch = devices > 1 && caches == 1 && runs.iter().all(|r| fetch(r).is_some());
    let name = |r: &Run| {
        let mut name = r.policy.clone();
        if devices > 1 && !by_fetch {
            name += &format!(" {}", r.device);
        }
        if traces > 1 {
            name += &format!(" {}", r.trace);
        }
        name
    };
    let x = |r: &Run| match by_fetch {
        true => fetch(r).unwrap_or(0.0),
        false => r.capacity as f64,
    };
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        if !names.contains(&name(r)) {
            names.push(name(r));
        }
    }
    let series = |value: &dyn Fn(&Run) -> f64| -> Vec<Series> {
        names
            .iter()
            .map(|n| Series {
                name: n.clone(),
                points: runs
                    .iter()
                    .filter(|r| name(r) == *n)
                    .map(|r| (x(r), value(r)))
                    .collect(),
            })
            .collect()
    };
    let normalized = runs.iter().all(|r| r.normalized_elapsed.is_some());
    let x_label = match by_fetch {
        true => "fetch time F (references)",
        false => "cache size (blocks)",
    };
    vec![
        Panel {
            title: "elapsed time (simulated)".into(),
            x_label: x_label.into(),
            y_label: match normalized {
                true => "elapsed / (min fetches x F)",
                false => "elapsed time",
            }
            .into(),
            series: series(&|r| r.normalized_elapsed.unwrap_or(r.metrics.elapsed as f64)),
        },
        Panel {
            title: "miss ratio (simulated)".into(),
            x_label: x_label.into(),
            y_label: "misses / references".into(),
            series: series(&|r| r.metrics.miss_ratio()),
        },
    ]
}

/// The policies of the [`crate::catalog::CATALOG`]: name, engine, paper section, options.
pub fn catalog_table() -> String {
    let mut out = String::from(
        "| policy | engine | paper, section | options (key=value) |\n|---|---|---|---|\n",
    );
    for entry in crate::catalog::CATALOG {
        let engine = match entry.engine {
            crate::catalog::Engine::Unit(_) => "reference",
            crate::catalog::Engine::Disk { .. } => "disk-timed",
        };
        let _ = writeln!(
            out,
            "| {} | {engine} | {} | {} |",
            entry.name, entry.section, entry.params
        );
    }
    out
}

/// A Markdown table of miss-ratio curves.
pub fn mrc_table(points: &[crate::mrc::MrcPoint]) -> String {
    let mut out = String::from(
        "| trace | cache | references | LRU misses | LRU miss ratio | OPT misses | OPT miss ratio |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for p in points {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.4} | {} | {:.4} |",
            p.trace,
            p.capacity,
            p.references,
            p.lru_misses,
            p.lru_miss_ratio,
            p.opt_misses,
            p.opt_miss_ratio
        );
    }
    out
}

/// One chart of miss ratio against cache size: LRU and OPT per trace.
pub fn mrc_panels(points: &[crate::mrc::MrcPoint]) -> Vec<Panel> {
    let mut traces: Vec<&str> = Vec::new();
    for p in points {
        if !traces.contains(&p.trace.as_str()) {
            traces.push(&p.trace);
        }
    }
    let series = traces
        .iter()
        .flat_map(|&trace| {
            let of = |value: fn(&crate::mrc::MrcPoint) -> f64| -> Vec<(f64, f64)> {
                points
                    .iter()
                    .filter(|p| p.trace == trace)
                    .map(|p| (p.capacity as f64, value(p)))
                    .collect()
            };
            [
                Series {
                    name: format!("LRU {trace}"),
                    points: of(|p| p.lru_miss_ratio),
                },
                Series {
                    name: format!("OPT {trace}"),
                    points: of(|p| p.opt_miss_ratio),
                },
            ]
        })
        .collect();
    vec![Panel {
        title: "miss-ratio curves (simulated)".into(),
        x_label: "cache size (blocks)".into(),
        y_label: "misses / references".into(),
        series,
    }]
}
