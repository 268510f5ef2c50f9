//! Seek-bound hard disk: one actuator, Ruemmler-Wilkes seek curve, rotation tracked from
//! absolute time, zoned transfer rate, track boundaries with skew, and an optional on-disk
//! read-ahead cache.
//!
//! # Serving a request at time `t`
//! ```text
//!   t ── overhead ──> seek (cylinders) ──> rotational wait ──> transfer, track by track
//!                     or head switch        (angle of the first     (head switch or 1-cylinder
//!                                            byte vs frac(t/rev))    seek between tracks; skew
//!                                                                    hides it)
//! ```
//! The controller overhead is paid by every command that was not already queued: a request
//! whose `arrival` is at least `overhead` before the actuator starts it had its command
//! processed while the previous one was served (tagged command queueing), so it pays nothing;
//! synchronous callers (arrival = start) pay all of it. The platter angle under the head at time
//! `t` is `frac(t / revolution)`: rotation is a function of absolute time, so think time between
//! requests moves the platter too.
//!
//! # Read-ahead cache (optional)
//! After a media read ending at byte `E`, the drive keeps reading `E..E+readahead` into its
//! buffer while idle (the *stream*). A later request starting inside the stream's segment is
//! served from it: at once if its bytes have already been read (overhead plus bus transfer), or
//! when the stream reaches its end; the stream then extends `readahead` past that end. If
//! seeking would be faster than waiting for the stream, the drive seeks instead. This is what
//! makes a small forward skip cost about the time to read the skipped bytes, and why, in the
//! libprefetch paper's Figure 1 (s3.1), reads are cheaper than seeks only below about 32 KiB:
//! below `overhead * rate` the command overhead dominates.
//!
//! When a request misses and the head leaves the stream, what the stream had read (at most
//! `segment` bytes) stays cached as one of `segments - 1` older segments, most recent first; a
//! request wholly inside one of them is served from the buffer. So interleaved sequential
//! streams (competitive prefetching's concurrent readers) each keep their read-ahead.
//!
//! Deviations: the papers give only average seek, rotation and rate; everything else here is a
//! standard model (Ruemmler and Wilkes 1994) with typical parameters. Segments hold ranges only
//! (no data); a request must lie wholly inside an older segment to hit it; the least recently
//! used segment is dropped when all are in use. Bus transfer overlaps media transfer (only
//! cache hits pay it). Requests that arrive while the actuator is busy wait for it (the
//! returned time includes the wait). Head switch time equals the head skew and a one-cylinder
//! seek equals the cylinder skew, so sequential reads never lose a revolution at a track
//! boundary. The stream stops when a command arrives (the frontier is taken at arrival).

pub mod geometry;
pub mod seek;

use crate::{DiskModel, Error, Request};
use geometry::{Geometry, Layout, Location};
use seek::{DistanceMass, FitError, SeekCurve};
use std::collections::VecDeque;
use std::time::Duration;

/// On-disk read-ahead cache settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadAhead {
    /// How far past the last request the drive reads on its own, bytes.
    pub readahead: u64,
    /// Most bytes one segment keeps behind its stream.
    pub segment: u64,
    /// Number of segments (the live stream's and older ones), at least 1.
    pub segments: usize,
}

/// Parameters of an [`Hdd`]; datasheet numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct HddParams {
    /// Capacity in bytes (the geometry rounds it up to whole cylinders).
    pub capacity: u64,
    /// Spindle speed, revolutions per minute.
    pub rpm: f64,
    /// Recording surfaces.
    pub heads: u64,
    /// Recording zones.
    pub zones: u64,
    /// Media transfer rate of the outermost zone, bytes per second.
    pub outer_rate: f64,
    /// Media transfer rate of the innermost zone, bytes per second.
    pub inner_rate: f64,
    /// One-cylinder seek time.
    pub track_to_track: Duration,
    /// Average seek time between two random byte addresses.
    pub average_seek: Duration,
    /// Seek time across all cylinders.
    pub full_stroke: Duration,
    /// Time to switch heads within a cylinder.
    pub head_switch: Duration,
    /// Controller time per command.
    pub overhead: Duration,
    /// Interface rate for data served from the cache, bytes per second.
    pub bus_rate: f64,
    /// Read-ahead cache; `None` disables it.
    pub cache: Option<ReadAhead>,
}

