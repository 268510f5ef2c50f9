//! The actuator: one thread that serves the emulated disk's request queue in
//! the scheduler's order and completes each request when the disk model says.
//!
//! ```text
//!  FUSE threads          queue (scheduler order)        actuator thread
//!  read() --submit--> [ r7 r3 r9 ... ] --pop(head)--> service = model(start, r)
//!                                                     sleep until start + service
//!                                                     complete(r): reply to the kernel
//! ```
//!
//! Time runs in model time (see `clock`): a request starts when a slot is free
//! and it has arrived, `start = max(slot free time, arrival)`, and completes at
//! `start + service`; the wall-clock deadline is that instant scaled by the time
//! scale. Because starts are computed in model time rather than read from the
//! wall clock, the actuator's own overheads (waking up, replying) do not add up:
//! a request queued while the previous one was in service starts exactly when
//! that one completed, as on a real disk.
//!
//! A model with `parallelism() == 1` (every HDD preset) has one slot: one
//! request in service at a time. SSD models may have more; their `service`
//! accounts for contention between the overlapping requests.
//!
//! A panic on the actuator thread (a model or scheduler bug) must not leave
//! readers waiting forever in uninterruptible sleep: the thread catches it,
//! completes every queued and in-service request with `EIO`, fails every later
//! submission at once, and runs the failure hook (the mount's: unmount).
//!
//! Starts are made non-decreasing, as the disk crate's caller contract
//! requires.

use crate::clock::{self, sleep_until, Clock};
use crate::request_log::RequestLog;
use crate::stats::{Served, Stats};
use disk::{DiskModel, Request, Scheduler};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What to run when a request completes (for the file system: send the
/// reply): `Ok` when served, an `EIO` error when the actuator failed.
pub type Completion = Box<dyn FnOnce(io::Result<()>) + Send>;

/// What to run once when the actuator thread fails (for the mount: unmount).
pub type FailureHook = Box<dyn FnOnce() + Send>;

/// The request queue shared by submitters and the actuator thread.
struct Queue {
    scheduler: Box<dyn Scheduler>,
    completions: HashMap<u64, Completion>,
    next_id: u64,
    max_depth: u64,
    shutdown: bool,
    /// Why the actuator thread died, once it has: submissions then fail at once.
    failure: Option<String>,
    on_failure: Option<FailureHook>,
}

/// State shared by the handles and the actuator thread.
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    stats: Mutex<Stats>,
    clock: Clock,
    capacity: u64,
}

/// A cheap, cloneable handle for submitting requests and reading counters.
/// Thread-safe.
#[derive(Clone)]
pub struct DiskHandle {
    shared: Arc<Shared>,
}

impl DiskHandle {
    /// The model time now.
    pub fn now(&self) -> Duration {
        self.shared.clock.model_now()
    }

    /// Queues a read of `len` bytes at disk address `addr` that arrived at model
    /// time `arrival`; `complete` runs on the actuator thread when the read
    /// completes, or at once with `EIO` when the actuator has failed. Never
    /// blocks for the disk.
    pub fn submit(&self, addr: u64, len: u64, arrival: Duration, complete: Completion) {
        let mut queue = lock(&self.shared.queue);
        if queue.failure.is_some() {
            drop(queue);
            return complete(Err(actuator_failed()));
        }
        let id = queue.next_id;
        queue.next_id += 1;
        queue.completions.insert(id, complete);
        queue.scheduler.push(Request {
            id,
            addr,
            len,
            arrival,
        });
        queue.max_depth = queue.max_depth.max(queue.scheduler.len() as u64);
        drop(queue);
        self.shared.wake.notify_one();
    }

    /// Why the actuator thread died (its panic message), if it has.
    pub fn failure(&self) -> Option<String> {
        lock(&self.shared.queue).failure.clone()
    }

    /// Sets what to run once if the actuator thread fails (at once if it
    /// already has).
    pub fn on_failure(&self, hook: FailureHook) {
        let mut queue = lock(&self.shared.queue);
        if queue.failure.is_none() {
            queue.on_failure = Some(hook);
            return;
        }
        drop(queue);
        hook();
    }

