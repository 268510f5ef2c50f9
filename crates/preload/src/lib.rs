//! `libprefetch.so`: the library's C ABI (re-exported from crate
//! `libprefetch`) plus interposers for the read family, so that a program
//! linked with `-lprefetch` or started with `LD_PRELOAD=libprefetch.so` has
//! its reads followed (libprefetch, ATC 2009, section 4: "Libprefetch
//! tracks the application's progress through the list by overriding the C
//! library's implementations of read, readv, and pread").
//!
//! Each interposer tells the library about the read, then calls the real
//! function found with `dlsym(RTLD_NEXT)` (or, if that fails, the system
//! call itself) with the caller's exact arguments, so bytes and errno are
//! the kernel's. Descriptors with no registered region cost one atomic load
//! (no region anywhere) or one hash lookup. The re-entrancy guard lives in
//! `libprefetch::note_read`: reads made by the library or by callbacks pass
//! straight through. While the client of a read's region rests (every page
//! it reads was cached), `read`, `pread` and their fortified forms make the
//! caller's read as `preadv2(..., RWF_NOWAIT)` through the next `preadv2`
//! first (`libprefetch::read_cached`): a whole read is the answer, with no
//! residency probe; a refused or short read has its rest read by the usual
//! call, so bytes, result, errno and file position stay the plain call's.
//!
//! `close`, `dup2`, `dup3` (and `fclose`, in `stdio.rs`) are interposed
//! too, so that a region whose descriptor the application closes (or
//! replaces) stops being followed before the number can name another file,
//! and the library's private descriptors of that file are retired before
//! the close that drops the process's locks on it (`libprefetch::note_close`;
//! a `dup2` or `dup3` that will fail, closing nothing, is not told).
//! `close_range` is not: it is used after fork in a child, where no region
//! exists; a number it closes is still caught when the library advises.
//!
//! The write family and the kernel's copies (`copy_file_range`, `sendfile`,
//! `splice`) are interposed in `write.rs`, with `lseek`, and stdio's block writes (`fwrite`,
//! `fputs`) in `stdio_write.rs`, for the page-cache budget only.

mod mapping;
mod start;
mod stdio;
mod stdio_write;
mod write;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use libc::{iovec, off_t, size_t, ssize_t};

pub use libprefetch::capi;

/// A real libc function resolved once with dlsym(RTLD_NEXT).
struct Real {
    name: &'static CStr,
    address: AtomicPtr<c_void>,
}

impl Real {
    const fn new(name: &'static CStr) -> Real {
        Real {
            name,
            address: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The next definition of the symbol after this library, or null.
    fn get(&self) -> *mut c_void {
        let cached = self.address.load(Ordering::Acquire);
        if !cached.is_null() {
            return cached;
        }
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
        let found = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr() as *const c_char) };
        self.address.store(found, Ordering::Release);
        found
    }
}

static REAL_READ: Real = Real::new(c"read");
static REAL_PREAD: Real = Real::new(c"pread");
static REAL_PREAD64: Real = Real::new(c"pread64");
static REAL_READV: Real = Real::new(c"readv");
static REAL_PREADV: Real = Real::new(c"preadv");
static REAL_PREADV64: Real = Real::new(c"preadv64");
static REAL_PREADV2: Real = Real::new(c"preadv2");
static REAL_PREADV64V2: Real = Real::new(c"preadv64v2");
static REAL_READ_CHK: Real = Real::new(c"__read_chk");
static REAL_CLOSE: Real = Real::new(c"close");
static REAL_DUP2: Real = Real::new(c"dup2");
static REAL_DUP3: Real = Real::new(c"dup3");
static REAL_PREAD_CHK: Real = Real::new(c"__pread_chk");
static REAL_PREAD64_CHK: Real = Real::new(c"__pread64_chk");

/// Total length of an iovec array, read without trusting the pointer: a
/// bad array must give the application EFAULT from the kernel, not a crash
/// here, so it is copied with process_vm_readv (which fails cleanly). Up to
/// `STACK_IOVECS` entries are copied to the stack, so the common case does
/// not allocate inside the application's read.
fn iov_total(iov: *const iovec, count: c_int) -> u64 {
    const STACK_IOVECS: usize = 64;
    let Ok(count) = usize::try_from(count) else {
        return 0;
    };
    if iov.is_null() || count == 0 || count > libc::UIO_MAXIOV as usize {
        return 0;
    }
    let empty = iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let mut on_stack = [empty; STACK_IOVECS];
    let mut on_heap = Vec::new();
    let copy: &mut [iovec] = if count <= STACK_IOVECS {
        &mut on_stack[..count]
    } else {
        on_heap.resize(count, empty);
        &mut on_heap
    };
    let bytes = std::mem::size_of_val(copy);
    let local = iovec {
        iov_base: copy.as_mut_ptr() as *mut c_void,
        iov_len: bytes,
    };
    let remote = iovec {
        iov_base: iov as *mut c_void,
        iov_len: bytes,
    };
    // SAFETY: copies into our own buffer of `bytes` bytes; the kernel
    // validates the source address.
    let copied = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if copied != bytes as ssize_t {
        return 0;
    }
    copy.iter().map(|v| v.iov_len as u64).sum()
}

