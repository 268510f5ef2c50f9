//! `prefetch disk profile`: checks a model against the papers, without I/O (every number is the
//! model's, i.e. simulated).
//!
//! * Seek time against distance, forward and backward: the libprefetch paper's s3.1 benchmark
//!   (Figure 1). Read one block, then blocks each `distance` bytes past the end of the previous
//!   one (forward) or before its start (backward), issued back to back; report the average
//!   time per read beside the time to read `distance` bytes at the model's peak rate. All reads
//!   of one distance meet the platter at the same angle, so the curve oscillates with distance
//!   (as the paper's does); the rotation-averaged cost is reported beside it.
//! * Infill threshold: the largest forward gap for which a separate read costs more than
//!   reading the gap and the block in the previous request (s3.3: about 32 KiB).
//! * Average random seek: random 4 KiB reads anywhere on the disk; the mean seek component
//!   must be within 5% of the preset's average seek (HDDs only).
//! * Reorder buffer: the s3.2 benchmark (Figure 2): random page reads from an N-page file laid
//!   out contiguously, taken K at a time and served in C-LOOK (address) order; the average seek
//!   distance against s3.5's 2N(K-1)/(K(K+1)) pages, and the model's runtime with one read
//!   outstanding and with each buffer queued at once.
//!
//! Deviations: distances between reads are measured start to start in pages, the quantity the
//! formula is derived for; the peak rate is measured as one 64 MiB read at address 0, the
//! average rate as 64 MiB at 64 places.

use crate::model::Hdd;
use crate::{DiskModel, Error, Request, Spec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::time::Duration;

/// Block size of the seek and random-read benchmarks, and page size of the reorder benchmark.
pub const BLOCK: u64 = 4096;
/// Reads per distance in the seek benchmark.
const READS_PER_DISTANCE: u64 = 64;
/// Tolerance of the paper checks.
pub const TOLERANCE: f64 = 0.05;
/// Size of the read that measures the peak rate, and of each sample of the average rate.
const PEAK_READ: u64 = 64 << 20;
/// Places on the disk where the average rate is sampled.
const RATE_SAMPLES: u64 = 64;

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Seed of the random benchmarks.
    pub seed: u64,
    /// Reads in the random-seek benchmark.
    pub random_reads: usize,
    /// File size N of the reorder benchmark, in pages.
    pub pages: u64,
    /// Random page reads in the reorder benchmark.
    pub accesses: u64,
    /// Reorder buffer sizes K to run.
    pub buffers: Vec<u64>,
}

impl Default for Config {
    /// The paper's sizes: a 256 MB file read at 256 MB of random pages, buffers of 1 to 65 536
    /// pages (4 KiB to 256 MiB).
    fn default() -> Self {
        Config {
            seed: 1,
            random_reads: 20_000,
            pages: 65_536,
            accesses: 65_536,
            buffers: (0..=16).map(|p| 1 << p).collect(),
        }
    }
}

/// One distance of the seek benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct SeekPoint {
    /// Gap between reads, bytes.
    pub distance: u64,
    /// Average time per read seeking forward, ms.
    pub forward_ms: f64,
    /// Average time per read seeking backward, ms.
    pub backward_ms: f64,
    /// Time to read `distance` bytes at the peak rate, ms.
    pub read_ms: f64,
    /// The HDD's seek curve alone for this distance from the start of the disk, ms.
    pub seek_curve_ms: Option<f64>,
    /// What a read at this distance costs on average over the platter's angle: overhead, the
    /// seek curve, half a revolution and the block's transfer, ms (HDDs, distances of at
    /// least one cylinder; the benchmark's own reads all meet the platter at one angle).
    pub rotation_averaged_ms: Option<f64>,
}

/// The random-seek check.
#[derive(Clone, Debug, Serialize)]
pub struct RandomSeek {
    /// Reads performed.
    pub reads: usize,
    /// The preset's average seek, ms.
    pub preset_ms: f64,
    /// Mean seek component of the reads, ms.
    pub measured_ms: f64,
    /// Mean rotational wait, ms.
    pub rotation_ms: f64,
    /// Half a revolution (the expected rotational wait), ms.
    pub half_revolution_ms: f64,
    /// Mean service time per read, ms.
    pub access_ms: f64,
    /// measured / preset - 1.
    pub error: f64,
}

