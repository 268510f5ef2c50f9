//! Anticipatory disk scheduling (Iyer and Druschel, SOSP 2001), as Linux 2.6.3 runs it and as
//! the competitive-prefetching paper (TR840 s2.2, s5.2, s6) evaluates it.
//!
//! # The problem: deceptive idleness
//! A process that reads synchronously issues its next request shortly after the previous one
//! completes. A work-conserving scheduler sees an empty slot for that process and serves
//! another one far away, so two sequential readers make the head ping-pong between them.
//!
//! # The mechanism
//! After a request of stream `s` completes, the scheduler may keep the disk idle for up to
//! `antic_expire` (6 ms, Linux 2.6.3's `HZ/150`), betting that `s` issues a nearby request:
//!
//! ```text
//!   completed(s) --> ANTICIPATING(s, until = now + antic_expire)
//!        | request of s arrives ............ serve it (the bet won)
//!        | request of another stream within `close` bytes past the head ... serve it
//!        | `until` passes .................. serve the queue's choice (the bet lost)
//! ```
//! A stream is anticipated only while its mean think time (an exponentially weighted average
//! of the time from a completion to its next request, counted when it had nothing else
//! outstanding) is at most `antic_expire`: think times beyond it would time out (TR840's
//! One-Rand-10 pauses for 10 ms on purpose). Otherwise requests leave in C-LOOK order, except
//! that one waiting longer than `read_expire` (125 ms) goes first (deadline's FIFO).
//!
//! Deviations: Linux's anticipation also weighs each process's mean seek distance and allows
//! short backward seeks; here a request of another stream breaks anticipation only when it
//! starts at most `close` bytes (default 0: only a back-to-back request) past the head. Requests
//! are never split, so the premature-timeout anomaly of TR840 s6 (timer started after the
//! first piece of a split request) cannot happen: this is the paper's corrected kernel.

use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::time::Duration;

use disk::Request;

use super::iosched::{Dispatch, IoScheduler};

/// Linux 2.6.3's default anticipation timeout (`HZ/150` jiffies at HZ = 1000).
pub const ANTIC_EXPIRE: Duration = Duration::from_millis(6);
/// Linux 2.6.3's read FIFO expiry (`HZ/8`).
pub const READ_EXPIRE: Duration = Duration::from_millis(125);
/// Weight of a new think-time sample in the mean.
const THINK_WEIGHT: f64 = 1.0 / 8.0;

/// What the scheduler knows about one stream.
#[derive(Clone, Debug, Default)]
struct StreamState {
    outstanding: usize,
    last_completion: Option<Duration>,
    think_mean: Option<f64>,
}

/// The anticipatory scheduler.
#[derive(Debug)]
pub struct Anticipatory {
    antic_expire: Duration,
    read_expire: Duration,
    close: u64,
    by_addr: BTreeMap<(u64, u64), (Request, usize)>,
    by_arrival: BTreeMap<(Duration, u64), u64>,
    next_seq: u64,
    streams: FxHashMap<usize, StreamState>,
    anticipating: Option<(usize, Duration)>,
}

impl Default for Anticipatory {
    fn default() -> Self {
        Anticipatory::new(ANTIC_EXPIRE, READ_EXPIRE, 0)
    }
}

impl Anticipatory {
    /// A scheduler idling up to `antic_expire` per bet, with `read_expire` as the FIFO
    /// deadline and `close` bytes past the head as "close enough" for another stream.
    pub fn new(antic_expire: Duration, read_expire: Duration, close: u64) -> Self {
        Anticipatory {
            antic_expire,
            read_expire,
            close,
            by_addr: BTreeMap::new(),
            by_arrival: BTreeMap::new(),
            next_seq: 0,
            streams: FxHashMap::default(),
            anticipating: None,
        }
    }

    /// The stream's mean think time, if sampled.
    pub fn think_mean(&self, stream: usize) -> Option<Duration> {
        let mean = self.streams.get(&stream)?.think_mean?;
        Some(Duration::from_secs_f64(mean))
    }

    fn take(&mut self, key: (u64, u64)) -> Request {
        let (req, _) = self.by_addr.remove(&key).expect("key from by_addr");
        self.by_arrival.remove(&(req.arrival, key.1));
        self.anticipating = None;
        req
    }

    /// The anticipated stream's request nearest past the head (or its lowest).
    fn request_of(&self, stream: usize, head: u64) -> Option<(u64, u64)> {
        let of_stream =
            |(&key, &(_, s)): (&(u64, u64), &(Request, usize))| (s == stream).then_some(key);
        let mut after = self.by_addr.range((head, 0)..).filter_map(of_stream);
        after
            .next()
            .or_else(|| self.by_addr.iter().filter_map(of_stream).next())
    }

    /// A request of any stream starting within `close` bytes past the head.
    fn close_request(&self, head: u64) -> Option<(u64, u64)> {
        let (&key, _) = self.by_addr.range((head, 0)..).next()?;
        (key.0 - head <= self.close).then_some(key)
    }

    fn expired(&self, now: Duration) -> Option<(u64, u64)> {
        let (&(arrival, seq), &addr) = self.by_arrival.iter().next()?;
        (arrival + self.read_expire <= now).then_some((addr, seq))
    }

    fn clook(&self, head: u64) -> Option<(u64, u64)> {
        let next = self.by_addr.range((head, 0)..).next();
        next.or_else(|| self.by_addr.iter().next()).map(|(&k, _)| k)
    }

    fn anticipates(&self, stream: usize) -> bool {
        let limit = self.antic_expire.as_secs_f64();
        self.streams
            .get(&stream)
            .and_then(|s| s.think_mean)
            .is_none_or(|mean| mean <= limit)
    }
}