    /// The disk model's capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.shared.capacity
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        let mut stats = lock(&self.shared.stats).clone();
        stats.max_queue_depth = lock(&self.shared.queue).max_depth;
        stats.elapsed_seconds = self.now().as_secs_f64();
        stats
    }
}

/// The running actuator thread. Stopping it (or dropping it) serves what is
/// still queued, then ends the thread.
pub struct Actuator {
    handle: DiskHandle,
    thread: Option<JoinHandle<()>>,
}

impl Actuator {
    /// Starts the actuator thread for `model`, serving in `scheduler`'s order;
    /// `stats` holds the names and time scale to report, `log` (if any) gets
    /// a line per request served. Model time starts now.
    pub fn start(
        model: Box<dyn DiskModel>,
        scheduler: Box<dyn Scheduler>,
        time_scale: f64,
        stats: Stats,
        log: Option<RequestLog>,
    ) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                scheduler,
                completions: HashMap::new(),
                next_id: 0,
                max_depth: 0,
                shutdown: false,
                failure: None,
                on_failure: None,
            }),
            wake: Condvar::new(),
            stats: Mutex::new(stats),
            clock: Clock::start(time_scale),
            capacity: model.capacity(),
        });
        let mut worker = Worker::new(model, Arc::clone(&shared), log);
        let thread = std::thread::Builder::new()
            .name("emulate-actuator".into())
            .spawn(move || worker.run_or_fail())?;
        Ok(Actuator {
            handle: DiskHandle { shared },
            thread: Some(thread),
        })
    }

    /// A handle for submitting requests and reading counters.
    pub fn handle(&self) -> DiskHandle {
        self.handle.clone()
    }

    /// Serves what is queued, stops the thread and returns the final counters.
    pub fn stop(mut self) -> Stats {
        self.join();
        self.handle.stats()
    }

    fn join(&mut self) {
        lock(&self.handle.shared.queue).shutdown = true;
        self.handle.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // The thread catches its own panics (`run_or_fail`).
            let _ = thread.join();
        }
    }
}

impl Drop for Actuator {
    fn drop(&mut self) {
        self.join();
    }
}

/// A request in service (the heap `in_service` orders them by completion time).
struct InService {
    served: Served,
    complete: Completion,
}

/// The actuator thread's own state.
struct Worker {
    model: Box<dyn DiskModel>,
    shared: Arc<Shared>,
    /// Model times at which each idle slot became free.
    free_slots: Vec<Duration>,
    in_service: BinaryHeap<Reverse<(Duration, u64)>>,
    by_id: HashMap<u64, InService>,
    last_start: Duration,
    /// The request log, if asked for (`request_log`).
    log: Option<RequestLog>,
}

impl Worker {
    fn new(model: Box<dyn DiskModel>, shared: Arc<Shared>, log: Option<RequestLog>) -> Self {
        let slots = model.parallelism().max(1);
        Worker {
            model,
            shared,
            free_slots: vec![Duration::ZERO; slots],
            in_service: BinaryHeap::new(),
            by_id: HashMap::new(),
            last_start: Duration::ZERO,
            log,
        }
    }

