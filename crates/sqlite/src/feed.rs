//! The libprefetch side of one tracked database file: its client, its region, and the section 5.4 callback
//! that turns [`ScanPlanner`] decisions into `request_prefetching` calls, in `request_from`'s chunks, as in Figure 7:
//! the first chunk with PF_SET (or PF_APPEND, to extend the list), the rest with PF_APPEND, stopping
//! when libprefetch accepts fewer entries than offered (its list is full), and PF_DONE at the end.
//!
//! The client uses libprefetch's default
//! configuration (budget from /proc/meminfo and the memory cgroup, infill by the device's profile), tunable with the
//! `LIBPREFETCH_*` variables like a C client's, with a longer list, and the `conservative` schedule for a
//! database larger than the memory available when that memory holds at least an eighth of it (the
//! paper's window otherwise).

use std::ffi::c_int;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use libprefetch::profile::DeviceProfile;
use libprefetch::residency::Probe;
use libprefetch::{AccessEntry, CallbackInfo, Client, Config, Mode, Schedule};
use rusqlite::ffi::{sqlite3_int64, SQLITE_LOCK_NONE, SQLITE_LOCK_RESERVED};

use crate::btree::{PageSource, Unowned};
use crate::connection::Connection;
use crate::format::PageKind;
use crate::gate::{page_size, Gate, WORTHWHILE_MISS_RATIO};
use crate::scan::{Decisions, DeviceCosts, Entry, HeldCounts, Plan, RequestCosts, ScanPlanner};

/// B-tree page kinds, the first byte of a page's header (SQLite file format 1.6).
const TABLE_LEAF: u8 = 0x0d;
const INDEX_LEAF: u8 = 0x0a;
const INDEX_INTERIOR: u8 = 0x02;

/// Environment variable that makes each tracked file print libprefetch's counters to stderr when closed.
pub const STATS_ENV: &str = libprefetch::variables::SQLITE_STATS.name;

/// The variable that chooses libprefetch's schedule (docs/api.md); when set, the extension keeps it.
const SCHEDULE_ENV: &str = libprefetch::variables::SCHEDULE.name;

/// Access-list capacity asked of libprefetch, in entries.
const LIST_CAPACITY: usize = 8 << 20;

/// Callbacks in a row that leave the list as it is after which its scan is taken to have ended.
const IDLE_CALLBACKS: u32 = 1024;

/// Followed reads between two looks at libprefetch's counters while a list is set (see [`Warmth`]).
const WARM_CHECK_READS: u32 = 4096;

/// libprefetch clients the tracked files hold now ([`Tracked::client`]).
static CLIENTS: AtomicUsize = AtomicUsize::new(0);

/// How many libprefetch clients the VFS's tracked files hold now: a file whose reads have all found
/// it cached holds none (tests look it up with `dlsym`, as `prefetch_sqlite_tracked_files`).
#[no_mangle]
pub extern "C" fn prefetch_sqlite_clients() -> usize {
    CLIENTS.load(Ordering::Relaxed)
}

/// libprefetch state of one open main database file.
pub struct Tracked {
    /// SQLite's own descriptor of the file: read and advised, never closed here.
    fd: RawFd,
    /// The connection that opened the file, once SQLite has told it ([`crate::connection`]).
    connection: Arc<Connection>,
    /// What the client and the planner need of the machine ([`Settings`]): probed at open if the file
    /// is not mostly cached (the gate starts by probing each read, `gate.rs`), else at the first read the gate lets through.
    settings: OnceLock<Settings>,
    /// The connection asked for its full scans listed whole ([`Tracked::open`]).
    whole_scans: bool,
    /// The file's libprefetch client and region, registered at the first read the [`Gate`] lets
    /// through ([`Tracked::client`]): a connection whose reads all find the file cached never pays
    /// for them (their allocations took the heap's room, so a warm query grew the heap once).
    /// `None` inside if registering failed: the file's reads are then not followed.
    client: OnceLock<Option<Registered>>,
    planner: Arc<Mutex<ScanPlanner>>,
    /// Whether the access list may be non-empty (so a write has something to drop).
    listed: Arc<AtomicBool>,
    /// A read transaction began (or the file was written) since the callback last planned: the planner
    /// is to look at the file's state again ([`ScanPlanner::may_have_changed`]).
    changed: Arc<AtomicBool>,
    /// Callbacks in a row that left the list as it was (see [`on_callback`]), shared with the callback.
    idle_callbacks: Arc<AtomicU32>,
    /// A scan's table is held (`scan/held_table.rs`): its reads go past the gate to the planner.
    holding: Arc<AtomicBool>,
    /// Which reads libprefetch sees.
    gate: Gate,
}

