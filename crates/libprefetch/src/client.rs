//! Clients: one application access list each, with its callback, regions,
//! planner and counters (libprefetch, ATC 2009, sections 4.1-4.3, Figure 6).
//!
//! Locking: `state` guards the planner and is held only for bookkeeping,
//! never across a callback or an advice call. `callback` is taken with
//! `try_lock`: if another thread is already in the callback, a read goes on
//! without waiting (no read ever blocks on another thread's round). A round
//! is planned as soon as it is due, under the state lock, so the planner
//! always follows the reads; its advice is then issued outside the lock
//! (by the advice thread, in order, or by the reading thread), and
//! `rounds_in_flight` counts the rounds whose advice is not out yet.
//!
//! Deviations: the paper supports one client per process; here any number
//! of clients may coexist (regions of different clients should not overlap:
//! a read in overlapping regions is accounted to each of them).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use plan::{
    Entry, Mode, PageKey, PageRange, Planner, PlannerConfig, ReadOutcome, RoundPlan, Schedule,
};

use crate::descriptors::AdviceDescriptors;
use crate::guard::Reentry;
use crate::memory::{page_size, CachedProbe};
use crate::registry::{generation, globals, RegionClient};
use crate::residency::Probe;
use crate::{advice, memory, Error};

/// One future read: a byte offset of a descriptor, maybe marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessEntry {
    /// Byte offset (rounded down to its page).
    pub offset: u64,
    /// File descriptor.
    pub fd: RawFd,
    /// A landmark reported back to the callback once passed (section 4.1).
    pub mark: bool,
}

/// What the callback is told: where the application is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallbackInfo {
    /// The last marked entry the application has passed: (fd, byte offset of its page).
    pub last_marked: Option<(RawFd, u64)>,
    /// The read that triggered the callback: (fd, byte offset).
    pub requested: (RawFd, u64),
}

/// Tunables of a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Largest gap merged into one prefetch range (0 disables infill).
    /// `None` (the default): the break-even gap of the regions' devices,
    /// from their measured profiles, and no infill on a device without one
    /// (`profile.rs`).
    pub infill_bytes: Option<u64>,
    /// Maximum access-list entries (default 1 Mi). Each request lowers it to
    /// what memory allows: the list may take 1/8 of the memory available
    /// for caching, at `plan::ENTRY_COST_BYTES` an entry.
    pub capacity: usize,
    /// Cap on the memory available for caching, which is otherwise what
    /// /proc/meminfo and the memory cgroup allow, re-read for a round at
    /// most every `memory::PROBE_INTERVAL` (the cap applies to that
    /// reading; it never raises it).
    pub max_budget_bytes: Option<u64>,
    /// Longest WILLNEED call (default 4 MiB); lowered per client to what one
    /// call loads on the devices of its regions (see `device.rs`).
    pub max_advice_bytes: u64,
    /// Issue the second WILLNEED pass in reverse access order (section 4.5).
    /// Off by default: stock Linux ignores WILLNEED for cached pages, so the
    /// pass costs one call per run of pages and reorders nothing.
    pub reverse_pass: bool,
    /// Issue a round's advice from a background thread, so the application
    /// reads while the window streams in (default). Off: the reading thread
    /// issues it and blocks while the device queue is full, as in the paper.
    pub background_advice: bool,
    /// First window (reorder buffer): `Some(bytes)` starts there and grows
    /// as the application consumes the list, by as much a step as the
    /// device's far-request cost asks (slow start, `plan::planner`'s
    /// "Window growth"; default 128 KiB, Linux's default read-ahead window),
    /// so a list the application abandons early costs little; `None` starts
    /// at 90% of the memory available, as the paper does, and so does a
    /// list given with `Mode::WHOLE_LIST`.
    pub start_window_bytes: Option<u64>,
    /// When a round fetches and what it drops: by default `by-shape`
    /// (aggressive on a list of scattered pages, the paper's window on
    /// runs of adjacent pages), or one of the paper's window and Cao et
    /// al.'s aggressive and conservative, which plan from each page's next
    /// use (`plan::planner`).
    pub schedule: Schedule,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            infill_bytes: None,
            capacity: 1 << 20,
            max_budget_bytes: None,
            max_advice_bytes: 4 << 20,
            reverse_pass: false,
            background_advice: true,
            start_window_bytes: Some(128 << 10),
            schedule: Schedule::default(),
        }
    }
}

