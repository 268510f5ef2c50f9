//! Real FUSE mounts of the emulated disk in temporary directories, served on
//! background threads of the test process. Each test prints "skipped (kernel feature missing): REASON"
//! and passes where /dev/fuse or fusermount3 is missing.
//!
//! Timing tests compare the latency and throughput that a program sees through
//! the mount with the disk model's own prediction for the same requests (from
//! the emulator's counters, or constant for `fixed:MS`), never with a fixed
//! wall-clock number: they check that the emulator keeps the model's time,
//! whatever the model says. Medians of a few dozen reads keep them steady on a
//! busy machine.

use emulate::measure::{self, PAGE};
use emulate::{Config, Mounted, Placement, Stats};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

const MIB: usize = 1024 * 1024;

/// Held by the timing tests so that they do not run at the same time as each
/// other (the other tests are light and run beside them).
static TIMING: Mutex<()> = Mutex::new(());

fn timing_lock() -> MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A backing directory, a mount point and the mounted disk (unmounted on drop).
struct Fixture {
    mounted: Option<Mounted>,
    dir: tempfile::TempDir,
}

impl Fixture {
    /// Mounts `model` over a backing directory filled by `fill`, or returns
    /// None (after printing why) where FUSE is unavailable.
    fn mount(model: &str, time_scale: f64, fill: impl FnOnce(&Path)) -> Option<Self> {
        Self::mount_placed(model, time_scale, Placement::Contiguous, fill)
    }

    /// As `mount`, with the given placement of files on the disk.
    fn mount_placed(
        model_name: &str,
        time_scale: f64,
        placement: Placement,
        fill: impl FnOnce(&Path),
    ) -> Option<Self> {
        let model = disk::model_from_name(model_name).expect("disk model");
        Self::mount_model(model_name, |_| model, time_scale, placement, fill)
    }

    /// Mounts a backing directory filled by `fill` with the model `model_for` builds once the files exist,
    /// reported under `name`.
    fn mount_model(
        name: &str,
        model_for: impl FnOnce(&Path) -> Box<dyn disk::DiskModel>,
        time_scale: f64,
        placement: Placement,
        fill: impl FnOnce(&Path),
    ) -> Option<Self> {
        if let Some(reason) = emulate::fuse_kernel_missing() {
            println!("skipped (kernel feature missing): {reason}");
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let backing = dir.path().join("backing");
        let mountpoint = dir.path().join("mnt");
        fs::create_dir(&backing).unwrap();
        fs::create_dir(&mountpoint).unwrap();
        fill(&backing);
        let model = model_for(&backing);
        let mut config = Config::new(name, &backing, &mountpoint);
        config.time_scale = time_scale;
        config.placement = placement;
        let mounted = emulate::mount_model(&config, model).expect("mount the emulated disk");
        Some(Fixture {
            mounted: Some(mounted),
            dir,
        })
    }

    fn backing(&self, name: &str) -> PathBuf {
        self.dir.path().join("backing").join(name)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join("mnt").join(name)
    }

    fn mounted(&self) -> &Mounted {
        self.mounted.as_ref().expect("mounted")
    }

    fn stats(&self) -> Stats {
        self.mounted().stats()
    }

    fn unmount(mut self) -> Stats {
        self.mounted
            .take()
            .expect("mounted")
            .unmount()
            .expect("unmount")
    }
}

/// Deterministic bytes that differ at every offset modulo 251.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ seed).collect()
}

fn write_file(path: &Path, bytes: &[u8]) {
    let mut file = File::create(path).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_all().unwrap();
}

#[test]
fn bytes_read_through_the_mount_equal_the_backing_files() {
    let sizes = [
        ("empty", 0),
        ("one", 1),
        ("page", 4095),
        ("big", 3 * MIB + 123),
    ];
    let Some(fixture) = Fixture::mount("st3500320as", 0.001, |dir| {
        fs::create_dir(dir.join("sub")).unwrap();
        for (seed, (name, size)) in sizes.iter().enumerate() {
            write_file(&dir.join(name), &pattern(*size, seed as u8));
        }
        write_file(&dir.join("sub/nested"), &pattern(70_000, 9));
    }) else {
        return;
    };
    for name in ["empty", "one", "page", "big", "sub/nested"] {
        let through_mount = fs::read(fixture.path(name)).unwrap();
        assert_eq!(
            through_mount,
            fs::read(fixture.backing(name)).unwrap(),
            "{name}"
        );
    }
    let stats = fixture.unmount();
    assert!(stats.requests > 0);
    assert!(
        stats.bytes >= (3 * MIB + 123 + 70_000 + 4096) as u64,
        "{stats:?}"
    );
}