/// A registered client and what watches its list.
struct Registered {
    client: Client,
    /// Whether the list's pages are all being found in the page cache; `None` under the conservative
    /// schedule (a database larger than memory), whose list also says what to drop and which would
    /// start its plan over after each release (measured in a cgroup of a quarter of a 1 GiB database:
    /// 14% more pages read and 1.2x the time).
    warmth: Option<Warmth>,
}

/// What the file's client and planner need of the machine: the client's configuration and the memory
/// available for caching ([`config`]: /proc/meminfo and the memory cgroup's files), and the device's
/// request costs if it is seek-bound ([`seek_bound_costs`]: its stored profile). Read at every open,
/// they took a warm connection, open to close, from 240-360 us to 440-470 (docs/repro.md, "A
/// connection's own cost, warm"); a connection whose reads all find the file cached needs none of them.
/// Not kept across opens: a cgroup's limit and a stored profile may change between connections.
struct Settings {
    config: Config,
    memory: u64,
    costs: Option<RequestCosts>,
    /// The device's request and transfer costs, from its stored profile (any device).
    device_costs: Option<DeviceCosts>,
    /// The most bytes one `POSIX_FADV_WILLNEED` call loads on the device.
    advice_limit: u64,
}

impl Settings {
    fn probe(fd: RawFd) -> Settings {
        let (config, memory) = config(fd);
        let profile = device_profile(fd);
        Settings {
            config,
            memory,
            costs: profile.as_ref().and_then(seek_bound_costs),
            device_costs: profile.map(|p| DeviceCosts {
                request_seconds: p.request_seconds,
                near_request_seconds: p.near_request_seconds.unwrap_or(p.request_seconds),
                bytes_per_second: p.bytes_per_second,
            }),
            advice_limit: libprefetch::device::willneed_limit(fd),
        }
    }

    /// Tells `planner` the memory (and, under the window schedule, to cap its stretches by it) and, on a
    /// seek-bound device, the request costs (and, if the
    /// connection asked for `whole_scans`, to list a small table's full scan whole).
    fn apply(&self, planner: &mut ScanPlanner, whole_scans: bool) {
        planner.set_memory(self.memory);
        if let Some(costs) = self.device_costs {
            planner.set_device_costs(costs);
        }
        planner.set_advice_limit(self.advice_limit);
        if self.config.schedule == Schedule::Window {
            planner.cap_stretches();
        }
        if let Some(costs) = self.costs {
            planner.set_first_rows_costs(costs);
            if whole_scans {
                planner.set_seek_bound(costs.far_pages);
            }
        }
    }
}

/// Notices a list whose pages are (almost) all in the page cache, already or since its rounds advised
/// them: a scan of a mostly cached database, or a cold one whose whole remaining list has been advised.
/// Following every read of a cached 1 GiB scan made it 1.5x slower than stock; when fewer than one page
/// in [`WORTHWHILE_MISS_RATIO`] of the last [`WARM_CHECK_READS`] followed reads was fetched or missed,
/// the list is dropped and the gate goes back to sampling, which sets a new list if pages go missing
/// again.
#[derive(Default)]
struct Warmth {
    /// Followed reads since the last look at the counters.
    reads: AtomicU32,
    /// libprefetch's (rounds, pages fetched, reads that missed) at the last look.
    last: Mutex<(u64, u64, u64)>,
}

