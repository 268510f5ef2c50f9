//! Interposers for C stdio's writes (`fwrite`, `fputs`, `fputc`, `putc` and their `_unlocked`
//! forms, and `__overflow`, which the inline `putc_unlocked` calls on a full buffer), for
//! the page-cache budget (`prefetch run --cache-budget`, docs/cache-budget.md): glibc flushes a
//! stream's buffer with its own internal `write`, which the write interposers (`write.rs`)
//! never see, so the bytes a call put into a stream of a file are told here, after the call,
//! as written at the descriptor's position (`libprefetch::note_written`, which adds them up
//! and counts a batch at a time).
//!
//! Each calls the C library's function with the caller's exact arguments (the block writes
//! before telling, the character writes after a look at the buffer) and returns its result
//! untouched; the budget is told only if one runs (one atomic load otherwise). The
//! descriptor is read from glibc's `struct _IO_FILE` (`stdio.rs`), as the read interposers do.
//!
//! Characters written one at a time cost one call each (or none: glibc's headers expand
//! `putc_unlocked` inline), so they are told only as their stream's buffer is flushed: before
//! a call that finds the buffer full (its write pointer at its end), the buffered bytes, which
//! glibc writes out before it stores the character (two pointer loads per call otherwise).
//!
//! Deviations: block writes are told as the program hands them over, not as glibc flushes
//! them, so the pages counted end at the descriptor's position, up to one stream buffer before
//! the bytes' own (a skew of the accounting, never of what the program sees). The last partial
//! buffer of characters (flushed at `fclose` or exit), the characters of an unbuffered stream,
//! and formatted output (`fprintf`, `printf`: variadic, so not definable in stable Rust, and
//! flushed by glibc's internal calls) are not seen.
//!
//! Follows DULO (FAST'05) sections 3-4 through `libprefetch`'s cache budget.

use std::ffi::{c_char, c_int, c_void, CStr};

use libc::{size_t, FILE};

use crate::stdio::{resolve, unavailable, GlibcFile, IS_FILEBUF};
use crate::Real;

static REAL_FWRITE: Real = Real::new(c"fwrite");
static REAL_FWRITE_UNLOCKED: Real = Real::new(c"fwrite_unlocked");
static REAL_FPUTS: Real = Real::new(c"fputs");
static REAL_FPUTS_UNLOCKED: Real = Real::new(c"fputs_unlocked");
static REAL_OVERFLOW: Real = Real::new(c"__overflow");

/// Tells the budget of `bytes` put into `stream`, if it is a stream of a descriptor.
///
/// # Safety
/// `stream` is null or a live glibc `FILE`.
unsafe fn tell(stream: *mut FILE, bytes: u64) {
    if bytes == 0 || stream.is_null() || !libprefetch::budget_running() {
        return;
    }
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return;
    }
    // SAFETY: a glibc FILE starts with these fields; read without writing.
    let file = unsafe { &*(stream as *const GlibcFile) };
    if file.flags & IS_FILEBUF != 0 && file.fileno >= 0 {
        libprefetch::note_written(file.fileno, None, bytes);
    }
}

macro_rules! fwrite_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as the C library's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(data: *const c_void, size: size_t, count: size_t, stream: *mut FILE) -> size_t {
            type Fwrite = unsafe extern "C" fn(*const c_void, size_t, size_t, *mut FILE) -> size_t;
            // SAFETY: the symbol has this type.
            let Some(real) = (unsafe { resolve::<Fwrite>(&$real) }) else {
                unavailable();
                return 0;
            };
            // SAFETY: forwarding the caller's arguments.
            let items = unsafe { real(data, size, count, stream) };
            // SAFETY: the caller's stream, just written to.
            unsafe { tell(stream, (items as u64).saturating_mul(size as u64)) };
            items
        }
    };
}

fwrite_like!(
    /// Interposed `fwrite(3)`.
    fwrite, REAL_FWRITE
);
fwrite_like!(
    /// Interposed `fwrite_unlocked(3)` (coreutils write their output with it).
    fwrite_unlocked, REAL_FWRITE_UNLOCKED
);

