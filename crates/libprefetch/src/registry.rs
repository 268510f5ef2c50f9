//! Process-wide state: which file regions are registered to which client,
//! and the live C handles. Kept behind one pointer so a forked child can
//! start afresh without touching locks a parent thread may have held.
//!
//! A read of a descriptor with no registered region costs one atomic load
//! when no region exists at all, and one read-locked hash lookup otherwise.
//!
//! A region whose descriptor was closed (seen by the `close` interposer, or
//! found naming another file when its client advises it) is *retired*: its
//! slot stays, so unregistering it still succeeds, but no read matches it.

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, RwLock};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::advice_thread::{AdviceJob, AdviceThread};
use crate::client_rest::SoleRegion;
use crate::descriptors::PrivateDescriptors;
use crate::residency::Probe;
use crate::share::Share;

/// The regions one read touches (`Globals::regions_touching`).
pub type Touching = SmallVec<[RegionSlot; 2]>;

/// One registered region `[start, end)` of a descriptor.
#[derive(Clone)]
pub struct RegionSlot {
    /// The region's id (unique in the process).
    pub id: u64,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// The client the region belongs to.
    pub client: Arc<dyn RegionClient>,
    /// How residency of this descriptor's pages is probed.
    pub probe: Probe,
    /// Set once the descriptor was closed or found naming another file.
    retired: Arc<AtomicBool>,
    /// Whether a resting client's read of it may be made with `RWF_NOWAIT`
    /// (`track_cached.rs`): a regular file without `O_DIRECT`, until its
    /// filesystem refuses the flag.
    nowait: Arc<AtomicBool>,
    /// The copy of the library that registered it (`instance.rs`): only
    /// reads noted through that copy follow it.
    owner: usize,
}

/// What the registry needs of a region's client (`client.rs`): reached
/// through this trait so that the registry names no client type, and so that
/// a region registered through another copy of the library (`instance.rs`)
/// is served by that copy's code.
pub trait RegionClient: Send + Sync {
    /// The client's process-unique id.
    fn id(&self) -> u64;
    /// A read of `[offset, offset + len)` of `fd`, inside one of the
    /// client's regions, is about to be made; the caller holds the
    /// re-entrancy guard.
    fn on_read(self: Arc<Self>, fd: RawFd, offset: u64, len: u64, probe: Probe);
    /// True if the client only counts its reads now (it rests, `client_warm.rs`).
    fn rests(&self) -> bool;
    /// The client's rest (`client_warm.rs`), which a thread's fast path
    /// for a descriptor's resting reads holds (`track_fast.rs`).
    fn rest(&self) -> &Arc<crate::client_rest::Rest>;
    /// Whether this read of the resting client is to be its probe (one in
    /// `client_warm.rs`'s `probe_period`, `track_cached.rs`); the others are only counted.
    fn probe_due(&self) -> bool;
    /// A read inside the client's regions was served whole from the page
    /// cache while it rested, or made unprobed (`track_cached.rs`). Lock-free.
    fn count_cached_read(&self);
    /// A read inside the client's regions made while it rested found
    /// `[offset, offset + len)` missing (its first page cached if
    /// `first_cached`): the client wakes and accounts it as a miss; the
    /// caller holds the re-entrancy guard.
    fn on_missed_read(self: Arc<Self>, fd: RawFd, offset: u64, len: u64, first_cached: bool);
    /// `fd` is being closed, or names another file now: advice still
    /// planned for it is dropped (`descriptors.rs`).
    fn fd_closing(&self, fd: RawFd);
}