impl Warmth {
    /// Counts a followed read; every [`WARM_CHECK_READS`] reads, true if since the last look rounds
    /// looked ahead and fewer than one page in [`WORTHWHILE_MISS_RATIO`] was fetched or missed. Without
    /// a round in between (a window advised at once, being read), the list stays: what lies past the
    /// window is not known to be cached.
    fn mostly_cached(&self, client: &Client) -> bool {
        let reads = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        if !reads.is_multiple_of(WARM_CHECK_READS) {
            return false;
        }
        let Ok(mut last) = self.last.try_lock() else {
            return false;
        };
        let stats = client.stats();
        let now = (stats.rounds, stats.pages_fetched, stats.misses);
        let grown = |now: u64, then: u64| now.saturating_sub(then);
        let looked_ahead = grown(now.0, last.0) > 0;
        let from_disk = grown(now.1, last.1) + grown(now.2, last.2);
        *last = now;
        looked_ahead && from_disk * WORTHWHILE_MISS_RATIO < u64::from(WARM_CHECK_READS)
    }
}

impl Tracked {
    /// Tracks the file open as `fd` (SQLite's descriptor, which must stay open until the `Tracked` is
    /// dropped): its planner and gate now, its client at the first read the gate lets through
    /// ([`Tracked::client`]), and its [`Settings`] now only if that read may come at once (the gate
    /// probes the first reads), so that the first read of a cold file pays no more than before and a connection
    /// to a cached file does not pay them. With `whole_scans` (the connection named
    /// the file with `prefetch_scan=whole`, [`crate::vfs::SCAN_PARAMETER`]) and a seek-bound device, a
    /// small table's full scan is listed whole ([`ScanPlanner::set_seek_bound`]); otherwise it is left
    /// alone, so a cursor closed early costs nothing.
    pub fn open(fd: RawFd, whole_scans: bool) -> Tracked {
        let mut planner = ScanPlanner::new(Arc::new(Unowned(fd)));
        let listed = Arc::new(AtomicBool::new(false));
        let changed = Arc::new(AtomicBool::new(false));
        let gate = Gate::new(fd, page_size());
        let settings = OnceLock::new();
        if gate.starts_open() {
            settings.get_or_init(|| Settings::probe(fd));
        }
        let residency = Probe::choose(fd);
        planner.set_residency_probe(Box::new(move |offset, len| {
            residency
                .resident_pages(fd, offset, len, page_size())
                .is_some_and(|(cached, pages)| cached == pages)
        }));
        let connection = Arc::new(Connection::default());
        let probe = Arc::clone(&connection);
        planner.set_statement_probe(Box::new(move || probe.running_bound()));
        Tracked {
            fd,
            connection,
            settings,
            whole_scans,
            client: OnceLock::new(),
            planner: Arc::new(Mutex::new(planner)),
            listed,
            changed,
            idle_callbacks: Arc::new(AtomicU32::new(0)),
            holding: Arc::new(AtomicBool::new(false)),
            gate,
        }
    }

    /// The file's client, registered with the whole file as its region on first use (the planner
    /// told the [`Settings`] first): its callback plans index scans of the file ([`on_callback`]).
    /// `None` if registering failed.
    fn client(&self) -> Option<&Registered> {
        self.client
            .get_or_init(|| {
                let settings = self.settings.get_or_init(|| Settings::probe(self.fd));
                if let Ok(mut planner) = self.planner.lock() {
                    settings.apply(&mut planner, self.whole_scans);
                }
                let planner = Arc::clone(&self.planner);
                let listed = Arc::clone(&self.listed);
                let changed = Arc::clone(&self.changed);
                let idle_callbacks = Arc::clone(&self.idle_callbacks);
                let holding = Arc::clone(&self.holding);
                let fd = self.fd;
                let client = Client::register(settings.config, move |client: &Client, info| {
                    let flags = CallbackFlags {
                        listed: &listed,
                        changed: &changed,
                        idle_callbacks: &idle_callbacks,
                        holding: &holding,
                    };
                    on_callback(client, fd, &planner, flags, info);
                })
                .ok()?;
                client.register_region(fd, 0, i64::MAX as u64).ok()?;
                CLIENTS.fetch_add(1, Ordering::Relaxed);
                let warmth =
                    (settings.config.schedule != Schedule::Conservative).then(Warmth::default);
                Some(Registered { client, warmth })
            })
            .as_ref()
    }

