//! This copy's [`Instance`] (`instance.rs`): the entry point it exports,
//! the fingerprint of its build, and the constructor that joins another
//! copy's instance as the copy is loaded.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::instance::{join, Instance};

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

/// Which instance this copy uses: the address of the process state it
/// works on (the same number in every copy that shares it). Creates the
/// state if needed.
pub fn id() -> u64 {
    std::ptr::from_ref(crate::registry::globals()) as u64
}

/// Run by the dynamic loader as the copy is loaded (`.init_array`), before
/// any of its code can register a client.
#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

extern "C" fn on_load() {
    let _ = std::panic::catch_unwind(|| join(own()));
}
