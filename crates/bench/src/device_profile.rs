//! Measures a device's far and near request costs and transfer rate, as the library's window
//! growth and infill need them (`libprefetch::profile`): scattered single pages, every other page
//! of a stretch, and then a contiguous stretch of one file read with `O_DIRECT` at the queue depth
//! of the `limit` mode, which is how prefetch advice reaches the device (many requests queued at
//! once). Far request = time per scattered page minus a page's transfer; near request = time per
//! page of every other page minus a page's transfer (what a separate request a page away costs:
//! the gap skipped and the command); rate = the
//! stretch's bytes over its time. Near cost times rate is the break-even infill gap (competitive
//! prefetching, TR840 section 3, formula (5), for one request).
//!
//! An emulated disk needs no measurement: [`ModelProfile`] stores its model's numbers for the
//! mount while it is mounted (`prefetch emulate`, `prefetch bench streams`).
//!
//! Deviations: the per-request cost is measured at queue depth 32, not at depth 1 as a seek
//! would be: with advice in flight the device overlaps requests, so the cost a filled gap saves
//! is the depth-32 one.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use libprefetch::profile::{self, DeviceProfile};
use rand::RngExt;
use rand::SeedableRng;

use crate::limit::read_pages_directly;
use crate::workload::{Read, PAGE_SIZE};

/// Scattered pages read for the per-request cost.
const SCATTERED_PAGES: u64 = 4096;
/// Largest contiguous stretch read for the transfer rate.
const STRETCH_BYTES: u64 = 256 << 20;
/// Measurements taken; the profile is the best of them.
const MEASUREMENTS: usize = 3;
/// Smallest file worth measuring on: the scattered pages must be scattered.
pub const MIN_FILE_BYTES: u64 = 64 << 20;

/// Measures the device holding `path` (a file of at least [`MIN_FILE_BYTES`], read, never written).
pub fn measure(path: &Path) -> Result<DeviceProfile> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let size = file.metadata()?.len();
    if size < MIN_FILE_BYTES {
        bail!(
            "{} holds {size} bytes; measuring needs a file of at least {} MiB on the device",
            path.display(),
            MIN_FILE_BYTES >> 20
        );
    }
    let pages = size / PAGE_SIZE;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let stretch: Vec<Read> = (0..STRETCH_BYTES.min(size) / PAGE_SIZE)
        .map(page_read)
        .collect();
    let every_other: Vec<Read> = (0..SCATTERED_PAGES.min(pages / 2))
        .map(|i| page_read(2 * i))
        .collect();
    let mut per_page = Vec::new();
    let mut per_near_page = Vec::new();
    let mut rates = Vec::new();
    for _ in 0..MEASUREMENTS {
        let scattered: Vec<Read> = (0..SCATTERED_PAGES)
            .map(|_| page_read(rng.random_range(0..pages)))
            .collect();
        let started = Instant::now();
        read_pages_directly(&file, &scattered)?;
        per_page.push(started.elapsed().as_secs_f64() / SCATTERED_PAGES as f64);
        let started = Instant::now();
        read_pages_directly(&file, &every_other)?;
        per_near_page.push(started.elapsed().as_secs_f64() / every_other.len().max(1) as f64);
        let started = Instant::now();
        let outcome = read_pages_directly(&file, &stretch)?;
        rates.push(outcome.bytes as f64 / started.elapsed().as_secs_f64().max(1e-9));
    }
    // The best of the measurements: other work on the machine only ever slows one down.
    let per_page = per_page.into_iter().fold(f64::INFINITY, f64::min);
    let per_near_page = per_near_page.into_iter().fold(f64::INFINITY, f64::min);
    let bytes_per_second = rates.into_iter().fold(0.0, f64::max);
    let page_transfer = PAGE_SIZE as f64 / bytes_per_second;
    Ok(DeviceProfile {
        request_seconds: (per_page - page_transfer).max(0.0),
        near_request_seconds: Some((per_near_page - page_transfer).max(0.0)),
        bytes_per_second,
        mount_id: mount_id_of(&file),
    })
}

fn page_read(page: u64) -> Read {
    Read {
        offset: page * PAGE_SIZE,
        len: PAGE_SIZE,
    }
}

/// Measures the device holding `path` and stores its profile; returns it and where it went.
pub fn measure_and_save(path: &Path) -> Result<(DeviceProfile, std::path::PathBuf)> {
    let measured = measure(path)?;
    let (major, minor) = device_of(path)?;
    let saved = profile::save(major, minor, &measured)
        .with_context(|| format!("saving the profile of device {major}:{minor}"))?;
    Ok((measured, saved))
}

/// The stored profile of the device holding `path`, if there is one, and why it is stale, if it is
/// (`DeviceProfile::stale_for`: the library does not use it then).
pub fn stored(path: &Path) -> Result<Option<(DeviceProfile, Option<String>)>> {
    let (major, minor) = device_of(path)?;
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mount = mount_id_of(&file);
    Ok(profile::load(major, minor).map(|stored| (stored, stored.stale_for(mount))))
}

/// The mount of `file` (`stx_mnt_id`), if the kernel says.
fn mount_id_of(file: &File) -> Option<u64> {
    use std::os::fd::AsRawFd;
    profile::mount_id_of(file.as_raw_fd())
}

/// Major and minor number of the device holding `path`.
pub fn device_of(path: &Path) -> Result<(u32, u32)> {
    let dev = std::fs::metadata(path)
        .with_context(|| format!("reading the metadata of {}", path.display()))?
        .dev();
    Ok((libc::major(dev), libc::minor(dev)))
}

/// The device profile of an emulated disk's mount, from its model (`emulate::request_cost`),
/// stored while this value lives and removed when it is dropped (after the unmount).
pub struct ModelProfile {
    device: (u32, u32),
    profile: DeviceProfile,
}

impl ModelProfile {
    /// Stores the profile of the mount `config` describes (mounted already).
    pub fn save(config: &emulate::Config) -> Result<ModelProfile> {
        let mut far = disk::model_from_name(&config.model)?;
        let mut near = disk::model_from_name(&config.model)?;
        let cost =
            emulate::request_cost::model_cost(far.as_mut(), near.as_mut(), config.time_scale);
        let device = device_of(&config.mountpoint).context("reading the mount point's device")?;
        let root = File::open(&config.mountpoint).context("opening the mount point")?;
        let profile = DeviceProfile {
            request_seconds: cost.far_request_seconds,
            near_request_seconds: Some(cost.near_request_seconds),
            bytes_per_second: cost.bytes_per_second,
            mount_id: mount_id_of(&root),
        };
        profile::save(device.0, device.1, &profile)
            .context("saving the emulated disk's device profile")?;
        Ok(ModelProfile { device, profile })
    }

    /// The profile stored.
    pub fn profile(&self) -> DeviceProfile {
        self.profile
    }
}

impl Drop for ModelProfile {
    fn drop(&mut self) {
        profile::remove(self.device.0, self.device.1);
    }
}