    /// The file's client if it has been registered ([`Tracked::client`]).
    fn registered(&self) -> Option<&Client> {
        self.client
            .get()
            .and_then(Option::as_ref)
            .map(|r| &r.client)
    }

    /// Reports a read of `amount` bytes at `offset` that SQLite is about to make, if the `Gate` lets it
    /// through and it does not read a b-tree interior page (see [`ScanPlanner::is_interior`]). Returns
    /// true if the read is to be looked at once made ([`Tracked::after_read`]): while no list is set,
    /// the reads followed are classified from the bytes SQLite read, and only index pages reach
    /// libprefetch and the planner (a table read costs a push, not a callback and its system calls).
    pub fn note_read(&self, offset: sqlite3_int64, amount: c_int) -> bool {
        let (Ok(offset), Ok(amount)) = (u64::try_from(offset), u64::try_from(amount)) else {
            return false;
        };
        let listed = self.listed.load(Ordering::Acquire);
        let holding = self.holding.load(Ordering::Relaxed);
        if !holding && !self.gate.follows(self.fd, offset, amount, listed) {
            return false;
        }
        let Some(registered) = self.client() else {
            return false;
        };
        if !listed {
            return true;
        }
        let interior = self
            .planner
            .try_lock()
            .is_ok_and(|planner| planner.is_interior(offset));
        if interior {
            return false;
        }
        libprefetch::note_read(self.fd, offset, amount);
        let warm = |warmth: &Warmth| warmth.mostly_cached(&registered.client);
        if registered.warmth.as_ref().is_some_and(warm) {
            self.release_cached_list();
        }
        false
    }

    /// SQLite read `bytes` at `offset` (a read [`Tracked::note_read`] asked to look at): a table leaf is
    /// remembered by the planner, an index page is reported to libprefetch, whose callback plans.
    pub fn after_read(&self, offset: sqlite3_int64, bytes: &[u8]) {
        let (Ok(offset), Ok(amount)) = (u64::try_from(offset), u64::try_from(bytes.len())) else {
            return;
        };
        // The b-tree page header follows the 100-byte file header on page 1.
        let kind_at = if offset == 0 { 100 } else { 0 };
        match bytes.get(kind_at) {
            Some(&TABLE_LEAF) => {
                if let Ok(mut planner) = self.planner.try_lock() {
                    planner.note_table_read(offset);
                }
            }
            Some(&kind @ (INDEX_LEAF | INDEX_INTERIOR)) => {
                if let (Ok(mut planner), Ok(kind)) =
                    (self.planner.try_lock(), PageKind::from_byte(0, kind))
                {
                    planner.note_page_kind(offset, kind);
                }
                libprefetch::note_read(self.fd, offset, amount);
            }
            _ => {}
        }
    }

    /// Drops a list whose pages are (almost) all cached (see [`Warmth`]), keeping what the reader learned of the
    /// file: a scan that reaches uncached pages again is listed anew from its next index leaf.
    fn release_cached_list(&self) {
        self.clear_list(|planner| {
            if let Ok(mut planner) = planner.try_lock() {
                planner.pause_scan();
            }
            self.gate.following.store(0, Ordering::Relaxed);
        });
    }

    /// If a list is set: `forget` what the planner should no longer hold, then empty libprefetch's list.
    fn clear_list(&self, forget: impl FnOnce(&Mutex<ScanPlanner>)) {
        if self.listed.swap(false, Ordering::AcqRel) {
            forget(&self.planner);
            if let Some(client) = self.registered() {
                let _ = client.request_prefetching(&[], Mode::SET | Mode::DONE);
            }
        }
    }