impl IoScheduler for Anticipatory {
    fn push(&mut self, req: Request, stream: usize) {
        let state = self.streams.entry(stream).or_default();
        if let (0, Some(done)) = (state.outstanding, state.last_completion) {
            let think = req.arrival.saturating_sub(done).as_secs_f64();
            state.think_mean = Some(match state.think_mean {
                None => think,
                Some(mean) => mean + THINK_WEIGHT * (think - mean),
            });
        }
        state.outstanding += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_arrival.insert((req.arrival, seq), req.addr);
        self.by_addr.insert((req.addr, seq), (req, stream));
    }

    fn dispatch(&mut self, head: u64, now: Duration) -> Dispatch {
        if self.by_addr.is_empty() {
            return Dispatch::Idle;
        }
        if let Some((stream, until)) = self.anticipating {
            if let Some(key) = self.request_of(stream, head).or(self.close_request(head)) {
                return Dispatch::Serve(self.take(key));
            }
            if now < until {
                return Dispatch::WaitUntil(until);
            }
        }
        let key = self.expired(now).or(self.clook(head));
        key.map_or(Dispatch::Idle, |k| Dispatch::Serve(self.take(k)))
    }

    fn completed(&mut self, _req: &Request, stream: usize, now: Duration) {
        let state = self.streams.entry(stream).or_default();
        state.outstanding = state.outstanding.saturating_sub(1);
        state.last_completion = Some(now);
        self.anticipating = self
            .anticipates(stream)
            .then_some((stream, now + self.antic_expire));
    }

    fn len(&self) -> usize {
        self.by_addr.len()
    }
}

/// Builds `anticipatory` or `anticipatory:EXPIRE_MS`.
pub fn build(name: &str) -> Result<Box<dyn IoScheduler>, disk::Error> {
    let expire = match name.split_once(':') {
        None => ANTIC_EXPIRE,
        Some((_, ms)) => parse_ms(name, ms)?,
    };
    Ok(Box::new(Anticipatory::new(expire, READ_EXPIRE, 0)))
}

fn parse_ms(name: &str, ms: &str) -> Result<Duration, disk::Error> {
    let bad = |reason: &str| disk::Error::BadParameter {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    let ms: f64 = ms
        .trim()
        .parse()
        .map_err(|_| bad("expiry is not a number"))?;
    if !(0.0..=1e6).contains(&ms) {
        return Err(bad("expiry must be between 0 and 1e6 ms"));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: u64, addr: u64, arrival_ms: u64) -> Request {
        Request {
            id,
            addr,
            len: 4096,
            arrival: Duration::from_millis(arrival_ms),
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn served(d: Dispatch) -> u64 {
        match d {
            Dispatch::Serve(r) => r.id,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    /// Two sequential readers: after stream 0's request completes, the disk waits for stream
    /// 0's next request instead of seeking to stream 1's.
    #[test]
    fn waits_for_the_stream_that_just_completed() {
        let mut sched = Anticipatory::default();
        sched.push(req(1, 0, 0), 0);
        sched.push(req(2, 1 << 30, 0), 1);
        assert_eq!(served(sched.dispatch(0, ms(0))), 1);
        sched.completed(&req(1, 0, 0), 0, ms(5));
        assert_eq!(sched.dispatch(4096, ms(5)), Dispatch::WaitUntil(ms(11)));
        sched.push(req(3, 4096, 7), 0);
        assert_eq!(served(sched.dispatch(4096, ms(7))), 3);
    }

    /// The bet times out after antic_expire: the other stream is served.
    #[test]
    fn timeout_serves_the_queue() {
        let mut sched = Anticipatory::default();
        sched.push(req(1, 0, 0), 0);
        sched.push(req(2, 1 << 30, 0), 1);
        assert_eq!(served(sched.dispatch(0, ms(0))), 1);
        sched.completed(&req(1, 0, 0), 0, ms(5));
        assert_eq!(served(sched.dispatch(4096, ms(11))), 2);
    }

    /// A stream whose mean think time exceeds antic_expire is not waited for.
    #[test]
    fn long_thinkers_are_not_anticipated() {
        let mut sched = Anticipatory::default();
        sched.push(req(1, 0, 0), 0);
        assert_eq!(served(sched.dispatch(0, ms(0))), 1);
        sched.completed(&req(1, 0, 0), 0, ms(5));
        sched.push(req(2, 4096, 15), 0);
        assert_eq!(sched.think_mean(0), Some(ms(10)));
        assert_eq!(served(sched.dispatch(0, ms(15))), 2);
        sched.completed(&req(2, 4096, 15), 0, ms(20));
        sched.push(req(3, 1 << 30, 20), 1);
        assert_eq!(served(sched.dispatch(8192, ms(20))), 3);
    }

    /// Without anticipation, requests leave in C-LOOK order; an expired one goes first.
    #[test]
    fn clook_with_read_expiry() {
        let mut sched = Anticipatory::new(Duration::ZERO, READ_EXPIRE, 0);
        sched.push(req(1, 300, 50), 0);
        sched.push(req(2, 100, 0), 1);
        sched.push(req(3, 200, 10), 2);
        assert_eq!(served(sched.dispatch(150, ms(1))), 3);
        assert_eq!(served(sched.dispatch(250, ms(200))), 2, "expired first");
        assert_eq!(served(sched.dispatch(250, ms(200))), 1);
        assert_eq!(sched.dispatch(0, ms(200)), Dispatch::Idle);
    }

    /// Names parse; bad ones are clear errors.
    #[test]
    fn names() {
        assert!(build("anticipatory").is_ok());
        assert!(build("anticipatory:10").is_ok());
        let err = build("anticipatory:x").err().unwrap();
        assert!(err.to_string().contains("anticipatory:x"), "{err}");
    }
}
