//! Hand-computed service times on a small disk with round numbers.
//!
//! The test disk: 6000 RPM (10 ms per revolution), 2 heads, one zone, 51 200-byte tracks
//! (5 120 bytes = 1 ms of transfer), 100 cylinders; seek 1 ms track-to-track, 10 ms full
//! stroke; head switch 0.5 ms (head skew 0.05 revolution), cylinder skew 0.1 revolution;
//! controller overhead 0.2 ms; bus 51.2 MB/s (5 120 bytes in 0.1 ms).

use super::*;

const TRACK: u64 = 51_200;
const BLOCK: u64 = 5_120;

fn params(cache: Option<ReadAhead>) -> HddParams {
    HddParams {
        capacity: 100 * 2 * TRACK,
        rpm: 6000.0,
        heads: 2,
        zones: 1,
        outer_rate: TRACK as f64 / 0.01,
        inner_rate: TRACK as f64 / 0.01,
        track_to_track: Duration::from_millis(1),
        average_seek: Duration::from_millis(5),
        full_stroke: Duration::from_millis(10),
        head_switch: Duration::from_micros(500),
        overhead: Duration::from_micros(200),
        bus_rate: 51.2e6,
        cache,
    }
}

fn disk() -> Hdd {
    Hdd::new(params(None)).unwrap()
}

fn cached_disk() -> Hdd {
    Hdd::new(params(Some(ReadAhead {
        readahead: 4 * BLOCK,
        segment: 8 * BLOCK,
        segments: 2,
    })))
    .unwrap()
}

/// Service time in ms of a read of `len` bytes at `addr` issued at `at_ms` (synchronously: it
/// arrives when it is started).
fn serve(disk: &mut Hdd, at_ms: f64, addr: u64, len: u64) -> f64 {
    serve_queued(disk, at_ms, at_ms, addr, len)
}

/// Service time in ms of a read that arrived at `arrival_ms` and is started at `at_ms`.
fn serve_queued(disk: &mut Hdd, arrival_ms: f64, at_ms: f64, addr: u64, len: u64) -> f64 {
    let ms = |ms: f64| Duration::from_secs_f64(ms / 1e3);
    let req = Request {
        id: 0,
        addr,
        len,
        arrival: ms(arrival_ms),
    };
    disk.service(ms(at_ms), &req).as_secs_f64() * 1e3
}

fn assert_ms(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-6, "got {got} ms, want {want} ms");
}

#[test]
fn geometry_of_the_test_disk() {
    let d = disk();
    assert_eq!(d.capacity(), 100 * 2 * TRACK);
    assert_eq!(d.geometry().cylinders(), 100);
    assert_ms(d.revolution().as_secs_f64() * 1e3, 10.0);
}

/// Head on the first byte's track at t = 0: overhead 0.2 ms brings the platter to angle 0.02,
/// so byte 0 (angle 0) is 0.98 revolution away: 0.2 + 9.8 + 1 (transfer) = 11 ms.
#[test]
fn read_just_missed_waits_almost_a_revolution() {
    assert_ms(serve(&mut disk(), 0.0, 0, BLOCK), 11.0);
}

/// Byte 25 600 sits at angle 0.5: 0.2 + 4.8 + 1 = 6 ms.
#[test]
fn rotational_wait_follows_the_angle() {
    assert_ms(serve(&mut disk(), 0.0, TRACK / 2, BLOCK), 6.0);
}

/// Rotation is tracked from absolute time: at t = 3 ms the platter is at 0.32 after the
/// overhead, so byte 0 is 0.68 revolution away: 0.2 + 6.8 + 1 = 8 ms.
#[test]
fn think_time_turns_the_platter() {
    assert_ms(serve(&mut disk(), 3.0, 0, BLOCK), 8.0);
}

/// Track (0, 1) starts at the head skew 0.05: 0.2 + 0.5 (head switch) brings the platter to
/// 0.07, 0.98 revolution past it: 0.2 + 0.5 + 9.8 + 1 = 11.5 ms.
#[test]
fn head_switch_within_a_cylinder() {
    assert_ms(serve(&mut disk(), 0.0, TRACK, BLOCK), 11.5);
}