    /// SQLite now holds lock `level` on the file (SQLITE_LOCK_NONE to SQLITE_LOCK_EXCLUSIVE); with
    /// none, the connection's read transaction has ended ([`Tracked::read_ended`]).
    pub fn lock_level(&self, level: c_int) {
        let writing = level >= SQLITE_LOCK_RESERVED;
        self.gate.writing.store(writing, Ordering::Relaxed);
        self.changed.store(true, Ordering::Release);
        if level == SQLITE_LOCK_NONE {
            self.read_ended();
        }
    }

    /// The connection's read transaction ended (its shared lock, or its WAL read lock, released): no
    /// statement of it is running, so a scan it left early (a cursor closed before the end) is over
    /// and what its list has not yet fetched is dropped.
    pub fn read_ended(&self) {
        self.clear_list(|planner| {
            if let Ok(mut planner) = planner.try_lock() {
                planner.end_scan();
            }
        });
        self.end_holding(ScanPlanner::end_scan);
    }

    /// Ends a held table's scan (`end` the planner's side of it), if one is held.
    fn end_holding(&self, end: fn(&mut ScanPlanner)) {
        if self.holding.swap(false, Ordering::AcqRel) {
            if let Ok(mut planner) = self.planner.lock() {
                end(&mut planner);
            }
        }
    }

    /// The connection ran `PRAGMA cache_size = cache_size` on the file's schema: its own cache serves
    /// that many lookups, which the list leaves off (`scan/own_cache.rs`).
    pub fn cache_size_set(&self, cache_size: i64) {
        if let Ok(mut planner) = self.planner.lock() {
            planner.set_sqlite_cache_size(cache_size);
        }
    }

    /// The connection that opened the file.
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// The connection took (`true`) or released the WAL write lock.
    pub fn wal_write_lock(&self, held: bool) {
        self.gate.wal_writing.store(held, Ordering::Relaxed);
    }

    /// The connection took or released a lock of the WAL index (a WAL read transaction begins or ends
    /// with one): the file may have been checkpointed meanwhile.
    pub fn wal_lock(&self) {
        self.changed.store(true, Ordering::Release);
    }

    /// The file is being written: its access list and the reader's caches no longer hold.
    pub fn drop_list(&self) {
        self.changed.store(true, Ordering::Release);
        self.clear_list(|planner| {
            if let Ok(mut planner) = planner.lock() {
                planner.invalidate();
            }
        });
        self.end_holding(ScanPlanner::invalidate);
    }
}

impl Drop for Tracked {
    /// Waits for advice in flight, so that nothing touches `fd` once SQLite may close it; the client is
    /// unregistered when the fields drop.
    fn drop(&mut self) {
        let client = self.registered();
        if let Some(client) = client {
            client.settle();
            CLIENTS.fetch_sub(1, Ordering::Relaxed);
        }
        if stats_wanted() {
            let (decisions, held) = self
                .planner
                .lock()
                .map(|planner| (planner.decisions(), planner.held_counts()))
                .unwrap_or_default();
            let stats = client.map(Client::stats).unwrap_or_default();
            eprintln!("{}", stats_line(&decisions, &held, &stats));
        }
    }
}

