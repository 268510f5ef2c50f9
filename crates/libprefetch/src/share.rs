//! One memory budget per memory cgroup, shared by every client of every
//! process in it (libprefetch, ATC 2009, section 5.6 and Figure 12:
//! concurrent instances).
//!
//! Each client plans with the memory available for caching (`memory.rs`)
//! divided by the number of processes in its memory cgroup that hold an
//! access list now, then by the number of clients of its own process that
//! hold one. Without this, three instances in one cgroup each planned a
//! window of the whole cgroup, overflowed it, and evicted each other's
//! prefetched pages.
//!
//! Processes find each other through a small table in shared memory, one
//! per user and memory cgroup: `/dev/shm/libprefetch-<uid>-<cgroup hash>`,
//! [`SLOTS`] slots of (pid, start time, clients holding a list). A process
//! claims a slot when its first client takes a list and clears it when its
//! last client is dropped; the last process to leave unlinks the file.
//! Claims, clears and the unlink happen under `flock` (the table's
//! descriptor is closed once it is mapped, so the library holds no
//! descriptor while it shares; leaving reopens the file by name and checks
//! it is the same one), and a slot whose
//! process is gone (no such pid, or a pid reused by a process started at
//! another time) counts for nothing and is reclaimed at the next claim or
//! clear, so a process killed with SIGKILL leaves at most the file behind,
//! until the next process of that cgroup leaves.
//!
//! Limits: processes of different users in one cgroup do not see each
//! other (each user has its own table, mode 0600); past [`SLOTS`]
//! processes, further ones plan as if alone; a process whose table cannot
//! be opened (no /dev/shm) plans as if alone. All the table's I/O is raw
//! system calls (rustix), which the read interposers never see.
//!
//! Deviations: the paper's instances shared one buffer cache without
//! knowing of each other and relied on AIMD alone; that recovers only after
//! evictions have happened.

use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use rustix::fs::{
    flock, fstat, ftruncate, openat, unlinkat, AtFlags, FlockOperation, Mode, OFlags, CWD,
};
use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};

use crate::{memory, rawio};

/// Slots of a table (processes of one cgroup that can share a budget).
pub const SLOTS: usize = 128;

/// One process's slot in the shared table.
#[repr(C)]
struct Slot {
    pid: AtomicU32,
    clients: AtomicU32,
    start_time: AtomicU64,
}

const TABLE_BYTES: u64 = (SLOTS * std::mem::size_of::<Slot>()) as u64;

/// This process's view of the budget's sharing: its clients holding a list,
/// and its slot in the cgroup's table once it has one.
#[derive(Default)]
pub(crate) struct Share {
    active_clients: AtomicUsize,
    table: Mutex<Option<Table>>,
}

impl Share {
    /// A client of this process starts holding a list.
    pub(crate) fn client_started(&self) {
        let clients = self.active_clients.fetch_add(1, Ordering::AcqRel) + 1;
        let mut table = self.lock();
        if table.is_none() {
            *table = Table::join();
        }
        if let Some(table) = table.as_ref() {
            table.own().clients.store(clients as u32, Ordering::Release);
        }
    }

    /// A client of this process stops holding a list (or is dropped).
    pub(crate) fn client_stopped(&self) {
        let clients = self.active_clients.fetch_sub(1, Ordering::AcqRel) - 1;
        let mut table = self.lock();
        if let Some(joined) = table.as_ref() {
            joined
                .own()
                .clients
                .store(clients as u32, Ordering::Release);
        }
        if clients == 0 {
            if let Some(joined) = table.take() {
                joined.leave();
            }
        }
    }

    /// This process's part of `available` bytes: an equal share per process
    /// of the cgroup holding a list (telling them reads /proc for each).
    pub(crate) fn process_portion(&self, available: u64) -> u64 {
        let processes = self.lock().as_ref().map_or(1, Table::active_processes) as u64;
        available / processes.max(1)
    }

    /// One client's part of this process's `portion`: an equal share per
    /// client of this process holding a list.
    pub(crate) fn client_portion(&self, portion: u64) -> u64 {
        let clients = self.active_clients.load(Ordering::Acquire).max(1) as u64;
        portion / clients
    }

    fn lock(&self) -> MutexGuard<'_, Option<Table>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// This process's mapping of its cgroup's table, and its slot in it.
struct Table {
    path: String,
    /// Device and inode of the mapped file, to recognise it when leaving.
    file: (u64, u64),
    slots: NonNull<Slot>,
    own: usize,
}

// SAFETY: the mapping is shared memory accessed only through atomics; the
// pointer stays valid until `leave` unmaps it, which consumes the table.
unsafe impl Send for Table {}

impl Table {
    /// Opens (creating if needed) this cgroup's table and claims a slot;
    /// `None` if either cannot be had.
    fn join() -> Option<Table> {
        let path = table_path()?;
        let start_time = start_time(std::process::id())?;
        for _ in 0..8 {
            let file = openat(
                CWD,
                path.as_str(),
                OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                Mode::from_raw_mode(0o600),
            )
            .ok()?;
            flock(&file, FlockOperation::LockExclusive).ok()?;
            let stat = fstat(&file).ok()?;
            if stat.st_nlink == 0 {
                // Unlinked by a leaving process between our open and lock.
                continue;
            }
            if (stat.st_size as u64) < TABLE_BYTES {
                ftruncate(&file, TABLE_BYTES).ok()?;
            }
            let mut table = Table::map(&file, path.clone())?;
            let claimed = table.claim(start_time);
            let _ = flock(&file, FlockOperation::Unlock);
            return claimed.then_some(table);
        }
        None
    }