impl Config {
    /// The memory this client may plan with now: the system's and memory
    /// cgroup's room, capped by `max_budget_bytes`.
    pub fn available_for_cache(&self) -> u64 {
        self.available_for_cache_holding(0)
    }

    /// [`Config::available_for_cache`] for a plan keeping `held` bytes
    /// cached now (`memory::available_for_cache_holding`).
    pub fn available_for_cache_holding(&self, held: u64) -> u64 {
        let probed = memory::available_for_cache_holding(held);
        self.max_budget_bytes.map_or(probed, |cap| cap.min(probed))
    }
}

/// Counters of one client; laid out as `struct pf_stats` of libprefetch.h,
/// which `pf_get_stats` fills with it directly.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Stats {
    /// Prefetch rounds started.
    pub rounds: u64,
    /// Callback invocations.
    pub callbacks: u64,
    /// Reads that fell in a registered region.
    pub tracked_reads: u64,
    /// Tracked reads not on the access list.
    pub divergences: u64,
    /// Tracked reads of pages not in the page cache.
    pub misses: u64,
    /// Prefetched pages gone before their use.
    pub premature_evictions: u64,
    /// Pages asked for with WILLNEED.
    pub pages_prefetched: u64,
    /// Pages released with DONTNEED.
    pub pages_dropped: u64,
    /// Current reorder-buffer size (AIMD).
    pub budget_bytes: u64,
    /// Entries on the access list now.
    pub list_length: u64,
    /// Advised pages that were not in the page cache when advised: the
    /// reads prefetching asked of the device.
    pub pages_fetched: u64,
    /// Prefetched pages later read while the plan kept them.
    pub prefetched_used: u64,
    /// Prefetched pages dropped before any read.
    pub prefetched_unused_dropped: u64,
    /// Gap pages advised as infill.
    pub infill_pages: u64,
}

/// Identifies a registered region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegionId {
    pub(crate) id: u64,
    fd: RawFd,
}

type Callback = Box<dyn FnMut(&Client, CallbackInfo) + Send>;

struct State {
    planner: Planner,
    round_pending: bool,
    tracked_reads: u64,
    misses: u64,
    callbacks: u64,
    pages_fetched: u64,
    /// Spans of pages found cached since the last round (`client_probe.rs`).
    known: KnownCached,
    /// `misses` when the last round's advice was out (`client_warm.rs`).
    misses_at_round: u64,
    /// The client woke from a rest (at a read, or entries appended): the
    /// next read moves the position up to its entry (`client_warm.rs`).
    skip_to_next_read: bool,
    /// The reads counted at rest before the client woke: a next read not on
    /// the list finds that many entries passed (`client_warm.rs`).
    passed_at_rest: u64,
}

/// What a read leaves to do once the planner has accounted it.
struct AfterRead {
    /// A round was asked for (`PF_DONE`) and has not run.
    pending: bool,
    /// The plan holds a list (and so a share of memory).
    holds_list: bool,
    /// The plan keeps pages.
    holds_pages: bool,
}

/// The shared part of a client, referenced by its regions.
pub struct ClientInner {
    id: u64,
    generation: u64,
    config: Config,
    page_size: u64,
    state: Mutex<State>,
    /// `ignore_accesses` depth: an atomic, so that a read checks it
    /// without the state lock (and before its residency probe).
    ignoring: AtomicU32,
    callback: Mutex<Option<Callback>>,
    rounds_in_flight: AtomicUsize,
    /// Private descriptors that advice on FUSE files goes through.
    advice_fds: AdviceDescriptors,
    /// Set when the client is unregistered: reads already on their way stop here.
    dead: AtomicBool,
    /// The client holds a non-empty access list (and so a share of memory).
    holds_list: AtomicBool,
    /// This process's share of the memory available, re-read at a bounded
    /// rate (`memory::PROBE_INTERVAL`).
    memory: CachedProbe,
    /// Rounds skipped while the cache holds every read (`client_warm.rs`).
    rest: Arc<Rest>,
}