/// How the last request was served (for profiling and counters).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Access {
    /// Controller overhead.
    pub overhead: Duration,
    /// Seek to the first byte's cylinder (or head switch); zero for cache hits.
    pub seek: Duration,
    /// Rotational wait for the first byte; zero for cache hits.
    pub rotation: Duration,
    /// Everything else: transfer, track switches, waiting for the read-ahead stream.
    pub transfer: Duration,
    /// Cylinders travelled by the first seek.
    pub cylinders: u64,
    /// True when served from the read-ahead cache.
    pub cache_hit: bool,
}

/// Head position: cylinder and surface.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct HeadPos {
    cyl: u64,
    head: u64,
}

/// The read-ahead stream: the head is at `pos` at `time`, ready to read `anchor`, and keeps
/// reading until `limit`. Bytes from `low` up to where the stream has got are cached.
#[derive(Clone, Copy, Debug)]
struct Stream {
    low: u64,
    anchor: u64,
    time: f64,
    pos: HeadPos,
    limit: u64,
}

/// Result of walking the head over a byte range.
#[derive(Clone, Copy, Debug)]
struct Walk {
    /// First byte not yet read.
    addr: u64,
    /// Time the walk stopped (deadline or end).
    time: f64,
    pos: HeadPos,
    /// Last point where a track piece finished exactly: (addr, time, pos).
    exact: (u64, f64, HeadPos),
    first_seek: f64,
    first_wait: f64,
    cylinders: u64,
}

/// One way of serving a request, before it is chosen.
#[derive(Clone, Copy, Debug)]
struct Plan {
    done: f64,
    seek: f64,
    wait: f64,
    cylinders: u64,
    cache_hit: bool,
    pos: HeadPos,
    stream: Option<Stream>,
}

/// Angles closer than this (fraction of a revolution) count as equal, so that float rounding
/// never turns a zero wait into a full revolution.
const ANGLE_EPSILON: f64 = 1e-6;

/// Seek-distance bins per zone used to fit the seek curve.
const BINS_PER_ZONE: u64 = 32;

/// A hard disk timing model (see the module documentation).
#[derive(Clone, Debug)]
pub struct Hdd {
    params: HddParams,
    geometry: Geometry,
    seek: SeekCurve,
    revolution: f64,
    pos: HeadPos,
    last_end: u64,
    busy_until: f64,
    stream: Option<Stream>,
    /// Older segments as byte ranges, most recently used first.
    segments: VecDeque<(u64, u64)>,
    last: Access,
}

impl Hdd {
    /// Builds the model: lays out zones and fits the seek curve. Errors name the bad parameter.
    pub fn new(params: HddParams) -> Result<Hdd, Error> {
        validate(&params)?;
        let revolution = 60.0 / params.rpm;
        let layout = Layout {
            capacity: params.capacity,
            heads: params.heads,
            zones: params.zones,
            outer_track_bytes: (params.outer_rate * revolution) as u64,
            inner_track_bytes: (params.inner_rate * revolution) as u64,
            head_skew: params.head_switch.as_secs_f64() / revolution,
            cyl_skew: params.track_to_track.as_secs_f64() / revolution,
        };
        let geometry = Geometry::new(&layout);
        let seek = SeekCurve::fit(
            params.track_to_track.as_secs_f64(),
            params.average_seek.as_secs_f64(),
            params.full_stroke.as_secs_f64(),
            geometry.cylinders(),
            &random_distances(&geometry),
        )
        .map_err(|e| fit_error(&params, e))?;
        Ok(Hdd {
            params,
            geometry,
            seek,
            revolution,
            pos: HeadPos::default(),
            last_end: 0,
            busy_until: 0.0,
            stream: None,
            segments: VecDeque::new(),
            last: Access::default(),
        })
    }