/// Everything a forked child must not inherit.
#[derive(Default)]
pub struct Globals {
    /// Keyed by descriptor with rustc's Fx hash: every read of a process
    /// with a region hashes its descriptor, and SipHash's protection
    /// against chosen keys buys nothing for the process's own descriptors.
    regions: RwLock<FxHashMap<i32, Vec<RegionSlot>>>,
    region_count: AtomicUsize,
    /// Bumped after every change that may end a resting read's fast path
    /// (`track_fast.rs`): a region added, removed or retired, a file that
    /// refused `RWF_NOWAIT`, a client that ignores its reads.
    epoch: AtomicU64,
    /// Addresses of live C handles and their kinds, to reject stale or
    /// bogus ones and handles of the other kind.
    pub handles: Mutex<HashMap<usize, HandleKind>>,
    /// The advice thread, started on the first background round.
    pub advice: AdviceThread,
    /// Private descriptors of FUSE files (see `descriptors.rs`).
    pub private_descriptors: PrivateDescriptors,
    /// The memory budget's sharing among clients and processes (`share.rs`).
    pub share: Share,
}

/// What a live C handle is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleKind {
    /// A `pf_client_t`.
    Client,
    /// A `pf_region_t`.
    Region,
}

static GLOBALS: AtomicPtr<Globals> = AtomicPtr::new(std::ptr::null_mut());
static INIT: Once = Once::new();
static GENERATION: AtomicU64 = AtomicU64::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The process's state, created on first use: the instance's this copy
/// joined (`instance.rs`), or its own.
pub fn globals() -> &'static Globals {
    match crate::instance::host() {
        // SAFETY: a joined instance's state has this layout (same build) and lives for the process.
        Some(host) => unsafe { &*(host.globals)().cast::<Globals>() },
        None => own_globals(),
    }
}

/// The process's state if a client was ever registered; never allocates
/// (the interposed read path uses it from the first read of the process).
pub fn globals_if_started() -> Option<&'static Globals> {
    match crate::instance::host() {
        // SAFETY: as in `globals`; null when not started.
        Some(host) => unsafe { (host.globals_if_started)().cast::<Globals>().as_ref() },
        None => own_globals_if_started(),
    }
}

/// Number of fork()s this process descends from since the library started:
/// clients remember it and go inert in a child.
pub fn generation() -> u64 {
    crate::instance::host().map_or_else(own_generation, |host| (host.generation)())
}

/// A fresh process-unique id.
pub fn next_id() -> u64 {
    crate::instance::host().map_or_else(own_next_id, |host| (host.next_id)())
}

/// The sizes of the types the copies of one build share (part of the
/// build's fingerprint, `instance.rs`).
pub(crate) fn shared_sizes() -> [usize; 2] {
    [
        std::mem::size_of::<Globals>(),
        std::mem::size_of::<RegionSlot>(),
    ]
}

/// An address that names this copy of the library (each copy has its own
/// statics): regions remember which copy registered them (`instance.rs`).
fn this_copy() -> usize {
    std::ptr::from_ref(&NEXT_ID) as usize
}

/// This copy's own process state, created on first use.
pub(crate) fn own_globals() -> &'static Globals {
    INIT.call_once(|| {
        GLOBALS.store(Box::into_raw(Box::default()), Ordering::Release);
        // SAFETY: the handler is a plain extern "C" fn without arguments.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
    // SAFETY: set once above, replaced only by after_fork_in_child with
    // another leaked Box; never freed, so the reference stays valid.
    unsafe { &*GLOBALS.load(Ordering::Acquire) }
}

/// This copy's own process state if created.
pub(crate) fn own_globals_if_started() -> Option<&'static Globals> {
    let pointer = GLOBALS.load(Ordering::Acquire);
    // SAFETY: non-null values are leaked Boxes that are never freed.
    (!pointer.is_null()).then(|| unsafe { &*pointer })
}

/// This copy's own fork count.
pub(crate) fn own_generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// This copy's own id counter.
pub(crate) fn own_next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// In the child after fork(): the parent's clients stay with the parent.
/// The old state is leaked, not dropped: another thread of the parent may
/// have held its locks at the moment of the fork.
extern "C" fn after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
    GLOBALS.store(Box::into_raw(Box::default()), Ordering::Release);
}

/// Moves the clients whose regions of `fd` the read touches along their
/// lists. The caller holds the re-entrancy guard.
pub(crate) fn follow_regions(globals: &Globals, fd: RawFd, offset: u64, len: u64) {
    follow_slots(&globals.regions_touching(fd, offset, len), fd, offset, len);
}