/// A libprefetch client. Dropping it unregisters it and its regions.
pub struct Client {
    inner: Arc<ClientInner>,
    owner: bool,
}

/// Tells the planner that the pages of the advised `ranges` (of descriptors
/// not `stale`) are in memory: each was cached already or has just been
/// read into the cache by WILLNEED, so if the plan keeps it and it is
/// missing when read, it was evicted prematurely (section 4.6).
fn confirm_cached(planner: &mut Planner, ranges: &[PageRange], stale: &[RawFd]) {
    for range in ranges.iter().filter(|r| !stale.contains(&r.fd)) {
        for page in range.start..range.end() {
            planner.confirm_cached(PageKey { fd: range.fd, page });
        }
    }
}

/// Entries the list may hold: the configured capacity, lowered so that the
/// planner's memory (`plan::ENTRY_COST_BYTES` an entry plus
/// `plan::BUDGET_PAGE_COST_BYTES` a page of its largest budget, AIMD's cap)
/// stays within 1/`share` of the memory available
/// (`Planner::list_memory_share`), counting the `held` entries' memory,
/// which the available figure no longer includes. A list that would not
/// fit gets short counts, like a full one (section 4.2).
fn list_capacity(configured: usize, available: u64, held: usize, share: u64) -> usize {
    let held_bytes = (held as u64).saturating_mul(plan::ENTRY_COST_BYTES as u64);
    let memory = available.saturating_add(held_bytes);
    let budget_pages = plan::Aimd::new(memory, 0).cap() / page_size();
    let allowed = plan::entries_within(memory / share.max(1), budget_pages);
    configured.min(usize::try_from(allowed).unwrap_or(usize::MAX))
}

/// Reads longer than this are clipped to the file's size before their
/// pages are accounted (a huge count near EOF must not cost a loop over
/// pages that do not exist); shorter ones skip the fstat.
const CLIP_ABOVE_BYTES: u64 = 1 << 20;

/// The part of `[offset, offset + len)` inside the file, `None` if empty.
fn clip_to_file(fd: RawFd, offset: u64, len: u64) -> Option<u64> {
    if len <= CLIP_ABOVE_BYTES {
        return Some(len);
    }
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a struct stat into the buffer on success.
    if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
        return Some(len);
    }
    // SAFETY: fstat succeeded, so the struct is initialised.
    let size = u64::try_from(unsafe { stat.assume_init() }.st_size).unwrap_or(0);
    Some(len.min(size.saturating_sub(offset))).filter(|&l| l > 0)
}

impl Client {
    /// Registers a client whose `callback` is asked for the access list
    /// when the library needs it. Never blocks.
    pub fn register(
        config: Config,
        callback: impl FnMut(&Client, CallbackInfo) + Send + 'static,
    ) -> Result<Client, Error> {
        if config.capacity == 0 || config.max_advice_bytes == 0 {
            return Err(Error::InvalidArgument(
                "capacity and max_advice_bytes must be positive",
            ));
        }
        let page_size = page_size();
        let available = config.available_for_cache();
        let planner = Planner::new(PlannerConfig {
            page_size,
            // Lowered to the break-even gap of each region's device when automatic.
            infill_bytes: config.infill_bytes.unwrap_or(u64::MAX),
            max_advice_bytes: config.max_advice_bytes.max(page_size),
            capacity: config.capacity,
            available_bytes: available,
            floor_bytes: (1 << 20).min(available),
            start_bytes: config.start_window_bytes,
            reverse_pass: config.reverse_pass,
            schedule: config.schedule,
            ..PlannerConfig::default()
        });
        let inner = Arc::new(ClientInner {
            id: crate::registry::next_id(),
            generation: generation(),
            config,
            page_size,
            state: Mutex::new(State {
                planner,
                round_pending: false,
                tracked_reads: 0,
                misses: 0,
                callbacks: 0,
                pages_fetched: 0,
                known: KnownCached::default(),
                misses_at_round: 0,
                skip_to_next_read: false,
                passed_at_rest: 0,
            }),
            ignoring: AtomicU32::new(0),
            callback: Mutex::new(Some(Box::new(callback))),
            rounds_in_flight: AtomicUsize::new(0),
            advice_fds: AdviceDescriptors::default(),
            dead: AtomicBool::new(false),
            holds_list: AtomicBool::new(false),
            memory: CachedProbe::default(),
            rest: Arc::default(),
        });
        globals();
        Ok(Client { inner, owner: true })
    }