    /// The model's parameters.
    pub fn params(&self) -> &HddParams {
        &self.params
    }

    /// The disk's layout.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The fitted seek curve.
    pub fn seek_curve(&self) -> &SeekCurve {
        &self.seek
    }

    /// Time of one revolution.
    pub fn revolution(&self) -> Duration {
        Duration::from_secs_f64(self.revolution)
    }

    /// Media transfer rate at byte `addr`, bytes per second.
    pub fn media_rate(&self, addr: u64) -> f64 {
        self.geometry.locate(addr).track_bytes as f64 / self.revolution
    }

    /// How the last request was served.
    pub fn last_access(&self) -> &Access {
        &self.last
    }

    fn rotational_wait(&self, angle: f64, time: f64) -> f64 {
        let wait = (angle - (time / self.revolution).fract()).rem_euclid(1.0);
        if !(ANGLE_EPSILON..=1.0 - ANGLE_EPSILON).contains(&wait) {
            0.0
        } else {
            wait * self.revolution
        }
    }

    fn move_time(&self, from: HeadPos, to: &Location) -> f64 {
        if from.cyl != to.cyl {
            self.seek.time(from.cyl.abs_diff(to.cyl) as f64)
        } else if from.head != to.head {
            self.params.head_switch.as_secs_f64()
        } else {
            0.0
        }
    }

    /// Moves the head from `pos` at `start` over bytes `addr..end`, track by track, stopping at
    /// `end` or at time `deadline`, whichever comes first.
    fn walk(&self, pos: HeadPos, start: f64, addr: u64, end: u64, deadline: f64) -> Walk {
        let mut w = Walk {
            addr,
            time: start,
            pos,
            exact: (addr, start, pos),
            first_seek: 0.0,
            first_wait: 0.0,
            cylinders: 0,
        };
        let mut first = true;
        while w.addr < end {
            let loc = self.geometry.locate(w.addr);
            let piece_end = end.min(loc.track_end);
            let moving = self.move_time(w.pos, &loc);
            let wait = self.rotational_wait(loc.angle, w.time + moving);
            if first {
                (w.first_seek, w.first_wait, w.cylinders) =
                    (moving, wait, w.pos.cyl.abs_diff(loc.cyl));
                first = false;
            }
            let reading = (piece_end - w.addr) as f64 / loc.track_bytes as f64 * self.revolution;
            let ready = w.time + moving + wait;
            if ready + reading > deadline {
                return self.stop_inside(w, &loc, ready, deadline);
            }
            w.time = ready + reading;
            w.addr = piece_end;
            w.pos = HeadPos {
                cyl: loc.cyl,
                head: loc.head,
            };
            w.exact = (w.addr, w.time, w.pos);
        }
        w
    }

    /// A walk cut by its deadline inside a piece: count the bytes read by then.
    fn stop_inside(&self, mut w: Walk, loc: &Location, ready: f64, deadline: f64) -> Walk {
        if ready < deadline {
            let read = (deadline - ready) / self.revolution * loc.track_bytes as f64;
            w.addr += read as u64;
            w.pos = HeadPos {
                cyl: loc.cyl,
                head: loc.head,
            };
        }
        w.time = deadline.max(w.time);
        w
    }

    /// How far the read-ahead stream has got at time `t`.
    fn frontier(&self, stream: &Stream, t: f64) -> Walk {
        self.walk(stream.pos, stream.time, stream.anchor, stream.limit, t)
    }

    /// Serve `addr..end` from the platters, starting at `start` (after the command overhead).
    fn mechanical(&self, pos: HeadPos, start: f64, addr: u64, end: u64) -> Plan {
        let w = self.walk(pos, start, addr, end, f64::INFINITY);
        Plan {
            done: w.time,
            seek: w.first_seek,
            wait: w.first_wait,
            cylinders: w.cylinders,
            cache_hit: false,
            pos: w.pos,
            stream: self.params.cache.as_ref().map(|c| Stream {
                low: addr,
                anchor: end,
                time: w.time,
                pos: w.pos,
                limit: end.saturating_add(c.readahead).min(self.capacity()),
            }),
        }
    }

