//! Interposed `mmap`, `mmap64` and `munmap`, for the unprivileged recording
//! of mapped files (`libprefetch::note_mmap`, `libprefetch::note_munmap`):
//! a file mapping is remembered after it succeeds, and its resident pages
//! are recorded before it is unmapped. Anonymous mappings (malloc's) go
//! straight through without entering the library; nothing is recorded
//! unless `prefetch record` started the recorder.
//!
//! The real function is found with `dlsym(RTLD_NEXT)` like the read family's;
//! while that lookup runs (dlsym may allocate, and an allocation may map),
//! a nested call makes the system call itself, with the same arguments and
//! the same result and errno.
//!
//! Follows libprefetch (ATC 2009), section 4: the library is loaded into an
//! unmodified program and watches what it does with its files.
//! Deviations: the paper watches only the read family.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use libc::{off_t, size_t};

use crate::Real;

static REAL_MMAP: Real = Real::new(c"mmap");
static REAL_MMAP64: Real = Real::new(c"mmap64");
static REAL_MUNMAP: Real = Real::new(c"munmap");

/// Set while a real function is being looked up.
static RESOLVING: AtomicBool = AtomicBool::new(false);

/// The real function, or null while a lookup is under way (or failed).
fn real(function: &Real) -> *mut c_void {
    let cached = function.address.load(Ordering::Acquire);
    if !cached.is_null() {
        return cached;
    }
    if RESOLVING.swap(true, Ordering::AcqRel) {
        return std::ptr::null_mut();
    }
    let found = function.get();
    RESOLVING.store(false, Ordering::Release);
    found
}

type MmapFn = unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;

/// Calls the real `mmap` (or the system call) and tells the library of a
/// file mapping that succeeded.
///
/// # Safety
/// Same contract as libc's `mmap`.
unsafe fn map(
    function: &Real,
    address: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    let found = real(function);
    let mapped = if found.is_null() {
        // SAFETY: the raw system call with the caller's arguments.
        unsafe {
            libc::syscall(libc::SYS_mmap, address, len, prot, flags, fd, offset) as *mut c_void
        }
    } else {
        // SAFETY: the next `mmap` in link order has this signature.
        unsafe {
            std::mem::transmute::<*mut c_void, MmapFn>(found)(address, len, prot, flags, fd, offset)
        }
    };
    if mapped != libc::MAP_FAILED && fd >= 0 && flags & libc::MAP_ANONYMOUS == 0 {
        if let Ok(offset) = u64::try_from(offset) {
            let errno = std::io::Error::last_os_error().raw_os_error();
            libprefetch::note_mmap(mapped as usize, len, fd, offset);
            restore_errno(errno);
        }
    }
    mapped
}

/// Puts back the errno the program had (the library's calls may set it).
fn restore_errno(errno: Option<i32>) {
    if let Some(errno) = errno {
        // SAFETY: __errno_location returns this thread's errno.
        unsafe { *libc::__errno_location() = errno };
    }
}

/// Interposed `mmap(2)`.
///
/// # Safety
/// Same contract as libc's `mmap`.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    address: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    // SAFETY: the caller's arguments, as given.
    unsafe { map(&REAL_MMAP, address, len, prot, flags, fd, offset) }
}

/// Interposed `mmap64`, what `mmap` becomes under `_FILE_OFFSET_BITS=64`.
///
/// # Safety
/// Same contract as libc's `mmap64`.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    address: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    // SAFETY: the caller's arguments, as given.
    unsafe { map(&REAL_MMAP64, address, len, prot, flags, fd, offset) }
}

/// Interposed `munmap(2)`: the resident pages of a recorded file mapping
/// are recorded before it goes.
///
/// # Safety
/// Same contract as libc's `munmap`.
#[no_mangle]
pub unsafe extern "C" fn munmap(address: *mut c_void, len: size_t) -> c_int {
    let errno = std::io::Error::last_os_error().raw_os_error();
    libprefetch::note_munmap(address as usize, len);
    restore_errno(errno);
    let found = real(&REAL_MUNMAP);
    if found.is_null() {
        // SAFETY: the raw system call with the caller's arguments.
        return unsafe { libc::syscall(libc::SYS_munmap, address, len) as c_int };
    }
    // SAFETY: the next `munmap` in link order has this signature.
    unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void, size_t) -> c_int>(
            found,
        )(address, len)
    }
}