/// Whether [`STATS_ENV`] asks for the statistics (set, and neither empty nor "0").
pub fn stats_wanted() -> bool {
    std::env::var_os(STATS_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The statistics of one database file at close: what the planner decided about the scans it saw, and
/// what came of libprefetch's advice (used: advised pages read while the plan kept them; wasted: advised
/// pages dropped before any read).
pub fn stats_line(d: &Decisions, held: &HeldCounts, stats: &libprefetch::Stats) -> String {
    let wasted = stats.prefetched_unused_dropped;
    format!(
        "prefetch VFS: database closed: scans followed {} (listed whole, as the connection asked: {}; \
         a LIMIT's first rows at once: {}); tables held {} (pages swept {}, index pages dropped {}); \
         left alone: covering index {}, cached {}, WITHOUT ROWID {}, descending {}, table small or about \
         the memory's size {}; index structures read {}; pages advised {} (from the disk {}, infill {}; rounds {}), used {}, wasted {}, evicted \
         before use {}; window {} KiB; reads followed {}",
        d.followed,
        d.listed_whole,
        d.first_rows,
        d.held,
        held.swept,
        held.dropped,
        d.covering,
        d.cached,
        d.without_rowid,
        d.descending,
        d.table_size,
        d.indexes_read,
        stats.pages_prefetched,
        stats.pages_fetched,
        stats.infill_pages,
        stats.rounds,
        stats.prefetched_used,
        wasted,
        stats.premature_evictions,
        stats.budget_bytes >> 10,
        stats.tracked_reads
    )
}

/// Whether all but at most one in [`WORTHWHILE_MISS_RATIO`] of the distinct table pages of `entries`
/// (a new list) are in the page cache: a scan of cached data is left alone. One cachestat a distinct
/// page, once a scan, stopping as soon as enough are missing: a whole index's list names each page of
/// its table dozens of times (419,088 entries for 6,400 pages), and probing every entry was a
/// system call a row before the scan's first read.
fn list_mostly_cached(fd: RawFd, entries: &[Entry]) -> bool {
    let mut pages: Vec<u64> = entries
        .iter()
        .filter(|e| !e.mark)
        .map(|e| e.offset)
        .collect();
    pages.sort_unstable();
    pages.dedup();
    let allowed = pages.len() as u64 / WORTHWHILE_MISS_RATIO;
    let probe = Probe::choose(fd);
    let size = page_size();
    let mut missing = 0u64;
    for &offset in &pages {
        let cached = probe
            .resident_pages(fd, offset, size, size)
            .is_some_and(|(cached, pages)| cached == pages);
        missing += u64::from(!cached);
        if missing > allowed {
            return false;
        }
    }
    true
}

/// Whether `entries` (appended to a list) name table pages and all of them are in the page cache.
/// Asked of the appended pages, not of the whole file: an append comes at every callback of a followed
/// scan, and a cachestat over a file whose pages are being evicted walks every page and shadow entry of
/// it (measured: a 90 MiB database scanned in a 6 MiB memory cgroup spent about 70% of its CPU time in
/// that walk).
fn appended_all_cached(fd: RawFd, entries: &[Entry]) -> bool {
    let (pages, missing) = table_pages_missing(fd, entries);
    pages > 0 && missing == 0
}

/// (table pages, those missing from the page cache) of `entries`: one cachestat a page.
fn table_pages_missing(fd: RawFd, entries: &[Entry]) -> (u64, u64) {
    let probe = Probe::choose(fd);
    let size = page_size();
    let (mut pages, mut missing) = (0u64, 0u64);
    for entry in entries.iter().filter(|e| !e.mark) {
        pages += 1;
        let cached = probe
            .resident_pages(fd, entry.offset, size, size)
            .is_some_and(|(cached, pages)| cached == pages);
        missing += u64::from(!cached);
    }
    (pages, missing)
}

/// If the device's `profile` is seek-bound (a far request's cost at
/// `plan::planner::SEEK_BOUND_GAP_BYTES` of transfer or more, as the emulated 7200 RPM disk's is and
/// this machine's flash's is not): its far and near request costs in pages.
fn seek_bound_costs(profile: &DeviceProfile) -> Option<RequestCosts> {
    (profile.break_even_gap_bytes() >= plan::planner::SEEK_BOUND_GAP_BYTES).then(|| RequestCosts {
        far_pages: profile.request_cost_pages(page_size()),
        near_pages: profile.infill_gap_bytes() / page_size().max(1),
    })
}

/// The stored profile of the device holding the file open as `fd`, if usable for the file's mount.
fn device_profile(fd: RawFd) -> Option<DeviceProfile> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a struct stat into the buffer on success.
    if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded, so the struct is initialised.
    let dev = unsafe { stat.assume_init() }.st_dev;
    let mount = libprefetch::profile::mount_id_of(fd);
    libprefetch::profile::usable(libc::major(dev), libc::minor(dev), mount)
}

/// The client's configuration: libprefetch's defaults and the `LIBPREFETCH_*` variables (as for a C client,
/// docs/api.md "Environment"), with room on the list for at least a whole index scan of a multi-gigabyte
/// table (one entry per row, 16 bytes each: 8 Mi entries take 128 MiB only when used), and, unless
/// `LIBPREFETCH_SCHEDULE` says otherwise, the schedule that suits the file open as `fd` (see
/// [`schedule_for`]); and the memory available for caching, probed once (three files read).
fn config(fd: RawFd) -> (Config, u64) {
    let from_env = Config::from_env();
    from_env.warn_once();
    let mut config = Config {
        capacity: from_env.config.capacity.max(LIST_CAPACITY),
        ..from_env.config
    };
    let memory = config.available_for_cache();
    if std::env::var_os(SCHEDULE_ENV).is_none() {
        let file_bytes = Unowned(fd).byte_len().unwrap_or(0);
        config.schedule = schedule_for(file_bytes, memory);
    }
    (config, memory)
}

/// The least share of the database the memory available must be for the `conservative` schedule:
/// 1/this ([`schedule_for`]).
const CONSERVATIVE_MEMORY_SHARE: u64 = 8;

/// The schedule for a database of `file_bytes` with `memory` bytes available for caching: `window` when
/// it fits, `conservative` (Cao et al. section 2.4: Belady's MIN run ahead on the list, each replacement
/// issued once it does no harm) when it does not but memory holds at least 1/[`CONSERVATIVE_MEMORY_SHARE`]
/// of it, and `window` again below that. An index scan of a database larger than memory reads table
/// pages again and again; MIN keeps the pages read again soonest, and a list long enough to show it:
/// the planner's memory is bounded per entry and per budget page (`plan::ENTRY_COST_BYTES`,
/// `plan::BUDGET_PAGE_COST_BYTES`) and a conservative planner may take 1/3 of the memory
/// (`plan::CONSERVATIVE_LIST_MEMORY_SHARE`), so about 19 budgets of list.
///
/// MIN reads fewer pages than the window only by keeping pages between their uses: at most the
/// memory's share of the file's rereads, and less still behind SQLite's own cache (2 MiB by default),
/// a first level that has already served every short reuse (Zhou, Philbin and Li, "The Multi-Queue
/// Replacement Algorithm for Second Level Buffer Caches", USENIX 2001, section 2). Its cost does not
/// shrink with it: a round every 1/64 of the budget (at nearly every read with the ~120 pages a 6 MiB
/// cgroup leaves beside the `sqlite3` shell) and a reserve of 1/8 of the budget to fetch ahead into,
/// too shallow to hide the reads' latency at such budgets. `memory` is probed when a file not mostly
/// cached is opened, before SQLite's cache has filled from it (a cached file's, at its first followed
/// read: [`Settings`]).
///
/// Measured with the 1 GiB database (`SELECT * FROM customer ORDER BY c_zip`, cold,
/// memory cgroup of 1/4, three runs each, alternated): conservative 1.26-1.28M pages in 15.9-17.4 s
/// (median 16.3), aggressive 1.35-1.38M in 16.0-17.3 s (median 16.1); window 6.04 GB in 23.5-23.7 s
/// earlier; stock 86-142 s, 1.60M pages; the optimum 0.72M. On this machine's disk with all memory
/// free, window 8.6-9.1 s against aggressive 9.8-11.2 s (stock 11.8-12.5 s). A 64 MiB database in a
/// 16 MiB cgroup: conservative 84-87k pages in 1.02-1.10 s, aggressive 95-97k in 1.20 s (stock 97k in
/// 5.6 s; the optimum 79k). The 25 MiB table of a 90 MiB database (medians of 3): in a 6 MiB cgroup
/// conservative 0.44x stock, reading 66.9k pages against stock's 56.1k, window 0.97x (56.1k against
/// 58.0k); in 8 MiB conservative 0.65x with stock's pages, window 1.28x.
fn schedule_for(file_bytes: u64, memory: u64) -> Schedule {
    if file_bytes > memory && memory.saturating_mul(CONSERVATIVE_MEMORY_SHARE) >= file_bytes {
        Schedule::Conservative
    } else {
        Schedule::Window
    }
}

/// The flags a [`Tracked`] shares with its callback.
#[derive(Clone, Copy)]
struct CallbackFlags<'a> {
    /// Whether the access list may be non-empty.
    listed: &'a AtomicBool,
    /// Whether the file may have changed since the last plan.
    changed: &'a AtomicBool,
    /// Callbacks in a row that left the list as it was.
    idle_callbacks: &'a AtomicU32,
    /// Whether a scan's table is held.
    holding: &'a AtomicBool,
}

