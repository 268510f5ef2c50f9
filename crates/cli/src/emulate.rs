//! `prefetch emulate`: mounts the emulated disk (crate `emulate`) in the
//! foreground until it is unmounted, then prints its counters. While it is
//! mounted, the mount's device profile (`libprefetch::profile`) holds the
//! model's cost per request and rate, so the library's infill fills the gaps
//! that pay on the model.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `prefetch emulate`.
#[derive(Args)]
pub struct EmulateArgs {
    /// Disk model: st3500320as, ibm-36z15, hitachi-18zx, nvme, fixed:MS, ...
    #[arg(long)]
    model: String,
    /// Directory whose files the mount shows (read-only).
    #[arg(long)]
    backing: PathBuf,
    /// Empty directory to mount the emulated disk on.
    mountpoint: PathBuf,
    /// Wall seconds per emulated second: 0.1 runs the disk ten times faster.
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Request scheduler: fifo, clook, sstf, deadline, deadline:EXPIRE_MS.
    #[arg(long, default_value = "deadline")]
    scheduler: String,
    /// Lay the files end to end in path order instead of using their physical extents.
    #[arg(long)]
    contiguous: bool,
    /// Write a line per request the disk serves to this file: arrival, start and completion
    /// (model seconds since the mount), disk address, bytes.
    #[arg(long, value_name = "FILE")]
    request_log: Option<PathBuf>,
}

/// Mounts, waits for Ctrl-C / SIGTERM / `fusermount3 -u`, prints the counters.
pub fn run(args: EmulateArgs) -> anyhow::Result<()> {
    for (what, dir) in [
        ("backing directory", &args.backing),
        ("mount point", &args.mountpoint),
    ] {
        let missing =
            std::fs::metadata(dir).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        anyhow::ensure!(
            !missing,
            "the {what} {} does not exist: create it first (mkdir -p {})",
            dir.display(),
            dir.display()
        );
    }
    let mut config = emulate::Config::new(&args.model, &args.backing, &args.mountpoint);
    config.time_scale = args.time_scale;
    config.scheduler = args.scheduler;
    config.request_log = args.request_log;
    if args.contiguous {
        config.placement = emulate::Placement::Contiguous;
    }
    let mounted = emulate::mount(&config)?;
    mounted.unmount_on_signals()?;
    let _profile = ::bench::device_profile::ModelProfile::save(&config)?;
    let mountpoint = args.mountpoint.display();
    println!(
        "emulated disk mounted at {mountpoint}: model {}, scheduler {}, time scale {}, {} layout",
        config.model,
        config.scheduler,
        config.time_scale,
        if args.contiguous {
            "contiguous"
        } else {
            "physical (FIEMAP)"
        }
    );
    println!("counters: {mountpoint}/{}", emulate::fs::STATS_NAME);
    println!("stop with Ctrl-C or `fusermount3 -u {mountpoint}`");
    if !mounted.auto_unmount() {
        println!(
            "note: auto_unmount is off (allow_other refused); if this process is killed, \
             run `fusermount3 -u -z {mountpoint}`"
        );
    }
    let stats = mounted.wait()?;
    println!("{stats}");
    Ok(())
}
