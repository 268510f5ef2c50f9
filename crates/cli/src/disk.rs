//! `prefetch disk profile`: prints (and optionally plots) the checks of a disk model against the
//! papers, computed by `disk::profile`. Every number is the model's (simulated); nothing here
//! touches a disk.

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use disk::profile::{Config, Profile, SeekPoint, TOLERANCE};
use std::path::{Path, PathBuf};
use units::svg::{Panel, Series, XAxis};

/// `prefetch disk ...` subcommands.
#[derive(Subcommand)]
pub enum DiskCommand {
    /// Check a disk model against the papers: seek time vs distance forward and backward
    /// (libprefetch Figure 1), infill threshold, average random seek, reorder-buffer distance
    /// vs 2N(K-1)/K(K+1)
    Profile(ProfileArgs),
}

/// Arguments of `prefetch disk profile`.
#[derive(Args)]
pub struct ProfileArgs {
    /// Disk model: st3500320as, ibm-36z15, hitachi-18zx, nvme, fixed:MS, ssd:LAT_US,CHANNELS,MB_PER_S,
    /// hdd:RPM,AVG_SEEK_MS,MB_PER_S
    /// (append :nocache to an HDD preset to disable its read-ahead)
    #[arg(long)]
    model: String,
    /// Print the profile as JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Also write seek time vs distance (forward and backward) to this SVG file.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Seed of the random reads.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Runs a `prefetch disk` subcommand. Fails (after printing) when a check does not pass.
pub fn run(command: DiskCommand) -> Result<()> {
    let DiskCommand::Profile(args) = command;
    let spec = disk::spec_from_name(&args.model)?;
    let config = Config {
        seed: args.seed,
        ..Config::default()
    };
    let profile = Profile::run(&args.model, &spec, &config)?;
    if args.json {
        println!("{}", profile.to_json());
    } else {
        print_tables(&profile);
    }
    if let Some(path) = &args.svg {
        write_svg(&profile, path).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if !profile.passes() {
        bail!(
            "model {} fails a check against the papers (see above)",
            args.model
        );
    }
    Ok(())
}

fn print_tables(p: &Profile) {
    println!("disk model {} [{}]", p.model, p.setting);
    println!(
        "capacity {:.1} GB, peak rate {:.1} MB/s (one 64 MiB read at 0), whole-disk average {:.1} MB/s",
        p.capacity as f64 / 1e9,
        p.peak_rate / 1e6,
        p.average_rate / 1e6
    );
    print_seek_table(&p.seek);
    match p.infill_threshold {
        Some(bytes) => println!(
            "infill threshold: reading a gap is cheaper than seeking over it up to {} KiB (libprefetch paper's disk: ~32 KiB)\n",
            bytes / 1024
        ),
        None => println!("infill threshold: none (seeking is never slower than reading the gap)\n"),
    }
    print_random_seek(p);
    print_reorder(p);
}

fn print_seek_table(points: &[SeekPoint]) {
    println!("\nseek time vs distance, 4 KiB reads back to back (libprefetch Figure 1) [model]");
    println!(
        "{:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "distance", "forward ms", "backward ms", "read ms", "curve ms", "averaged ms"
    );
    for s in points {
        println!(
            "{:>12} {:>12.3} {:>12.3} {:>12.3} {:>12} {:>12}",
            human_bytes(s.distance),
            s.forward_ms,
            s.backward_ms,
            s.read_ms,
            optional_ms(s.seek_curve_ms),
            optional_ms(s.rotation_averaged_ms)
        );
    }
    println!(
        "(read ms: reading that many bytes at the peak rate; curve ms: the fitted seek alone;\n \
         averaged ms: overhead + seek + half a revolution + transfer, the mean over platter angles)\n"
    );
}

fn print_random_seek(p: &Profile) {
    let Some(r) = &p.random_seek else {
        println!("average random seek: not applicable (no seek in this model)\n");
        return;
    };
    println!(
        "average random seek over {} random 4 KiB reads [model]: {:.3} ms vs preset {:.3} ms ({:+.2}%) {}",
        r.reads,
        r.measured_ms,
        r.preset_ms,
        r.error * 100.0,
        verdict(r.error)
    );
    println!(
        "average rotational wait {:.3} ms (half a revolution {:.3} ms), average access {:.3} ms\n",
        r.rotation_ms, r.half_revolution_ms, r.access_ms
    );
}

fn print_reorder(p: &Profile) {
    println!(
        "reorder buffer of K pages, {} random page reads of a {}-page file (s3.2, s3.5) [model]",
        p.reorder_pages, p.reorder_pages
    );
    println!(
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
        println!(
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
    println!("(checked for 5 <= K <= N/64; sync: one read outstanding; queued: each buffer issued at once)");
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

fn human_bytes(bytes: u64) -> String {
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
    let mut value = bytes;
    let mut unit = 0;
    while value >= 999.5 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.0} {}", UNITS[unit])
}

/// Two panels, forward and backward: time per read against distance (log scale), beside the
/// time to read that distance at the peak rate (the workspace's chart routine, `units::svg`).
fn write_svg(p: &Profile, path: &Path) -> Result<()> {
    let points: Vec<&SeekPoint> = p.seek.iter().filter(|s| s.distance > 0).collect();
    if points.is_empty() {
        bail!("no seek distances to plot");
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
    .map_err(|e| anyhow!("{e}"))
}