fn note_at(fd: c_int, offset: off_t, len: u64) {
    if let Ok(offset) = u64::try_from(offset) {
        libprefetch::note_read(fd, offset, len);
    }
}

/// Interposed `read(2)`.
///
/// # Safety
/// Same contract as libc's `read`.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: size_t) -> ssize_t {
    if libprefetch::may_track(fd) {
        libprefetch::note_read_at_position(fd, count as u64);
    }
    // SAFETY: the caller's arguments, as given.
    unsafe { real_read(fd, buf, count) }
}

/// The next `read` in link order (or the system call).
unsafe fn real_read(fd: c_int, buf: *mut c_void, count: size_t) -> ssize_t {
    match REAL_READ.get() {
        // SAFETY: the next `read` in link order has this signature.
        real if !real.is_null() => unsafe {
            std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t,
            >(real)(fd, buf, count)
        },
        // SAFETY: the raw system call with the caller's arguments.
        _ => unsafe { libc::syscall(libc::SYS_read, fd, buf, count) as ssize_t },
    }
}

/// A read of `count` bytes into `buf` at `offset` of a descriptor that may
/// be tracked: made with `RWF_NOWAIT` first while its client rests,
/// otherwise noted (`libprefetch::read_cached`, which also accounts a
/// miss); what is left to read is read with `plain(buf, count, offset)`,
/// the usual call. A partly cached read returns its two parts' sum, or the
/// first part's count (errno untouched) if the rest fails, as the plain
/// call would.
///
/// # Safety
/// `buf` as for `pread`; `plain` makes the caller's call.
unsafe fn read_tracked(
    fd: c_int,
    buf: *mut c_void,
    count: size_t,
    offset: off_t,
    plain: impl FnOnce(*mut c_void, size_t, off_t) -> ssize_t,
) -> ssize_t {
    let Ok(at) = u64::try_from(offset) else {
        return plain(buf, count, offset);
    };
    // SAFETY: the caller's buffer and count, at its offset.
    let nowait = || unsafe { nowait_read(fd, buf, count, offset) };
    let done = match libprefetch::read_cached(fd, at, count as u64, nowait) {
        libprefetch::CachedRead::Whole(n) => return n as ssize_t,
        libprefetch::CachedRead::Part(n) => n,
        libprefetch::CachedRead::Noted => return plain(buf, count, offset),
    };
    // SAFETY: errno is this thread's.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: `done` <= `count` bytes of the caller's buffer were filled.
    let rest_buf = unsafe { buf.cast::<u8>().add(done) }.cast();
    let rest = plain(rest_buf, count - done, offset.saturating_add(done as off_t));
    let (result, keep_errno) = joined(done, rest);
    if keep_errno {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }
    result
}

/// What a read returns whose first `done` bytes came from the cache and
/// whose rest's read returned `rest`: their sum; the first part's count if
/// the rest failed (with errno as it was before the rest: true); the rest's
/// failure itself when nothing came first, as the plain call fails.
fn joined(done: usize, rest: ssize_t) -> (ssize_t, bool) {
    match (rest < 0, done) {
        (false, _) => (done as ssize_t + rest, false),
        (true, 0) => (rest, false),
        (true, _) => (done as ssize_t, true),
    }
}

/// `preadv2(fd, {buf, count}, offset, RWF_NOWAIT)` through the next
/// `preadv2` in link order; `ENOSYS` without one.
unsafe fn nowait_read(fd: c_int, buf: *mut c_void, count: size_t, offset: off_t) -> isize {
    let real = REAL_PREADV2.get();
    if real.is_null() {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    }
    let iov = iovec {
        iov_base: buf,
        iov_len: count,
    };
    // SAFETY: the next `preadv2` has this signature; one iovec of the caller's buffer.
    unsafe {
        std::mem::transmute::<
            *mut c_void,
            unsafe extern "C" fn(c_int, *const iovec, c_int, off_t, c_int) -> ssize_t,
        >(real)(fd, &iov, 1, offset, libc::RWF_NOWAIT)
    }
}

