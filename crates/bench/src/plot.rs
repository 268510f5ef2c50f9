//! The SVG of a sweep, wall time against the swept size on a log axis:
//! - a window sweep (`--window A,B,...`): libprefetch's reorder window, the shape of the libprefetch
//!   paper's Figure 2 (section 3.2: runtime falls as the reorder buffer grows), with stock and naive
//!   drawn as flat reference lines (they do not depend on the window);
//! - a memory sweep (`--memory-limit A,B,...`): the memory cgroup limit, one line per mode, the axis
//!   of Figure 9 turned around (the paper varied the data size over a fixed 512 MB of memory).
//!
//! Drawn by the workspace's one chart routine, `units::svg`, with one colour per mode in every
//! plot and dots on the measured points.
//!
//! Deviations: Figure 2's x axis is the reorder buffer; here it is the cap given to the library,
//! whose AIMD controller starts at 90% of it.

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use units::svg::{Panel, Rgb, Series, Style, XAxis};

use crate::mode::Mode;
use crate::report::{CacheState, Report, Row};

/// One line of the plot.
struct Line {
    label: String,
    /// (MiB, seconds) points.
    points: Vec<(f64, f64)>,
    /// Draw a dot at each measured point (reference lines have none).
    markers: bool,
}

/// Writes the cold rows of a window or memory sweep to `path` as an SVG.
pub fn sweep_svg(report: &Report, path: &Path) -> Result<()> {
    let cold: Vec<&Row> = report
        .rows
        .iter()
        .filter(|row| row.cache == CacheState::Cold)
        .collect();
    let (axis, lines) = if report.is_memory_sweep() {
        ("memory cgroup limit (MiB)", memory_lines(&cold))
    } else {
        ("libprefetch window (MiB)", window_lines(&cold))
    };
    let swept: Vec<(f64, f64)> = lines
        .iter()
        .filter(|line| line.markers)
        .flat_map(|line| line.points.clone())
        .collect();
    let (low, high) = x_range(&swept);
    if !(low.is_finite() && high > low) {
        bail!("--svg needs a sweep: several different sizes for --window or for --memory-limit");
    }
    draw(report, path, axis, lines).map_err(|error| anyhow!("writing {}: {error}", path.display()))
}

/// libprefetch's points by window, and every other mode as a flat line across the windows.
fn window_lines(rows: &[&Row]) -> Vec<Line> {
    let sweep: Vec<(f64, f64)> = rows
        .iter()
        .filter(|row| row.mode == Mode::Libprefetch)
        .filter_map(|row| Some((mib(row.window_bytes?), row.median_wall_seconds)))
        .collect();
    let (low, high) = x_range(&sweep);
    let flat = rows
        .iter()
        .filter(|row| row.mode != Mode::Libprefetch)
        .map(|row| Line {
            label: row.mode.name().to_string(),
            points: vec![
                (low, row.median_wall_seconds),
                (high, row.median_wall_seconds),
            ],
            markers: false,
        });
    let library = Line {
        label: "libprefetch".to_string(),
        points: sweep,
        markers: true,
    };
    std::iter::once(library).chain(flat).collect()
}

/// One line per mode, its points by memory limit.
fn memory_lines(rows: &[&Row]) -> Vec<Line> {
    Mode::ALL
        .iter()
        .map(|&mode| Line {
            label: mode.name().to_string(),
            points: rows
                .iter()
                .filter(|row| row.mode == mode && row.window_bytes.is_none())
                .filter_map(|row| Some((mib(row.memory_limit_bytes?), row.median_wall_seconds)))
                .collect(),
            markers: true,
        })
        .filter(|line| !line.points.is_empty())
        .collect()
}

/// One fixed colour per mode, the same in every plot.
fn color_of(label: &str) -> Rgb {
    match Mode::from_name(label) {
        Some(Mode::Stock) => (255, 0, 0),
        Some(Mode::Naive) => (230, 140, 0),
        Some(Mode::Libprefetch) | None => (0, 0, 255),
        Some(Mode::WholeList) => (120, 0, 200),
        Some(Mode::LimitCache) => (0, 150, 90),
        Some(Mode::Limit) => (120, 120, 120),
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn x_range(points: &[(f64, f64)]) -> (f64, f64) {
    let low = points
        .iter()
        .map(|point| point.0)
        .fold(f64::INFINITY, f64::min);
    let high = points.iter().map(|point| point.0).fold(0.0, f64::max);
    (low, high)
}

/// One panel under the report's description, its lines in their modes' colours, dots on the
/// measured lines.
fn draw(report: &Report, path: &Path, axis: &str, lines: Vec<Line>) -> Result<(), String> {
    let marked: Vec<String> = lines
        .iter()
        .filter(|line| line.markers)
        .map(|line| line.label.clone())
        .collect();
    let panel = Panel {
        title: report.description.clone(),
        x_label: format!("{axis}; {}", report.storage.describe()),
        y_label: "wall time, median (s)".to_string(),
        series: lines
            .into_iter()
            .map(|line| Series {
                name: line.label,
                points: line.points,
            })
            .collect(),
    };
    let style = Style {
        color: &|label| Some(color_of(label)),
        markers: &|label| marked.iter().any(|name| name == label),
        panel_size: (900, 560),
    };
    units::svg::draw_styled(
        path,
        None,
        XAxis::Log(|mib| format!("{mib}")),
        style,
        &[panel],
    )
}
