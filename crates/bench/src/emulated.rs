//! `prefetch bench random|strided|sequential --setting emulated`: the same rows on the emulated
//! seek-bound disk as on this machine's disk, so that every schedule is measured on both devices.
//!
//! The data file is written in a backing directory of its own (read once, so that the backing
//! file system serves it from memory and the time is the disk model's only), the emulated disk
//! (`prefetch emulate`, crate `emulate`) is mounted over it in this process with its model's
//! device profile stored for the mount (`device_profile::ModelProfile`), the benchmark runs on
//! the mounted file, and everything is unmounted and removed afterwards. Pages read come from the
//! emulated disk's own counter.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::config::BenchConfig;
use crate::device_profile::ModelProfile;
use crate::runner::{instance_file, run};
use crate::{datafile, Report};

/// The emulated disk: which model, at which speed.
#[derive(Clone, Debug, PartialEq)]
pub struct EmulatedDisk {
    /// Disk model (`disk::MODEL_NAMES`), e.g. `st3500320as`, a 7200 RPM drive.
    pub model: String,
    /// Wall seconds per model second (0.1: the disk runs ten times faster).
    pub time_scale: f64,
}

/// Runs `config` with its data file on the emulated disk (the file named in `config` only gives
/// the name; it is written anew in a scratch directory under the temporary directory).
pub fn run_emulated(config: &BenchConfig, disk: &EmulatedDisk) -> Result<Report> {
    emulate::fuse_available()?;
    let scratch =
        std::env::temp_dir().join(format!("prefetch-bench-emulated-{}", std::process::id()));
    let outcome = in_scratch(config, disk, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}

fn in_scratch(config: &BenchConfig, disk: &EmulatedDisk, scratch: &Path) -> Result<Report> {
    let backing = scratch.join("backing");
    let mountpoint = scratch.join("mnt");
    std::fs::create_dir_all(&backing)?;
    std::fs::create_dir_all(&mountpoint)?;
    let name: PathBuf = config
        .file
        .file_name()
        .map_or_else(|| "data.bin".into(), Into::into);
    for instance in 0..config.instances {
        let path = instance_file(&backing.join(&name), instance);
        datafile::ensure(&path, config.file_size, true, config.show_progress)?;
        read_through(&path)?;
    }
    let mut emulated = emulate::Config::new(&disk.model, &backing, &mountpoint);
    emulated.time_scale = disk.time_scale;
    let mounted = emulate::mount(&emulated)?;
    let profile = ModelProfile::save(&emulated);
    let report = profile.and_then(|_profile| {
        run(&BenchConfig {
            file: mountpoint.join(&name),
            ..config.clone()
        })
    });
    mounted.unmount().context("unmounting the emulated disk")?;
    report
}

/// Reads `path` once, so that the backing file system serves it from memory.
fn read_through(path: &Path) -> Result<()> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    std::io::copy(&mut file, &mut std::io::sink())?;
    Ok(())
}
