//! A resting client's read is its own residency probe (libprefetch, ATC
//! 2009, section 4.5: the paper's `fincore` before each read). While every
//! client whose region a read touches rests (`client_warm.rs`), the first
//! read at rest and then one every `probe_period` (5 to 64 reads, from the
//! device's cost of a miss and the reads found cached at rest) is the
//! probe: the caller (the `pread` interposers of crate `preload`, the
//! Python read path) makes the application's read as
//! `preadv2(..., RWF_NOWAIT)`, which the kernel serves only from the page
//! cache: a whole read is the answer, counted as the client's read, and
//! costs no probe. The other reads are only counted (lock-free, no copy of
//! the regions) and made with the usual call: `preadv2` costs the kernel
//! about 0.2 us more than `pread` (the iovec), 13% of a cached 4 KiB
//! read's time. `EAGAIN` or a short read before
//! the file's end is a miss: the client wakes and accounts the read as a
//! miss (a round starts at once), and the caller reads the rest with the
//! usual blocking call, so the bytes, result and errno the application sees
//! are the plain call's. Reads at the file position are not made so: their
//! two parts would be two reads of the position, the plain read's one.
//!
//! A thread's next reads of the resting region it read last, its
//! descriptor's only one, are counted or made the probe without the
//! registry's lock or lookup (`track_fast.rs`).
//!
//! Only regular files opened without `O_DIRECT`; a file whose filesystem
//! refuses the flag (`EOPNOTSUPP`: FUSE) goes back to the probe, once per
//! region. Any other read is noted here as `note_read` notes it, with the
//! one region lookup.
//!
//! Deviations: a read the kernel finds cached but cannot serve without
//! waiting (a page locked by another reader's I/O) wakes the client, where
//! the probe would have counted it cached; and a page missing when the read
//! is made, whose read-ahead the read itself starts, is served if that I/O
//! finishes before the read looks again (on this machine's disk 0 to 3
//! reads in 100 of a page just dropped, `tests/resting_reads.rs`): the read
//! counts as cached, where the probe would have seen the miss. The paper probes every read;
//! here a resting client's misses are seen at its next probe, up to
//! `probe_period - 1` reads later (those are made as plain reads: the
//! application waits for them as without the library).

use std::os::fd::RawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::guard::{CancelGuard, ErrnoGuard, Reentry};
use crate::memory::page_size;
use crate::observe;
use crate::registry::{follow_slots, globals_if_started, Globals, RestingRead, Touching};
use crate::track::note_read;
use crate::track_fast::{self, Fast};

/// What [`read_cached`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachedRead {
    /// The read was made and is final: its byte count (the whole read, or
    /// up to the file's end).
    Whole(usize),
    /// The first `n` bytes were read (0 on `EAGAIN`) and the read was
    /// accounted as a miss: the caller reads the rest with the usual call.
    Part(usize),
    /// Nothing was read; the read was noted as by `note_read` (or, by
    /// resting clients, counted): the caller makes it with the usual call.
    Noted,
}

/// A read of `len` bytes of `fd` at `offset` about to be made: if the
/// clients of the regions it touches all rest, counts it (`Noted`: the
/// caller makes it), or, if it is a client's probe, calls `read_nowait`,
/// which must make that read with `RWF_NOWAIT` (`preadv2` at `offset`) and
/// return its result, errno set; otherwise notes the read as `note_read`
/// does. Never changes errno; one region lookup, none when no region exists.
pub fn read_cached(
    fd: RawFd,
    offset: u64,
    len: u64,
    read_nowait: impl FnOnce() -> isize,
) -> CachedRead {
    let globals = globals_if_started().filter(|g| g.any_regions());
    let Some(globals) = globals.filter(|_| fd >= 0 && len > 0 && !observe::active()) else {
        note_read(fd, offset, len);
        return CachedRead::Noted;
    };
    if Reentry::is_inside() {
        return CachedRead::Noted;
    }
    let fast = track_fast::resting_read(globals, fd, offset, len);
    if fast == Some(Fast::Counted) {
        return CachedRead::Noted;
    }
    let Some(_inside) = Reentry::enter() else {
        return CachedRead::Noted;
    };
    let _errno = ErrnoGuard::save();
    let slots = match fast {
        Some(_) => catch_unwind(|| globals.regions_touching(fd, offset, len)).ok(),
        None => slow_path(globals, fd, offset, len),
    };
    let Some(slots) = slots else {
        return CachedRead::Noted;
    };
    probe(globals, fd, offset, len, slots, read_nowait)
}