/// The section 5.4 callback: plan (inside ignore_accesses, since planning reads the file) and hand over.
/// A list is handed over only if its pages are not all in the page cache (one cachestat a page):
/// otherwise there is nothing to fetch, the list is dropped and the gate goes back to letting cached reads straight
/// through. `idle_callbacks` counts callbacks since the list last changed: once a scan has ended, every
/// read diverges from its list and calls back, so after [`IDLE_CALLBACKS`] of them the list is dropped too.
fn on_callback(
    client: &Client,
    fd: RawFd,
    planner: &Mutex<ScanPlanner>,
    flags: CallbackFlags<'_>,
    info: CallbackInfo,
) {
    let listed = flags.listed;
    let plan = {
        let _quiet = client.ignore_accesses();
        let Ok(mut planner) = planner.try_lock() else {
            return;
        };
        if flags.changed.swap(false, Ordering::AcqRel) {
            planner.may_have_changed();
        }
        let plan = planner.plan(info.last_marked.map(|(_, offset)| offset), info.requested.1);
        flags.holding.store(planner.holding(), Ordering::Relaxed);
        let idle_callbacks = match plan == Plan::Keep {
            true => flags
                .idle_callbacks
                .load(Ordering::Relaxed)
                .saturating_add(1),
            false => 0,
        };
        flags
            .idle_callbacks
            .store(idle_callbacks, Ordering::Relaxed);
        let nothing_to_fetch = match &plan {
            Plan::Set(entries) | Plan::SetWhole(entries) => list_mostly_cached(fd, entries),
            Plan::Append(entries) => appended_all_cached(fd, entries),
            _ => false,
        };
        if nothing_to_fetch && matches!(plan, Plan::Set(_) | Plan::SetWhole(_)) {
            planner.left_alone_cached();
        }
        let idle = idle_callbacks >= IDLE_CALLBACKS || nothing_to_fetch;
        match (idle, listed.load(Ordering::Acquire)) {
            (true, true) => {
                match idle_callbacks >= IDLE_CALLBACKS {
                    true => planner.end_scan(),
                    false => planner.pause_scan(),
                }
                Plan::Clear
            }
            (true, false) => Plan::Keep,
            (false, _) => plan,
        }
    };
    let (entries, first_mode) = match plan {
        Plan::Set(entries) => (entries, Mode::SET),
        Plan::SetWhole(entries) => (entries, Mode::SET | Mode::WHOLE_LIST),
        Plan::Append(entries) => (entries, Mode::APPEND),
        Plan::Clear => (Vec::new(), Mode::SET),
        Plan::Keep => return,
    };
    if first_mode.contains(Mode::SET) || !entries.is_empty() {
        listed.store(!entries.is_empty(), Ordering::Release);
    }
    let mut mode = first_mode;
    let mut accepted_total = 0;
    if !entries.is_empty() {
        // Handed over as they are read, not copied into a batch first: libprefetch's chunks stop at
        // the first entry its list does not take.
        let handed = entries.iter().map(|e| AccessEntry {
            offset: e.offset,
            fd,
            mark: e.mark,
        });
        accepted_total = client.request_from(handed, mode).unwrap_or(0);
        mode = Mode::APPEND;
    }
    let _ = client.request_prefetching(&[], mode | Mode::DONE);
    if accepted_total < entries.len() {
        // The list is full: the scan is listed only as far as libprefetch took it.
        if let Ok(mut planner) = planner.try_lock() {
            planner.accepted(accepted_total);
        }
    }
}

#[cfg(test)]
mod tests;