/// Moves the clients of `slots`, the regions of `fd` the read touches,
/// along their lists; the regions of another copy are left alone. The
/// caller holds the re-entrancy guard.
pub(crate) fn follow_slots(slots: &Touching, fd: RawFd, offset: u64, len: u64) {
    let copy = this_copy();
    for slot in slots.iter().filter(|slot| slot.owner == copy) {
        let start = offset.max(slot.start);
        let end = offset.saturating_add(len).min(slot.end);
        Arc::clone(&slot.client).on_read(fd, start, end - start, slot.probe);
    }
}

/// What a read is made as (`track_cached.rs`), from the regions it touches.
pub(crate) enum RestingRead {
    /// Every region's client rests and none asked for this read as its
    /// probe: the read was counted, and is made with the usual call.
    Counted(Option<SoleRegion>),
    /// Every region's client rests (on a file that takes `RWF_NOWAIT`) and
    /// one asked for this read as its probe: the regions.
    Probe(Touching, Option<SoleRegion>),
    /// Not so (or no region): the regions, to follow the read as usual.
    Follow(Touching),
}

/// True if a read of `slot` may be made with `RWF_NOWAIT` or left unprobed
/// (`track_cached.rs`): it is this copy's, of a resting client, on a file
/// that takes the flag.
fn rests_for_nowait(slot: &RegionSlot, copy: usize) -> bool {
    slot.owner == copy && slot.nowait.load(Ordering::Acquire) && slot.client.rests()
}

/// A regular file opened without `O_DIRECT`: the reads `RWF_NOWAIT` serves
/// from the page cache.
fn may_read_nowait(fd: RawFd) -> bool {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a struct stat into the buffer on success.
    let regular = unsafe { libc::fstat(fd, stat.as_mut_ptr()) } == 0
        // SAFETY: fstat succeeded, so the struct is initialised.
        && unsafe { stat.assume_init() }.st_mode & libc::S_IFMT == libc::S_IFREG;
    // SAFETY: F_GETFL only reads the descriptor's status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    regular && flags != -1 && flags & libc::O_DIRECT == 0
}

impl RegionSlot {
    /// The file's filesystem refused `RWF_NOWAIT`: its reads go back to
    /// the residency probe.
    pub(crate) fn refuse_nowait(&self) {
        self.nowait.store(false, Ordering::Release);
    }
}

impl Globals {
    /// Runs `job` on this process's advice thread (`advice_thread.rs`);
    /// gives the job back if no thread can be had.
    pub fn run_in_background(&'static self, job: AdviceJob) -> Result<(), AdviceJob> {
        self.advice.run_in_background(job)
    }

    /// Registers a region; returns its id.
    pub fn add_region(&self, fd: i32, start: u64, end: u64, client: Arc<dyn RegionClient>) -> u64 {
        let id = next_id();
        let mut regions = self.regions.write().unwrap_or_else(|e| e.into_inner());
        let probe = Probe::choose(fd);
        regions.entry(fd).or_default().push(RegionSlot {
            id,
            start,
            end,
            client,
            probe,
            retired: Arc::default(),
            nowait: Arc::new(AtomicBool::new(may_read_nowait(fd))),
            owner: this_copy(),
        });
        self.region_count.fetch_add(1, Ordering::Release);
        self.changed();
        id
    }

    /// Removes the regions matching `keep == false`; returns how many.
    pub fn remove_regions(&self, mut remove: impl FnMut(&RegionSlot) -> bool) -> usize {
        let mut regions = self.regions.write().unwrap_or_else(|e| e.into_inner());
        let mut removed = 0;
        regions.retain(|_, slots| {
            let before = slots.len();
            slots.retain(|slot| !remove(slot));
            removed += before - slots.len();
            !slots.is_empty()
        });
        self.region_count.fetch_sub(removed, Ordering::Release);
        if removed > 0 {
            self.changed();
        }
        removed
    }

