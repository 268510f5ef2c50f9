//! The SVG of a window sweep: wall time against libprefetch's reorder window, the shape of the
//! libprefetch paper's Figure 2 (section 3.2: runtime falls as the reorder buffer grows), with stock and
//! naive drawn as flat reference lines (they do not depend on the window).
//! Deviations: the paper's x axis is the reorder buffer; here it is the cap given to the library,
//! whose AIMD controller starts at 90% of it.

use std::path::Path;

use anyhow::{anyhow, ensure, Result};
use plotters::prelude::*;

use crate::mode::Mode;
use crate::report::{CacheState, Report};

/// Writes `report`'s cold window sweep to `path` as an SVG. Needs at least two libprefetch windows.
pub fn window_sweep_svg(report: &Report, path: &Path) -> Result<()> {
    let sweep: Vec<(f64, f64)> = report
        .rows
        .iter()
        .filter(|row| row.mode == Mode::Libprefetch && row.cache == CacheState::Cold)
        .filter_map(|row| Some((mib(row.window_bytes?), row.median_wall_seconds)))
        .collect();
    ensure!(
        sweep.len() >= 2,
        "--svg needs a sweep: give --window several sizes, e.g. --window 1M,4M,16M,64M,256M"
    );
    let references: Vec<(Mode, f64)> = report
        .rows
        .iter()
        .filter(|row| row.mode != Mode::Libprefetch && row.cache == CacheState::Cold)
        .map(|row| (row.mode, row.median_wall_seconds))
        .collect();
    draw(report, path, &sweep, &references)
        .map_err(|error| anyhow!("writing {}: {error}", path.display()))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn draw(
    report: &Report,
    path: &Path,
    sweep: &[(f64, f64)],
    references: &[(Mode, f64)],
) -> Result<(), Box<dyn std::error::Error>> {
    let x_min = sweep
        .iter()
        .map(|point| point.0)
        .fold(f64::INFINITY, f64::min);
    let x_max = sweep.iter().map(|point| point.0).fold(0.0, f64::max);
    let y_max = sweep
        .iter()
        .map(|point| point.1)
        .chain(references.iter().map(|reference| reference.1))
        .fold(0.0, f64::max)
        * 1.1;
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
        .x_desc(format!("libprefetch window (MiB); {}", report.setting))
        .y_desc("wall time, median (s)")
        .draw()?;
    chart
        .draw_series(LineSeries::new(sweep.iter().copied(), BLUE.stroke_width(2)))?
        .label("libprefetch")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart.draw_series(
        sweep
            .iter()
            .map(|&point| Circle::new(point, 4, BLUE.filled())),
    )?;
    for (index, &(mode, seconds)) in references.iter().enumerate() {
        let color = Palette99::pick(index + 1).to_rgba();
        chart
            .draw_series(LineSeries::new(
                [(x_min, seconds), (x_max, seconds)],
                color.stroke_width(2),
            ))?
            .label(mode.name())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