    fn check_alive(&self) -> Result<(), Error> {
        if self.inner.generation != generation() {
            return Err(Error::Forked);
        }
        Ok(())
    }

    /// Tracks reads of `[start, end)` of `fd`. Errors: `BadFd` if `fd` is
    /// not open, `InvalidArgument` if `start >= end`.
    pub fn register_region(&self, fd: RawFd, start: u64, end: u64) -> Result<RegionId, Error> {
        self.check_alive()?;
        // SAFETY: F_GETFD only inspects the descriptor table.
        if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            return Err(Error::BadFd);
        }
        if start >= end {
            return Err(Error::InvalidArgument("region start must be below its end"));
        }
        let device = crate::device::Facts::of(fd);
        let limit = device.willneed_limit();
        let profile = device.profile;
        let infill = match self.inner.config.infill_bytes {
            None => profile.map_or(0, |p| p.infill_gap_bytes()),
            Some(bytes) => bytes,
        };
        let cost_pages = profile.map_or(0, |p| p.request_cost_pages(self.inner.page_size));
        self.inner
            .rest
            .note_miss_cost(profile.map(|p| p.request_seconds));
        let readahead = device.readahead_pages(self.inner.page_size);
        let mut state = self.inner.lock_state();
        state.planner.raise_readahead_pages(readahead);
        state.planner.limit_advice_bytes(limit);
        state.planner.limit_infill_bytes(infill);
        state.planner.raise_request_cost_pages(cost_pages);
        drop(state);
        self.inner
            .advice_fds
            .region_added(fd, &globals().private_descriptors);
        let id = globals().add_region(fd, start, end, Arc::<ClientInner>::clone(&self.inner));
        Ok(RegionId { id, fd })
    }

    /// Stops tracking a region of this client. Error: `InvalidArgument` if
    /// the region is not one of this client's.
    pub fn unregister_region(&self, region: RegionId) -> Result<(), Error> {
        self.check_alive()?;
        let id = self.inner.id;
        match globals().remove_regions(|slot| slot.id == region.id && slot.client.id() == id) {
            0 => Err(Error::InvalidArgument("no such region for this client")),
            _ => {
                self.inner.advice_fds.region_removed(region.fd);
                Ok(())
            }
        }
    }

    /// Updates the access list (section 4.2); returns how many entries were
    /// accepted (fewer than given once the list is full). With `Mode::DONE`
    /// a prefetching round starts: at once when called from application
    /// code, after the callback returns when called from a callback.
    pub fn request_prefetching(&self, entries: &[AccessEntry], mode: Mode) -> Result<usize, Error> {
        self.request_from(entries.iter().copied(), mode)
    }

    /// [`Client::request_prefetching`] over any sequence of entries. Memory
    /// stays bounded by the list's capacity, not by the sequence's length:
    /// entries are handed over in chunks and reading stops at the first
    /// short count. A chunk (24 KiB) stays below the C library's threshold
    /// for a mapping of its own, so each request's reuses heap pages
    /// already touched: chunks of 65,536 entries (1.5 MiB, mapped afresh
    /// and faulted in page by page at every request) were 624 of the 1,144
    /// page faults the warm random row's list cost, in batches of 8,192.
    pub fn request_from(
        &self,
        entries: impl IntoIterator<Item = AccessEntry>,
        mode: Mode,
    ) -> Result<usize, Error> {
        const CHUNK: usize = 1 << 10;
        self.check_alive()?;
        let page_size = self.inner.page_size;
        let mut entries = entries.into_iter().peekable();
        let available = entries
            .peek()
            .is_some()
            .then(|| self.inner.memory_for_cache());
        let mut chunk = Vec::with_capacity(CHUNK.min(entries.size_hint().1.unwrap_or(CHUNK)));
        let mut accepted = 0;
        let holds_list = {
            let mut state = self.inner.lock_state();
            if let Some(available) = available {
                let held = state.planner.list_len();
                let share = state.planner.list_memory_share();
                let capacity = list_capacity(self.inner.config.capacity, available, held, share);
                state.planner.set_capacity(capacity);
            }
            self.inner.before_request(&mut state, mode);
            let mut chunk_mode = mode.without(Mode::DONE);
            loop {
                chunk.clear();
                chunk.extend(entries.by_ref().take(CHUNK).map(|e| Entry {
                    key: PageKey {
                        fd: e.fd,
                        page: e.offset / page_size,
                    },
                    mark: e.mark,
                }));
                let taken = state.planner.request(&chunk, chunk_mode);
                accepted += taken;
                if taken < CHUNK {
                    break;
                }
                chunk_mode = Mode::APPEND;
            }
            if mode.contains(Mode::DONE) {
                state.round_pending = true;
            }
            self.inner.wake_on_request(&mut state, mode, accepted);
            state.planner.list_len() > 0
        };
        self.inner.note_list_held(holds_list);
        if mode.contains(Mode::DONE) && !Reentry::is_inside() {
            if let Some(_inside) = Reentry::enter() {
                self.inner.run_round();
            }
        }
        Ok(accepted)
    }

    /// Plans and issues a round now, even inside the library, for the replay
    /// starting its list at a read no region follows (`replay.rs`).
    pub(crate) fn run_round_now(&self) {
        self.inner.run_round();
    }

    /// Waits until the advice of the current round, if any, has been issued (with
    /// background advice, after the call that started it returns). Never waits on I/O.
    pub fn settle(&self) {
        while self.inner.rounds_in_flight.load(Ordering::Acquire) > 0 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// Reads by this client's application are not tracked until the guard
    /// is dropped (section 4.2). Nests.
    pub fn ignore_accesses(&self) -> IgnoreGuard<'_> {
        self.inner.ignoring.fetch_add(1, Ordering::AcqRel);
        globals().changed();
        IgnoreGuard(self)
    }

    /// Counters of this client.
    pub fn stats(&self) -> Stats {
        let state = self.inner.lock_state();
        let planned = state.planner.stats();
        Stats {
            rounds: planned.rounds,
            callbacks: state.callbacks,
            tracked_reads: state.tracked_reads + self.inner.rest.counted_reads(),
            divergences: planned.divergences,
            misses: state.misses,
            premature_evictions: planned.premature_evictions,
            pages_prefetched: planned.pages_prefetched,
            pages_dropped: planned.pages_dropped,
            budget_bytes: state.planner.budget_bytes(),
            list_length: state.planner.list_len() as u64,
            pages_fetched: state.pages_fetched,
            prefetched_used: planned.prefetched_used,
            prefetched_unused_dropped: planned.prefetched_unused_dropped,
            infill_pages: planned.infill_pages,
        }
    }

    /// The configuration this client was registered with.
    pub fn config(&self) -> Config {
        self.inner.config
    }

    /// Ignore count bookkeeping for the C API (which has no guard object).
    pub(crate) fn adjust_ignore(&self, delta: i32) -> Result<(), Error> {
        self.check_alive()?;
        self.inner
            .ignoring
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                count.checked_add_signed(delta)
            })
            .map(|_| {
                if delta > 0 {
                    globals().changed();
                }
            })
            .map_err(|_| Error::InvalidArgument("unignore_accesses without ignore_accesses"))
    }

    /// A non-owning handle for the callback (dropping it unregisters nothing).
    fn borrowed(inner: &Arc<ClientInner>) -> Client {
        Client {
            inner: Arc::clone(inner),
            owner: false,
        }
    }
}

