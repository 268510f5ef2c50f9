//! SVG line charts, the one drawing routine of the workspace's reports (feature `svg`): panels
//! side by side, each with its lines and a legend, on a linear or a logarithmic x axis; a
//! [`Style`] may fix a line's colour and put dots on its points.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

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

/// The x axis of a figure.
#[derive(Clone, Copy, Debug)]
pub enum XAxis {
    /// Linear, numbers as plotters prints them.
    Linear,
    /// Logarithmic (every x above 0), labels written by the function.
    Log(fn(f64) -> String),
}

/// A colour as red, green and blue.
pub type Rgb = (u8, u8, u8);

/// How lines look beyond the palette's defaults, chosen by their legend text: a report whose
/// lines stand for the same modes in every figure keeps one colour for each, and marks the points
/// it measured (a flat reference line has none).
#[derive(Clone, Copy)]
pub struct Style<'a> {
    /// The colour of a line as RGB, or None for the palette's next one.
    pub color: &'a dyn Fn(&str) -> Option<Rgb>,
    /// Whether a line has a dot at each of its points.
    pub markers: &'a dyn Fn(&str) -> bool,
    /// Width and height of each panel in pixels (a long title needs a wider one).
    pub panel_size: (u32, u32),
}

impl Default for Style<'_> {
    /// The palette's colours, no dots.
    fn default() -> Self {
        Style {
            color: &|_| None,
            markers: &|_| false,
            panel_size: (560, 440),
        }
    }
}

/// Draws `panels` side by side into an SVG file at `path`, on a linear x axis.
pub fn draw(path: &Path, panels: &[Panel]) -> Result<(), String> {
    draw_with(path, None, XAxis::Linear, panels)
}

/// Draws `panels` side by side into an SVG file at `path`, under an optional `title`, on the
/// given x axis.
pub fn draw_with(
    path: &Path,
    title: Option<&str>,
    axis: XAxis,
    panels: &[Panel],
) -> Result<(), String> {
    draw_styled(path, title, axis, Style::default(), panels)
}

/// Draws `panels` as [`draw_with`] does, their lines in `style`.
pub fn draw_styled(
    path: &Path,
    title: Option<&str>,
    axis: XAxis,
    style: Style<'_>,
    panels: &[Panel],
) -> Result<(), String> {
    let (width, height) = style.panel_size;
    let root =
        SVGBackend::new(path, (width * panels.len().max(1) as u32, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = match title {
        Some(title) => root
            .titled(title, ("sans-serif", 18))
            .map_err(|e| e.to_string())?,
        None => root,
    };
    for (area, panel) in root
        .split_evenly((1, panels.len().max(1)))
        .iter()
        .zip(panels)
    {
        draw_panel(area, panel, axis, style).map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The x range and the top of the y range of `panel`'s points (only x above 0 on a log axis).
fn bounds(panel: &Panel, log: bool) -> (f64, f64, f64) {
    let points = panel.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0f64);
    for &(x, y) in points.filter(|(x, _)| !log || *x > 0.0) {
        (x0, x1, y1) = (x0.min(x), x1.max(x), y1.max(y));
    }
    if x0 > x1 {
        (x0, x1) = (1.0, 2.0);
    }
    if x0 == x1 {
        x1 = x0 * 2.0 + 1.0;
    }
    (x0, x1, (y1 * 1.08).max(1e-9))
}

/// Draws the lines (in `$style`) and the legend of `panel` on `chart`, whatever its x coordinate.
macro_rules! lines_and_legend {
    ($chart:expr, $panel:expr, $style:expr) => {{
        for (i, series) in $panel.series.iter().enumerate() {
            let color = match ($style.color)(&series.name) {
                Some((r, g, b)) => RGBColor(r, g, b).to_rgba(),
                None => Palette99::pick(i).to_rgba(),
            };
            $chart
                .draw_series(LineSeries::new(
                    series.points.iter().copied(),
                    color.stroke_width(2),
                ))?
                .label(series.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            if ($style.markers)(&series.name) {
                $chart.draw_series(
                    series
                        .points
                        .iter()
                        .map(|&point| Circle::new(point, 4, color.filled())),
                )?;
            }
        }
        $chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
    }};
}

fn draw_panel(
    area: &Area<'_>,
    panel: &Panel,
    axis: XAxis,
    style: Style<'_>,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56);
    match axis {
        XAxis::Linear => {
            let (x0, x1, y1) = bounds(panel, false);
            let mut chart = builder.build_cartesian_2d(x0..x1, 0f64..y1)?;
            chart
                .configure_mesh()
                .x_desc(&panel.x_label)
                .y_desc(&panel.y_label)
                .draw()?;
            lines_and_legend!(chart, panel, style)
        }
        XAxis::Log(format) => {
            let (x0, x1, y1) = bounds(panel, true);
            let mut chart = builder.build_cartesian_2d((x0..x1).log_scale(), 0f64..y1)?;
            chart
                .configure_mesh()
                .x_desc(&panel.x_label)
                .y_desc(&panel.y_label)
                .x_labels(12)
                .x_label_formatter(&|x| format(*x))
                .draw()?;
            lines_and_legend!(chart, panel, style)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel() -> Panel {
        Panel {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series {
                name: "a line".into(),
                points: vec![(1.0, 2.0), (10.0, 3.0), (100.0, 1.0)],
            }],
        }
    }

    #[test]
    fn draws_linear_and_log_panels_with_their_legends() {
        let dir = std::env::temp_dir().join(format!("units-svg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let linear = dir.join("linear.svg");
        draw(&linear, &[panel(), panel()]).unwrap();
        let log = dir.join("log.svg");
        draw_with(
            &log,
            Some("title"),
            XAxis::Log(|x| format!("{x:.0} B")),
            &[panel()],
        )
        .unwrap();
        let (linear, log) = (
            std::fs::read_to_string(&linear).unwrap(),
            std::fs::read_to_string(&log).unwrap(),
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(linear.matches("a line").count(), 2);
        assert!(log.contains("title") && log.contains("100 B"), "{log}");
        assert!(!linear.contains("<circle"), "no dots unless asked");
    }

    #[test]
    fn a_style_fixes_colours_and_marks_points() {
        let path = std::env::temp_dir().join(format!("units-svg-style-{}.svg", std::process::id()));
        let style = Style {
            color: &|name| (name == "a line").then_some((1, 2, 3)),
            markers: &|name| name == "a line",
            panel_size: (900, 560),
        };
        draw_styled(&path, None, XAxis::Linear, style, &[panel()]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(svg.matches("<circle").count(), 3, "{svg}");
        assert!(svg.contains("#010203"), "{svg}");
        assert!(svg.starts_with(r#"<svg width="900" height="560""#), "{svg}");
    }
}
