//! Interposers for C stdio's input functions (`fread`, `fgets`, `getline`,
//! `getc`, ... and their `_unlocked` and `_FORTIFY_SOURCE` forms), so that
//! programs reading files through a `FILE *` (coreutils `md5sum`, `sort`,
//! `wc`, `cut`) have their reads followed and recorded like those made with
//! `read(2)`. glibc's stdio calls its own internal `read`, which no
//! interposer sees, so the library is told here instead, before the call, of
//! the read that may refill the stream's buffer: at the descriptor's current
//! position, as long as the call can need from the file.
//!
//! Whether a call can read at all is told from the stream's buffer, without a
//! system call or a lock: a call that the buffered bytes satisfy (most
//! `getc`s, an `fgets` whose line is already buffered) costs two pointer
//! loads. The buffer pointers are read from glibc's `struct _IO_FILE`, whose
//! leading fields are part of glibc's ABI (`bits/types/struct_FILE.h`); the
//! descriptor too is read from it rather than with `fileno`, which sets
//! errno on a stream that has none (`fmemopen`).
//!
//! Follows libprefetch (ATC 2009) section 4 (the library follows the
//! application's reads by overriding the C library's read functions).
//!
//! Deviations: the length told is an estimate (the missing bytes rounded up
//! to the stream's buffer size; one buffer for a line or a character), so a
//! program that stops reading mid-buffer is said to read up to the buffer's
//! end, as the kernel is asked to. Only glibc's layout is read; on another C
//! library these interposers only forward.

use std::ffi::{c_char, c_int, c_void};

use libc::{size_t, ssize_t, FILE};

use crate::Real;

/// The leading fields of glibc's `struct _IO_FILE` (LP64), as far as the
/// descriptor; those named with `_` only hold their place.
#[repr(C)]
pub(crate) struct GlibcFile {
    pub(crate) flags: c_int,
    read_ptr: *mut c_char,
    read_end: *mut c_char,
    _read_base: *mut c_char,
    pub(crate) write_base: *mut c_char,
    pub(crate) write_ptr: *mut c_char,
    pub(crate) write_end: *mut c_char,
    buf_base: *mut c_char,
    buf_end: *mut c_char,
    _save_base: *mut c_char,
    _backup_base: *mut c_char,
    _save_end: *mut c_char,
    _markers: *mut c_void,
    _chain: *mut c_void,
    pub(crate) fileno: c_int,
}

// POSIX stream locks (recursive); the libc crate does not bind them.
extern "C" {
    fn flockfile(stream: *mut FILE);
    fn funlockfile(stream: *mut FILE);
}

/// `_IO_NO_READS`: the stream is not open for reading.
const NO_READS: c_int = 0x0004;
/// `_IO_UNBUFFERED`: every read goes to the file for exactly what is asked.
const UNBUFFERED: c_int = 0x0002;
/// `_IO_IS_FILEBUF`: the stream reads a file descriptor.
pub(crate) const IS_FILEBUF: c_int = 0x2000;
/// The buffer glibc allocates at a stream's first read (`st_blksize` of most
/// file systems), assumed while none is allocated.
const FIRST_BUFFER_BYTES: u64 = 4096;

/// What a call wants from the stream.
#[derive(Clone, Copy)]
enum Want {
    /// This many bytes (`fread`).
    Bytes(u64),
    /// Up to and including this byte, or at most `limit` bytes (`fgets`,
    /// `getdelim`; `u64::MAX` for no limit).
    Until { delimiter: u8, limit: u64 },
    /// One character (`getc`, `__uflow`).
    Char,
}

/// Tells the library of the read `want` may make from `stream`'s file.
///
/// # Safety
/// `stream` is null or a valid open `FILE` (the contract of the stdio
/// function being interposed).
unsafe fn before_read(stream: *mut FILE, want: Want) {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) || stream.is_null() {
        return;
    }
    // SAFETY: a glibc FILE starts with these fields; read without writing.
    let file = unsafe { &*(stream as *const GlibcFile) };
    if file.flags & (NO_READS | IS_FILEBUF) != IS_FILEBUF || !libprefetch::may_track(file.fileno) {
        return;
    }
    let missing = match want {
        // Looking into the buffer for the delimiter needs the stream's lock
        // (another thread may be refilling it); recursive, so a caller of an
        // `_unlocked` form that holds it already is not blocked.
        Want::Until { .. } => {
            // SAFETY: a valid stream; locked and unlocked once.
            unsafe { flockfile(stream) };
            // SAFETY: the stream's own buffer, which no other thread changes now.
            let missing = unsafe { missing_bytes(file, want) };
            // SAFETY: locked above by this thread.
            unsafe { funlockfile(stream) };
            missing
        }
        // SAFETY: only the pointers' distance is used, never what they point to.
        _ => unsafe { missing_bytes(file, want) },
    };
    if missing > 0 {
        libprefetch::note_read_at_position(file.fileno, read_length(file, missing));
    }
}