impl Drop for Client {
    /// Unregisters: no callback runs once this returns. If another thread
    /// is in the callback, waits for it, unless called from a callback
    /// (which may be this client's own).
    fn drop(&mut self) {
        if !self.owner || self.inner.generation != generation() {
            return;
        }
        self.inner.dead.store(true, Ordering::Release);
        self.inner.note_list_held(false);
        let id = self.inner.id;
        globals().remove_regions(|slot| slot.client.id() == id);
        self.inner.advice_fds.closing_all();
        let slot = if Reentry::is_inside() {
            self.inner.callback.try_lock().ok()
        } else {
            Some(
                self.inner
                    .callback
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()),
            )
        };
        if let Some(mut callback) = slot {
            *callback = None;
        }
    }
}

/// Returned by [`Client::ignore_accesses`]; tracking resumes when dropped.
pub struct IgnoreGuard<'a>(&'a Client);

impl Drop for IgnoreGuard<'_> {
    fn drop(&mut self) {
        let _ = self
            .0
            .inner
            .ignoring
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                Some(count.saturating_sub(1))
            });
    }
}

impl RegionClient for ClientInner {
    /// The client's process-unique id.
    fn id(&self) -> u64 {
        self.id
    }

    fn on_read(self: Arc<Self>, fd: RawFd, offset: u64, len: u64, probe: Probe) {
        ClientInner::on_read(&self, fd, offset, len, probe);
    }