#[test]
fn the_mount_is_read_only_and_lists_the_counters_file() {
    let Some(fixture) = Fixture::mount("fixed:1", 0.01, |dir| {
        write_file(&dir.join("data"), &pattern(8192, 1));
    }) else {
        return;
    };
    let error = File::create(fixture.path("new")).unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::EROFS), "{error}");
    let error = fs::OpenOptions::new()
        .write(true)
        .open(fixture.path("data"))
        .unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::EROFS), "{error}");
    let mut names: Vec<String> = fs::read_dir(fixture.path(""))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [".emulate-stats", "data"]);
    fs::read(fixture.path("data")).unwrap();
    let text = fs::read_to_string(fixture.path(".emulate-stats")).unwrap();
    let counters: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(counters["model"], "fixed:1");
    assert_eq!(counters["bytes"], 8192);
}

#[test]
fn cached_pages_do_not_reach_the_disk() {
    let Some(fixture) = Fixture::mount("fixed:1", 0.01, |dir| {
        write_file(&dir.join("data"), &pattern(MIB, 2));
    }) else {
        return;
    };
    fs::read(fixture.path("data")).unwrap();
    let warm = fixture.stats().requests;
    fs::read(fixture.path("data")).unwrap();
    assert_eq!(
        fixture.stats().requests,
        warm,
        "a second read of a cached file is free"
    );
    let file = File::open(fixture.path("data")).unwrap();
    measure::fadvise(&file, 0, 0, libc::POSIX_FADV_DONTNEED).unwrap();
    fs::read(fixture.path("data")).unwrap();
    assert!(
        fixture.stats().requests > warm,
        "DONTNEED evicts, as on a disk"
    );
}

#[test]
fn fixed_cost_reads_take_the_fixed_time() {
    // fixed:40 at time scale 0.5: every read should take 20 ms of wall time.
    let _serial = timing_lock();
    let Some(fixture) = Fixture::mount("fixed:40", 0.5, |dir| {
        write_file(&dir.join("data"), &pattern(4 * MIB, 3));
    }) else {
        return;
    };
    let offsets = measure::random_pages(25, 4 * MIB as u64);
    let samples =
        measure::cold_random_reads(fixture.mounted(), &fixture.path("data"), &offsets).unwrap();
    assert!(
        samples.iter().all(|s| s.requests == 1),
        "one disk request per cold read"
    );
    let ratio = measure::median(samples.iter().map(|s| s.latency / 0.020).collect());
    println!("emulated disk fixed:40, time scale 0.5: median latency / 20 ms = {ratio:.3}");
    assert!(
        (0.9..=1.1).contains(&ratio),
        "median latency is {ratio:.3} x the model's 20 ms"
    );
}

#[test]
fn random_4k_reads_take_the_models_time() {
    // A sparse file over most of the disk: seeks span the platter, as in the
    // preset's average-seek figure, and the backing file takes no space.
    let _serial = timing_lock();
    let span = 400u64 << 30;
    let Some(fixture) = Fixture::mount("st3500320as", 1.0, |dir| {
        File::create(dir.join("sparse"))
            .unwrap()
            .set_len(span)
            .unwrap();
    }) else {
        return;
    };
    let offsets = measure::random_pages(40, span);
    let samples =
        measure::cold_random_reads(fixture.mounted(), &fixture.path("sparse"), &offsets).unwrap();
    assert!(
        samples.iter().all(|s| s.requests == 1),
        "one 4 KiB request per cold read"
    );
    assert_eq!(fixture.stats().bytes, 40 * PAGE);
    let ratio = measure::median(samples.iter().map(|s| s.latency / s.predicted).collect());
    println!(
        "emulated disk st3500320as, time scale 1, random 4 KiB reads over 400 GiB: median \
         {:.3} ms measured, {:.3} ms predicted by the model; median per-read ratio {ratio:.3}",
        measure::median(samples.iter().map(|s| s.latency * 1e3).collect()),
        measure::median(samples.iter().map(|s| s.predicted * 1e3).collect()),
    );
    assert!(
        (0.9..=1.1).contains(&ratio),
        "median per-read latency ratio {ratio:.3}"
    );
}