macro_rules! pread_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as libc's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, buf: *mut c_void, count: size_t, offset: off_t) -> ssize_t {
            let plain = |buf: *mut c_void, count: size_t, offset: off_t| match $real.get() {
                // SAFETY: the next definition has this signature.
                real if !real.is_null() => unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t) -> ssize_t>(real)(fd, buf, count, offset) },
                // SAFETY: the raw system call with the caller's arguments.
                _ => unsafe { libc::syscall(libc::SYS_pread64, fd, buf, count, offset) as ssize_t },
            };
            if !libprefetch::may_track(fd) {
                return plain(buf, count, offset);
            }
            // SAFETY: the caller's arguments.
            unsafe { read_tracked(fd, buf, count, offset, plain) }
        }
    };
}

pread_like!(
    /// Interposed `pread(2)`.
    pread, REAL_PREAD
);
pread_like!(
    /// Interposed `pread64(2)`.
    pread64, REAL_PREAD64
);

/// Interposed `readv(2)`.
///
/// # Safety
/// Same contract as libc's `readv`.
#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, count: c_int) -> ssize_t {
    if libprefetch::may_track(fd) {
        libprefetch::note_read_at_position(fd, iov_total(iov, count));
    }
    match REAL_READV.get() {
        // SAFETY: the next `readv` has this signature.
        real if !real.is_null() => unsafe {
            std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t,
            >(real)(fd, iov, count)
        },
        // SAFETY: the raw system call with the caller's arguments.
        _ => unsafe { libc::syscall(libc::SYS_readv, fd, iov, count) as ssize_t },
    }
}

macro_rules! preadv_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as libc's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, iov: *const iovec, count: c_int, offset: off_t) -> ssize_t {
            if libprefetch::may_track(fd) {
                note_at(fd, offset, iov_total(iov, count));
            }
            match $real.get() {
                // SAFETY: the next definition has this signature.
                real if !real.is_null() => unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int, *const iovec, c_int, off_t) -> ssize_t>(real)(fd, iov, count, offset) },
                // SAFETY: the raw system call (offset split as the kernel ABI wants on 64-bit).
                _ => unsafe { libc::syscall(libc::SYS_preadv, fd, iov, count, offset, 0) as ssize_t },
            }
        }
    };
}

preadv_like!(
    /// Interposed `preadv(2)`.
    preadv, REAL_PREADV
);
preadv_like!(
    /// Interposed `preadv64(2)`.
    preadv64, REAL_PREADV64
);

macro_rules! preadv2_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as libc's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, iov: *const iovec, count: c_int, offset: off_t, flags: c_int) -> ssize_t {
            if libprefetch::may_track(fd) {
                let len = iov_total(iov, count);
                if offset == -1 {
                    libprefetch::note_read_at_position(fd, len);
                } else {
                    note_at(fd, offset, len);
                }
            }
            match $real.get() {
                // SAFETY: the next definition has this signature.
                real if !real.is_null() => unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int, *const iovec, c_int, off_t, c_int) -> ssize_t>(real)(fd, iov, count, offset, flags) },
                // SAFETY: the raw system call with the caller's arguments.
                _ => unsafe { libc::syscall(libc::SYS_preadv2, fd, iov, count, offset, 0, flags) as ssize_t },
            }
        }
    };
}

preadv2_like!(
    /// Interposed `preadv2(2)`; offset -1 means the current file position.
    preadv2, REAL_PREADV2
);
preadv2_like!(
    /// Interposed `preadv64v2`, what `preadv2` becomes under `_FILE_OFFSET_BITS=64`.
    preadv64v2, REAL_PREADV64V2
);

/// Interposed `__read_chk` (the `_FORTIFY_SOURCE` form of `read`).
///
/// # Safety
/// Same contract as glibc's `__read_chk`.
#[no_mangle]
pub unsafe extern "C" fn __read_chk(
    fd: c_int,
    buf: *mut c_void,
    count: size_t,
    buflen: size_t,
) -> ssize_t {
    if libprefetch::may_track(fd) {
        libprefetch::note_read_at_position(fd, count as u64);
    }
    let real = REAL_READ_CHK.get();
    if real.is_null() {
        // SAFETY: forwarding to the next read (no fortify check available).
        return unsafe { real_read(fd, buf, count) };
    }
    // SAFETY: the next `__read_chk` has this signature.
    unsafe {
        std::mem::transmute::<
            *mut c_void,
            unsafe extern "C" fn(c_int, *mut c_void, size_t, size_t) -> ssize_t,
        >(real)(fd, buf, count, buflen)
    }
}

