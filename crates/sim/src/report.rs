//! Output of sweeps: Markdown tables and SVG line charts in the style of Cao et al. Figure 3
//! (normalised elapsed time and number of fetches against the fetch time F), and the policy
//! list of `prefetch sim --list`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

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

pub use units::svg::{Panel, Series};

/// Draws `panels` side by side into an SVG file at `path` (the workspace's one line-chart
/// routine, `units::svg`).
pub fn draw(path: &Path, panels: &[Panel]) -> Result<(), SimError> {
    units::svg::draw(path, panels).map_err(|message| SimError::Output {
        path: path.to_path_buf(),
        message,
    })
}

/// One line per distinct `name` of the items, in the order first seen, through the points
/// (`x`, `value`) of the items of that name.
fn series_by_name<T>(
    items: &[T],
    name: &dyn Fn(&T) -> String,
    x: &dyn Fn(&T) -> f64,
    value: &dyn Fn(&T) -> f64,
) -> Vec<Series> {
    let mut names: Vec<String> = Vec::new();
    for item in items {
        let item_name = name(item);
        if !names.contains(&item_name) {
            names.push(item_name);
        }
    }
    names
        .into_iter()
        .map(|n| Series {
            points: items
                .iter()
                .filter(|item| name(item) == n)
                .map(|item| (x(item), value(item)))
                .collect(),
            name: n,
        })
        .collect()
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
    let series = |value: &dyn Fn(&Row) -> f64| series_by_name(rows, &name, &x, value);
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
    let series = |value: &dyn Fn(&Run) -> f64| series_by_name(runs, &name, &x, value);
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

/// The policies of the [`crate::catalog::CATALOG`]: name, paper section, options.
pub fn catalog_table() -> String {
    let mut out =
        String::from("| policy | paper, section | options (key=value) |\n|---|---|---|\n");
    for entry in crate::catalog::CATALOG {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            entry.name, entry.section, entry.params
        );
    }
    let _ = writeln!(
        out,
        "\nAny replacement pairs with any prefetcher as REPLACEMENT+PREFETCHER: left of `+`, \
         a demand policy or a pair's replacement ({}); right of it, {}.",
        crate::catalog::replacement_names().join(", "),
        crate::catalog::prefetcher_names().join(", ")
    );
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
    miss_ratio_panel(series)
}

/// A Markdown table of policies' miss-ratio curves ([`crate::shards`]), saying the numbers
/// are simulated and, for a sampled curve, its rate.
pub fn curve_table(points: &[crate::shards::CurvePoint]) -> String {
    let mut out = String::from(
        "| trace | policy | cache | simulated cache | references | misses | miss ratio | rate |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for p in points {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {:.4} | {:.4} |",
            p.trace,
            p.policy,
            p.capacity,
            p.simulated_capacity,
            p.references,
            p.misses,
            p.miss_ratio,
            p.rate
        );
    }
    out
}

/// One chart of miss ratio against cache size: one line per trace and policy.
pub fn curve_panels(points: &[crate::shards::CurvePoint]) -> Vec<Panel> {
    let mut lines: Vec<(&str, &str)> = Vec::new();
    for p in points {
        if !lines.contains(&(p.trace.as_str(), p.policy.as_str())) {
            lines.push((&p.trace, &p.policy));
        }
    }
    let series = lines
        .iter()
        .map(|&(trace, policy)| Series {
            name: format!("{policy} {trace}"),
            points: points
                .iter()
                .filter(|p| p.trace == trace && p.policy == policy)
                .map(|p| (p.capacity as f64, p.miss_ratio))
                .collect(),
        })
        .collect();
    miss_ratio_panel(series)
}

/// One chart of miss ratio against cache size holding `series`.
fn miss_ratio_panel(series: Vec<Series>) -> Vec<Panel> {
    vec![Panel {
        title: "miss-ratio curves (simulated)".into(),
        x_label: "cache size (blocks)".into(),
        y_label: "misses / references".into(),
        series,
    }]
}