#[test]
fn sequential_reads_run_at_the_models_rate() {
    let _serial = timing_lock();
    let size = 48 * MIB;
    let Some(fixture) = Fixture::mount("st3500320as", 1.0, |dir| {
        write_file(&dir.join("data"), &pattern(size, 5));
    }) else {
        return;
    };
    let path = fixture.path("data");
    let result = measure::sequential_read(fixture.mounted(), &path, 0, size as u64, true).unwrap();
    println!(
        "emulated disk st3500320as, time scale 1, sequential read with the whole file queued: \
         {:.1} MB/s measured, {:.1} MB/s predicted by the model ({} requests)",
        result.measured_mb_s, result.predicted_mb_s, result.requests
    );
    let ratio = result.measured_mb_s / result.predicted_mb_s;
    assert!((0.9..=1.1).contains(&ratio), "throughput ratio {ratio:.3}");
}

/// Descriptors of this process open on files under `dir`.
fn descriptors_under(dir: &Path) -> usize {
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.starts_with(dir))
        .count()
}

#[test]
fn backing_files_close_with_the_last_release() {
    let Some(fixture) = Fixture::mount("fixed:1", 0.01, |dir| {
        for index in 0..20 {
            write_file(&dir.join(format!("f{index}")), &pattern(5000, index));
        }
    }) else {
        return;
    };
    let backing = fixture.backing("");
    let opened: Vec<File> = (0..20)
        .map(|index| File::open(fixture.path(&format!("f{index}"))).unwrap())
        .collect();
    let second = File::open(fixture.path("f0")).unwrap();
    assert_eq!(
        descriptors_under(&backing),
        20,
        "one backing descriptor per open inode"
    );
    drop(opened);
    drop(second);
    // RELEASE reaches the file system shortly after close returns.
    let start = std::time::Instant::now();
    while descriptors_under(&backing) > 0 && start.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(descriptors_under(&backing), 0);
}

#[test]
fn physical_placement_puts_reads_at_the_files_extents() {
    let physical = |path: &Path| {
        let file = File::open(path).unwrap();
        emulate::fiemap::extents(&file).unwrap()[0].physical
    };
    // A 1 ms-per-request disk large enough to hold both files where the backing file system put them.
    let sized_to_hold_both = |dir: &Path| -> Box<dyn disk::DiskModel> {
        let end = physical(&dir.join("a")).max(physical(&dir.join("b"))) + 2 * MIB as u64;
        Box::new(disk::model::Fixed::new(
            std::time::Duration::from_millis(1),
            end,
        ))
    };
    let Some(fixture) = Fixture::mount_model(
        "fixed:1",
        sized_to_hold_both,
        0.01,
        Placement::Physical,
        |dir| {
            write_file(&dir.join("a"), &pattern(MIB, 6));
            write_file(&dir.join("b"), &pattern(MIB, 7));
        },
    ) else {
        return;
    };
    let (a, b) = (
        physical(&fixture.backing("a")),
        physical(&fixture.backing("b")),
    );
    for name in ["a", "b"] {
        let samples =
            measure::cold_random_reads(fixture.mounted(), &fixture.path(name), &[0]).unwrap();
        assert_eq!(samples[0].requests, 1);
    }
    // The head starts at 0, moves to a, reads a page, then moves to b.
    let stats = fixture.stats();
    assert_eq!(stats.seek_distance_bytes, a + b.abs_diff(a + PAGE));
}

/// A disk model with a bug: every request panics.
struct PanickingModel;

