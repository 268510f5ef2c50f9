//! One libprefetch per process. `libprefetch.so` (the C library and
//! `LD_PRELOAD` shim), the SQLite extension `libprefetch_sqlite.so` and the
//! Python module each link a copy of this crate; a process may load several
//! of them. Each copy exports `libprefetch_instance_v1`. As a copy is
//! loaded (an ELF constructor), it looks that symbol up in the objects
//! loaded before it, in load order (`dl_iterate_phdr`, then `dlopen` with
//! `RTLD_NOLOAD` and `dlsym` on each, so objects loaded with `RTLD_LOCAL`,
//! as Python loads its modules, are seen too); if it finds another copy's,
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
//! Not joined: copies of another build (each keeps its own instance). A
//! copy linked into the main program (a Rust program using the crate)
//! joins a copy loaded before it, but exports nothing for later ones to
//! find, so they keep their own.
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

/// The exported symbol every copy has.
const SYMBOL: &std::ffi::CStr = c"libprefetch_instance_v1";

/// Joins the first copy of the same build loaded before this one (not
/// `own`), if any. Called once, as the copy is loaded.
pub(crate) fn join(own: &'static Instance) {
    let found = loaded_objects()
        .iter()
        .filter_map(|path| instance_in(path))
        .find(|found| !std::ptr::eq(*found, own) && fingerprint(found) == fingerprint(own));
    if let Some(found) = found {
        HOST.store(std::ptr::from_ref(found).cast_mut(), Ordering::Release);
    }
}

/// An instance's fingerprint bytes.
fn fingerprint(instance: &Instance) -> &[u8] {
    // SAFETY: every copy points it to a 'static byte string of that length.
    unsafe { std::slice::from_raw_parts(instance.fingerprint, instance.fingerprint_len) }
}

/// The paths of the shared objects loaded into the process, in load order
/// (`dl_iterate_phdr`), without the main program and this copy's own file:
/// objects loaded with `RTLD_LOCAL` (Python's extension modules) are listed
/// too, which a lookup in the global scope would miss.
fn loaded_objects() -> Vec<std::ffi::CString> {
    let mut own = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr fills the struct for an address of this object's code.
    let own_name = if unsafe { libc::dladdr(SYMBOL.as_ptr().cast(), own.as_mut_ptr()) } != 0 {
        // SAFETY: dladdr succeeded; dli_fname is the object's NUL-terminated path or null.
        let name = unsafe { own.assume_init() }.dli_fname;
        (!name.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(name) }.to_owned())
    } else {
        None
    };
    let mut paths: Vec<std::ffi::CString> = Vec::new();
    // SAFETY: the callback only reads the entry it is given and pushes to `paths`.
    unsafe {
        libc::dl_iterate_phdr(
            Some(push_object),
            std::ptr::from_mut(&mut paths).cast::<c_void>(),
        )
    };
    paths.retain(|path| !path.is_empty() && Some(path) != own_name.as_ref());
    paths
}

/// `dl_iterate_phdr`'s callback: pushes the object's path to the vector
/// behind `data`.
unsafe extern "C" fn push_object(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes a valid entry and our vector.
    let (info, paths) = unsafe { (&*info, &mut *data.cast::<Vec<std::ffi::CString>>()) };
    if !info.dlpi_name.is_null() {
        // SAFETY: dlpi_name is a NUL-terminated path.
        paths.push(unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }.to_owned());
    }
    0
}

/// The instance of the copy in the loaded object `path` (or in one it
/// depends on), if it has one. Loads nothing (`RTLD_NOLOAD`).
fn instance_in(path: &std::ffi::CStr) -> Option<&'static Instance> {
    // SAFETY: RTLD_NOLOAD only returns a handle to an object already loaded.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return None;
    }
    // SAFETY: a valid handle and a NUL-terminated name.
    let symbol = unsafe { libc::dlsym(handle, SYMBOL.as_ptr()) };
    // SAFETY: the handle came from dlopen; the object stays loaded (it was before).
    unsafe { libc::dlclose(handle) };
    if symbol.is_null() {
        return None;
    }
    // SAFETY: every copy exports the symbol with this signature.
    let entry: extern "C" fn() -> *const Instance = unsafe { std::mem::transmute(symbol) };
    // SAFETY: the other copy's Instance is #[repr(C)] and lives for the process.
    unsafe { entry().as_ref() }
}
