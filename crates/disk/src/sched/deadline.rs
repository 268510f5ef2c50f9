//! Deadline: the Linux (mq-)deadline read policy that DULO (FAST'05 s4) runs under.
//!
//! Requests are kept both sorted by address and in arrival order. Dispatch continues the
//! one-way sweep (the next request at or after the head) for up to `fifo_batch` requests. When a
//! batch ends, or the sweep has nothing ahead, the oldest request is checked: if it has waited
//! `expire` or longer, or nothing is ahead of the head, a new batch starts at the oldest request;
//! otherwise the sweep goes on with a new batch.
//! Deviations: reads only (no write starvation logic); the head is the caller's, not the last
//! dispatched request's end (the same thing when the caller passes `DiskModel::head`).

use crate::sched::{SortedKey, SortedQueue};
use crate::{Request, Scheduler};
use std::collections::BTreeMap;
use std::time::Duration;

/// Linux's default read expiry (`read_expire`, 500 ms).
pub const READ_EXPIRE: Duration = Duration::from_millis(500);
/// Linux's default batch length (`fifo_batch`).
pub const FIFO_BATCH: usize = 16;

/// Sorted sweep with an expiry deadline per request.
#[derive(Debug)]
pub struct Deadline {
    sorted: SortedQueue,
    by_arrival: BTreeMap<(Duration, u64), SortedKey>,
    expire: Duration,
    fifo_batch: usize,
    batch: usize,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline::new(READ_EXPIRE, FIFO_BATCH)
    }
}

impl Deadline {
    /// A deadline queue with the given expiry and batch length (at least 1).
    pub fn new(expire: Duration, fifo_batch: usize) -> Self {
        Deadline {
            sorted: SortedQueue::default(),
            by_arrival: BTreeMap::new(),
            expire,
            fifo_batch: fifo_batch.max(1),
            batch: 0,
        }
    }

    /// Arrival time and key of the request queued longest.
    fn oldest(&self) -> Option<(Duration, SortedKey)> {
        self.by_arrival
            .iter()
            .next()
            .map(|(&(arrival, _), &key)| (arrival, key))
    }

    /// Key of the request to serve next; counts it in the current batch or starts a new one.
    fn choose(&mut self, head: u64, now: Duration) -> Option<SortedKey> {
        let ahead = self.sorted.at_or_after(head);
        let (oldest_arrival, oldest_key) = self.oldest()?;
        let key = match ahead {
            Some(next) if self.batch < self.fifo_batch => {
                self.batch += 1;
                next
            }
            Some(next) if now < oldest_arrival + self.expire => {
                self.batch = 1;
                next
            }
            _ => {
                self.batch = 1;
                oldest_key
            }
        };
        Some(key)
    }
}

impl Scheduler for Deadline {
    fn push(&mut self, req: Request) {
        let arrival = req.arrival;
        let key = self.sorted.insert(req);
        self.by_arrival.insert((arrival, key.1), key);
    }

    fn pop(&mut self, head: u64, now: Duration) -> Option<Request> {
        let key = self.choose(head, now)?;
        let req = self.sorted.remove(key)?;
        self.by_arrival.remove(&(req.arrival, key.1));
        Some(req)
    }

    fn len(&self) -> usize {
        self.sorted.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::tests::{drain, req};

    /// Nothing expired: a plain sweep from the head; at the end of the sweep it restarts at the
    /// oldest request (id 4, arrived first), not at the lowest address.
    #[test]
    fn sweeps_then_restarts_at_oldest() {
        let reqs = [
            req(1, 900, 2),
            req(2, 100, 3),
            req(3, 500, 4),
            req(4, 300, 1),
        ];
        assert_eq!(
            drain(&mut Deadline::default(), &reqs, 400 * 1024),
            [3, 1, 4, 2]
        );
    }

    /// With batches of 2 and everything expired, after each batch the oldest request is served.
    #[test]
    fn expired_requests_interrupt_the_sweep_between_batches() {
        let mut sched = Deadline::new(Duration::from_millis(10), 2);
        for r in [
            req(1, 100, 5),
            req(2, 200, 6),
            req(3, 300, 7),
            req(4, 50, 0),
        ] {
            sched.push(r);
        }
        let now = Duration::from_millis(100);
        let mut order = Vec::new();
        let mut head = 90 * 1024;
        while let Some(r) = sched.pop(head, now) {
            head = r.end();
            order.push(r.id);
        }
        // Batch 1: sweep 100, 200. Batch ends; oldest (4, at 50 KiB) has expired: serve it,
        // then the sweep continues from 54 KiB: 300.
        assert_eq!(order, [1, 2, 4, 3]);
    }
}