    /// Serve `addr..end` from the read-ahead stream, if it covers `addr`; the command is
    /// processed by `start`.
    fn served_by_stream(&self, start: f64, addr: u64, end: u64, front: &Walk) -> Option<Plan> {
        let cache = self.params.cache.as_ref()?;
        let stream = self.stream?;
        if addr < stream.low || addr > stream.limit {
            return None;
        }
        let earliest = start + (end - addr) as f64 / self.params.bus_rate;
        // A stream that reached its limit stopped there; extended now, it resumes at the limit
        // once the platter brings it round. A running stream just goes on.
        let resume = if front.addr >= stream.limit {
            (stream.limit, start, front.pos)
        } else {
            front.exact
        };
        let (done, anchor) = if end <= front.addr {
            (earliest, resume)
        } else {
            let (from, from_time, from_pos) = resume;
            let w = self.walk(from_pos, from_time, from, end, f64::INFINITY);
            (w.time.max(earliest), (w.addr, w.time, w.pos))
        };
        let limit = stream
            .limit
            .max(end.saturating_add(cache.readahead))
            .min(self.capacity());
        let stream = Stream {
            low: stream.low.max(end.saturating_sub(cache.segment)),
            anchor: anchor.0,
            time: anchor.1,
            pos: anchor.2,
            limit,
        };
        Some(Plan {
            done,
            seek: 0.0,
            wait: 0.0,
            cylinders: 0,
            cache_hit: true,
            pos: stream.pos,
            stream: Some(stream),
        })
    }

    fn apply(&mut self, t: f64, overhead: f64, plan: &Plan, end: u64) {
        let secs = Duration::from_secs_f64;
        let rest = (plan.done - t - overhead - plan.seek - plan.wait).max(0.0);
        self.last = Access {
            overhead: secs(overhead),
            seek: secs(plan.seek),
            rotation: secs(plan.wait),
            transfer: secs(rest),
            cylinders: plan.cylinders,
            cache_hit: plan.cache_hit,
        };
        self.pos = plan.pos;
        self.stream = plan.stream;
        self.last_end = end;
        self.busy_until = plan.done;
    }

    /// If `addr..end` lies in an older segment, marks it most recently used and returns when
    /// the buffer has sent it.
    fn served_by_old_segment(&mut self, start: f64, addr: u64, end: u64) -> Option<f64> {
        let index = self
            .segments
            .iter()
            .position(|&(low, high)| low <= addr && end <= high)?;
        let segment = self.segments.remove(index)?;
        self.segments.push_front(segment);
        Some(start + (end - addr) as f64 / self.params.bus_rate)
    }

    /// Keeps what the stream read (`low..high`, at most one segment's worth) as an older
    /// segment, dropping the least recently used one if all are taken.
    fn retire(&mut self, low: u64, high: u64) {
        let Some(cache) = &self.params.cache else {
            return;
        };
        let low = low.max(high.saturating_sub(cache.segment));
        if low >= high || cache.segments < 2 {
            return;
        }
        self.segments.push_front((low, high));
        self.segments.truncate(cache.segments - 1);
    }

    /// The part of the command overhead not already done while the request was queued.
    fn unqueued_overhead(&self, arrival: f64, start: f64) -> f64 {
        let overhead = self.params.overhead.as_secs_f64();
        (arrival + overhead - start).clamp(0.0, overhead)
    }

    fn clamp(&self, req: &Request) -> (u64, u64) {
        let capacity = self.capacity();
        let addr = req.addr.min(capacity - 1);
        (addr, req.end().clamp(addr + 1, capacity))
    }
}