macro_rules! pread_chk_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as glibc's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, buf: *mut c_void, count: size_t, offset: off_t, buflen: size_t) -> ssize_t {
            let plain = |buf: *mut c_void, count: size_t, offset: off_t, buflen: size_t| match $real.get() {
                // SAFETY: the raw system call (no fortify check available).
                real if real.is_null() => unsafe { libc::syscall(libc::SYS_pread64, fd, buf, count, offset) as ssize_t },
                // SAFETY: the next definition has this signature.
                real => unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t, size_t) -> ssize_t>(real)(fd, buf, count, offset, buflen) },
            };
            if !libprefetch::may_track(fd) || count > buflen {
                return plain(buf, count, offset, buflen);
            }
            // SAFETY: the caller's arguments; the rest of the buffer is as long as the rest of the read.
            unsafe { read_tracked(fd, buf, count, offset, |buf, count, offset| plain(buf, count, offset, count)) }
        }
    };
}

pread_chk_like!(
    /// Interposed `__pread_chk`.
    __pread_chk, REAL_PREAD_CHK
);
pread_chk_like!(
    /// Interposed `__pread64_chk`.
    __pread64_chk, REAL_PREAD64_CHK
);

/// Interposed `close(2)`: the regions on `fd` are retired first.
///
/// # Safety
/// Same contract as libc's `close`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    libprefetch::note_close(fd);
    match REAL_CLOSE.get() {
        // SAFETY: the next `close` in link order has this signature.
        real if !real.is_null() => unsafe {
            std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int) -> c_int>(real)(fd)
        },
        // SAFETY: the raw system call with the caller's argument.
        _ => unsafe { libc::syscall(libc::SYS_close, fd) as c_int },
    }
}

/// True if `fd` is open: a `dup2` from a closed descriptor fails (`EBADF`)
/// and leaves its target open.
fn is_open(fd: c_int) -> bool {
    // SAFETY: F_GETFD only inspects the descriptor table.
    fd >= 0 && unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1
}

/// Interposed `dup2(2)`: `newfd` is closed by it, so its regions are retired.
///
/// # Safety
/// Same contract as libc's `dup2`.
#[no_mangle]
pub unsafe extern "C" fn dup2(oldfd: c_int, newfd: c_int) -> c_int {
    if oldfd != newfd && is_open(oldfd) {
        libprefetch::note_close(newfd);
    }
    match REAL_DUP2.get() {
        // SAFETY: the next `dup2` in link order has this signature.
        real if !real.is_null() => unsafe {
            std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int, c_int) -> c_int>(real)(
                oldfd, newfd,
            )
        },
        // dup2 of a descriptor onto itself only checks it (EBADF if closed).
        // SAFETY: F_GETFD only inspects the descriptor table.
        _ if oldfd == newfd => match unsafe { libc::fcntl(oldfd, libc::F_GETFD) } {
            -1 => -1,
            _ => newfd,
        },
        // dup3 without flags is dup2 for distinct descriptors.
        // SAFETY: the raw system call with the caller's arguments.
        _ => unsafe { libc::syscall(libc::SYS_dup3, oldfd, newfd, 0) as c_int },
    }
}

/// Interposed `dup3(2)`: `newfd` is closed by it, so its regions are retired.
///
/// # Safety
/// Same contract as libc's `dup3`.
#[no_mangle]
pub unsafe extern "C" fn dup3(oldfd: c_int, newfd: c_int, flags: c_int) -> c_int {
    if oldfd != newfd && flags & !libc::O_CLOEXEC == 0 && is_open(oldfd) {
        libprefetch::note_close(newfd);
    }
    match REAL_DUP3.get() {
        // SAFETY: the next `dup3` in link order has this signature.
        real if !real.is_null() => unsafe {
            std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int, c_int, c_int) -> c_int>(
                real,
            )(oldfd, newfd, flags)
        },
        // SAFETY: the raw system call with the caller's arguments.
        _ => unsafe { libc::syscall(libc::SYS_dup3, oldfd, newfd, flags) as c_int },
    }
}

#[cfg(test)]
mod tests {
    use super::joined;

    #[test]
    fn a_read_refused_by_the_cache_whose_usual_read_fails_fails_as_the_plain_call() {
        assert_eq!(joined(0, -1), (-1, false));
    }

    #[test]
    fn a_partly_cached_read_returns_its_parts_sum_or_its_first_part_if_the_rest_fails() {
        assert_eq!(joined(4096, 100), (4196, false));
        assert_eq!(joined(4096, 0), (4096, false));
        assert_eq!(joined(4096, -1), (4096, true));
        assert_eq!(joined(0, 0), (0, false));
    }
}
