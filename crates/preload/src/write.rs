//! Interposers for the write family and the kernel's copies, for the page-cache budget
//! (`prefetch run --cache-budget`, docs/cache-budget.md): `write`, `pwrite`, `writev`,
//! `pwritev`, `pwritev2` (and their `64` names) tell it the pages written; `copy_file_range`,
//! `sendfile` and `splice` (what `cp` and `cat` copy with, without a `read`) the source's pages
//! read and the destination's written (`libprefetch::note_written`, `note_copied_from`).
//!
//! Each calls the real function (dlsym(RTLD_NEXT), or else the system call) with the caller's
//! exact arguments first and returns its result untouched; only then, if a budget runs (one
//! atomic load otherwise) and the call moved bytes, is the budget told. An offset pointer is
//! read only after a call that moved bytes: the kernel has just written the advanced offset
//! through it, so it is valid, and the range is the `n` bytes before it.
//!
//! One exception to "one call": while a budget runs, `copy_file_range` and `sendfile` of more
//! than one of its batches are made as a loop of calls of one batch each, the budget told after
//! each (`in_pieces`): `cp` copies a whole file in one call, which would otherwise bring all of
//! it into the cache before the budget hears of it. The program sees one call's result: the
//! bytes moved, the same offsets and file positions; a failure after some bytes moved returns
//! those bytes, as the kernel does for a copy stopped part way.
//!
//! `lseek` and `lseek64` are interposed too: writes at the file position are told to the budget
//! a batch at a time, and the bytes held back are told before the position moves.
//!
//! Follows DULO (FAST'05) sections 3-4 through `libprefetch`'s cache budget.

use std::ffi::{c_int, c_uint, c_void};

use libc::{iovec, loff_t, off_t, size_t, ssize_t};

use crate::Real;

static REAL_WRITE: Real = Real::new(c"write");
static REAL_PWRITE: Real = Real::new(c"pwrite");
static REAL_PWRITE64: Real = Real::new(c"pwrite64");
static REAL_WRITEV: Real = Real::new(c"writev");
static REAL_PWRITEV: Real = Real::new(c"pwritev");
static REAL_PWRITEV64: Real = Real::new(c"pwritev64");
static REAL_PWRITEV2: Real = Real::new(c"pwritev2");
static REAL_PWRITEV64V2: Real = Real::new(c"pwritev64v2");
static REAL_COPY_FILE_RANGE: Real = Real::new(c"copy_file_range");
static REAL_SENDFILE: Real = Real::new(c"sendfile");
static REAL_SENDFILE64: Real = Real::new(c"sendfile64");
static REAL_SPLICE: Real = Real::new(c"splice");
static REAL_LSEEK: Real = Real::new(c"lseek");
static REAL_LSEEK64: Real = Real::new(c"lseek64");

/// The bytes a call returning `n` moved, if any.
fn moved(n: ssize_t) -> Option<u64> {
    u64::try_from(n).ok().filter(|&n| n > 0)
}

/// `offset` as a file offset (`None` for -1, the file position).
fn at(offset: off_t) -> Option<u64> {
    u64::try_from(offset).ok()
}

/// The start of the `n` bytes before the offset the kernel advanced through `pointer`, or `None`
/// (the file position) for a null pointer.
///
/// # Safety
/// `pointer` is null or the kernel just wrote through it (the call moved bytes).
unsafe fn before(pointer: *const i64, n: u64) -> Option<u64> {
    if pointer.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    u64::try_from(unsafe { *pointer }).ok()?.checked_sub(n)
}

/// An interposed function of the write family: `$name(fd, args...)`, the budget told of the
/// bytes written at `$at` (an expression of the arguments; `None`: ending at the file position).
/// Without a real function, the system call `$sys` takes `fd` and `$sysarg` (the arguments, an
/// offset's high half after it where the kernel's ABI wants one).
macro_rules! write_like {
    ($(#[$doc:meta])* $name:ident, $real:ident, $sys:expr, ($($arg:ident: $ty:ty),*), [$($sysarg:expr),*], $at:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as libc's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, $($arg: $ty),*) -> ssize_t {
            let n = match $real.get() {
                // SAFETY: the next definition has this signature.
                real if !real.is_null() => unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int, $($ty),*) -> ssize_t>(real)(fd, $($arg),*) },
                // SAFETY: the raw system call with the caller's arguments.
                _ => unsafe { libc::syscall($sys, fd, $($sysarg),*) as ssize_t },
            };
            if let Some(len) = moved(n).filter(|_| libprefetch::budget_running()) {
                libprefetch::note_written(fd, $at, len);
            }
            n
        }
    };
}

