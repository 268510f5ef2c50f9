//! Infill on the emulated 7200 RPM disk, from its model's device profile (near-request cost times
//! rate: a gap of one page pays there): a list of every other page is served in fewer requests
//! than with infill off, and the disk is busy no longer (its model time, a counter, not a clock).
//! Skips, saying so, where FUSE is missing.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use bench::cache::Eviction;
use bench::device_profile::ModelProfile;
use libprefetch::{AccessEntry, CallbackInfo, Client, Config, Mode};

const PAGE: u64 = 4096;
/// Every other page of the first 4 MiB: gaps of one page.
const LISTED: u64 = 512;

/// The emulated disk's counters that matter here.
#[derive(Debug, Clone, Copy)]
struct Served {
    requests: u64,
    busy_seconds: f64,
}

fn served(mountpoint: &Path) -> Served {
    let text = std::fs::read_to_string(mountpoint.join(".emulate-stats")).unwrap();
    let stats: serde_json::Value = serde_json::from_str(&text).unwrap();
    Served {
        requests: stats["requests"].as_u64().unwrap(),
        busy_seconds: stats["busy_seconds"].as_f64().unwrap(),
    }
}

/// Prefetches the list from a cold cache with `infill` and reads it; returns what the disk served
/// and the gap pages the library advised.
fn prefetch_and_read(mountpoint: &Path, infill: Option<u64>) -> (Served, u64) {
    let file = File::open(mountpoint.join("data")).unwrap();
    Eviction::Fadvise.evict(&file).unwrap();
    let before = served(mountpoint);
    let config = Config {
        infill_bytes: infill,
        background_advice: false,
        ..Config::default()
    };
    let client = Client::register(config, |_: &Client, _: CallbackInfo| {}).unwrap();
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    let region = client.register_region(fd, 0, 8 << 20).unwrap();
    let list: Vec<AccessEntry> = (0..LISTED)
        .map(|i| AccessEntry {
            offset: 2 * i * PAGE,
            fd,
            mark: false,
        })
        .collect();
    client
        .request_prefetching(&list, Mode::SET | Mode::DONE | Mode::WHOLE_LIST)
        .unwrap();
    client.settle();
    let mut page = vec![0u8; PAGE as usize];
    for entry in &list {
        file.read_exact_at(&mut page, entry.offset).unwrap();
    }
    // The rounds those reads started are advised before the close is noted (a round advised
    // after it would open a private descriptor that keeps the mount busy).
    client.settle();
    let infill_pages = client.stats().infill_pages;
    client.unregister_region(region).unwrap();
    // Without the preloaded interposers the library is told of the close itself, so that it
    // retires its private descriptor of the file and the mount can go at the end.
    libprefetch::note_close(fd);
    drop(file);
    let after = served(mountpoint);
    let delta = Served {
        requests: after.requests - before.requests,
        busy_seconds: after.busy_seconds - before.busy_seconds,
    };
    (delta, infill_pages)
}

#[test]
fn infill_serves_fewer_requests_in_no_more_disk_time() {
    if let Some(reason) = emulate::fuse_kernel_missing() {
        println!("skipped (kernel feature missing): {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The model's profile is stored for the mount in this test's own cache directory (the only
    // test of this binary, so no other thread reads the environment).
    std::env::set_var("XDG_CACHE_HOME", dir.path().join("cache"));
    let backing = dir.path().join("backing");
    let mountpoint = dir.path().join("mnt");
    std::fs::create_dir_all(&backing).unwrap();
    std::fs::create_dir_all(&mountpoint).unwrap();
    std::fs::write(backing.join("data"), vec![7u8; 8 << 20]).unwrap();
    let mut config = emulate::Config::new("st3500320as", &backing, &mountpoint);
    config.time_scale = 0.01;
    let mounted = emulate::mount(&config).unwrap();
    let profile = ModelProfile::save(&config).unwrap();
    assert!(
        profile.profile().infill_gap_bytes() >= PAGE,
        "{:?}",
        profile.profile()
    );
    let (off, off_infill) = prefetch_and_read(&mountpoint, Some(0));
    let (auto, auto_infill) = prefetch_and_read(&mountpoint, None);
    drop(profile);
    mounted.unmount().unwrap();
    println!("served with infill: {auto:?}; without: {off:?}");
    assert_eq!(off_infill, 0);
    assert_eq!(auto_infill, LISTED - 1, "every one-page gap is filled");
    assert!(
        auto.requests < off.requests,
        "infill: {auto:?}, none: {off:?}"
    );
    assert!(
        auto.busy_seconds <= off.busy_seconds,
        "infill: {auto:?}, none: {off:?}"
    );
}