impl DiskModel for Hdd {
    fn service(&mut self, now: Duration, req: &Request) -> Duration {
        let t = now.as_secs_f64().max(self.busy_until);
        let (addr, end) = self.clamp(req);
        let front = self.stream.map(|s| self.frontier(&s, t));
        let head = front.map_or(self.pos, |f| f.pos);
        let overhead = self.unqueued_overhead(req.arrival.as_secs_f64(), t);
        if let Some(done) = self.served_by_old_segment(t + overhead, addr, end) {
            let plan = Plan {
                done,
                seek: 0.0,
                wait: 0.0,
                cylinders: 0,
                cache_hit: true,
                pos: self.pos,
                stream: self.stream,
            };
            self.apply(t, overhead, &plan, end);
            return Duration::from_secs_f64(done - now.as_secs_f64());
        }
        let mechanical = self.mechanical(head, t + overhead, addr, end);
        let plan = front
            .and_then(|f| self.served_by_stream(t + overhead, addr, end, &f))
            .filter(|cached| cached.done <= mechanical.done)
            .unwrap_or(mechanical);
        if !plan.cache_hit {
            if let (Some(stream), Some(front)) = (self.stream, front) {
                self.retire(stream.low, front.addr);
            }
        }
        self.apply(t, overhead, &plan, end);
        Duration::from_secs_f64(plan.done - now.as_secs_f64())
    }

    fn head(&self) -> u64 {
        self.last_end
    }

    fn capacity(&self) -> u64 {
        self.geometry.capacity()
    }
}

/// The distribution of cylinder distances between two random byte addresses, in bins: zones
/// are cut into equal bins whose weight is the bytes they hold; two addresses in the same bin
/// are a third of a bin apart on average.
fn random_distances(geometry: &Geometry) -> Vec<DistanceMass> {
    let bins_per_zone = BINS_PER_ZONE.min(geometry.cylinders_per_zone());
    let width = geometry.cylinders_per_zone() as f64 / bins_per_zone as f64;
    let weights: Vec<f64> = (0..geometry.zones())
        .flat_map(|z| (0..bins_per_zone).map(move |_| z))
        .map(|z| geometry.zone_track_bytes(z) as f64)
        .collect();
    let total: f64 = weights.iter().sum();
    let mut mass = vec![0.0; weights.len()];
    for (i, wi) in weights.iter().enumerate() {
        for (j, wj) in weights.iter().enumerate() {
            mass[i.abs_diff(j)] += wi * wj / (total * total);
        }
    }
    mass.iter()
        .enumerate()
        .map(|(k, &m)| {
            (
                if k == 0 {
                    width / 3.0
                } else {
                    k as f64 * width
                },
                m,
            )
        })
        .collect()
}

fn validate(p: &HddParams) -> Result<(), Error> {
    let bad = |reason: &str| {
        Err(Error::BadParameter {
            name: "hdd".to_string(),
            reason: reason.to_string(),
        })
    };
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if p.capacity == 0 || p.heads == 0 || p.zones == 0 {
        return bad("capacity, heads and zones must be positive");
    }
    if !(positive(p.rpm)
        && positive(p.outer_rate)
        && positive(p.inner_rate)
        && positive(p.bus_rate))
    {
        return bad("rpm and rates must be positive");
    }
    if p.inner_rate > p.outer_rate {
        return bad("inner zones cannot be faster than outer ones");
    }
    if p.inner_rate * 60.0 / p.rpm < geometry::SECTOR as f64 {
        return bad("a track must hold at least one 512-byte sector");
    }
    Ok(())
}

fn fit_error(p: &HddParams, e: FitError) -> Error {
    let reason = match e {
        FitError::AverageOutOfRange { min, max } => format!(
            "average seek {:?} must lie between {:.2} and {:.2} ms for these track-to-track and full-stroke times",
            p.average_seek,
            min * 1e3,
            max * 1e3
        ),
        FitError::Degenerate => "track-to-track must be positive and below full stroke, on at least 3 cylinders".to_string(),
    };
    Error::BadParameter {
        name: "hdd".to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests;
