//! One libprefetch per process. `libprefetch.so` (the C library and
//! `LD_PRELOAD` shim), the SQLite extension `libprefetch_sqlite.so` and the
//! Python module each link a copy of this crate; a process may load several
//! of them. Each copy exports `libprefetch_instance_v1`. As a copy is
//! loaded (an ELF constructor), it looks that symbol up in the process's
//! global scope (`dlsym(RTLD_DEFAULT)`, which finds `libprefetch.so` when it
//! is preloaded or linked with `-lprefetch`); if it finds another copy's,
//! built from the same version by the same compiler (the fingerprint: the
//! copies then lay out the process state alike), this copy is a *guest*: it
//! uses that copy's registry of clients and regions, its advice thread and
//! its entry in the shared memory budget (`registry.rs`), so the process
//! has one of each, whichever copy was loaded first.
//!
//! What stays per copy: a region is followed only by reads noted through the
//! copy that registered it (the SQLite extension notes the reads it chooses;
//! the preloaded interposers, which also see SQLite's `pread`s, leave its
//! regions alone, as when the copies were apart), and recording, replay,
//! competitive prefetching and the page-cache budget run only in
//! `libprefetch.so`, which starts them as it is loaded. The `close`
//! interposers of a host retire the guests' regions and private descriptors
//! too, as they do the host's.
//!
//! Not joined: a copy loaded before any copy it could see in the global
//! scope (the Python module, which Python loads with `RTLD_LOCAL`; SQLite
//! loads extensions with `RTLD_GLOBAL`, so a copy loaded after the
//! extension joins it), and copies of another build; each keeps its own
//! instance.
//!
//! The registry reaches a region's client through the `RegionClient` trait,
//! so a guest's clients run the guest's own code. `instance_entry::id`
//! tells which instance a copy uses (`pf_instance_id`, and the Python
//! module's `instance_id()`), so a test can check that there is one.
//!
//! This file holds what the copies read of each other ([`Instance`]) and
//! which one this copy joined; `instance_entry.rs` builds this copy's own
//! and exports it.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

/// What a copy offers to the others (`#[repr(C)]`: read across copies).
#[repr(C)]
pub struct Instance {
    /// The build's fingerprint, `fingerprint_len` bytes.
    pub(crate) fingerprint: *const u8,
    pub(crate) fingerprint_len: usize,
    /// The process state, created on first use (`registry::globals`).
    pub(crate) globals: extern "C" fn() -> *const c_void,
    /// The process state if created, or null (`registry::globals_if_started`).
    pub(crate) globals_if_started: extern "C" fn() -> *const c_void,
    /// Forks this process descends from (`registry::generation`).
    pub(crate) generation: extern "C" fn() -> u64,
    /// A fresh process-unique id (`registry::next_id`).
    pub(crate) next_id: extern "C" fn() -> u64,
}

// SAFETY: the fingerprint points to a 'static string; the rest are fn pointers.
unsafe impl Sync for Instance {}

/// The instance this copy joined, if it is a guest.
static HOST: AtomicPtr<Instance> = AtomicPtr::new(std::ptr::null_mut());

/// The instance this copy joined, or `None` if it uses its own. One atomic
/// load.
pub(crate) fn host() -> Option<&'static Instance> {
    let pointer = HOST.load(Ordering::Acquire);
    // SAFETY: non-null values come from another copy's libprefetch_instance_v1,
    // valid for the life of the process.
    (!pointer.is_null()).then(|| unsafe { &*pointer })
}

/// Joins the instance of the global scope, if it is another copy (not
/// `own`) of the same build. Called once, as the copy is loaded.
pub(crate) fn join(own: &'static Instance) {
    let name = c"libprefetch_instance_v1";
    // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT is a valid handle.
    let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if symbol.is_null() {
        return;
    }
    // SAFETY: every copy exports the symbol with this signature.
    let entry: extern "C" fn() -> *const Instance = unsafe { std::mem::transmute(symbol) };
    let found = entry();
    if found.is_null() || std::ptr::eq(found, own) {
        return;
    }
    // SAFETY: the other copy's Instance is #[repr(C)] and lives for the process.
    let found = unsafe { &*found };
    // SAFETY: the fingerprint is a 'static byte string of that length.
    let theirs = unsafe { std::slice::from_raw_parts(found.fingerprint, found.fingerprint_len) };
    // SAFETY: as above, for this copy's own.
    let ours = unsafe { std::slice::from_raw_parts(own.fingerprint, own.fingerprint_len) };
    if theirs == ours {
        HOST.store(std::ptr::from_ref(found).cast_mut(), Ordering::Release);
    }
}
