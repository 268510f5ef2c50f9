//! The report of `prefetch disk profile`: the checks of a disk model against the papers,
//! computed by `disk::profile`, as text tables (seek time against distance, libprefetch Figure
//! 1; the infill threshold; the average random seek; the reorder buffer's distance against
//! 2N(K-1)/K(K+1), libprefetch s3.2 and s3.5) and as an SVG of the seek times. Every number
//! is the model's (simulated).

use std::fmt::Write as _;
use std::path::Path;

use disk::profile::{Profile, SeekPoint, TOLERANCE};
use units::svg::{Panel, Series, XAxis};

use crate::SimError;

/// The profile as the text tables `prefetch disk profile` prints.
pub fn text(p: &Profile) -> String {
    let mut out = format!("disk model {} [{}]\n", p.model, p.setting);
    let _ = writeln!(
        out,
        "capacity {:.1} GB, peak rate {:.1} MB/s (one 64 MiB read at 0), whole-disk average {:.1} MB/s",
        p.capacity as f64 / 1e9,
        p.peak_rate / 1e6,
        p.average_rate / 1e6
    );
    seek_table(&mut out, &p.seek);
    match p.infill_threshold {
        Some(bytes) => writeln!(
            out,
            "infill threshold: reading a gap is cheaper than seeking over it up to {} KiB (libprefetch paper's disk: ~32 KiB)\n",
            bytes / 1024
        ),
        None => writeln!(
            out,
            "infill threshold: none (seeking is never slower than reading the gap)\n"
        ),
    }
    .expect("writing to a String");
    random_seek(&mut out, p);
    reorder(&mut out, p);
    out
}

fn seek_table(out: &mut String, points: &[SeekPoint]) {
    out.push_str(
        "\nseek time vs distance, 4 KiB reads back to back (libprefetch Figure 1) [model]\n",
    );
    let _ = writeln!(
        out,
        "{:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "distance", "forward ms", "backward ms", "read ms", "curve ms", "averaged ms"
    );
    for s in points {
        let _ = writeln!(
            out,
            "{:>12} {:>12.3} {:>12.3} {:>12.3} {:>12} {:>12}",
            exact_bytes(s.distance),
            s.forward_ms,
            s.backward_ms,
            s.read_ms,
            optional_ms(s.seek_curve_ms),
            optional_ms(s.rotation_averaged_ms)
        );
    }
    out.push_str(
        "(read ms: reading that many bytes at the peak rate; curve ms: the fitted seek alone;\n \
         averaged ms: overhead + seek + half a revolution + transfer, the mean over platter angles)\n\n",
    );
}

fn random_seek(out: &mut String, p: &Profile) {
    let Some(r) = &p.random_seek else {
        out.push_str("average random seek: not applicable (no seek in this model)\n\n");
        return;
    };
    let _ = writeln!(
        out,
        "average random seek over {} random 4 KiB reads [model]: {:.3} ms vs preset {:.3} ms ({:+.2}%) {}",
        r.reads,
        r.measured_ms,
        r.preset_ms,
        r.error * 100.0,
        verdict(r.error)
    );
    let _ = writeln!(
        out,
        "average rotational wait {:.3} ms (half a revolution {:.3} ms), average access {:.3} ms\n",
        r.rotation_ms, r.half_revolution_ms, r.access_ms
    );
}

