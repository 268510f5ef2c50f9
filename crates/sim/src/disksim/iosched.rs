//! The disk queue as the engine sees it: [`IoScheduler`], which may keep the disk idle on
//! purpose (anticipatory scheduling), and [`Plain`], the adapter for every scheduler of the
//! `disk` crate (FIFO, C-LOOK, SSTF, deadline). Every scheduler by name:
//! [`super::schedulers`].
//!
//! Contract: the engine pushes each request with the stream that issued it; whenever an
//! actuator is free it calls [`IoScheduler::dispatch`] and then either serves the request,
//! sets a timer for [`Dispatch::WaitUntil`] (and calls again at that time, or earlier if a new
//! request arrives), or leaves the disk idle until the next push. After each service it calls
//! [`IoScheduler::completed`].

use std::time::Duration;

use disk::{Request, Scheduler};

/// What the disk should do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Serve this request now.
    Serve(Request),
    /// Keep the disk idle until this absolute time even though requests are queued.
    WaitUntil(Duration),
    /// Nothing to serve.
    Idle,
}

/// A disk request queue that knows which stream issued each request.
pub trait IoScheduler {
    /// Queues `req`, issued by `stream`.
    fn push(&mut self, req: Request, stream: usize);
    /// Picks what the disk does next, with the head at byte `head` at time `now`.
    fn dispatch(&mut self, head: u64, now: Duration) -> Dispatch;
    /// `req` (issued by `stream`) finished at `now`.
    fn completed(&mut self, _req: &Request, _stream: usize, _now: Duration) {}
    /// Queued requests.
    fn len(&self) -> usize;
    /// True when nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether it serves a lone request the moment it is queued on an idle disk and keeps no
    /// state between requests (no timers, nothing learnt from completions): the engine may
    /// then serve a lone demand fetch without queueing it. The default, `false`, is always
    /// safe.
    fn serves_at_once(&self) -> bool {
        false
    }
}

/// Any `disk` crate scheduler, which never idles the disk on purpose.
pub struct Plain(pub Box<dyn Scheduler>);

impl IoScheduler for Plain {
    fn push(&mut self, req: Request, _stream: usize) {
        self.0.push(req);
    }

    fn dispatch(&mut self, head: u64, now: Duration) -> Dispatch {
        self.0
            .pop(head, now)
            .map_or(Dispatch::Idle, Dispatch::Serve)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    /// A `disk` crate scheduler never idles the disk: with one request queued it serves it.
    fn serves_at_once(&self) -> bool {
        true
    }
}
