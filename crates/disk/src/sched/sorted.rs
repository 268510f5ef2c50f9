//! The address-ordered request queue the seek-aware schedulers share ([`SortedQueue`]), and
//! [`Sorted`], the scheduler core of those that only choose from it by the head position (C-LOOK,
//! SSTF), each supplying a [`SeekOrder`]. Re-exported by [`crate::sched`]; in a file of its own so
//! that the schedulers the parent registers do not import from it.

use crate::{Request, Scheduler};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::time::Duration;

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