write_like!(
    /// Interposed `write(2)`.
    write, REAL_WRITE, libc::SYS_write, (buf: *const c_void, count: size_t), [buf, count], None
);
write_like!(
    /// Interposed `pwrite(2)`.
    pwrite, REAL_PWRITE, libc::SYS_pwrite64, (buf: *const c_void, count: size_t, offset: off_t), [buf, count, offset], at(offset)
);
write_like!(
    /// Interposed `pwrite64(2)`.
    pwrite64, REAL_PWRITE64, libc::SYS_pwrite64, (buf: *const c_void, count: size_t, offset: off_t), [buf, count, offset], at(offset)
);
write_like!(
    /// Interposed `writev(2)`.
    writev, REAL_WRITEV, libc::SYS_writev, (iov: *const iovec, count: c_int), [iov, count], None
);
write_like!(
    /// Interposed `pwritev(2)`.
    pwritev, REAL_PWRITEV, libc::SYS_pwritev, (iov: *const iovec, count: c_int, offset: off_t), [iov, count, offset, 0], at(offset)
);
write_like!(
    /// Interposed `pwritev64(2)`.
    pwritev64, REAL_PWRITEV64, libc::SYS_pwritev, (iov: *const iovec, count: c_int, offset: off_t), [iov, count, offset, 0], at(offset)
);
write_like!(
    /// Interposed `pwritev2(2)`; offset -1 means the current file position.
    pwritev2, REAL_PWRITEV2, libc::SYS_pwritev2, (iov: *const iovec, count: c_int, offset: off_t, flags: c_int), [iov, count, offset, 0, flags], at(offset)
);
write_like!(
    /// Interposed `pwritev64v2`, what `pwritev2` becomes under `_FILE_OFFSET_BITS=64`.
    pwritev64v2, REAL_PWRITEV64V2, libc::SYS_pwritev2, (iov: *const iovec, count: c_int, offset: off_t, flags: c_int), [iov, count, offset, 0, flags], at(offset)
);

/// Tells the budget of a copy of `n` bytes (if any) from `fd_in` to `fd_out`, at the offsets
/// before those the kernel advanced through `off_in` and `off_out` (null: the file positions).
///
/// # Safety
/// Each pointer is null or was just written by the kernel (the call moved bytes).
unsafe fn note_copy(
    fd_in: c_int,
    off_in: *const i64,
    fd_out: c_int,
    off_out: *const i64,
    n: ssize_t,
) {
    if let Some(len) = moved(n).filter(|_| libprefetch::budget_running()) {
        // SAFETY: the caller's contract.
        let (from, to) = unsafe { (before(off_in, len), before(off_out, len)) };
        libprefetch::note_copied_from(fd_in, from, len);
        libprefetch::note_written(fd_out, to, len);
    }
}

/// A copy of `len` bytes made by `call(bytes)`: once without a budget; with one, in pieces of
/// at most one of its batches (`libprefetch::budget_copy_piece`), the budget told of each
/// (`tell`), until `len` bytes moved, a piece moved fewer than it asked (end of file, a full
/// pipe, a signal) or failed. Returns what the one call returns: the bytes moved, or the first
/// piece's failure with its errno; a failure after bytes moved returns those bytes with errno
/// as it was, as the kernel does for a copy stopped part way (the next call meets the failure).
fn in_pieces(
    len: size_t,
    mut call: impl FnMut(size_t) -> ssize_t,
    mut tell: impl FnMut(ssize_t),
) -> ssize_t {
    let piece = libprefetch::budget_copy_piece()
        .and_then(|bytes| usize::try_from(bytes).ok())
        .filter(|&bytes| bytes > 0 && len > bytes);
    let Some(piece) = piece else {
        let n = call(len);
        tell(n);
        return n;
    };
    // SAFETY: errno is this thread's.
    let errno = unsafe { *libc::__errno_location() };
    let mut moved: usize = 0;
    loop {
        let ask = (len - moved).min(piece);
        let n = call(ask);
        if n < 0 {
            if moved == 0 {
                return n;
            }
            // SAFETY: as above.
            unsafe { *libc::__errno_location() = errno };
            return moved as ssize_t;
        }
        tell(n);
        moved += n as usize;
        if (n as usize) < ask || moved == len {
            return moved as ssize_t;
        }
    }
}

/// The two ends of a copy between descriptors with optional offsets (`copy_file_range`,
/// `splice`), as the caller gave them.
#[derive(Clone, Copy)]
struct Ends {
    fd_in: c_int,
    off_in: *mut loff_t,
    fd_out: c_int,
    off_out: *mut loff_t,
}