    fn rests(&self) -> bool {
        self.rests_now()
    }

    fn rest(&self) -> &Arc<Rest> {
        &self.rest
    }

    fn probe_due(&self) -> bool {
        self.rest.probe_due()
    }

    fn count_cached_read(&self) {
        self.rest.count_read();
    }

    fn on_missed_read(self: Arc<Self>, fd: RawFd, offset: u64, len: u64, first_cached: bool) {
        ClientInner::on_missed_read(&self, fd, offset, len, first_cached);
    }

    fn fd_closing(&self, fd: RawFd) {
        self.advice_fds.closing(fd);
    }
}

impl ClientInner {
    /// The memory this client may plan with now: its share (`share.rs`) of
    /// what the system and the memory cgroup allow, capped by the config.
    /// The reading and the process's share of it (which reads /proc for
    /// the other processes sharing the cgroup) are at most
    /// `memory::PROBE_INTERVAL` old; the split between this process's
    /// clients is always current. The pages the plan keeps count as its
    /// room even when the program's rereads made them active. Call without
    /// the state lock.
    fn memory_for_cache(&self) -> u64 {
        let share = &globals().share;
        let process = self.memory.read(Instant::now(), || {
            let held = self.lock_state().planner.held_pages() * self.page_size;
            share.process_portion(self.config.available_for_cache_holding(held))
        });
        share.client_portion(process)
    }

