//! The SVG of a sweep, wall time against the swept size on a log axis:
//! - a window sweep (`--window A,B,...`): libprefetch's reorder window, the shape of the libprefetch
//!   paper's Figure 2 (section 3.2: runtime falls as the reorder buffer grows), with stock and naive
//!   drawn as flat reference lines (they do not depend on the window);
//! - a memory sweep (`--memory-limit A,B,...`): the memory cgroup limit, one line per mode, the axis
//!   of Figure 9 turned around (the paper varied the data size over a fixed 512 MB of memory).
//!
//! Deviations: Figure 2's x axis is the reorder buffer; here it is the cap given to the library,
//! whose AIMD controller starts at 90% of it.

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use plotters::prelude::*;

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
    draw(report, path, axis, &lines).map_err(|error| anyhow!("writing {}: {error}", path.display()))
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
fn color_of(label: &str) -> RGBAColor {
    match Mode::from_name(label) {
        Some(Mode::Stock) => RED.to_rgba(),
        Some(Mode::Naive) => RGBColor(230, 140, 0).to_rgba(),
        Some(Mode::Libprefetch) | None => BLUE.to_rgba(),
        Some(Mode::LimitCache) => RGBColor(0, 150, 90).to_rgba(),
        Some(Mode::Limit) => RGBColor(120, 120, 120).to_rgba(),
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

fn draw(
    report: &Report,
    path: &Path,
    axis: &str,
    lines: &[Line],
) -> Result<(), Box<dyn std::error::Error>> {
    let all: Vec<(f64, f64)> = lines.iter().flat_map(|line| line.points.clone()).collect();
    let (x_min, x_max) = x_range(&all);
    let y_max = all.iter().map(|point| point.1).fold(0.0, f64::max) * 1.1;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&report.description, ("sans-serif", 16))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((x_min..x_max).log_scale(), 0.0..y_max)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_labels(10)
        .x_label_formatter(&|mib| format!("{mib}"))
        .x_desc(format!("{axis}; {}", report.storage.describe()))
        .y_desc("wall time, median (s)")
        .draw()?;
    for line in lines {
        let color = color_of(&line.label);
        chart
            .draw_series(LineSeries::new(
                line.points.iter().copied(),
                color.stroke_width(2),
            ))?
            .label(line.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        if line.markers {
            chart.draw_series(
                line.points
                    .iter()
                    .map(|&point| Circle::new(point, 4, color.filled())),
            )?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