/// One reorder-buffer size of the reorder benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct ReorderPoint {
    /// Buffer size K, pages.
    pub buffer_pages: u64,
    /// Average distance between successive reads, pages.
    pub distance_pages: f64,
    /// 2N(K-1)/(K(K+1)) pages (s3.5); meaningful for 5 <= K << N.
    pub formula_pages: f64,
    /// distance / formula - 1 (none for K = 1, where the formula gives 0).
    pub error: Option<f64>,
    /// Whether the formula applies (5 <= K <= N/64) and so is checked.
    pub checked: bool,
    /// Model time to serve all reads back to back, synchronously (one outstanding read), s.
    pub runtime_s: f64,
    /// Model time when each buffer's reads are queued at once (as libprefetch's batched
    /// WILLNEED does), s.
    pub queued_runtime_s: f64,
}

/// Everything `prefetch disk profile` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Profile {
    /// Model name as given.
    pub model: String,
    /// Where the numbers come from.
    pub setting: &'static str,
    /// Capacity in bytes.
    pub capacity: u64,
    /// Peak transfer rate (one 64 MiB read at address 0), bytes per second.
    pub peak_rate: f64,
    /// Sequential transfer rate averaged over the whole disk (64 MiB at 64 evenly spaced
    /// places), bytes per second.
    pub average_rate: f64,
    /// Seek time against distance (Figure 1).
    pub seek: Vec<SeekPoint>,
    /// Largest forward gap (4 KiB steps up to 128 KiB) that costs more to seek over than to
    /// read; `None` if even a zero gap is cheaper to seek.
    pub infill_threshold: Option<u64>,
    /// Random-seek check (HDDs only).
    pub random_seek: Option<RandomSeek>,
    /// File size N of the reorder benchmark, pages.
    pub reorder_pages: u64,
    /// Reorder-buffer benchmark (Figure 2 and the s3.5 formula).
    pub reorder: Vec<ReorderPoint>,
}

impl Profile {
    /// Runs every benchmark on fresh copies of the model named `name`.
    pub fn run(name: &str, spec: &Spec, config: &Config) -> Result<Profile, Error> {
        let peak_rate = peak_rate(spec.build()?.as_mut());
        let capacity = spec.build()?.capacity();
        let average_rate = average_rate(spec.build()?.as_mut());
        let seek = seek_curve(spec, capacity, peak_rate)?;
        Ok(Profile {
            model: name.to_string(),
            setting: "model (simulated)",
            capacity,
            peak_rate,
            average_rate,
            infill_threshold: infill_threshold(spec, peak_rate)?,
            random_seek: random_seek(spec, config)?,
            reorder_pages: config.pages,
            reorder: reorder(spec, config)?,
            seek,
        })
    }

    /// The profile as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a profile holds only numbers and strings")
    }

    /// True when every check that applies passes.
    pub fn passes(&self) -> bool {
        let seek_ok = self
            .random_seek
            .as_ref()
            .is_none_or(|r| r.error.abs() <= TOLERANCE);
        let reorder_ok = self
            .reorder
            .iter()
            .all(|p| !p.checked || p.error.is_some_and(|e| e.abs() <= TOLERANCE));
        seek_ok && reorder_ok
    }
}

/// s3.5: expected average seek distance, in pages, of uniform random reads of an N-page file
/// served K at a time in sorted order.
pub fn reorder_formula(n: u64, k: u64) -> f64 {
    let (n, k) = (n as f64, k as f64);
    2.0 * n * (k - 1.0) / (k * (k + 1.0))
}

/// A read issued at `arrival`.
fn request(addr: u64, len: u64, arrival: Duration) -> Request {
    Request {
        id: 0,
        addr,
        len,
        arrival,
    }
}

/// Serves block reads at `addrs` back to back, starting at `start`; returns the time spent
/// after `start`. Synchronous reads are issued when the previous one completes; queued ones
/// were all issued at `start` (so an HDD hides their command overhead).
fn serve_from(
    model: &mut dyn DiskModel,
    start: Duration,
    addrs: impl IntoIterator<Item = u64>,
    queued: bool,
) -> Duration {
    let mut now = start;
    for addr in addrs {
        let arrival = if queued { start } else { now };
        now += model.service(now, &request(addr, BLOCK, arrival));
    }
    now - start
}

fn peak_rate(model: &mut dyn DiskModel) -> f64 {
    let len = PEAK_READ.min(model.capacity());
    len as f64
        / model
            .service(Duration::ZERO, &request(0, len, Duration::ZERO))
            .as_secs_f64()
}

