//! The libprefetch side of one tracked database file: its client, its region, and the section 5.4 callback
//! that turns [`ScanPlanner`] decisions into `request_prefetching` calls in batches, as in Figure 7:
//! the first batch with PF_SET (or PF_SET_FROM_MARK), the rest with PF_APPEND, stopping when libprefetch
//! accepts fewer entries than offered (its list is full), and PF_DONE at the end.
//!
//! Deviations: none from the paper's callback protocol. The client uses libprefetch's default
//! configuration (budget from /proc/meminfo and the memory cgroup, 32 KiB infill), tunable with the
//! `LIBPREFETCH_*` variables like a C client's, with a longer list.

use std::ffi::c_int;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use libprefetch::{AccessEntry, CallbackInfo, Client, Config, Mode};
use rusqlite::ffi::sqlite3_int64;

use crate::btree::Unowned;
use crate::scan::{Plan, ScanPlanner};

/// Environment variable that makes each tracked file print libprefetch's counters to stderr when closed.
pub const STATS_ENV: &str = "PREFETCH_SQLITE_STATS";

/// Access-list capacity asked of libprefetch, in entries.
const LIST_CAPACITY: usize = 8 << 20;

/// Entries handed to libprefetch per `request_prefetching` call.
const BATCH: usize = 4096;

/// libprefetch state of one open main database file.
pub struct Tracked {
    /// SQLite's own descriptor of the file: read and advised, never closed here.
    fd: RawFd,
    client: Client,
    planner: Arc<Mutex<ScanPlanner>>,
    /// Whether the access list may be non-empty (so a write has something to drop).
    listed: Arc<AtomicBool>,
}

impl Tracked {
    /// Registers a client whose callback plans index scans of the file open as `fd` (SQLite's descriptor,
    /// which must stay open until the `Tracked` is dropped), and the whole file as its region. `None` if
    /// any step fails: the file is then simply not tracked.
    pub fn open(fd: RawFd) -> Option<Tracked> {
        let planner = Arc::new(Mutex::new(ScanPlanner::new(Arc::new(Unowned(fd)))));
        let listed = Arc::new(AtomicBool::new(false));
        let client = {
            let planner = Arc::clone(&planner);
            let listed = Arc::clone(&listed);
            Client::register(config(), move |client: &Client, info: CallbackInfo| {
                on_callback(client, fd, &planner, &listed, info);
            })
            .ok()?
        };
        client.register_region(fd, 0, i64::MAX as u64).ok()?;
        Some(Tracked {
            fd,
            client,
            planner,
            listed,
        })
    }

    /// Reports a read of `amount` bytes at `offset` that SQLite is about to make, unless it reads a b-tree
    /// interior page (see [`ScanPlanner::is_interior`]).
    pub fn note_read(&self, offset: sqlite3_int64, amount: c_int) {
        let (Ok(offset), Ok(amount)) = (u64::try_from(offset), u64::try_from(amount)) else {
            return;
        };
        let interior = self
            .planner
            .try_lock()
            .is_ok_and(|planner| planner.is_interior(offset));
        if !interior {
            libprefetch::note_read(self.fd, offset, amount);
        }
    }

    /// The file is being written: its access list and the reader's caches no longer hold.
    pub fn drop_list(&self) {
        if self.listed.swap(false, Ordering::AcqRel) {
            if let Ok(mut planner) = self.planner.lock() {
                planner.invalidate();
            }
            let _ = self.client.request_prefetching(&[], Mode::SET | Mode::DONE);
        }
    }
}

impl Drop for Tracked {
    /// Waits for advice in flight, so that nothing touches `fd` once SQLite may close it; the client is
    /// unregistered when the fields drop.
    fn drop(&mut self) {
        self.client.settle();
        if std::env::var_os(STATS_ENV).is_some() {
            eprintln!(
                "prefetch VFS: libprefetch counters at close: {:?}",
                self.client.stats()
            );
        }
    }
}

/// The client's configuration: libprefetch's defaults and the `LIBPREFETCH_*` variables (as for a C client,
/// docs/api.md "Environment"), with room on the list for at least a whole index scan of a multi-gigabyte
/// table (one entry per row, 16 bytes each: 8 Mi entries take 128 MiB only when used).
fn config() -> Config {
    let from_env = Config::from_env();
    from_env.warn_once();
    Config {
        capacity: from_env.config.capacity.max(LIST_CAPACITY),
        ..from_env.config
    }
}

/// The section 5.4 callback: plan (inside ignore_accesses, since planning reads the file) and hand over.
fn on_callback(
    client: &Client,
    fd: RawFd,
    planner: &Mutex<ScanPlanner>,
    listed: &AtomicBool,
    info: CallbackInfo,
) {
    let plan = {
        let _quiet = client.ignore_accesses();
        let Ok(mut planner) = planner.try_lock() else {
            return;
        };
        planner.plan(info.last_marked.map(|(_, offset)| offset), info.requested.1)
    };
    let (entries, first_mode) = match plan {
        Plan::Set(entries) => (entries, Mode::SET),
        Plan::FromMark(entries) => (entries, Mode::SET_FROM_MARK),
        Plan::Clear => (Vec::new(), Mode::SET),
        Plan::Keep => return,
    };
    listed.store(!entries.is_empty(), Ordering::Release);
    let mut mode = first_mode;
    for chunk in entries.chunks(BATCH) {
        let batch: Vec<AccessEntry> = chunk
            .iter()
            .map(|e| AccessEntry {
                offset: e.offset,
                fd,
                mark: e.mark,
            })
            .collect();
        let accepted = client.request_prefetching(&batch, mode).unwrap_or(0);
        mode = Mode::APPEND;
        if accepted < batch.len() {
            break;
        }
    }
    let _ = client.request_prefetching(&[], mode | Mode::DONE);
}
