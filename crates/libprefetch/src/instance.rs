//! One libprefetch per process. `libprefetch.so` (the C library and
//! `LD_PRELOAD` shim), the SQLite extension `libprefetch_sqlite.so` and the
//! Python module each link a copy of this crate; a process may load several
//! of them. Each copy exports [`libprefetch_instance_v1`]. As a copy is
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
//! [`id`] tells which instance a copy uses (`pf_instance_id`, and the Python
//! module's `instance_id()`), so a test can check that there is one.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

/// What a copy offers to the others (`#[repr(C)]`: read across copies).
#[repr(C)]
pub struct Instance {
    /// The build's fingerprint, `fingerprint_len` bytes.
    fingerprint: *const u8,
    fingerprint_len: usize,
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

/// The build's fingerprint: version, compiler, profile and the sizes of the
/// state the copies share.
const FINGERPRINT: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " ",
    env!("LIBPREFETCH_RUSTC_VERSION"),
);

/// The fingerprint with the profile and the sizes of the shared types.
fn fingerprint() -> &'static [u8] {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{FINGERPRINT} debug={} {:?}",
            cfg!(debug_assertions),
            crate::registry::shared_sizes()
        )
    })
    .as_bytes()
}

extern "C" fn own_globals() -> *const c_void {
    std::ptr::from_ref(crate::registry::own_globals()).cast()
}

extern "C" fn own_globals_if_started() -> *const c_void {
    crate::registry::own_globals_if_started().map_or(std::ptr::null(), |globals| {
        std::ptr::from_ref(globals).cast()
    })
}

extern "C" fn own_generation() -> u64 {
    crate::registry::own_generation()
}

extern "C" fn own_next_id() -> u64 {
    crate::registry::own_next_id()
}

/// This copy's entry points.
static OWN: AtomicPtr<Instance> = AtomicPtr::new(std::ptr::null_mut());

/// The instance this copy joined, if it is a guest.
static HOST: AtomicPtr<Instance> = AtomicPtr::new(std::ptr::null_mut());

/// This copy's [`Instance`], made on first use (leaked: it lives as long
/// as the process may call it).
fn own() -> &'static Instance {
    let pointer = OWN.load(Ordering::Acquire);
    if !pointer.is_null() {
        // SAFETY: non-null values are leaked Boxes, never freed.
        return unsafe { &*pointer };
    }
    let fingerprint = fingerprint();
    let made = Box::into_raw(Box::new(Instance {
        fingerprint: fingerprint.as_ptr(),
        fingerprint_len: fingerprint.len(),
        globals: own_globals,
        globals_if_started: own_globals_if_started,
        generation: own_generation,
        next_id: own_next_id,
    }));
    match OWN.compare_exchange(
        std::ptr::null_mut(),
        made,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => {
            // SAFETY: just leaked.
            unsafe { &*made }
        }
        // SAFETY: another thread's leaked Box won; ours is leaked unused.
        Err(theirs) => unsafe { &*theirs },
    }
}

/// The symbol every copy exports: its [`Instance`]. Returns a pointer that
/// stays valid for the life of the process. Thread-safe, never blocks.
#[no_mangle]
pub extern "C" fn libprefetch_instance_v1() -> *const Instance {
    own()
}

/// The instance this copy joined, or `None` if it uses its own. One atomic
/// load.
pub(crate) fn host() -> Option<&'static Instance> {
    let pointer = HOST.load(Ordering::Acquire);
    // SAFETY: non-null values come from another copy's libprefetch_instance_v1,
    // valid for the life of the process.
    (!pointer.is_null()).then(|| unsafe { &*pointer })
}

/// An address that names this copy (regions remember which copy
/// registered them).
pub(crate) fn copy() -> usize {
    std::ptr::from_ref(own()) as usize
}

/// Which instance this copy uses: the address of the process state it
/// works on (the same number in every copy that shares it). Creates the
/// state if needed.
pub fn id() -> u64 {
    std::ptr::from_ref(crate::registry::globals()) as u64
}

/// Joins the instance of the global scope, if it is another copy of the
/// same build.
fn join() {
    let name = c"libprefetch_instance_v1";
    // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT is a valid handle.
    let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if symbol.is_null() {
        return;
    }
    // SAFETY: every copy exports the symbol with this signature.
    let entry: extern "C" fn() -> *const Instance = unsafe { std::mem::transmute(symbol) };
    let found = entry();
    let own = own();
    if found.is_null() || std::ptr::eq(found, own) {
        return;
    }
    // SAFETY: the other copy's Instance is #[repr(C)] and lives for the process.
    let found = unsafe { &*found };
    // SAFETY: the fingerprint is a 'static byte string of that length.
    let theirs = unsafe { std::slice::from_raw_parts(found.fingerprint, found.fingerprint_len) };
    if theirs == fingerprint() {
        HOST.store(std::ptr::from_ref(found).cast_mut(), Ordering::Release);
    }
}

/// Run by the dynamic loader as the copy is loaded (`.init_array`), before
/// any of its code can register a client.
#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

extern "C" fn on_load() {
    let _ = std::panic::catch_unwind(join);
}