/// The read decided under the registry's lock (`Globals::resting_read`):
/// counted or followed (`None`), or the regions whose probe it is. A
/// resting client's region, the only one of `fd`, is kept for the
/// thread's next reads (`track_fast.rs`). The caller holds the re-entrancy
/// guard.
fn slow_path(globals: &Globals, fd: RawFd, at: u64, len: u64) -> Option<Touching> {
    let found = catch_unwind(AssertUnwindSafe(|| {
        let (slots, sole) = match globals.resting_read(fd, at, len) {
            RestingRead::Counted(sole) => (None, sole),
            RestingRead::Probe(slots, sole) => (Some(slots), sole),
            RestingRead::Follow(slots) => {
                let _no_cancel = CancelGuard::hold();
                follow_slots(&slots, fd, at, len);
                (None, None)
            }
        };
        if let Some(sole) = sole {
            track_fast::keep(globals, fd, sole);
        }
        slots
    }));
    found.ok().flatten()
}

/// The read of `slots`' resting clients made as their probe with
/// `read_nowait`, judged. The caller holds the re-entrancy guard.
fn probe(
    globals: &Globals,
    fd: RawFd,
    at: u64,
    len: u64,
    slots: Touching,
    read_nowait: impl FnOnce() -> isize,
) -> CachedRead {
    let result = read_nowait();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let outcome = judge(globals, fd, at, len, result, &slots);
        if let CachedRead::Part(n) = outcome {
            wake(fd, at, len, n as u64, slots);
        }
        outcome
    }));
    match (outcome, usize::try_from(result)) {
        (Ok(outcome), _) => outcome,
        // A panic after bytes were read: they are the application's, the client's count is lost.
        (Err(_), Ok(n)) => CachedRead::Part(n),
        (Err(_), Err(_)) => CachedRead::Noted,
    }
}

/// The outcome of a `RWF_NOWAIT` read of `len` bytes at `at` that returned
/// `result` (errno still the read's).
fn judge(
    globals: &Globals,
    fd: RawFd,
    at: u64,
    len: u64,
    result: isize,
    slots: &Touching,
) -> CachedRead {
    let Ok(n) = usize::try_from(result) else {
        let errno = std::io::Error::last_os_error().raw_os_error();
        return match errno {
            Some(libc::EAGAIN) => CachedRead::Part(0),
            Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) => {
                slots.iter().for_each(|slot| slot.refuse_nowait());
                globals.changed();
                note_refused(fd, at, len, slots)
            }
            _ => note_refused(fd, at, len, slots),
        };
    };
    if n as u64 == len || at + n as u64 >= file_size(fd) {
        slots
            .iter()
            .for_each(|slot| slot.client.count_cached_read());
        return CachedRead::Whole(n);
    }
    CachedRead::Part(n)
}

/// A `RWF_NOWAIT` read that failed (the file refused the flag, or the
/// plain call will fail too): the read is noted as usual.
fn note_refused(fd: RawFd, at: u64, len: u64, slots: &Touching) -> CachedRead {
    let _no_cancel = CancelGuard::hold();
    follow_slots(slots, fd, at, len);
    CachedRead::Noted
}

/// A read of `len` bytes at `at` found missing after its first `n` bytes:
/// each client wakes and accounts the read (its part in the client's
/// region) as a miss; cancellation is held off while they do.
fn wake(fd: RawFd, at: u64, len: u64, n: u64, slots: Touching) {
    let _no_cancel = CancelGuard::hold();
    for slot in slots {
        let start = at.max(slot.start);
        let end = (at + len).min(slot.end);
        let first_page_end = (start / page_size() + 1) * page_size();
        let first_cached = at + n >= first_page_end.min(end);
        slot.client
            .on_missed_read(fd, start, end - start, first_cached);
    }
}

/// The size of the file `fd` names, or `u64::MAX` if unknown.
fn file_size(fd: RawFd) -> u64 {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a struct stat into the buffer on success.
    if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
        return u64::MAX;
    }
    // SAFETY: fstat succeeded, so the struct is initialised.
    u64::try_from(unsafe { stat.assume_init() }.st_size).unwrap_or(u64::MAX)
}