fn reorder(out: &mut String, p: &Profile) {
    let _ = writeln!(
        out,
        "reorder buffer of K pages, {} random page reads of a {}-page file (s3.2, s3.5) [model]",
        p.reorder_pages, p.reorder_pages
    );
    let _ = writeln!(
        out,
        "{:>8} {:>14} {:>14} {:>9} {:>6} {:>12} {:>12}",
        "K", "distance pg", "2N(K-1)/K(K+1)", "error", "check", "sync s", "queued s"
    );
    for r in &p.reorder {
        let check = match (r.checked, r.error) {
            (true, Some(error)) => verdict(error),
            _ => "-",
        };
        let error = r
            .error
            .map_or("-".to_string(), |e| format!("{:.2}%", e * 100.0));
        let _ = writeln!(
            out,
            "{:>8} {:>14.1} {:>14.1} {:>9} {:>6} {:>12.2} {:>12.2}",
            r.buffer_pages,
            r.distance_pages,
            r.formula_pages,
            error,
            check,
            r.runtime_s,
            r.queued_runtime_s
        );
    }
    out.push_str(
        "(checked for 5 <= K <= N/64; sync: one read outstanding; queued: each buffer issued at once)\n",
    );
}

fn optional_ms(value: Option<f64>) -> String {
    value.map_or("-".to_string(), |ms| format!("{ms:.3}"))
}

fn verdict(error: f64) -> &'static str {
    if error.abs() <= TOLERANCE {
        "ok"
    } else {
        "FAIL"
    }
}

/// A distance of the seek table, in the largest binary unit that divides it (`64 KiB`).
fn exact_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024 && value.trailing_zeros() >= 10 && unit + 1 < UNITS.len() {
        value /= 1024;
        unit += 1;
    }
    format!("{value} {}", UNITS[unit])
}

/// Axis labels at powers of ten: 1 kB, 10 kB, ..., 100 GB.
fn si_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let (value, unit) = units::scale(bytes, 1000.0, 999.5, UNITS.len());
    format!("{value:.0} {}", UNITS[unit])
}

/// Draws two panels, forward and backward, into `path`: time per read against distance (log
/// scale), beside the time to read that distance at the peak rate.
pub fn draw(p: &Profile, path: &Path) -> Result<(), SimError> {
    let output = |message: String| SimError::Output {
        path: path.to_path_buf(),
        message,
    };
    let points: Vec<&SeekPoint> = p.seek.iter().filter(|s| s.distance > 0).collect();
    if points.is_empty() {
        return Err(output("no seek distances to plot".into()));
    }
    let y_max = points
        .iter()
        .flat_map(|s| [s.forward_ms, s.backward_ms])
        .fold(1.0, f64::max)
        * 1.15;
    let panel = |forward: bool| {
        let line = |name: &str, value: &dyn Fn(&SeekPoint) -> Option<f64>| Series {
            name: name.to_string(),
            points: points
                .iter()
                .filter_map(|s| Some((s.distance as f64, value(s)?)))
                .collect(),
        };
        Panel {
            title: if forward { "forward" } else { "backward" }.to_string(),
            x_label: "distance (bytes)".to_string(),
            y_label: "time per 4 KiB read (ms)".to_string(),
            series: vec![
                line("seek + read (model)", &|s| {
                    Some(if forward { s.forward_ms } else { s.backward_ms })
                }),
                line("averaged over rotation (model)", &|s| {
                    s.rotation_averaged_ms
                }),
                line("read that distance at peak rate", &|s| {
                    (s.read_ms <= y_max).then_some(s.read_ms)
                }),
            ],
        }
    };
    let title = format!("{}: seek time vs distance [{}]", p.model, p.setting);
    units::svg::draw_with(
        path,
        Some(&title),
        XAxis::Log(si_bytes),
        &[panel(true), panel(false)],
    )
    .map_err(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_distances_print_in_the_largest_unit_that_divides_them() {
        assert_eq!(exact_bytes(512), "512 B");
        assert_eq!(exact_bytes(64 << 10), "64 KiB");
        assert_eq!(exact_bytes(3 << 30), "3 GiB");
        assert_eq!(exact_bytes(1536 << 10), "1536 KiB");
    }

    #[test]
    fn axis_labels_are_powers_of_ten() {
        assert_eq!(si_bytes(1000.0), "1 kB");
        assert_eq!(si_bytes(1e11), "100 GB");
    }
}