/// The distance from `start` to `end` in bytes, 0 if either is null or they
/// are out of order (compared as addresses: a racing refill may have moved one).
fn distance(start: *const c_char, end: *const c_char) -> u64 {
    if start.is_null() {
        return 0;
    }
    (end as usize).saturating_sub(start as usize) as u64
}

/// Bytes `want` needs beyond those buffered (0: the call reads nothing).
///
/// # Safety
/// For [`Want::Until`], `file`'s read pointers delimit its buffered bytes
/// (the stream is locked), or are null.
unsafe fn missing_bytes(file: &GlibcFile, want: Want) -> u64 {
    let buffered = distance(file.read_ptr, file.read_end);
    match want {
        Want::Bytes(count) => count.saturating_sub(buffered),
        Want::Char => u64::from(buffered == 0),
        Want::Until { delimiter, limit } => {
            if buffered >= limit {
                return 0;
            }
            if buffered == 0 {
                return 1;
            }
            // SAFETY: the buffered bytes are initialised memory of the stream.
            let bytes = unsafe {
                std::slice::from_raw_parts(file.read_ptr as *const u8, buffered as usize)
            };
            u64::from(!bytes.contains(&delimiter))
        }
    }
}

/// What the kernel is asked for when `missing` bytes are not buffered: the
/// buffer's size, or the missing bytes rounded up to it.
fn read_length(file: &GlibcFile, missing: u64) -> u64 {
    if file.flags & UNBUFFERED != 0 {
        return missing;
    }
    let buffer = match distance(file.buf_base, file.buf_end) {
        0 => FIRST_BUFFER_BYTES,
        bytes => bytes,
    };
    missing.div_ceil(buffer).max(1) * buffer
}