/// Sequential rate averaged over the disk: 64 MiB read at each of [`RATE_SAMPLES`] evenly
/// spaced places, after a 4 KiB read that brings the head there (not counted); the 64 MiB read
/// is queued behind it, so it pays no command overhead. Equal bytes per place make this the
/// whole-disk average (total bytes over total time) without reading the whole disk.
fn average_rate(model: &mut dyn DiskModel) -> f64 {
    let capacity = model.capacity();
    let len = PEAK_READ.min(capacity / RATE_SAMPLES).max(BLOCK);
    let mut now = Duration::ZERO;
    let mut reading = Duration::ZERO;
    for i in 0..RATE_SAMPLES {
        let addr = (capacity - len - BLOCK) / (RATE_SAMPLES - 1) * i / BLOCK * BLOCK;
        now += model.service(now, &request(addr, BLOCK, now));
        let took = model.service(now, &request(addr + BLOCK, len, Duration::ZERO));
        now += took;
        reading += took;
    }
    (RATE_SAMPLES * len) as f64 / reading.as_secs_f64()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Average time per read of the s3.1 benchmark at one distance and direction.
fn seek_time(spec: &Spec, distance: u64, forward: bool) -> Result<Option<f64>, Error> {
    let mut model = spec.build()?;
    let stride = BLOCK + distance;
    let reads = READS_PER_DISTANCE.min((model.capacity() - BLOCK) / stride);
    if reads == 0 {
        return Ok(None);
    }
    let top = reads * stride;
    let addr = |i: u64| {
        if forward {
            i * stride
        } else {
            top - i * stride
        }
    };
    let first = model.service(Duration::ZERO, &request(addr(0), BLOCK, Duration::ZERO));
    let rest = serve_from(model.as_mut(), first, (1..=reads).map(addr), false);
    Ok(Some(ms(rest) / reads as f64))
}

fn seek_curve(spec: &Spec, capacity: u64, peak_rate: f64) -> Result<Vec<SeekPoint>, Error> {
    let hdd = match spec {
        Spec::Hdd(params) => Some(Hdd::new(params.clone())?),
        _ => None,
    };
    let distances = std::iter::once(0).chain((9..64).map(|p| 1u64 << p));
    let mut points = Vec::new();
    for distance in distances.take_while(|&d| d < capacity / 2) {
        let (Some(forward_ms), Some(backward_ms)) = (
            seek_time(spec, distance, true)?,
            seek_time(spec, distance, false)?,
        ) else {
            break;
        };
        points.push(SeekPoint {
            distance,
            forward_ms,
            backward_ms,
            read_ms: distance as f64 / peak_rate * 1e3,
            seek_curve_ms: hdd.as_ref().map(|h| curve_at(h, distance)),
            rotation_averaged_ms: hdd.as_ref().and_then(|h| rotation_averaged(h, distance)),
        });
    }
    Ok(points)
}

/// What a read `distance` bytes past the block at 0 costs averaged over the platter's angle:
/// overhead, the seek curve, half a revolution and the block's transfer, ms; `None` within the
/// first cylinder (no seek).
fn rotation_averaged(hdd: &Hdd, distance: u64) -> Option<f64> {
    let seek = curve_at(hdd, distance);
    (seek > 0.0).then(|| {
        let fixed = ms(hdd.params().overhead) + ms(hdd.revolution()) / 2.0;
        fixed + seek + BLOCK as f64 / hdd.media_rate(distance) * 1e3
    })
}

/// Seek-curve time from the block at 0 to the block `distance` bytes after it, ms.
fn curve_at(hdd: &Hdd, distance: u64) -> f64 {
    let g = hdd.geometry();
    let cylinders = g.locate(0).cyl.abs_diff(g.locate(BLOCK + distance).cyl);
    hdd.seek_curve().time(cylinders as f64) * 1e3
}

fn infill_threshold(spec: &Spec, peak_rate: f64) -> Result<Option<u64>, Error> {
    let mut threshold = None;
    for distance in (0..=32).map(|i| i * BLOCK) {
        let Some(seek_ms) = seek_time(spec, distance, true)? else {
            break;
        };
        if seek_ms > (distance + BLOCK) as f64 / peak_rate * 1e3 {
            threshold = Some(distance);
        }
    }
    Ok(threshold)
}

fn random_seek(spec: &Spec, config: &Config) -> Result<Option<RandomSeek>, Error> {
    let Spec::Hdd(params) = spec else {
        return Ok(None);
    };
    let mut disk = Hdd::new(params.clone())?;
    let blocks = disk.capacity() / BLOCK;
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let (mut seek, mut rotation, mut now) = (0.0, 0.0, Duration::ZERO);
    for _ in 0..config.random_reads {
        let addr = rng.gen_range(0..blocks) * BLOCK;
        now += disk.service(now, &request(addr, BLOCK, now));
        seek += ms(disk.last_access().seek);
        rotation += ms(disk.last_access().rotation);
    }
    let reads = config.random_reads.max(1) as f64;
    let preset_ms = ms(params.average_seek);
    Ok(Some(RandomSeek {
        reads: config.random_reads,
        preset_ms,
        measured_ms: seek / reads,
        rotation_ms: rotation / reads,
        half_revolution_ms: ms(disk.revolution()) / 2.0,
        access_ms: ms(now) / reads,
        error: seek / reads / preset_ms - 1.0,
    }))
}

fn reorder(spec: &Spec, config: &Config) -> Result<Vec<ReorderPoint>, Error> {
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let pages: Vec<u64> = (0..config.accesses)
        .map(|_| rng.gen_range(0..config.pages))
        .collect();
    config
        .buffers
        .iter()
        .map(|&k| reorder_point(spec, config.pages, &pages, k.max(1)))
        .collect()
}

fn reorder_point(spec: &Spec, n: u64, accesses: &[u64], k: u64) -> Result<ReorderPoint, Error> {
    let buffers: Vec<Vec<u64>> = accesses
        .chunks(k as usize)
        .map(|chunk| {
            let mut sorted = chunk.to_vec();
            sorted.sort_unstable();
            sorted
        })
        .collect();
    let order: Vec<u64> = buffers.concat();
    let moves = order.windows(2).map(|w| w[0].abs_diff(w[1]));
    let distance_pages = moves.sum::<u64>() as f64 / (order.len().max(2) - 1) as f64;
    let formula_pages = reorder_formula(n, k);
    Ok(ReorderPoint {
        buffer_pages: k,
        distance_pages,
        formula_pages,
        error: (formula_pages > 0.0).then(|| distance_pages / formula_pages - 1.0),
        checked: k >= 5 && k <= n / 64,
        runtime_s: run_buffers(spec, &buffers, false)?,
        queued_runtime_s: run_buffers(spec, &buffers, true)?,
    })
}

/// Model time, in seconds, to read the buffers one after the other, each in sorted order; with
/// `queued`, each buffer's reads are all issued when the buffer starts.
fn run_buffers(spec: &Spec, buffers: &[Vec<u64>], queued: bool) -> Result<f64, Error> {
    let mut model = spec.build()?;
    let mut now = Duration::ZERO;
    for buffer in buffers {
        now += serve_from(
            model.as_mut(),
            now,
            buffer.iter().map(|p| p * BLOCK),
            queued,
        );
    }
    Ok(now.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec_from_name;

    fn spec(name: &str) -> Spec {
        spec_from_name(name).unwrap()
    }

    /// A configuration that runs the random-seek check only.
    fn random_only(reads: usize) -> Config {
        Config {
            random_reads: reads,
            buffers: Vec::new(),
            ..Config::default()
        }
    }

    /// Every HDD preset's mean random seek is within 5% of its datasheet average, and its mean
    /// rotational wait within 5% of half a revolution.
    #[test]
    fn random_seek_matches_each_preset() {
        for name in ["st3500320as", "ibm-36z15", "hitachi-18zx"] {
            let r = random_seek(&spec(name), &random_only(20_000))
                .unwrap()
                .unwrap();
            assert!(r.error.abs() < TOLERANCE, "{name}: {r:?}");
            let rotation_error = r.rotation_ms / r.half_revolution_ms - 1.0;
            assert!(rotation_error.abs() < TOLERANCE, "{name}: {r:?}");
        }
    }

    /// The papers' rotational delays: 4.17 ms at 7200 RPM, 3.0 ms at 10K RPM.
    #[test]
    fn half_revolutions_are_the_papers_rotational_delays() {
        let half = |name| {
            random_seek(&spec(name), &random_only(1))
                .unwrap()
                .unwrap()
                .half_revolution_ms
        };
        assert!((half("st3500320as") - 4.1667).abs() < 1e-3);
        assert!((half("ibm-36z15") - 3.0).abs() < 1e-9);
        assert!((half("hitachi-18zx") - 3.0).abs() < 1e-9);
    }

    /// Random-seek checks do not apply to SSDs or constant models.
    #[test]
    fn random_seek_is_for_hdds_only() {
        assert!(random_seek(&spec("nvme"), &random_only(10))
            .unwrap()
            .is_none());
        assert!(random_seek(&spec("fixed:9.5"), &random_only(10))
            .unwrap()
            .is_none());
    }

    /// s3.5: with the paper's 256 MB file (N = 65 536 pages) and as many random page reads,
    /// sorted K at a time, the average distance is 2N(K-1)/(K(K+1)) within 5% for 8 <= K <= 1024.
    /// (Distances do not depend on the model; the constant model keeps the test fast.)
    #[test]
    fn reorder_distance_matches_the_formula() {
        let config = Config {
            buffers: vec![8, 32, 128, 1024],
            random_reads: 0,
            ..Config::default()
        };
        for point in reorder(&spec("fixed:1"), &config).unwrap() {
            assert!(point.checked, "{point:?}");
            assert!(point.error.unwrap().abs() < TOLERANCE, "{point:?}");
        }
    }

    #[test]
    fn reorder_formula_values() {
        assert_eq!(reorder_formula(65_536, 1), 0.0);
        assert!((reorder_formula(65_536, 2) - 65_536.0 / 3.0).abs() < 1e-9);
        assert!((reorder_formula(100, 9) - 2.0 * 100.0 * 8.0 / 90.0).abs() < 1e-12);
    }

    /// Figure 2's shape on the 7200 RPM model: a larger reorder buffer never makes the run
    /// slower, and a buffer covering the whole list is many times faster than none.
    #[test]
    fn reorder_runtime_falls_with_buffer_size() {
        let config = Config {
            pages: 4096,
            accesses: 4096,
            buffers: vec![1, 16, 256, 4096],
            random_reads: 0,
            seed: 7,
        };
        let points = reorder(&spec("st3500320as"), &config).unwrap();
        let runtimes: Vec<f64> = points.iter().map(|p| p.queued_runtime_s).collect();
        assert!(runtimes.windows(2).all(|w| w[1] <= w[0]), "{runtimes:?}");
        assert!(runtimes[0] > 10.0 * runtimes[3], "{runtimes:?}");
    }

    /// Figure 1: on the 7200 RPM model, reading a gap is cheaper than seeking over it up to
    /// about 32 KiB (the infill threshold of s3.3).
    #[test]
    fn reads_are_cheaper_than_seeks_below_32_kib() {
        let spec = spec("st3500320as");
        let peak = peak_rate(spec.build().unwrap().as_mut());
        let threshold = infill_threshold(&spec, peak).unwrap().unwrap();
        assert!((28 * 1024..=36 * 1024).contains(&threshold), "{threshold}");
    }

    /// Figure 1: short seeks are faster forward than backward (hence C-LOOK), and long seeks
    /// cost several milliseconds in both directions.
    #[test]
    fn short_seeks_are_cheaper_forward() {
        let spec = spec("st3500320as");
        for distance in [0, 4096, 32 * 1024, 256 * 1024] {
            let forward = seek_time(&spec, distance, true).unwrap().unwrap();
            let backward = seek_time(&spec, distance, false).unwrap().unwrap();
            assert!(forward < backward, "{distance}: {forward} vs {backward}");
        }
        for distance in [1u64 << 36, 1 << 37] {
            let forward = seek_time(&spec, distance, true).unwrap().unwrap();
            assert!((5.0..20.0).contains(&forward), "{distance}: {forward}");
        }
    }

    /// The IBM drive's whole-disk average rate is the competitive-prefetching paper's 51.3 MB/s.
    #[test]
    fn average_rate_of_the_ibm_model() {
        let rate = average_rate(spec("ibm-36z15").build().unwrap().as_mut());
        assert!((rate / 51.3e6 - 1.0).abs() < TOLERANCE, "{rate}");
    }

    /// The peak rate of the 7200 RPM model is the paper's "about 105 MB/s".
    #[test]
    fn peak_rate_of_the_7200_rpm_model() {
        let rate = peak_rate(spec("st3500320as").build().unwrap().as_mut());
        assert!((rate / 105e6 - 1.0).abs() < TOLERANCE, "{rate}");
    }
}