    fn map(file: &OwnedFd, path: String) -> Option<Table> {
        let stat = fstat(file).ok()?;
        // SAFETY: a fresh shared mapping of the table's TABLE_BYTES bytes;
        // the kernel chooses the address.
        let address = unsafe {
            mmap(
                std::ptr::null_mut(),
                TABLE_BYTES as usize,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                file.as_fd(),
                0,
            )
        }
        .ok()?;
        Some(Table {
            path,
            file: (stat.st_dev, stat.st_ino),
            slots: NonNull::new(address.cast::<Slot>())?,
            own: SLOTS,
        })
    }

    /// The table's file, opened again by name, if it is still the mapped one.
    fn reopen(&self) -> Option<OwnedFd> {
        let flags = OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let file = openat(CWD, self.path.as_str(), flags, Mode::empty()).ok()?;
        let stat = fstat(&file).ok()?;
        ((stat.st_dev, stat.st_ino) == self.file).then_some(file)
    }

    fn slots(&self) -> &[Slot] {
        // SAFETY: the mapping holds SLOTS slots (the file is at least
        // TABLE_BYTES long) and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr(), SLOTS) }
    }

    fn own(&self) -> &Slot {
        &self.slots()[self.own]
    }

    /// Takes a free or dead slot for this process (the caller holds the
    /// file lock); false if the table is full.
    fn claim(&mut self, start_time: u64) -> bool {
        let pid = std::process::id();
        let free = self
            .slots()
            .iter()
            .position(|slot| !is_alive(slot) || slot.pid.load(Ordering::Acquire) == pid);
        let Some(own) = free else {
            return false;
        };
        let slot = &self.slots()[own];
        slot.clients.store(0, Ordering::Release);
        slot.start_time.store(start_time, Ordering::Release);
        slot.pid.store(pid, Ordering::Release);
        self.own = own;
        true
    }

    /// Processes of the cgroup holding a list now, this one included.
    fn active_processes(&self) -> usize {
        let own_pid = std::process::id();
        self.slots()
            .iter()
            .filter(|slot| slot.clients.load(Ordering::Acquire) > 0)
            .filter(|slot| slot.pid.load(Ordering::Acquire) == own_pid || is_alive(slot))
            .count()
    }

    /// Clears this process's slot and dead ones; unlinks the table if no
    /// live process is left in it; unmaps it.
    fn leave(self) {
        self.own().clients.store(0, Ordering::Release);
        if let Some(file) = self.reopen() {
            let _ = flock(&file, FlockOperation::LockExclusive);
            self.own().pid.store(0, Ordering::Release);
            for slot in self.slots().iter().filter(|slot| !is_alive(slot)) {
                slot.pid.store(0, Ordering::Release);
            }
            if self
                .slots()
                .iter()
                .all(|slot| slot.pid.load(Ordering::Acquire) == 0)
            {
                let _ = unlinkat(CWD, self.path.as_str(), AtFlags::empty());
            }
            let _ = flock(&file, FlockOperation::Unlock);
        } else {
            // The file was unlinked meanwhile: nobody else sees this slot.
            self.own().pid.store(0, Ordering::Release);
        }
        // SAFETY: the mapping made in `map`, unmapped once (self is consumed).
        let _ = unsafe { munmap(self.slots.as_ptr().cast(), TABLE_BYTES as usize) };
    }
}

/// True if the slot names a process that is still the one that claimed it.
fn is_alive(slot: &Slot) -> bool {
    let pid = slot.pid.load(Ordering::Acquire);
    pid != 0 && start_time(pid) == Some(slot.start_time.load(Ordering::Acquire))
}

/// The start time of process `pid` (field 22 of /proc/PID/stat, in clock
/// ticks since boot), or `None` if there is no such process.
fn start_time(pid: u32) -> Option<u64> {
    let stat = rawio::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces and parentheses: count
    // fields from the last ')'.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// `/dev/shm/libprefetch-<uid>-<hash of the memory cgroup's path>`.
fn table_path() -> Option<String> {
    let cgroup = memory::cgroup_identity()?;
    // FNV-1a: a stable, short name for the path (collisions only merge two
    // cgroups' tables, which divides their budgets more than needed).
    let hash = cgroup.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    Some(format!(
        "/dev/shm/libprefetch-{}-{hash:016x}",
        rustix::process::getuid().as_raw()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_of_this_process_is_stable_and_of_a_missing_one_is_none() {
        let own = start_time(std::process::id()).expect("own start time");
        assert_eq!(start_time(std::process::id()), Some(own));
        assert_eq!(start_time(u32::MAX - 1), None);
    }

    #[test]
    fn a_lone_client_gets_all_and_two_clients_half_each() {
        // The process's own division only: how many processes of the
        // cgroup hold a list depends on whatever else runs in it (and
        // this test binary's other clients hold a slot of the same pid).
        let share = Share::default();
        assert_eq!(share.client_portion(1000), 1000);
        share.client_started();
        share.client_started();
        assert_eq!(share.client_portion(1000), 500);
        share.client_stopped();
        assert_eq!(share.client_portion(1000), 1000);
        share.client_stopped();
        assert!(
            share.lock().is_none(),
            "the table is left with the last client"
        );
    }
}