/// A copy of `len` bytes between `ends` with `flags`: the real function `real`, or else the
/// system call `sys`, with the caller's arguments, in pieces (`in_pieces`) if `pieces`, else in
/// one call; the budget told of what moved.
///
/// # Safety
/// The contract of the function `real` names.
unsafe fn copy_between(
    real: &Real,
    sys: libc::c_long,
    pieces: bool,
    ends: Ends,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let real = real.get();
    let Ends {
        fd_in,
        off_in,
        fd_out,
        off_out,
    } = ends;
    let call = |len: size_t| match real {
        // SAFETY: the next definition has this signature (the caller's contract).
        real if !real.is_null() => unsafe {
            std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(
                    c_int,
                    *mut loff_t,
                    c_int,
                    *mut loff_t,
                    size_t,
                    c_uint,
                ) -> ssize_t,
            >(real)(fd_in, off_in, fd_out, off_out, len, flags)
        },
        // SAFETY: the raw system call with the caller's arguments.
        _ => unsafe { libc::syscall(sys, fd_in, off_in, fd_out, off_out, len, flags) as ssize_t },
    };
    // SAFETY: with bytes moved, the kernel wrote the advanced offsets through the pointers.
    let tell = |n| unsafe { note_copy(fd_in, off_in, fd_out, off_out, n) };
    if pieces {
        return in_pieces(len, call, tell);
    }
    let n = call(len);
    tell(n);
    n
}

/// Interposed `copy_file_range(2)` (`cp` and `cat` of coreutils 9).
///
/// # Safety
/// Same contract as libc's `copy_file_range`.
#[no_mangle]
pub unsafe extern "C" fn copy_file_range(
    fd_in: c_int,
    off_in: *mut loff_t,
    fd_out: c_int,
    off_out: *mut loff_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let ends = Ends {
        fd_in,
        off_in,
        fd_out,
        off_out,
    };
    // SAFETY: the caller's contract is copy_file_range's.
    unsafe {
        copy_between(
            &REAL_COPY_FILE_RANGE,
            libc::SYS_copy_file_range,
            true,
            ends,
            len,
            flags,
        )
    }
}

macro_rules! sendfile_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as libc's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(out_fd: c_int, in_fd: c_int, offset: *mut off_t, count: size_t) -> ssize_t {
            let real = $real.get();
            let call = |count: size_t| match real {
                // SAFETY: the next definition has this signature.
                real if !real.is_null() => unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int, c_int, *mut off_t, size_t) -> ssize_t>(real)(out_fd, in_fd, offset, count) },
                // SAFETY: the raw system call with the caller's arguments.
                _ => unsafe { libc::syscall(libc::SYS_sendfile, out_fd, in_fd, offset, count) as ssize_t },
            };
            // SAFETY: with bytes moved, the kernel wrote the advanced offset through the pointer.
            let tell = |n| unsafe { note_copy(in_fd, offset, out_fd, std::ptr::null(), n) };
            in_pieces(count, call, tell)
        }
    };
}

sendfile_like!(
    /// Interposed `sendfile(2)`.
    sendfile, REAL_SENDFILE
);
sendfile_like!(
    /// Interposed `sendfile64`, what `sendfile` becomes under `_FILE_OFFSET_BITS=64`.
    sendfile64, REAL_SENDFILE64
);

/// Interposed `splice(2)` (one side is a pipe, which the budget does not count; a pipe holds
/// little, so it is never cut into pieces).
///
/// # Safety
/// Same contract as libc's `splice`.
#[no_mangle]
pub unsafe extern "C" fn splice(
    fd_in: c_int,
    off_in: *mut loff_t,
    fd_out: c_int,
    off_out: *mut loff_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let ends = Ends {
        fd_in,
        off_in,
        fd_out,
        off_out,
    };
    // SAFETY: the caller's contract is splice's.
    unsafe { copy_between(&REAL_SPLICE, libc::SYS_splice, false, ends, len, flags) }
}

macro_rules! lseek_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        /// The budget first counts the bytes written at the position and held back
        /// (`libprefetch::note_seek`), then the real function moves it.
        ///
        /// # Safety
        /// Same contract as libc's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, offset: off_t, whence: c_int) -> off_t {
            libprefetch::note_seek(fd);
            match $real.get() {
                // SAFETY: the next definition has this signature.
                real if !real.is_null() => unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int, off_t, c_int) -> off_t>(real)(fd, offset, whence) },
                // SAFETY: the raw system call with the caller's arguments.
                _ => unsafe { libc::syscall(libc::SYS_lseek, fd, offset, whence) as off_t },
            }
        }
    };
}

lseek_like!(
    /// Interposed `lseek(2)`.
    lseek, REAL_LSEEK
);
lseek_like!(
    /// Interposed `lseek64`, what `lseek` becomes under `_FILE_OFFSET_BITS=64`.
    lseek64, REAL_LSEEK64
);
