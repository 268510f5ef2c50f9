//! Request schedulers, one per module, all behind [`crate::Scheduler`]; registered in
//! [`from_name`]. [`SortedQueue`] is the address-ordered queue the seek-aware ones share;
//! [`Sorted`] is the scheduler core of those that only choose from it by the head position
//! (C-LOOK, SSTF), each supplying a [`SeekOrder`].

pub mod clook;
pub mod deadline;
pub mod fifo;
pub mod sstf;

pub use clook::CLook;
pub use deadline::Deadline;
pub use fifo::Fifo;
pub use sstf::Sstf;

use crate::{Error, Request, Scheduler};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::time::Duration;

/// Builds a scheduler from its name: `fifo`, `clook`, `sstf`, `deadline` or `deadline:EXPIRE_MS`.
pub fn from_name(name: &str) -> Result<Box<dyn Scheduler>, Error> {
    match name {
        "fifo" => Ok(Box::new(Fifo::default())),
        "clook" | "c-look" => Ok(Box::new(CLook::default())),
        "sstf" => Ok(Box::new(Sstf::default())),
        "deadline" => Ok(Box::new(Deadline::default())),
        _ => match name.strip_prefix("deadline:") {
            Some(ms) => Ok(Box::new(Deadline::new(
                parse_expire(name, ms)?,
                deadline::FIFO_BATCH,
            ))),
            None => Err(Error::UnknownScheduler(name.to_string())),
        },
    }
}

fn parse_expire(name: &str, ms: &str) -> Result<Duration, Error> {
    let bad = |reason: &str| Error::BadParameter {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    let ms: f64 = ms.parse().map_err(|_| bad("expiry is not a number"))?;
    if !(0.0..1e9).contains(&ms) {
        return Err(bad("expiry must be between 0 and 1e9 ms"));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

/// Requests ordered by disk address; equal addresses leave in arrival order.
#[derive(Debug, Default)]
pub struct SortedQueue {
    by_addr: BTreeMap<(u64, u64), Request>,
    next_seq: u64,
}

/// Key of a request in a [`SortedQueue`]: its address and its insertion number.
pub type SortedKey = (u64, u64);

impl SortedQueue {
    /// Inserts a request and returns its key.
    pub fn insert(&mut self, req: Request) -> SortedKey {
        let key = (req.addr, self.next_seq);
        self.next_seq += 1;
        self.by_addr.insert(key, req);
        key
    }

    /// Key of the first request at or after `addr`.
    pub fn at_or_after(&self, addr: u64) -> Option<SortedKey> {
        self.by_addr.range((addr, 0)..).next().map(|(k, _)| *k)
    }

    /// Key of the last request before `addr`.
    pub fn before(&self, addr: u64) -> Option<SortedKey> {
        self.by_addr.range(..(addr, 0)).next_back().map(|(k, _)| *k)
    }

    /// Key of the request with the lowest address.
    pub fn lowest(&self) -> Option<SortedKey> {
        self.by_addr.keys().next().copied()
    }

    /// Removes the request with key `key`.
    pub fn remove(&mut self, key: SortedKey) -> Option<Request> {
        self.by_addr.remove(&key)
    }

    /// Number of queued requests.
    pub fn len(&self) -> usize {
        self.by_addr.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.by_addr.is_empty()
    }
}

/// How a seek-ordered scheduler chooses the next request from its queue.
pub trait SeekOrder {
    /// Key of the request to serve next with the head at `head`, or `None` when `queue` is empty.
    fn pick(queue: &SortedQueue, head: u64) -> Option<SortedKey>;
}

/// A scheduler that keeps its requests in a [`SortedQueue`] and serves them in the order `O`
/// picks, whatever the time.
#[derive(Debug)]
pub struct Sorted<O> {
    queue: SortedQueue,
    order: PhantomData<O>,
}

impl<O> Default for Sorted<O> {
    fn default() -> Self {
        Sorted {
            queue: SortedQueue::default(),
            order: PhantomData,
        }
    }
}

impl<O: SeekOrder + Send> Scheduler for Sorted<O> {
    fn push(&mut self, req: Request) {
        self.queue.insert(req);
    }

    fn pop(&mut self, head: u64, _now: Duration) -> Option<Request> {
        let key = O::pick(&self.queue, head)?;
        self.queue.remove(key)
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A request with id `id` at address `addr` KiB arriving at `arrival_ms`.
    pub fn req(id: u64, addr_kib: u64, arrival_ms: u64) -> Request {
        Request {
            id,
            addr: addr_kib * 1024,
            len: 4096,
            arrival: Duration::from_millis(arrival_ms),
        }
    }

    /// Pushes `reqs`, then pops them all with the head following each request's end, and
    /// returns the ids in service order.
    pub fn drain(sched: &mut dyn Scheduler, reqs: &[Request], start_head: u64) -> Vec<u64> {
        for r in reqs {
            sched.push(r.clone());
        }
        let mut head = start_head;
        let mut order = Vec::new();
        while let Some(r) = sched.pop(head, Duration::ZERO) {
            head = r.end();
            order.push(r.id);
        }
        order
    }

    #[test]
    fn names_build_schedulers_and_bad_names_are_errors() {
        for name in ["fifo", "clook", "sstf", "deadline", "deadline:50"] {
            assert!(from_name(name).is_ok(), "{name}");
        }
        assert!(matches!(from_name("noop"), Err(Error::UnknownScheduler(_))));
        assert!(matches!(
            from_name("deadline:-3"),
            Err(Error::BadParameter { .. })
        ));
    }
}