    /// Retires the regions on `fd` (of client `client_id` only, if given):
    /// the descriptor is being closed or names another file now. Their
    /// clients drop the advice still planned for `fd` (`descriptors.rs`),
    /// marked after the registry's lock is released (a round being routed
    /// holds its client's descriptors and may take the registry's).
    pub fn retire_regions(&self, fd: i32, client_id: Option<u64>) {
        let regions = self.regions.read().unwrap_or_else(|e| e.into_inner());
        let slots = regions.get(&fd).into_iter().flatten();
        let mut clients = Vec::new();
        for slot in slots.filter(|s| client_id.is_none_or(|id| s.client.id() == id)) {
            slot.retired.store(true, Ordering::Release);
            clients.push(Arc::clone(&slot.client));
        }
        // Only a descriptor with regions: every `close` of the process comes here.
        if !clients.is_empty() {
            self.changed();
        }
        drop(regions);
        for client in clients {
            client.fd_closing(fd);
        }
    }

    /// Ends every thread's fast path for resting reads (`track_fast.rs`):
    /// called after the change, so that a fast path filled from the state
    /// before it sees a new epoch.
    pub(crate) fn changed(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// The count of changes so far (`changed`).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// True if any region is registered (the fast path for untracked reads).
    pub fn any_regions(&self) -> bool {
        self.region_count.load(Ordering::Acquire) > 0
    }

    /// What a read of `len` bytes of `fd` at `offset` is made as
    /// (`track_cached.rs`): decided under the registry's read lock, the
    /// regions copied out only for a probe or a read to follow (a resting
    /// client's unprobed read costs no copy, no lock of its own). A read
    /// of a resting client's region, the only live one of `fd`, gives that
    /// region for the thread's fast path (`track_fast.rs`), with the epoch
    /// read before anything was looked at.
    pub(crate) fn resting_read(&self, fd: i32, offset: u64, len: u64) -> RestingRead {
        let regions = self.regions.read().unwrap_or_else(|e| e.into_inner());
        let epoch = self.epoch();
        let end = offset.saturating_add(len.max(1));
        let Some(slots) = regions.get(&fd) else {
            return RestingRead::Follow(Touching::new());
        };
        let touching = || {
            slots
                .iter()
                .filter(|s| s.start < end && offset < s.end)
                .filter(|s| !s.retired.load(Ordering::Acquire))
        };
        let copy = this_copy();
        if touching().next().is_none() || !touching().all(|s| rests_for_nowait(s, copy)) {
            return RestingRead::Follow(touching().cloned().collect());
        }
        // Retired regions never match a read again: the only live one may be kept.
        let mut live = slots.iter().filter(|s| !s.retired.load(Ordering::Acquire));
        let sole = match (live.next(), live.next()) {
            (Some(slot), None) if slot.start <= offset && end <= slot.end => Some(SoleRegion {
                epoch,
                start: slot.start,
                end: slot.end,
                rest: Arc::clone(slot.client.rest()),
            }),
            _ => None,
        };
        // Every client counts the read towards its next probe.
        if touching().fold(false, |due, slot| slot.client.probe_due() | due) {
            return RestingRead::Probe(touching().cloned().collect(), sole);
        }
        touching().for_each(|slot| slot.client.count_cached_read());
        RestingRead::Counted(sole)
    }

    /// The regions of `fd` that `[offset, offset + len)` touches: copied
    /// out, so that no lock is held while their clients follow the read
    /// (a callback may register regions); nearly always one, kept inline.
    pub fn regions_touching(&self, fd: i32, offset: u64, len: u64) -> Touching {
        let regions = self.regions.read().unwrap_or_else(|e| e.into_inner());
        let end = offset.saturating_add(len.max(1));
        regions
            .get(&fd)
            .map(|slots| {
                slots
                    .iter()
                    .filter(|s| s.start < end && offset < s.end)
                    .filter(|s| !s.retired.load(Ordering::Acquire))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}