/// Cylinder 1 starts at skew 0.1 + 0.05 = 0.15: 0.2 + 1 (seek) = 1.2 ms is angle 0.12, wait
/// 0.3 ms, transfer 1 ms: 2.5 ms.
#[test]
fn track_to_track_seek() {
    let mut d = disk();
    assert_ms(serve(&mut d, 0.0, 2 * TRACK, BLOCK), 2.5);
    let access = d.last_access();
    assert_eq!(access.cylinders, 1);
    assert_ms(access.seek.as_secs_f64() * 1e3, 1.0);
    assert_ms(access.rotation.as_secs_f64() * 1e3, 0.3);
}

/// Cylinder 99 starts at angle frac(99 * 0.15) = 0.85: 0.2 + 10 (full stroke) = 10.2 ms is
/// angle 0.02, wait 8.3 ms, transfer 1 ms: 19.5 ms.
#[test]
fn full_stroke_seek() {
    assert_ms(serve(&mut disk(), 0.0, 99 * 2 * TRACK, BLOCK), 19.5);
}

/// Half a track, then a head switch hidden by the skew, then half the next track:
/// 0.2 + 4.8 + 5 + 0.5 + 5 = 15.5 ms.
#[test]
fn sequential_read_crosses_a_track_boundary_without_losing_a_revolution() {
    assert_ms(serve(&mut disk(), 0.0, TRACK / 2, TRACK), 15.5);
}

/// Without read-ahead, the next sequential block issued when the last one completes has
/// already passed the head by the time the overhead is paid: 0.2 + 9.8 + 1 = 11 ms.
#[test]
fn back_to_back_blocks_lose_a_revolution_without_cache() {
    let mut d = disk();
    assert_ms(serve(&mut d, 0.0, 0, BLOCK), 11.0);
    assert_ms(serve(&mut d, 11.0, BLOCK, BLOCK), 11.0);
}

/// A request queued while the previous one was served had its command processed meanwhile:
/// no overhead, so the next block (at angle 0.1, under the head at 11 ms) streams in 1 ms.
#[test]
fn queued_command_hides_its_overhead() {
    let mut d = disk();
    assert_ms(serve(&mut d, 0.0, 0, BLOCK), 11.0);
    assert_ms(serve_queued(&mut d, 0.0, 11.0, BLOCK, BLOCK), 1.0);
    assert_eq!(d.last_access().overhead, Duration::ZERO);
}

/// Queued for only 0.05 ms, the command still needs 0.15 ms: 0.15 ms puts the platter at
/// 0.115, past the block (0.1), so it waits 0.985 revolution: 0.15 + 9.85 + 1 = 11 ms.
#[test]
fn briefly_queued_command_pays_the_rest_of_its_overhead() {
    let mut d = disk();
    serve(&mut d, 0.0, 0, BLOCK);
    assert_ms(serve_queued(&mut d, 10.95, 11.0, BLOCK, BLOCK), 11.0);
}

/// With read-ahead the drive kept streaming after the first block: the second one arrives
/// from the platter 1 ms after the first completed.
#[test]
fn read_ahead_serves_the_next_block_at_media_rate() {
    let mut d = cached_disk();
    assert_ms(serve(&mut d, 0.0, 0, BLOCK), 11.0);
    assert_ms(serve(&mut d, 11.0, BLOCK, BLOCK), 1.0);
    assert!(d.last_access().cache_hit);
}

/// After 8 ms of think time the stream has read ahead (up to its 4-block limit), so the next
/// block is in the buffer: overhead plus bus transfer, 0.2 + 0.1 = 0.3 ms.
#[test]
fn block_already_read_ahead_costs_overhead_and_bus() {
    let mut d = cached_disk();
    serve(&mut d, 0.0, 0, BLOCK);
    serve(&mut d, 11.0, BLOCK, BLOCK);
    assert_ms(serve(&mut d, 20.0, 2 * BLOCK, BLOCK), 0.3);
}