macro_rules! fputs_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as the C library's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(text: *const c_char, stream: *mut FILE) -> c_int {
            type Fputs = unsafe extern "C" fn(*const c_char, *mut FILE) -> c_int;
            // SAFETY: the symbol has this type.
            let Some(real) = (unsafe { resolve::<Fputs>(&$real) }) else {
                unavailable();
                return libc::EOF;
            };
            // SAFETY: forwarding the caller's arguments.
            let done = unsafe { real(text, stream) };
            if done >= 0 && !text.is_null() && libprefetch::budget_running() {
                // SAFETY: the caller's NUL-terminated string, which fputs just read whole.
                let bytes = unsafe { CStr::from_ptr(text) }.count_bytes() as u64;
                // SAFETY: the caller's stream, just written to.
                unsafe { tell(stream, bytes) };
            }
            done
        }
    };
}

fputs_like!(
    /// Interposed `fputs(3)`.
    fputs, REAL_FPUTS
);
fputs_like!(
    /// Interposed `fputs_unlocked(3)`.
    fputs_unlocked, REAL_FPUTS_UNLOCKED
);

/// Tells the budget of the bytes a one-character write is about to flush from `stream`'s buffer
/// (none unless the buffer is full).
///
/// # Safety
/// `stream` is null or a live glibc `FILE`.
unsafe fn before_put(stream: *mut FILE) {
    if stream.is_null() || !libprefetch::budget_running() {
        return;
    }
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return;
    }
    // SAFETY: a glibc FILE starts with these fields; read without writing.
    let file = unsafe { &*(stream as *const GlibcFile) };
    if file.write_ptr >= file.write_end {
        let buffered = (file.write_ptr as usize).saturating_sub(file.write_base as usize);
        // SAFETY: the caller's stream.
        unsafe { tell(stream, buffered as u64) };
    }
}

macro_rules! putc_like {
    ($(#[$doc:meta])* $name:ident, $real:ident, $symbol:literal) => {
        static $real: Real = Real::new($symbol);

        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as the C library's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(character: c_int, stream: *mut FILE) -> c_int {
            type Putc = unsafe extern "C" fn(c_int, *mut FILE) -> c_int;
            // SAFETY: the caller's stream, about to be written to.
            unsafe { before_put(stream) };
            // SAFETY: the symbol has this type.
            let Some(real) = (unsafe { resolve::<Putc>(&$real) }) else {
                unavailable();
                return libc::EOF;
            };
            // SAFETY: forwarding the caller's arguments.
            unsafe { real(character, stream) }
        }
    };
}

putc_like!(
    /// Interposed `fputc(3)`.
    fputc, REAL_FPUTC, c"fputc"
);
putc_like!(
    /// Interposed `putc(3)`.
    putc, REAL_PUTC, c"putc"
);
putc_like!(
    /// Interposed `_IO_putc`, what older glibc headers make of `putc`.
    _IO_putc, REAL_IO_PUTC, c"_IO_putc"
);
putc_like!(
    /// Interposed `fputc_unlocked(3)`.
    fputc_unlocked, REAL_FPUTC_UNLOCKED, c"fputc_unlocked"
);
putc_like!(
    /// Interposed `putc_unlocked(3)` (as a function; the inline form calls `__overflow`).
    putc_unlocked, REAL_PUTC_UNLOCKED, c"putc_unlocked"
);

/// Interposed `__overflow`: what glibc's inline `putc_unlocked` calls, from the program, when
/// the stream's buffer is full.
///
/// # Safety
/// Same contract as the C library's function of this name.
#[no_mangle]
pub unsafe extern "C" fn __overflow(stream: *mut FILE, character: c_int) -> c_int {
    type Overflow = unsafe extern "C" fn(*mut FILE, c_int) -> c_int;
    // SAFETY: the caller's stream, about to be written to.
    unsafe { before_put(stream) };
    // SAFETY: the symbol has this type.
    let Some(real) = (unsafe { resolve::<Overflow>(&REAL_OVERFLOW) }) else {
        unavailable();
        return libc::EOF;
    };
    // SAFETY: forwarding the caller's arguments.
    unsafe { real(stream, character) }
}