    /// The thread body: `run`, and if it panics, fail every request (queued,
    /// in service, and later ones) with `EIO` and run the failure hook. The
    /// panic message has already been printed by the panic hook.
    fn run_or_fail(&mut self) {
        let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| self.run())) else {
            return;
        };
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let (queued, hook) = {
            let mut queue = lock(&self.shared.queue);
            queue.failure = Some(message);
            let queued: Vec<Completion> = queue.completions.drain().map(|(_, c)| c).collect();
            (queued, queue.on_failure.take())
        };
        let in_service = self.by_id.drain().map(|(_, s)| s.complete);
        for complete in queued.into_iter().chain(in_service) {
            complete(Err(actuator_failed()));
        }
        if let Some(hook) = hook {
            hook();
        }
    }

    /// Starts requests on free slots and completes them at their deadlines,
    /// until shut down with nothing left to serve.
    fn run(&mut self) {
        clock::tighten_timer_slack();
        clock::prefer_realtime();
        loop {
            while !self.free_slots.is_empty() && self.start_next() {}
            if !self.wait_for_event() {
                if let Some(log) = self.log.as_mut() {
                    log.flush();
                }
                return;
            }
            self.complete_due();
        }
    }

    /// Pops the scheduler's next request onto the earliest free slot; false
    /// when the queue is empty. The request's completion leaves the queue only
    /// once the model has timed it, so a panicking model leaves it for
    /// `run_or_fail` to fail.
    fn start_next(&mut self) -> bool {
        let now = self.shared.clock.model_now();
        let popped = lock(&self.shared.queue)
            .scheduler
            .pop(self.model.head(), now);
        let Some(request) = popped else {
            return false;
        };
        let slot = self.take_earliest_slot();
        let start = slot.max(request.arrival).max(self.last_start);
        self.last_start = start;
        let seek_distance = self.model.head().abs_diff(request.addr);
        let service = self.model.service(start, &request);
        let done = start + service;
        if let Some(log) = self.log.as_mut() {
            log.record(request.arrival, start, done, request.addr, request.len);
        }
        let served = Served {
            len: request.len,
            seek_distance,
            service,
            response: done.saturating_sub(request.arrival),
            late: Duration::ZERO,
        };
        let complete = lock(&self.shared.queue)
            .completions
            .remove(&request.id)
            .expect("every queued request has its completion");
        self.in_service.push(Reverse((done, request.id)));
        self.by_id
            .insert(request.id, InService { served, complete });
        true
    }

    fn take_earliest_slot(&mut self) -> Duration {
        let (index, _) = self
            .free_slots
            .iter()
            .enumerate()
            .min_by_key(|(_, &free)| free)
            .expect("start_next runs only with a free slot");
        self.free_slots.swap_remove(index)
    }

    /// Waits until the next completion is due, or (with a slot free) until a
    /// request arrives. False when shut down with nothing queued or in service.
    fn wait_for_event(&mut self) -> bool {
        let next_done = self.in_service.peek().map(|Reverse((done, _))| *done);
        match (next_done, self.free_slots.is_empty()) {
            (Some(done), true) => {
                sleep_until(self.shared.clock.wall_at(done));
                true
            }
            (Some(done), false) => {
                self.wait_for_arrival_until(self.shared.clock.wall_at(done));
                true
            }
            (None, _) => self.wait_for_arrival(),
        }
    }

    /// Blocks until a request is queued; false on shutdown with an empty queue.
    fn wait_for_arrival(&self) -> bool {
        let queue = lock(&self.shared.queue);
        let queue = self
            .shared
            .wake
            .wait_while(queue, |q| q.scheduler.is_empty() && !q.shutdown)
            .unwrap_or_else(PoisonError::into_inner);
        !queue.scheduler.is_empty()
    }

    /// Blocks until a request is queued or `deadline` passes (spinning the
    /// last stretch, as `sleep_until` does).
    fn wait_for_arrival_until(&self, deadline: Instant) {
        let queue = lock(&self.shared.queue);
        let timeout = deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(clock::SPIN);
        let (queue, _) = self
            .shared
            .wake
            .wait_timeout_while(queue, timeout, |q| q.scheduler.is_empty())
            .unwrap_or_else(PoisonError::into_inner);
        let arrived = !queue.scheduler.is_empty();
        drop(queue);
        if !arrived {
            sleep_until(deadline);
        }
    }

    /// Completes every request whose deadline has passed, in completion order.
    fn complete_due(&mut self) {
        while let Some(&Reverse((done, id))) = self.in_service.peek() {
            let deadline = self.shared.clock.wall_at(done);
            let now = Instant::now();
            if now < deadline {
                return;
            }
            self.in_service.pop();
            let Some(mut finished) = self.by_id.remove(&id) else {
                continue;
            };
            finished.served.late = now - deadline;
            // Counted before the reply, so a reader woken by it sees its read counted.
            lock(&self.shared.stats).record(&finished.served);
            (finished.complete)(Ok(()));
            self.free_slots.push(done);
        }
    }
}

/// The error of a request the failed actuator will never serve.
fn actuator_failed() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

