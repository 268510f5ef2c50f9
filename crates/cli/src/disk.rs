//! `prefetch disk profile`: prints (and optionally plots) the checks of a disk model against the
//! papers, computed by `disk::profile` and reported by `sim::disk_report`. Every number is the
//! model's (simulated); nothing here touches a disk. Thin: parses, calls the crates, prints.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use disk::profile::{Config, Profile};
use std::path::PathBuf;

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
        crate::sim::emit(&::sim::disk_report::text(&profile))?;
    }
    if let Some(path) = &args.svg {
        ::sim::disk_report::draw(&profile, path)?;
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
