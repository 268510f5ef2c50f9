//! A thread's fast path for the reads of a resting client (`track_cached.rs`,
//! `client_warm.rs`; libprefetch, ATC 2009, section 4.5: the library checks
//! whether each read is of a registered region). A warm read of a resting
//! client is only counted, yet finding its region took the registry's read
//! lock and a hash lookup under it, the checks of every region it touches
//! and the re-entrancy and errno guards: in an interleaved profile of the
//! warm random row (`docs/design.md`) the library's own code at rest took
//! 420 samples, 265 with this path.
//!
//! Each thread keeps the region its last resting read fell in, when that
//! region was the only live (not retired) one of its descriptor: the
//! descriptor, the region's bounds, its client's rest (an `Arc` of the
//! counters alone, so a client
//! unregistered meanwhile is freed all the same) and the registry's epoch
//! (`Globals::changed`) when it was found. A later read of the same
//! descriptor inside those bounds, with the epoch unchanged and the client
//! still resting, is counted (or made the client's probe) without the lock,
//! the lookup or the re-entrancy guard; anything else takes the usual path.
//!
//! The epoch moves on whatever could make the region not the read's, or the
//! read not a resting one: a region added, removed or retired (a `close`,
//! `dup2` or `dup3` of the descriptor retires its regions first, so a number
//! reused for another file is never taken for the old one; a close of a
//! descriptor without regions moves nothing), a file refusing
//! `RWF_NOWAIT`, a client starting to ignore its reads. A client woken or
//! whose rest ran out is seen by its rest itself. A forked child has
//! another registry (`registry.rs`), which the kept entry names, so the
//! child's reads never match its parent's entry.

use std::cell::RefCell;
use std::os::fd::RawFd;

use crate::client_rest::SoleRegion;
use crate::registry::Globals;

/// A thread's kept region, with the registry and descriptor it is of.
struct Kept {
    /// The registry's address (a forked child's is another).
    globals: usize,
    fd: RawFd,
    region: SoleRegion,
}

thread_local! {
    static KEPT: RefCell<Option<Kept>> = const { RefCell::new(None) };
}

/// What the fast path made of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fast {
    /// Counted by its resting client: the caller makes it as usual.
    Counted,
    /// Its resting client's probe is due: the caller makes it the probe.
    Probe,
}

/// A read of `len` bytes of `fd` at `offset`, if it lies in this thread's
/// kept region, nothing changed in `globals` since, and its client rests:
/// counted, or the client's probe. `None`: the usual path decides.
pub(crate) fn resting_read(globals: &Globals, fd: RawFd, offset: u64, len: u64) -> Option<Fast> {
    let address = std::ptr::from_ref(globals) as usize;
    KEPT.try_with(|kept| {
        let kept = kept.try_borrow().ok()?;
        let kept = kept.as_ref()?;
        let region = &kept.region;
        let inside = offset >= region.start && offset.checked_add(len)? <= region.end;
        let current = kept.globals == address && kept.fd == fd && inside;
        if !current || globals.epoch() != region.epoch || !region.rest.resting() {
            return None;
        }
        #[cfg(test)]
        HITS.with(|hits| hits.set(hits.get() + 1));
        if region.rest.probe_due() {
            return Some(Fast::Probe);
        }
        region.rest.count_read();
        Some(Fast::Counted)
    })
    .ok()
    .flatten()
}

/// Keeps `region` of `fd` in `globals` for this thread's next reads.
pub(crate) fn keep(globals: &Globals, fd: RawFd, region: SoleRegion) {
    let globals = std::ptr::from_ref(globals) as usize;
    let _ = KEPT.try_with(|kept| {
        if let Ok(mut kept) = kept.try_borrow_mut() {
            *kept = Some(Kept {
                globals,
                fd,
                region,
            });
        }
    });
}

#[cfg(test)]
thread_local! {
    /// The reads this thread's fast path took.
    static HITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
#[path = "track_fast_tests.rs"]
mod tests;