/// The real function behind `real`, as type `F`; `None` if the C library
/// has none (not glibc), in which case the caller cannot forward.
///
/// # Safety
/// `F` is the function pointer type of the symbol `real` names.
pub(crate) unsafe fn resolve<F: Copy>(real: &Real) -> Option<F> {
    let address = real.get();
    // SAFETY: the caller names the symbol's type; a pointer-sized copy.
    (!address.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
}

/// When the C library lacks the function (never with glibc), the call fails
/// as an I/O error on the stream would: EOF, or a null or zero result.
pub(crate) fn unavailable() {
    // SAFETY: errno is this thread's.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
}

/// Defines an interposer `$name` with the C signature given: it tells the
/// library of the read `$want` may make from `$stream` ([`before_read`]),
/// then calls the C library's `$symbol` with the caller's arguments, or
/// fails with `$failed` where there is none.
macro_rules! stdio_interposer {
    ($(#[$doc:meta])* $name:ident, $real:ident, $symbol:literal,
     ($($arg:ident: $ty:ty),*) -> $ret:ty, stream: $stream:ident, want: $want:expr, failed: $failed:expr) => {
        static $real: Real = Real::new($symbol);

        $(#[$doc])*
        ///
        /// # Safety
        /// Same contract as the C library's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: the caller passes a valid stream.
            unsafe { before_read($stream, $want) };
            // SAFETY: the symbol has this type.
            match unsafe { resolve::<unsafe extern "C" fn($($ty),*) -> $ret>(&$real) } {
                // SAFETY: forwarding the caller's arguments.
                Some(real) => unsafe { real($($arg),*) },
                None => {
                    unavailable();
                    $failed
                }
            }
        }
    };
}

/// What `fread` of `count` items of `size` bytes wants.
fn items(size: size_t, count: size_t) -> Want {
    Want::Bytes((size as u64).saturating_mul(count as u64))
}

/// What `fgets` with a buffer of `size` bytes wants: a line, or `size - 1` bytes.
fn line_within(size: c_int) -> Want {
    Want::Until {
        delimiter: b'\n',
        limit: u64::try_from(size).unwrap_or(0).saturating_sub(1),
    }
}

/// What `getdelim` wants: everything up to `delimiter`.
fn until(delimiter: c_int) -> Want {
    Want::Until {
        delimiter: delimiter as u8,
        limit: u64::MAX,
    }
}

stdio_interposer!(
    /// Interposed `fread(3)`.
    fread, REAL_FREAD, c"fread",
    (ptr: *mut c_void, size: size_t, count: size_t, stream: *mut FILE) -> size_t,
    stream: stream, want: items(size, count), failed: 0
);
stdio_interposer!(
    /// Interposed `fread_unlocked(3)`.
    fread_unlocked, REAL_FREAD_UNLOCKED, c"fread_unlocked",
    (ptr: *mut c_void, size: size_t, count: size_t, stream: *mut FILE) -> size_t,
    stream: stream, want: items(size, count), failed: 0
);
stdio_interposer!(
    /// Interposed `__fread_chk` (the `_FORTIFY_SOURCE` form of `fread`).
    __fread_chk, REAL_FREAD_CHK, c"__fread_chk",
    (ptr: *mut c_void, ptrlen: size_t, size: size_t, count: size_t, stream: *mut FILE) -> size_t,
    stream: stream, want: items(size, count), failed: 0
);
stdio_interposer!(
    /// Interposed `__fread_unlocked_chk`.
    __fread_unlocked_chk, REAL_FREAD_UNLOCKED_CHK, c"__fread_unlocked_chk",
    (ptr: *mut c_void, ptrlen: size_t, size: size_t, count: size_t, stream: *mut FILE) -> size_t,
    stream: stream, want: items(size, count), failed: 0
);
stdio_interposer!(
    /// Interposed `fgets(3)`.
    fgets, REAL_FGETS, c"fgets",
    (s: *mut c_char, size: c_int, stream: *mut FILE) -> *mut c_char,
    stream: stream, want: line_within(size), failed: std::ptr::null_mut()
);
stdio_interposer!(
    /// Interposed `fgets_unlocked(3)`.
    fgets_unlocked, REAL_FGETS_UNLOCKED, c"fgets_unlocked",
    (s: *mut c_char, size: c_int, stream: *mut FILE) -> *mut c_char,
    stream: stream, want: line_within(size), failed: std::ptr::null_mut()
);
stdio_interposer!(
    /// Interposed `__fgets_chk` (the `_FORTIFY_SOURCE` form of `fgets`).
    __fgets_chk, REAL_FGETS_CHK, c"__fgets_chk",
    (s: *mut c_char, buflen: size_t, size: c_int, stream: *mut FILE) -> *mut c_char,
    stream: stream, want: line_within(size), failed: std::ptr::null_mut()
);
stdio_interposer!(
    /// Interposed `__fgets_unlocked_chk`.
    __fgets_unlocked_chk, REAL_FGETS_UNLOCKED_CHK, c"__fgets_unlocked_chk",
    (s: *mut c_char, buflen: size_t, size: c_int, stream: *mut FILE) -> *mut c_char,
    stream: stream, want: line_within(size), failed: std::ptr::null_mut()
);
stdio_interposer!(
    /// Interposed `getdelim(3)`.
    getdelim, REAL_GETDELIM, c"getdelim",
    (line: *mut *mut c_char, n: *mut size_t, delimiter: c_int, stream: *mut FILE) -> ssize_t,
    stream: stream, want: until(delimiter), failed: -1
);
stdio_interposer!(
    /// Interposed `__getdelim`, what glibc's `getline` macro and coreutils call.
    __getdelim, REAL_GETDELIM_INTERNAL, c"__getdelim",
    (line: *mut *mut c_char, n: *mut size_t, delimiter: c_int, stream: *mut FILE) -> ssize_t,
    stream: stream, want: until(delimiter), failed: -1
);
stdio_interposer!(
    /// Interposed `getline(3)`.
    getline, REAL_GETLINE, c"getline",
    (line: *mut *mut c_char, n: *mut size_t, stream: *mut FILE) -> ssize_t,
    stream: stream, want: until(c_int::from(b'\n')), failed: -1
);

macro_rules! getc_like {
    ($(#[$doc:meta])* $name:ident, $real:ident, $symbol:literal) => {
        stdio_interposer!(
            $(#[$doc])* $name, $real, $symbol,
            (stream: *mut FILE) -> c_int,
            stream: stream, want: Want::Char, failed: libc::EOF
        );
    };
}

getc_like!(
    /// Interposed `fgetc(3)`.
    fgetc, REAL_FGETC, c"fgetc"
);
getc_like!(
    /// Interposed `getc(3)`.
    getc, REAL_GETC, c"getc"
);
getc_like!(
    /// Interposed `_IO_getc`, what older glibc headers make of `getc`.
    _IO_getc, REAL_IO_GETC, c"_IO_getc"
);
getc_like!(
    /// Interposed `fgetc_unlocked(3)`.
    fgetc_unlocked, REAL_FGETC_UNLOCKED, c"fgetc_unlocked"
);
getc_like!(
    /// Interposed `getc_unlocked(3)` (as a function; the macro calls `__uflow`).
    getc_unlocked, REAL_GETC_UNLOCKED, c"getc_unlocked"
);
getc_like!(
    /// Interposed `__uflow`: what glibc's `getc_unlocked` macro calls, from
    /// the program, when the buffer is empty.
    __uflow, REAL_UFLOW, c"__uflow"
);
getc_like!(
    /// Interposed `__underflow`: the same, without consuming the character.
    __underflow, REAL_UNDERFLOW, c"__underflow"
);

static REAL_FCLOSE: Real = Real::new(c"fclose");

/// Interposed `fclose(3)`: glibc closes the stream's descriptor with its own
/// internal `close`, which the `close` interposer does not see, so the
/// library is told here first (`libprefetch::note_close`).
///
/// # Safety
/// Same contract as the C library's `fclose`.
#[no_mangle]
pub unsafe extern "C" fn fclose(stream: *mut FILE) -> c_int {
    if cfg!(all(target_os = "linux", target_env = "gnu")) && !stream.is_null() {
        // SAFETY: a glibc FILE starts with these fields; read without writing.
        let file = unsafe { &*(stream as *const GlibcFile) };
        if file.flags & IS_FILEBUF != 0 && file.fileno >= 0 {
            libprefetch::note_close(file.fileno);
        }
    }
    // SAFETY: the symbol has this type.
    match unsafe { resolve::<unsafe extern "C" fn(*mut FILE) -> c_int>(&REAL_FCLOSE) } {
        // SAFETY: forwarding the caller's argument.
        Some(real) => unsafe { real(stream) },
        None => {
            unavailable();
            libc::EOF
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream over `bytes` in a temporary file, opened with `fopen`.
    fn stream_over(bytes: &[u8]) -> (tempfile::NamedTempFile, *mut FILE) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, bytes).unwrap();
        let path = std::ffi::CString::new(file.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: valid NUL-terminated path and mode.
        let stream = unsafe { libc::fopen(path.as_ptr(), c"r".as_ptr()) };
        assert!(!stream.is_null());
        (file, stream)
    }

    fn glibc(stream: *mut FILE) -> &'static GlibcFile {
        // SAFETY: a glibc FILE starts with these fields.
        unsafe { &*(stream as *const GlibcFile) }
    }

    #[test]
    fn the_layout_read_is_glibcs() {
        let (_file, stream) = stream_over(b"abc\ndef\n");
        // SAFETY: a valid stream.
        assert_eq!(glibc(stream).fileno, unsafe { libc::fileno(stream) });
        assert_eq!(glibc(stream).flags & (IS_FILEBUF | NO_READS), IS_FILEBUF);
        // SAFETY: a valid stream, closed once.
        unsafe { libc::fclose(stream) };
    }

    #[test]
    fn only_calls_the_buffer_cannot_satisfy_read_the_file() {
        let (_file, stream) = stream_over(b"abc\ndef\n");
        let file = glibc(stream);
        // SAFETY: the stream's own buffer pointers throughout.
        unsafe {
            assert_eq!(missing_bytes(file, Want::Char), 1, "nothing buffered yet");
            assert_eq!(missing_bytes(file, Want::Bytes(3)), 3);
            // The real getc fills the buffer with the whole (small) file.
            assert_eq!(glibc_getc(stream), i32::from(b'a'));
            assert_eq!(missing_bytes(file, Want::Char), 0);
            assert_eq!(missing_bytes(file, Want::Bytes(7)), 0);
            assert_eq!(missing_bytes(file, Want::Bytes(9)), 2);
            let line = Want::Until {
                delimiter: b'\n',
                limit: u64::MAX,
            };
            assert_eq!(missing_bytes(file, line), 0, "a whole line is buffered");
            let no_such_byte = Want::Until {
                delimiter: b'x',
                limit: u64::MAX,
            };
            assert_eq!(missing_bytes(file, no_such_byte), 1);
            assert_eq!(read_length(file, 2), buffer_size(file));
            libc::fclose(stream);
        }
    }

    /// glibc's own `getc`, not this crate's interposer (which the test
    /// binary exports too).
    unsafe fn glibc_getc(stream: *mut FILE) -> c_int {
        // SAFETY: `getc` has this type.
        let real = unsafe { resolve::<unsafe extern "C" fn(*mut FILE) -> c_int>(&REAL_GETC) };
        // SAFETY: a valid stream.
        unsafe { real.expect("glibc's getc")(stream) }
    }

    fn buffer_size(file: &GlibcFile) -> u64 {
        distance(file.buf_base, file.buf_end)
    }
}