    /// Records whether the client holds a list, so that clients and
    /// processes holding one share the memory (`share.rs`). Call without
    /// the state lock: joining or leaving the shared table takes a file lock.
    fn note_list_held(&self, holds: bool) {
        if self.holds_list.swap(holds, Ordering::AcqRel) != holds {
            if holds {
                globals().share.client_started();
            } else {
                globals().share.client_stopped();
            }
        }
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Accounts a read of `[offset, offset + len)` of `fd` in one of this
    /// client's regions; may call back and run a round. The caller holds
    /// the re-entrancy guard.
    pub(crate) fn on_read(self: &Arc<Self>, fd: RawFd, offset: u64, len: u64, probe: Probe) {
        if self.generation != generation() || len == 0 {
            return;
        }
        if self.ignoring.load(Ordering::Acquire) > 0 || self.dead.load(Ordering::Acquire) {
            return;
        }
        let Some(len) = clip_to_file(fd, offset, len) else {
            return;
        };
        self.wake_if_rest_ran_out();
        if self.rest.resting() && self.read_while_resting(fd, offset, len, probe) {
            return;
        }
        // While a round's advice is still being issued, a missing page may
        // simply not have been asked for yet: not a premature eviction.
        let advising = self.rounds_in_flight.load(Ordering::Acquire) > 0;
        // The planner is told about the read's first page (the one that
        // places it on the list): a read reaching past the pages the plan
        // fetched must not count as that page's premature eviction.
        let (whole_resident, first_resident) = if advising {
            (true, true)
        } else {
            self.probe_read(fd, offset, len, probe)
        };
        self.on_probed_read(fd, offset, len, whole_resident, first_resident);
    }

    /// Accounts a read whose residency is known (the probe's answer, or a
    /// read made with `RWF_NOWAIT`, `client_warm.rs`); may call back and run
    /// a round. The caller holds the re-entrancy guard.
    fn on_probed_read(
        self: &Arc<Self>,
        fd: RawFd,
        offset: u64,
        len: u64,
        whole_resident: bool,
        first_resident: bool,
    ) {
        let (outcome, mut after) = self.account(fd, offset, len, first_resident, whole_resident);
        if outcome.call_back {
            if self.call_back(fd, offset) {
                // The callback listed this very read (Figure 7 lists from the
                // requested offset): its pages are being read, so consume them
                // on the new list, or the next read would diverge from it.
                self.consume_read(fd, offset, len);
            }
            after = Self::after_read(&mut self.lock_state());
        }
        let AfterRead {
            pending,
            holds_list,
            holds_pages,
        } = after;
        self.note_list_held(holds_list);
        // With no list and no pages kept a round has nothing to do: skip it (and its memory probe),
        // so reads followed while the application lists nothing (a query that reads one index leaf)
        // cost no more than the accounting.
        if (outcome.start_round || pending) && (holds_list || holds_pages) {
            self.run_round();
        }
    }

    /// Moves the planner along the pages of a read: the first page places
    /// the read on the list, the others are consumed only if next. Also
    /// returns what the read leaves to do, read under the same lock (a
    /// read that calls back reads it again after the callback).
    fn account(
        &self,
        fd: RawFd,
        offset: u64,
        len: u64,
        first_resident: bool,
        whole_resident: bool,
    ) -> (ReadOutcome, AfterRead) {
        let mut state = self.lock_state();
        state.tracked_reads += 1;
        if !whole_resident {
            state.misses += 1;
        }
        let first = offset / self.page_size;
        let last = (offset + len - 1) / self.page_size;
        if std::mem::take(&mut state.skip_to_next_read) {
            let passed = std::mem::take(&mut state.passed_at_rest);
            if !state.planner.skip_to(PageKey { fd, page: first }) {
                state.planner.pass_entries(passed);
            }
        }
        let (_, mut combined) =
            state
                .planner
                .on_read_by(this_thread(), PageKey { fd, page: first }, first_resident);
        let rest = state.planner.on_read_rest(fd, first + 1..last + 1);
        combined.call_back |= rest.call_back;
        combined.start_round |= rest.start_round;
        // A page the read begins or ends inside may hold another reader's record too.
        if !offset.is_multiple_of(self.page_size) {
            state.planner.note_partly_read(PageKey { fd, page: first });
        }
        if !(offset + len).is_multiple_of(self.page_size) {
            state.planner.note_partly_read(PageKey { fd, page: last });
        }
        (combined, Self::after_read(&mut state))
    }

    /// Takes the pending round and tells whether the plan holds a list or
    /// pages; the caller holds the state lock.
    fn after_read(state: &mut State) -> AfterRead {
        AfterRead {
            pending: std::mem::take(&mut state.round_pending),
            holds_list: state.planner.list_len() > 0,
            holds_pages: state.planner.held_pages() > 0,
        }
    }

    /// Consumes the read's pages that are the next entries of the list.
    fn consume_read(&self, fd: RawFd, offset: u64, len: u64) {
        let mut state = self.lock_state();
        let first = offset / self.page_size;
        let last = (offset + len - 1) / self.page_size;
        for page in first..=last {
            if !state.planner.consume_if_next(PageKey { fd, page }) {
                break;
            }
        }
    }

    /// Runs the application's callback unless another thread is in it;
    /// true if the callback changed the list.
    fn call_back(self: &Arc<Self>, fd: RawFd, offset: u64) -> bool {
        let Ok(mut slot) = self.callback.try_lock() else {
            return false;
        };
        if self.dead.load(Ordering::Acquire) {
            return false;
        }
        let Some(callback) = slot.as_mut() else {
            return false;
        };
        let (info, list_end) = {
            let mut state = self.lock_state();
            state.callbacks += 1;
            let last_marked = state
                .planner
                .last_mark()
                .map(|k| (k.fd, k.page * self.page_size));
            (
                CallbackInfo {
                    last_marked,
                    requested: (fd, offset),
                },
                state.planner.list_end(),
            )
        };
        let handle = Client::borrowed(self);
        callback(&handle, info);
        let mut state = self.lock_state();
        state.planner.callback_returned(list_end);
        state.planner.list_end() != list_end
    }

    /// Plans one round now and issues its advice: from the advice thread
    /// (after any earlier round's, in order) or, without background advice,
    /// from this thread. Planning never waits for an earlier round's advice,
    /// so the window keeps up with reads that run ahead of a slow device.
    pub(crate) fn run_round(self: &Arc<Self>) {
        let available = self.memory_for_cache();
        let plan = {
            let mut state = self.lock_state();
            let plan = Self::plan_locked(&mut state, available);
            if plan.evict.is_empty() && plan.fetch.is_empty() && plan.reverse.is_empty() {
                // Nothing to advise: no advice call, no hand-over to the
                // advice thread (a wake-up and a second lock of the state).
                return;
            }
            self.rounds_in_flight.fetch_add(1, Ordering::AcqRel);
            plan
        };
        if self.settle_if_cached(&plan) {
            return;
        }
        if !self.config.background_advice {
            self.issue(plan);
            return;
        }
        let client = Arc::clone(self);
        let job = Box::new(move || client.issue(plan));
        if let Err(job) = globals().run_in_background(job) {
            job();
        }
    }

    /// Plans a round with `available` bytes of memory (probed before the
    /// state lock was taken: no I/O happens under it); the caller holds the
    /// state lock.
    fn plan_locked(state: &mut State, available: u64) -> RoundPlan {
        state.round_pending = false;
        state.planner.set_available(available);
        let plan = state.planner.plan_round();
        state.known.after_round(&plan);
        plan
    }

    /// Issues a round's advice and ends the round. Advice for a descriptor
    /// that no longer names its region's file is dropped, and the client's
    /// regions on it retired.
    fn issue(&self, mut plan: RoundPlan) {
        let fetched = plan.fetch.clone();
        let stale = self
            .advice_fds
            .route(&mut plan, &globals().private_descriptors);
        for &fd in &stale {
            globals().retire_regions(fd, Some(self.id));
        }
        let counts = advice::execute(&plan, self.page_size, self.config.reverse_pass);
        self.end_round(&counts, &fetched, &stale);
    }

    /// Ends a round whose advice `counts` tell (its fetched ranges
    /// `fetched`, the descriptors found `stale`): its pages are accounted,
    /// the rest decided, and the ranges confirmed cached.
    fn end_round(&self, counts: &advice::AdviceCounts, fetched: &[PageRange], stale: &[RawFd]) {
        let mut state = self.lock_state();
        state.pages_fetched += counts.pages_fetched;
        let misses = state.misses;
        let missed = std::mem::replace(&mut state.misses_at_round, misses) != misses;
        let unread = state.planner.list_remaining();
        self.rest.after_round(counts, missed, unread);
        confirm_cached(&mut state.planner, fetched, stale);
        self.rounds_in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[path = "client_probe.rs"]
mod probe;
use probe::KnownCached;

#[path = "client_warm.rs"]
mod warm;
pub(crate) use crate::client_rest::Rest;
pub use crate::client_rest::{probe_period, MAX_PROBE_PERIOD, MIN_PROBE_PERIOD};

#[path = "client_reader.rs"]
mod reader;
pub(crate) use reader::reads_on_behalf;
use reader::this_thread;

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