/// Locks a mutex, carrying on with the data if another thread panicked while
/// holding it (the counters and queue stay consistent between statements).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn fixed(ms: u64) -> Box<dyn DiskModel> {
        disk::model_from_name(&format!("fixed:{ms}")).unwrap()
    }

    fn start(model: Box<dyn DiskModel>, scheduler: &str, scale: f64) -> Actuator {
        let scheduler = disk::scheduler_from_name(scheduler).unwrap();
        Actuator::start(model, scheduler, scale, Stats::default(), None).unwrap()
    }

    /// Submits reads at `addrs` (all arriving now) and returns the addresses in
    /// completion order with each completion's model time.
    fn serve(actuator: &Actuator, addrs: &[u64]) -> Vec<(u64, Duration)> {
        let handle = actuator.handle();
        let (sender, receiver) = mpsc::channel();
        let arrival = handle.now();
        for &addr in addrs {
            let sender = sender.clone();
            let clock = handle.clone();
            handle.submit(
                addr,
                4096,
                arrival,
                Box::new(move |result: io::Result<()>| {
                    result.unwrap();
                    sender.send((addr, clock.now())).unwrap()
                }),
            );
        }
        drop(sender);
        receiver.iter().collect()
    }

    #[test]
    fn completions_never_come_before_the_model_says() {
        let actuator = start(fixed(2), "fifo", 1.0);
        let begin = actuator.handle().now();
        let done = serve(&actuator, &[0, 1 << 30, 4096]);
        for (index, (_, at)) in done.iter().enumerate() {
            let due = Duration::from_millis(2 * (index as u64 + 1));
            assert!(
                *at - begin >= due,
                "request {index} done at {at:?}, due {due:?}"
            );
        }
    }

    #[test]
    fn fifo_serves_in_arrival_order() {
        let actuator = start(fixed(1), "fifo", 0.1);
        let order: Vec<u64> = serve(&actuator, &[5, 1, 9, 3])
            .into_iter()
            .map(|d| d.0)
            .collect();
        assert_eq!(order, [5, 1, 9, 3]);
    }

    #[test]
    fn counters_add_up_model_time_not_wall_time() {
        let actuator = start(fixed(10), "fifo", 0.01);
        serve(&actuator, &[0, 8192, 8192 + 4096]);
        let stats = actuator.stop();
        assert_eq!(stats.requests, 3);
        assert_eq!(stats.bytes, 3 * 4096);
        assert!(
            (stats.busy_seconds - 0.030).abs() < 1e-9,
            "busy {}",
            stats.busy_seconds
        );
        // Head starts at 0: the first read does not seek, the second seeks 4 KiB
        // forward, the third starts where the second ended.
        assert_eq!(stats.seeks, 1);
        assert_eq!(stats.seek_distance_bytes, 4096);
        // All three arrived together: they complete 10, 20 and 30 ms after arrival.
        assert!((stats.response_seconds - 0.060).abs() < 1e-9);
        assert!(stats.max_queue_depth >= 1);
    }

    #[test]
    fn the_request_log_has_each_request_served_in_service_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("requests");
        let scheduler = disk::scheduler_from_name("fifo").unwrap();
        let log = RequestLog::create(&path).unwrap();
        let actuator =
            Actuator::start(fixed(10), scheduler, 0.01, Stats::default(), Some(log)).unwrap();
        serve(&actuator, &[8192, 0, 4096]);
        actuator.stop();
        let text = std::fs::read_to_string(&path).unwrap();
        let rows: Vec<Vec<f64>> = text
            .lines()
            .skip(1)
            .map(|line| line.split(' ').map(|f| f.parse().unwrap()).collect())
            .collect();
        let addresses: Vec<f64> = rows.iter().map(|row| row[3]).collect();
        assert_eq!(addresses, [8192.0, 0.0, 4096.0], "served in arrival order");
        for (index, row) in rows.iter().enumerate() {
            assert_eq!(row[4], 4096.0);
            assert!(row[1] >= row[0], "starts after it arrived: {row:?}");
            assert!(
                (row[2] - row[1] - 0.010).abs() < 1e-5,
                "10 ms of service: {row:?}"
            );
            if index > 0 {
                assert!(
                    (row[1] - rows[index - 1][2]).abs() < 1e-5,
                    "back to back: {row:?}"
                );
            }
        }
    }

    #[test]
    fn requests_queued_while_busy_are_served_in_clook_order() {
        // fixed:50 at scale 0.2: the first read holds the actuator 10 ms while
        // the others are queued; C-LOOK then serves them by address.
        let actuator = start(fixed(50), "clook", 0.2);
        let order: Vec<u64> = serve(&actuator, &[0, 50, 10, 40, 20, 30])
            .into_iter()
            .map(|d| d.0)
            .collect();
        assert_eq!(order, [0, 10, 20, 30, 40, 50]);
    }

    #[test]
    fn a_parallel_model_serves_overlapping_requests() {
        // 16 one-page reads on 8 channels of 10 ms each: served one at a time
        // they would take 160 ms of model time; overlapped, about 20 ms.
        let model = disk::model_from_name("ssd:10000,8,1000").unwrap();
        assert!(model.parallelism() > 1);
        let actuator = start(model, "fifo", 1.0);
        let begin = actuator.handle().now();
        let pages: Vec<u64> = (0..16).map(|page| page * 4096).collect();
        let done = serve(&actuator, &pages);
        let last = done.iter().map(|d| d.1).max().unwrap() - begin;
        assert_eq!(done.len(), 16);
        assert!(
            last < Duration::from_millis(80),
            "last completion at {last:?}: the reads were not overlapped"
        );
    }

    /// A model with a bug: its first request panics.
    struct PanickingModel;

    impl DiskModel for PanickingModel {
        fn service(&mut self, _now: Duration, _req: &Request) -> Duration {
            panic!("model bug (deliberate, for the test)")
        }
        fn head(&self) -> u64 {
            0
        }
        fn capacity(&self) -> u64 {
            1 << 30
        }
    }

    #[test]
    fn a_panicking_model_fails_every_read_with_eio_instead_of_hanging() {
        let actuator = start(Box::new(PanickingModel), "fifo", 1.0);
        let handle = actuator.handle();
        let (hook_sender, hook_receiver) = mpsc::channel();
        handle.on_failure(Box::new(move || hook_sender.send(()).unwrap()));
        let (sender, receiver) = mpsc::channel();
        for addr in 0..4u64 {
            let sender = sender.clone();
            let complete = move |result: io::Result<()>| {
                sender.send(result.map_err(|e| e.raw_os_error())).unwrap()
            };
            handle.submit(addr * 4096, 4096, handle.now(), Box::new(complete));
        }
        // A harness timeout, not a speed check: today's failure mode is a hang.
        let patience = Duration::from_secs(30);
        for _ in 0..4 {
            let result = receiver
                .recv_timeout(patience)
                .expect("a reply, not a hang");
            assert_eq!(result, Err(Some(libc::EIO)));
        }
        hook_receiver
            .recv_timeout(patience)
            .expect("the failure hook ran");
        assert!(handle.failure().unwrap().contains("model bug"));
        let (late_sender, late_receiver) = mpsc::channel();
        handle.submit(
            0,
            1,
            handle.now(),
            Box::new(move |r| late_sender.send(r.is_err()).unwrap()),
        );
        assert_eq!(
            late_receiver.try_recv(),
            Ok(true),
            "later reads fail at once"
        );
        actuator.stop();
    }

    #[test]
    fn stop_serves_what_is_queued() {
        let actuator = start(fixed(1), "fifo", 0.1);
        let handle = actuator.handle();
        let (sender, receiver) = mpsc::channel();
        for addr in 0..5u64 {
            let sender = sender.clone();
            handle.submit(
                addr,
                1,
                handle.now(),
                Box::new(move |result: io::Result<()>| {
                    result.unwrap();
                    sender.send(addr).unwrap()
                }),
            );
        }
        let stats = actuator.stop();
        assert_eq!(stats.requests, 5);
        assert_eq!(receiver.try_iter().count(), 5);
    }
}