/// A stream that stopped at its limit (5 blocks, reached at 15 ms) does not read on while
/// stopped: a hit on its last block at 30 ms extends it, but the next block must wait for the
/// platter: the block at angle 0.5 passes at 35 ms, so a request at 31 ms ends at 36 ms (5 ms).
#[test]
fn stopped_stream_resumes_only_when_the_platter_comes_round() {
    let mut d = cached_disk();
    serve(&mut d, 0.0, 0, BLOCK);
    assert_ms(serve(&mut d, 30.0, 4 * BLOCK, BLOCK), 0.3);
    assert_ms(serve(&mut d, 31.0, 5 * BLOCK, BLOCK), 5.0);
}

/// Re-reading the block just read is a buffer hit.
#[test]
fn rereading_the_last_block_hits_the_buffer() {
    let mut d = cached_disk();
    serve(&mut d, 0.0, 0, BLOCK);
    assert_ms(serve(&mut d, 11.0, 0, BLOCK), 0.3);
}

/// A block far away is a miss even with the cache: same as the full-stroke case, measured
/// from the head's position at the end of the first read (cylinder 0).
#[test]
fn far_block_misses_the_cache() {
    let mut d = cached_disk();
    serve(&mut d, 0.0, 0, BLOCK);
    let t = serve(&mut d, 11.0, 99 * 2 * TRACK, BLOCK);
    assert!(!d.last_access().cache_hit);
    // 11 + 0.2 + 10 = 21.2 ms is angle 0.12; cylinder 99 starts at 0.85: wait 7.3 ms.
    assert_ms(t, 0.2 + 10.0 + 7.3 + 1.0);
}

/// Two interleaved streams: after the head leaves stream A (blocks 0..) for B (at cylinder 1),
/// what A had read ahead stays in an older segment, so A's next block is a buffer hit
/// (overhead + bus = 0.3 ms) instead of a seek back.
#[test]
fn older_segment_keeps_an_interrupted_stream() {
    let mut d = cached_disk();
    serve(&mut d, 0.0, 0, BLOCK);
    // At 20 ms, A's stream has read ahead to its limit (5 blocks).
    serve(&mut d, 20.0, 2 * TRACK, BLOCK);
    assert!(!d.last_access().cache_hit);
    assert_ms(serve(&mut d, 40.0, BLOCK, BLOCK), 0.3);
    assert!(d.last_access().cache_hit);
    // Beyond what A read ahead (5 blocks) is a miss.
    serve(&mut d, 60.0, 6 * BLOCK, BLOCK);
    assert!(!d.last_access().cache_hit);
}

/// With a single segment, leaving the stream forgets it.
#[test]
fn single_segment_forgets_an_interrupted_stream() {
    let mut d = Hdd::new(params(Some(ReadAhead {
        readahead: 4 * BLOCK,
        segment: 8 * BLOCK,
        segments: 1,
    })))
    .unwrap();
    serve(&mut d, 0.0, 0, BLOCK);
    serve(&mut d, 20.0, 2 * TRACK, BLOCK);
    serve(&mut d, 40.0, BLOCK, BLOCK);
    assert!(!d.last_access().cache_hit);
}

/// A request issued while the actuator is busy waits for it.
#[test]
fn busy_actuator_queues_the_request() {
    let mut d = disk();
    assert_ms(serve(&mut d, 0.0, 0, BLOCK), 11.0);
    // Issued at 5 ms, started at 11 ms: 6 ms of waiting, no overhead left (it was queued),
    // and the block is under the head at 11 ms: 6 + 1 ms.
    assert_ms(serve(&mut d, 5.0, BLOCK, BLOCK), 6.0 + 1.0);
}

/// Requests past the end are clamped to the last byte instead of panicking.
#[test]
fn requests_past_the_end_are_clamped() {
    let mut d = disk();
    let t = serve(&mut d, 0.0, u64::MAX - 10, 100);
    assert!(t > 0.0 && t < 30.0, "{t}");
    assert_eq!(d.head(), d.capacity());
}

#[test]
fn impossible_parameters_are_errors() {
    let mut p = params(None);
    p.average_seek = Duration::from_millis(2);
    let err = Hdd::new(p).unwrap_err().to_string();
    assert!(err.contains("average seek"), "{err}");
    let mut p = params(None);
    p.inner_rate = p.outer_rate * 2.0;
    assert!(Hdd::new(p).is_err());
    let mut p = params(None);
    p.rpm = 0.0;
    assert!(Hdd::new(p).is_err());
}
