//! Schedulers driving the 7200 RPM model, as the emulator and the simulator use them: a batch of
//! random requests over the whole disk, queued at once, is served much faster in C-LOOK or SSTF
//! order than in arrival order, because the seeks get shorter (libprefetch s3.1-3.2). (Over a
//! small region the gain is small: the gaps are then within a cylinder or two and rotation
//! dominates, as in the paper's Figure 1 between 1 and 5 MB.)

use disk::{model_from_name, scheduler_from_name, Request};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// Serves `addrs`, all queued at time 0, in `scheduler`'s order; returns the total model time
/// and the average distance between successive requests in bytes.
fn serve_batch(scheduler: &str, addrs: &[u64]) -> (Duration, f64) {
    let mut model = model_from_name("st3500320as").unwrap();
    let mut queue = scheduler_from_name(scheduler).unwrap();
    for (id, &addr) in addrs.iter().enumerate() {
        queue.push(Request {
            id: id as u64,
            addr,
            len: 4096,
            arrival: Duration::ZERO,
        });
    }
    let (mut now, mut distance, mut served) = (Duration::ZERO, 0u64, 0u64);
    while let Some(req) = queue.pop(model.head(), now) {
        distance += model.head().abs_diff(req.addr);
        now += model.service(now, &req);
        served += 1;
    }
    assert_eq!(served, addrs.len() as u64, "{scheduler} lost requests");
    (now, distance as f64 / served as f64)
}

const DISK: u64 = 500_000_000_000;

fn random_addrs(count: usize, span: u64) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    (0..count)
        .map(|_| rng.gen_range(0..span / 4096) * 4096)
        .collect()
}

#[test]
fn seek_ordering_beats_arrival_order_on_a_random_batch() {
    let addrs = random_addrs(512, DISK);
    let (fifo, fifo_distance) = serve_batch("fifo", &addrs);
    for scheduler in ["clook", "sstf"] {
        let (time, distance) = serve_batch(scheduler, &addrs);
        assert!(time * 2 < fifo, "{scheduler}: {time:?} vs fifo {fifo:?}");
        assert!(
            distance * 50.0 < fifo_distance,
            "{scheduler}: {distance} vs {fifo_distance}"
        );
    }
}

/// Deadline with a long expiry sweeps like C-LOOK (it restarts at the oldest request instead of
/// the lowest address, one extra long seek per sweep at most).
#[test]
fn deadline_without_expiry_is_close_to_clook() {
    let addrs = random_addrs(512, DISK);
    let (clook, _) = serve_batch("clook", &addrs);
    let (deadline, _) = serve_batch("deadline:100000", &addrs);
    let ratio = deadline.as_secs_f64() / clook.as_secs_f64();
    assert!(
        (0.9..1.1).contains(&ratio),
        "deadline {deadline:?} vs clook {clook:?}"
    );
}

/// Over 1 GiB the same batch gains much less from ordering: rotation, not seeking, dominates.
#[test]
fn ordering_gains_little_when_rotation_dominates() {
    let addrs = random_addrs(512, 1 << 30);
    let (fifo, _) = serve_batch("fifo", &addrs);
    let (clook, _) = serve_batch("clook", &addrs);
    let ratio = clook.as_secs_f64() / fifo.as_secs_f64();
    assert!(
        (0.6..1.0).contains(&ratio),
        "clook {clook:?} vs fifo {fifo:?}"
    );
}