impl disk::DiskModel for PanickingModel {
    fn service(&mut self, _now: std::time::Duration, _req: &disk::Request) -> std::time::Duration {
        panic!("model bug (deliberate, for the test)")
    }
    fn head(&self) -> u64 {
        0
    }
    fn capacity(&self) -> u64 {
        1 << 30
    }
}

/// Runs `work` on another thread and returns its result, failing the test if it does not
/// finish within a harness timeout (today's failure mode is a hang, not slowness).
fn within_patience<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(work()).unwrap());
    receiver
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("finished instead of hanging")
}

fn is_mounted(path: &Path) -> bool {
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let path = path.to_str().unwrap();
    mounts
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(path))
}

/// A temporary directory with empty `backing` and `mnt` directories in it,
/// or `None` (the test skipped, and says why) where FUSE is missing.
fn empty_dirs() -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    if let Some(reason) = emulate::fuse_kernel_missing() {
        println!("skipped (kernel feature missing): {reason}");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let (backing, mountpoint) = (dir.path().join("backing"), dir.path().join("mnt"));
    fs::create_dir(&backing).unwrap();
    fs::create_dir(&mountpoint).unwrap();
    Some((dir, backing, mountpoint))
}

#[test]
fn a_panicking_actuator_fails_reads_with_eio_and_unmounts() {
    let Some((_dir, backing, mountpoint)) = empty_dirs() else {
        return;
    };
    write_file(&backing.join("data"), &pattern(64 * 1024, 5));
    let mut config = Config::new("panicking", &backing, &mountpoint);
    config.placement = Placement::Contiguous;
    let mounted = emulate::mount_model(&config, Box::new(PanickingModel)).unwrap();
    let data = mountpoint.join("data");
    let read = within_patience(move || fs::read(data).map_err(|e| e.raw_os_error()));
    assert_eq!(read, Err(Some(libc::EIO)));
    let outcome = within_patience(move || mounted.wait());
    assert!(
        matches!(&outcome, Err(emulate::Error::ActuatorFailed(why)) if why.contains("model bug")),
        "{outcome:?}"
    );
    assert!(!is_mounted(&mountpoint), "unmounted after the failure");
}

#[test]
fn the_request_log_lists_every_request_the_counters_count() {
    let Some((dir, backing, mountpoint)) = empty_dirs() else {
        return;
    };
    write_file(&backing.join("data"), &pattern(4 * MIB, 9));
    let log = dir.path().join("requests");
    let mut config = Config::new("fixed:1", &backing, &mountpoint);
    config.time_scale = 0.01;
    config.placement = Placement::Contiguous;
    config.request_log = Some(log.clone());
    let mounted = emulate::mount(&config).unwrap();
    let file = File::open(mountpoint.join("data")).unwrap();
    let mut page = vec![0u8; PAGE as usize];
    for offset in [3 * MIB as u64, 0, 2 * MIB as u64] {
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut page, offset).unwrap();
    }
    drop(file);
    let stats = mounted.unmount().unwrap();
    let text = fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(emulate::request_log::HEADER));
    let rows: Vec<Vec<u64>> = lines
        .map(|line| {
            line.split(' ')
                .skip(3)
                .map(|f| f.parse().unwrap())
                .collect()
        })
        .collect();
    assert!(stats.requests >= 3, "{stats:?}");
    assert_eq!(rows.len() as u64, stats.requests);
    assert_eq!(rows.iter().map(|row| row[1]).sum::<u64>(), stats.bytes);
    assert_eq!(
        rows[0][0],
        3 * MIB as u64,
        "the first read is the first request"
    );
}

#[test]
fn an_unwritable_request_log_is_refused_before_mounting() {
    let Some((dir, backing, mountpoint)) = empty_dirs() else {
        return;
    };
    let mut config = Config::new("fixed:1", &backing, &mountpoint);
    config.request_log = Some(dir.path().join("missing").join("requests"));
    let outcome = emulate::mount(&config).map(|_| ());
    assert!(
        matches!(&outcome, Err(emulate::Error::RequestLog { .. })),
        "{outcome:?}"
    );
    assert!(!is_mounted(&mountpoint));
}
