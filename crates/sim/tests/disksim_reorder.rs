//! libprefetch's reorder buffer (ATC'09 s3.5) in the disk-timed simulator: uniform random
//! reads of an N-page file, fetched one buffer of K pages at a time in C-LOOK order, give an
//! average seek distance of 2N(K-1)/K(K+1) pages, within 5%. The policy runs crate `plan`'s
//! window and range code, the live library's.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sim::disksim::prefetch::planner;
use sim::disksim::prefetch::reorder::{self, Sweep};
use sim::disksim::replace::clock;
use sim::disksim::run::disk_named;
use sim::disksim::{run_pair, EngineConfig, Layout, Pair, Step, Workload};
use sim::Metrics;

const PAGES: u64 = 32_768;

fn uniform_random_reads(seed: u64) -> Workload {
    let mut rng = SmallRng::seed_from_u64(seed);
    let steps = (0..PAGES)
        .map(|_| Step::at(0, rng.gen_range(0..PAGES)))
        .collect();
    Workload {
        layout: Layout::contiguous(&[PAGES], 0, 4096),
        streams: vec![steps],
    }
}

fn run(workload: &Workload, buffer_pages: u64, infill: &str) -> Metrics {
    let reorder = reorder::Options {
        buffer: Some(buffer_pages * 4096),
        infill: units::parse_size(infill).unwrap(),
        sweep: Sweep::Buffer,
    };
    let pair = Pair::new(clock::Options, reorder);
    let disk = disk_named("fixed:1").unwrap();
    let config = EngineConfig::with_cache(2 * buffer_pages as usize + 16);
    run_pair(&pair, workload, (&disk, "fifo"), config).unwrap()
}

#[test]
fn seek_distance_follows_the_papers_formula() {
    let workload = uniform_random_reads(7);
    for k in [16u64, 64, 256] {
        let metrics = run(&workload, k, "0");
        let measured = metrics.disk.avg_seek_bytes() / 4096.0;
        let n = PAGES as f64;
        let k = k as f64;
        let formula = 2.0 * n * (k - 1.0) / (k * (k + 1.0));
        let error = (measured - formula).abs() / formula;
        assert!(
            error < 0.05,
            "K = {k}: measured {measured:.1} pages, formula {formula:.1} ({:.1}% off)",
            error * 100.0
        );
    }
}

#[test]
fn infill_merges_gaps_into_fewer_longer_requests() {
    let workload = uniform_random_reads(8);
    let plain = run(&workload, 2048, "0");
    let filled = run(&workload, 2048, "16K");
    assert!(
        filled.disk.requests < plain.disk.requests,
        "{} vs {}",
        filled.disk.requests,
        plain.disk.requests
    );
    assert!(filled.disk.blocks_fetched > plain.disk.blocks_fetched);
    assert!(filled.disk.avg_request_blocks() > 1.5);
}

/// The live planner's `window` schedule starts each round's C-LOOK at the next page the application needs, so each
/// buffer costs about one extra random seek (N/3) and one gap less than the formula assumes:
/// (2N(K-1)/(K+1) - N(K-1)/(K(K+1)) + N/3) / K pages per seek.
#[test]
fn the_live_planner_pays_one_random_seek_per_round() {
    let workload = uniform_random_reads(9);
    for k in [64u64, 256] {
        let planner = planner::Options {
            buffer: Some(k * 4096),
            infill: Some(0),
            schedule: plan::Schedule::Window,
            batch: 0,
            reserve: None,
        };
        let pair = Pair::new(clock::Options, planner);
        let disk = disk_named("fixed:1").unwrap();
        let config = EngineConfig::with_cache(4 * k as usize + 16);
        let metrics = run_pair(&pair, &workload, (&disk, "fifo"), config).unwrap();
        let measured = metrics.disk.avg_seek_bytes() / 4096.0;
        let (n, k) = (PAGES as f64, k as f64);
        let predicted =
            (2.0 * n * (k - 1.0) / (k + 1.0) - n * (k - 1.0) / (k * (k + 1.0)) + n / 3.0) / k;
        let formula = 2.0 * n * (k - 1.0) / (k * (k + 1.0));
        let error = (measured - predicted).abs() / predicted;
        assert!(
            error < 0.05 && measured > formula * 1.08,
            "K = {k}: measured {measured:.1}, predicted {predicted:.1}, formula {formula:.1}"
        );
    }
}
