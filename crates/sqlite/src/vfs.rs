//! The `prefetch` VFS: a shim over the process's default VFS that tells libprefetch about every read of a
//! main database file before passing it on (paper s4.5: libprefetch follows the application by watching
//! its reads; here SQLite's reads happen inside its own library, out of reach of the read interposers, so
//! the VFS reports them with `libprefetch::note_read`).
//!
//! ```text
//!   SQLite pager --xRead--> prefetch VFS --note_read(fd, off, len)--> libprefetch (callback, prefetch round)
//!                               |
//!                               +--xRead--> default VFS (unix) --pread(fd)--> kernel page cache <- WILLNEED(fd)
//! ```
//!
//! Descriptors and locks. On Linux, `close()` of *any* descriptor of a file releases every POSIX lock the
//! process holds on that file, whichever descriptor took it. SQLite's unix VFS therefore keeps one record
//! per inode and defers closing a connection's descriptor while another connection of the process holds a
//! lock on the file (os_unix.c, `unixInodeInfo` and its `pUnused` list). A shim that opened and closed a
//! descriptor of its own per connection would undo that: closing connection A would silently drop the
//! RESERVED, PENDING or EXCLUSIVE lock of connection B (or the SHARED lock a WAL reader relies on), and
//! another process could then commit under B, losing one of the two commits.
//!
//! Choice: the shim opens no descriptor at all. It reads and advises the file through SQLite's own
//! descriptor, the `h` field of the unix VFS's `unixFile`, which follows the methods, VFS and inode
//! pointers (its place has not changed since SQLite 3.7). The field is used only after three checks:
//! the wrapped VFS is one of SQLite's `unix*` VFSes, the file object names that VFS as its creator, and
//! the descriptor is open on the very file (device and inode) SQLite was asked to open. Everything the
//! shim does with it, `pread`, `posix_fadvise` and `cachestat`, leaves file offsets and locks alone.
//! The file's libprefetch client is unregistered, and its advice in flight waited for, *before* the
//! wrapped `xClose` runs, so nothing touches the descriptor once SQLite may close it or set it aside.
//!
//! Limits: a file whose descriptor cannot be obtained that way (another default VFS wrapped, a future
//! layout) is passed through untracked: no prefetching, and no extra descriptor either. Descriptors per
//! connection: exactly those of the wrapped VFS. Journals, WAL files and temporary files pass through
//! untracked.
//!
//! Cost where there is nothing to prefetch ([`crate::feed`]'s gate): reads of cached pages go straight
//! on (one read in eight is probed with cachestat), and so does every read while the connection holds
//! a write lock (RESERVED or above, seen in `xLock`/`xUnlock`; WAL's write lock, seen in `xShmLock`).
//! Writes pass through; a write or truncate of a tracked file drops its access list and the reader's
//! caches, so the file is planned again at most once per write transaction, and only if its pages are
//! not cached. The reader also re-reads the file's structure when its modification time changes (a
//! WAL checkpoint by any connection or process), looked at once per read transaction: after a lock
//! (`xLock`, `xUnlock`, `xShmLock`) rather than at every plan. Limit: pages whose latest version is still in the WAL
//! are planned from the database file's older version, a bounded waste (SQLite checkpoints every
//! 1000 pages by default), never a wrong result.
//!
//! Memory layout of an open file: SQLite allocates `szOsFile` bytes; the shim's `ShimFile` comes first
//! and the wrapped VFS's file object follows it.
//!
//! Deviations: only `xOpen` is wrapped at the VFS level; the other VFS methods are the default VFS's own,
//! called with the same `pAppData` (SQLite's unix VFS, like most, reads nothing else from the VFS object).
//! libprefetch's region is SQLite's descriptor rather than one the prefetcher opened (paper s4.2 lets the
//! application register its own descriptors).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::{size_of, MaybeUninit};
use std::os::fd::RawFd;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use rusqlite::ffi::{
    sqlite3_file, sqlite3_int64, sqlite3_io_methods, sqlite3_vfs, SQLITE_ERROR,
    SQLITE_FCNTL_PRAGMA, SQLITE_FCNTL_VFSNAME, SQLITE_IOERR, SQLITE_IOERR_SHMMAP, SQLITE_NOTFOUND,
    SQLITE_OK, SQLITE_OPEN_MAIN_DB, SQLITE_SHM_EXCLUSIVE, SQLITE_SHM_LOCK, SQLITE_SHM_UNLOCK,
};

use crate::api::{ApiRoutines, AUTO_EXTENSION_VERSION};
use crate::connection::{reading, Connection};
use crate::feed::Tracked;

/// Name under which the VFS is registered (`file:DB?vfs=prefetch`).
pub const VFS_NAME: &CStr = c"prefetch";

/// The registered VFS object and the VFS it wraps, as addresses (both live for the rest of the process).
struct Registered {
    shim: usize,
    inner: usize,
    api: usize,
}

static REGISTERED: OnceLock<Registered> = OnceLock::new();

/// Main database files open now whose reads libprefetch follows.
static TRACKED_FILES: AtomicUsize = AtomicUsize::new(0);

/// How many main database files the VFS tracks now (tests look it up with `dlsym`, since the extension's
/// statics are not the ones of a copy of this crate linked into the test).
#[no_mangle]
pub extern "C" fn prefetch_sqlite_tracked_files() -> usize {
    TRACKED_FILES.load(Ordering::Relaxed)
}

/// One open file of the shim; the wrapped VFS's file object follows it in memory.
#[repr(C)]
struct ShimFile {
    base: sqlite3_file,
    /// The wrapped file (just after this struct).
    inner: *mut sqlite3_file,
    /// libprefetch state of a main database file, or null.
    tracked: *mut Tracked,
}

/// Registers the `prefetch` VFS over the current default VFS and makes it the default. Loading the
/// extension again makes the already registered VFS the default again.
///
/// # Safety
/// `api` must be SQLite's routines table.
pub unsafe fn register(api: &ApiRoutines) -> Result<(), c_int> {
    let registered = match REGISTERED.get() {
        Some(registered) => registered,
        None => {
            // SAFETY: a null name asks SQLite for its default VFS.
            let inner = unsafe { (api.vfs_find)(ptr::null()) };
            // SAFETY: SQLite's VFS objects live for the rest of the process.
            let Some(inner_vfs) = (unsafe { inner.as_ref() }) else {
                return Err(SQLITE_ERROR);
            };
            let shim = Box::leak(Box::new(shim_vfs(inner_vfs)));
            REGISTERED.get_or_init(|| Registered {
                shim: ptr::from_mut(shim) as usize,
                inner: inner as usize,
                api: ptr::from_ref(api) as usize,
            })
        }
    };
    // SAFETY: the shim VFS object is leaked, so it outlives its registration.
    match unsafe { (api.vfs_register)(registered.shim as *mut sqlite3_vfs, 1) } {
        SQLITE_OK => {
            if crate::feed::stats_wanted() {
                eprintln!(
                    "prefetch VFS: registered as the default VFS: databases opened from now on are \
                     followed, one line of statistics each when closed (a database opened before the \
                     extension was loaded is not: open it again, e.g. `.open FILE` in the sqlite3 shell)"
                );
            }
            Ok(())
        }
        code => Err(code),
    }
}

/// The shim's VFS object: a copy of `inner` with its own name, file size and `xOpen`.
fn shim_vfs(inner: &sqlite3_vfs) -> sqlite3_vfs {
    let inner_size = usize::try_from(inner.szOsFile).unwrap_or(0);
    sqlite3_vfs {
        szOsFile: c_int::try_from(size_of::<ShimFile>() + inner_size).unwrap_or(c_int::MAX),
        pNext: ptr::null_mut(),
        zName: VFS_NAME.as_ptr(),
        xOpen: Some(shim_open),
        ..*inner
    }
}

fn inner_vfs() -> *mut sqlite3_vfs {
    REGISTERED
        .get()
        .map_or(ptr::null_mut(), |r| r.inner as *mut sqlite3_vfs)
}

unsafe extern "C" fn shim_open(
    _vfs: *mut sqlite3_vfs,
    name: *const c_char,
    file: *mut sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let inner = inner_vfs();
    // SAFETY: SQLite passes `file` of szOsFile bytes, so the wrapped object fits after the ShimFile.
    let shim = file.cast::<ShimFile>();
    let inner_file = unsafe {
        file.cast::<u8>()
            .add(size_of::<ShimFile>())
            .cast::<sqlite3_file>()
    };
    // SAFETY: `shim` points to writable memory of at least size_of::<ShimFile>() bytes.
    unsafe {
        shim.write(ShimFile {
            base: sqlite3_file {
                pMethods: ptr::null(),
            },
            inner: inner_file,
            tracked: ptr::null_mut(),
        })
    };
    // SAFETY: `inner` is the registered default VFS and its xOpen is mandatory.
    let Some(open) = (unsafe { inner.as_ref() }).and_then(|vfs| vfs.xOpen) else {
        return SQLITE_ERROR;
    };
    // SAFETY: forwarding SQLite's own arguments to the wrapped VFS, with its own file object.
    let rc = unsafe { open(inner, name, inner_file, flags, out_flags) };
    // SAFETY: the wrapped xOpen has initialised `inner_file` (pMethods null on failure).
    if rc != SQLITE_OK || unsafe { (*inner_file).pMethods.is_null() } {
        return rc;
    }
    if flags & SQLITE_OPEN_MAIN_DB != 0 && !name.is_null() {
        // SAFETY: SQLite passes a NUL-terminated path for named files; `inner_file` was opened by `inner`.
        let fd = unsafe { unix_descriptor(inner, inner_file, CStr::from_ptr(name)) };
        // SAFETY: `name` is the main file's name as SQLite passed it to xOpen.
        let whole_scans = unsafe { whole_scans_asked(name) };
        if let Some(tracked) = fd.map(|fd| Tracked::open(fd, whole_scans)) {
            TRACKED_FILES.fetch_add(1, Ordering::Relaxed);
            // SAFETY: `shim` was initialised above.
            unsafe { (*shim).tracked = Box::into_raw(Box::new(tracked)) };
        } else if crate::feed::stats_wanted() {
            // SAFETY: as above.
            let path = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            eprintln!("prefetch VFS: {path} is not followed (its descriptor could not be had from the wrapped VFS)");
        }
    }
    // SAFETY: as above.
    unsafe { (*shim).base.pMethods = &SHIM_METHODS };
    rc
}

/// The URI parameter by which a connection asks for its full scans to be listed whole
/// (`file:x.db?prefetch_scan=whole`, [`crate::scan::ScanPlanner::set_seek_bound`]); any other value,
/// like its absence, leaves the default (SQLite ignores URI parameters it does not know, and so does the
/// extension with values it does not know).
pub const SCAN_PARAMETER: &CStr = c"prefetch_scan";
/// The value of [`SCAN_PARAMETER`] that asks for whole lists.
pub const SCAN_WHOLE: &[u8] = b"whole";

/// Whether whole lists are asked for every file the process opens: `PREFETCH_SQLITE_SCAN=whole`, for
/// programs that cannot change the file name they open (any other value leaves each connection's own
/// choice).
pub fn whole_scans_by_environment() -> bool {
    libprefetch::variables::SQLITE_SCAN
        .value()
        .is_some_and(|value| value.as_encoded_bytes() == SCAN_WHOLE)
}

/// Whether the main file opened as `name` was named with `prefetch_scan=whole` among its URI
/// parameters, read with `sqlite3_uri_parameter` (hosts from SQLite 3.8.7; older ones never ask), or
/// the environment asks it of every file ([`whole_scans_by_environment`]).
///
/// # Safety
/// `name` is a main database file's name as SQLite passes it to xOpen.
unsafe fn whole_scans_asked(name: *const c_char) -> bool {
    if whole_scans_by_environment() {
        return true;
    }
    let Some(api) = REGISTERED.get().map(|r| r.api as *const ApiRoutines) else {
        return false;
    };
    // SAFETY: `api` is the routines table of the SQLite that registered the VFS; it lives as long.
    let api = unsafe { &*api };
    // SAFETY: present in every version's table.
    if unsafe { (api.libversion_number)() } < AUTO_EXTENSION_VERSION {
        return false;
    }
    // SAFETY: the version check guarantees the entry; `name` is an xOpen filename, as it requires.
    let value = unsafe { (api.uri_parameter)(name, SCAN_PARAMETER.as_ptr()) };
    // SAFETY: a non-null answer is a NUL-terminated string inside the filename.
    !value.is_null() && unsafe { CStr::from_ptr(value) }.to_bytes() == SCAN_WHOLE
}

/// The start of os_unix.c's `struct unixFile`, up to the descriptor.
#[repr(C)]
struct UnixFileHead {
    methods: *const sqlite3_io_methods,
    vfs: *mut sqlite3_vfs,
    inode: *mut c_void,
    h: c_int,
}

/// SQLite's own descriptor of `file`, opened by the unix VFS `vfs` as `path`, if every check of the
/// module header holds (a `unix*` VFS, the file object names it, the descriptor is that file).
///
/// # Safety
/// `vfs` must be a registered VFS and `file` a file object its xOpen opened successfully.
unsafe fn unix_descriptor(
    vfs: *mut sqlite3_vfs,
    file: *mut sqlite3_file,
    path: &CStr,
) -> Option<RawFd> {
    // SAFETY: per the contract, `vfs` is a live VFS object with a NUL-terminated name.
    let (name, size) = unsafe { (CStr::from_ptr((*vfs).zName), (*vfs).szOsFile) };
    let fits = usize::try_from(size).is_ok_and(|size| size >= size_of::<UnixFileHead>());
    if !name.to_bytes().starts_with(b"unix") || !fits {
        return None;
    }
    // SAFETY: a unix VFS's file object starts with a unixFile of at least szOsFile bytes (checked above).
    let head = unsafe { &*file.cast::<UnixFileHead>() };
    if head.vfs != vfs || head.h < 0 {
        return None;
    }
    let (open, named) = (fstat(head.h)?, stat(path)?);
    let same = open.st_dev == named.st_dev && open.st_ino == named.st_ino;
    (same && open.st_mode & libc::S_IFMT == libc::S_IFREG).then_some(head.h)
}

fn fstat(fd: RawFd) -> Option<libc::stat> {
    let mut out = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a struct stat into the buffer on success.
    (unsafe { libc::fstat(fd, out.as_mut_ptr()) } == 0).then(|| unsafe { out.assume_init() })
}

fn stat(path: &CStr) -> Option<libc::stat> {
    let mut out = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `path` is NUL-terminated; stat writes a struct stat into the buffer on success.
    (unsafe { libc::stat(path.as_ptr(), out.as_mut_ptr()) } == 0)
        .then(|| unsafe { out.assume_init() })
}

static SHIM_METHODS: sqlite3_io_methods = sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(shim_close),
    xRead: Some(shim_read),
    xWrite: Some(shim_write),
    xTruncate: Some(shim_truncate),
    xSync: Some(shim_sync),
    xFileSize: Some(shim_file_size),
    xLock: Some(shim_lock),
    xUnlock: Some(shim_unlock),
    xCheckReservedLock: Some(shim_check_reserved_lock),
    xFileControl: Some(shim_file_control),
    xSectorSize: Some(shim_sector_size),
    xDeviceCharacteristics: Some(shim_device_characteristics),
    xShmMap: Some(shim_shm_map),
    xShmLock: Some(shim_shm_lock),
    xShmBarrier: Some(shim_shm_barrier),
    xShmUnmap: Some(shim_shm_unmap),
    xFetch: Some(shim_fetch),
    xUnfetch: Some(shim_unfetch),
};

/// The wrapped file, its methods table (which may be shorter than version 3) and the tracking state.
///
/// # Safety
/// `file` must be a ShimFile opened by `shim_open`.
unsafe fn parts(
    file: *mut sqlite3_file,
) -> (
    *mut sqlite3_file,
    *const sqlite3_io_methods,
    Option<&'static Tracked>,
) {
    // SAFETY: per the contract, `file` is a ShimFile whose inner file is open.
    unsafe {
        let shim = &*file.cast::<ShimFile>();
        (shim.inner, (*shim.inner).pMethods, shim.tracked.as_ref())
    }
}

/// Calls method `$m` (present from methods version `$version` on) of the wrapped file with the remaining
/// arguments; evaluates `$missing` if the wrapped file's methods lack it.
macro_rules! forward {
    ($version:literal, $file:expr, $m:ident, $missing:expr $(, $arg:expr)*) => {{
        // SAFETY: SQLite calls these methods only on files opened by shim_open.
        let (inner, methods, _) = unsafe { parts($file) };
        // SAFETY: the methods table is valid up to the fields of its own iVersion, checked first.
        let method = unsafe {
            if (*methods).iVersion >= $version { ptr::addr_of!((*methods).$m).read() } else { None }
        };
        match method {
            // SAFETY: forwarding SQLite's own arguments to the wrapped file's method.
            Some(method) => unsafe { method(inner $(, $arg)*) },
            None => $missing,
        }
    }};
}

/// Unregisters the file from libprefetch first (it reads and advises SQLite's descriptor), then lets the
/// wrapped VFS close it, or set it aside while the process holds locks on the file.
unsafe extern "C" fn shim_close(file: *mut sqlite3_file) -> c_int {
    // SAFETY: `file` is a ShimFile; `tracked` came from Box::into_raw in shim_open and is freed once.
    unsafe {
        let shim = &mut *file.cast::<ShimFile>();
        if !shim.tracked.is_null() {
            drop(Box::from_raw(shim.tracked));
            shim.tracked = ptr::null_mut();
            TRACKED_FILES.fetch_sub(1, Ordering::Relaxed);
        }
    }
    forward!(1, file, xClose, SQLITE_OK)
}

unsafe extern "C" fn shim_read(
    file: *mut sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: sqlite3_int64,
) -> c_int {
    // SAFETY: SQLite calls xRead only on files opened by shim_open.
    let tracked = unsafe { parts(file) }.2;
    match tracked {
        // SAFETY: as above.
        Some(t) => reading(t.connection(), || unsafe {
            read(file, tracked, buf, amount, offset)
        }),
        // SAFETY: as above.
        None => unsafe { read(file, tracked, buf, amount, offset) },
    }
}

/// `xRead`, with `tracked` told of the read.
///
/// # Safety
/// As `shim_read`.
unsafe fn read(
    file: *mut sqlite3_file,
    tracked: Option<&'static Tracked>,
    buf: *mut c_void,
    amount: c_int,
    offset: sqlite3_int64,
) -> c_int {
    let look_after = tracked.is_some_and(|tracked| tracked.note_read(offset, amount));
    let rc = forward!(1, file, xRead, SQLITE_IOERR, buf, amount, offset);
    if let (true, SQLITE_OK, Some(tracked), Ok(len)) =
        (look_after, rc, tracked, usize::try_from(amount))
    {
        // SAFETY: the wrapped xRead filled `amount` bytes of SQLite's buffer (SQLITE_OK).
        let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
        tracked.after_read(offset, bytes);
    }
    rc
}

unsafe extern "C" fn shim_write(
    file: *mut sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: sqlite3_int64,
) -> c_int {
    // SAFETY: as in shim_read.
    if let (_, _, Some(tracked)) = unsafe { parts(file) } {
        tracked.drop_list();
    }
    forward!(1, file, xWrite, SQLITE_IOERR, buf, amount, offset)
}

unsafe extern "C" fn shim_truncate(file: *mut sqlite3_file, size: sqlite3_int64) -> c_int {
    // SAFETY: as in shim_read.
    if let (_, _, Some(tracked)) = unsafe { parts(file) } {
        tracked.drop_list();
    }
    forward!(1, file, xTruncate, SQLITE_IOERR, size)
}

unsafe extern "C" fn shim_sync(file: *mut sqlite3_file, flags: c_int) -> c_int {
    forward!(1, file, xSync, SQLITE_IOERR, flags)
}

unsafe extern "C" fn shim_file_size(file: *mut sqlite3_file, size: *mut sqlite3_int64) -> c_int {
    forward!(1, file, xFileSize, SQLITE_IOERR, size)
}

unsafe extern "C" fn shim_lock(file: *mut sqlite3_file, level: c_int) -> c_int {
    let rc = forward!(1, file, xLock, SQLITE_IOERR, level);
    // SAFETY: as in shim_read.
    if let (SQLITE_OK, (_, _, Some(tracked))) = (rc, unsafe { parts(file) }) {
        tracked.lock_level(level);
    }
    rc
}

unsafe extern "C" fn shim_unlock(file: *mut sqlite3_file, level: c_int) -> c_int {
    let rc = forward!(1, file, xUnlock, SQLITE_IOERR, level);
    // SAFETY: as in shim_read.
    if let (SQLITE_OK, (_, _, Some(tracked))) = (rc, unsafe { parts(file) }) {
        tracked.lock_level(level);
    }
    rc
}

unsafe extern "C" fn shim_check_reserved_lock(file: *mut sqlite3_file, out: *mut c_int) -> c_int {
    forward!(1, file, xCheckReservedLock, SQLITE_IOERR, out)
}

unsafe extern "C" fn shim_file_control(
    file: *mut sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    if op == SQLITE_FCNTL_PRAGMA {
        // SAFETY: for SQLITE_FCNTL_PRAGMA, `arg` is SQLite's array of three strings; the file is ours.
        if let (Some(size), (_, _, Some(tracked))) =
            (unsafe { cache_size_pragma(arg) }, unsafe { parts(file) })
        {
            tracked.cache_size_set(size);
        }
    }
    let rc = forward!(1, file, xFileControl, SQLITE_NOTFOUND, op, arg);
    if op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK {
        // SAFETY: for SQLITE_FCNTL_VFSNAME, `arg` points to a string pointer owned by SQLite's allocator.
        unsafe { prefix_vfs_name(arg.cast::<*mut c_char>()) };
    }
    rc
}

/// The value of a `PRAGMA cache_size = N` that SQLite hands the file (`SQLITE_FCNTL_PRAGMA`: the
/// array holds the pragma's name and its argument, null when the pragma only reads), read as SQLite
/// reads it (`scan::parse_cache_size`).
///
/// # Safety
/// `arg` must be SQLite's `SQLITE_FCNTL_PRAGMA` argument: an array of three string pointers.
unsafe fn cache_size_pragma(arg: *mut c_void) -> Option<i64> {
    let args = arg.cast::<*const c_char>();
    // SAFETY: per the contract, elements 1 and 2 are null or NUL-terminated strings.
    let (name, value) = unsafe { (*args.add(1), *args.add(2)) };
    if name.is_null() || value.is_null() {
        return None;
    }
    // SAFETY: both checked non-null above.
    let name = unsafe { CStr::from_ptr(name) }.to_str().ok()?;
    if !name.eq_ignore_ascii_case("cache_size") {
        return None;
    }
    // SAFETY: checked non-null above.
    let value = unsafe { CStr::from_ptr(value) }.to_bytes();
    Some(i64::from(crate::scan::parse_cache_size(value)))
}

/// Rewrites the VFS name SQLite reports (`.vfsname` in the shell) from "unix" to "prefetch/unix", as
/// SQLite's own shims do.
///
/// # Safety
/// `name` must point to null or to a string allocated by SQLite's allocator.
unsafe fn prefix_vfs_name(name: *mut *mut c_char) {
    let Some(api) = REGISTERED
        .get()
        .and_then(|r| unsafe { (r.api as *const ApiRoutines).as_ref() })
    else {
        return;
    };
    // SAFETY: per the contract.
    let old = unsafe { *name };
    let inner = if old.is_null() {
        Vec::new()
    } else {
        unsafe { CStr::from_ptr(old) }.to_bytes().to_vec()
    };
    let mut full = VFS_NAME.to_bytes().to_vec();
    if !inner.is_empty() {
        full.push(b'/');
        full.extend_from_slice(&inner);
    }
    full.push(0);
    let Ok(len) = c_int::try_from(full.len()) else {
        return;
    };
    // SAFETY: SQLite's allocator; the copy fits the allocation; the old string is freed by its allocator.
    unsafe {
        let new = (api.malloc)(len).cast::<c_char>();
        if new.is_null() {
            return;
        }
        ptr::copy_nonoverlapping(full.as_ptr().cast::<c_char>(), new, full.len());
        if !old.is_null() {
            (api.free)(old.cast::<c_void>());
        }
        *name = new;
    }
}

unsafe extern "C" fn shim_sector_size(file: *mut sqlite3_file) -> c_int {
    forward!(1, file, xSectorSize, 4096)
}

unsafe extern "C" fn shim_device_characteristics(file: *mut sqlite3_file) -> c_int {
    forward!(1, file, xDeviceCharacteristics, 0)
}

unsafe extern "C" fn shim_shm_map(
    file: *mut sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    forward!(
        2,
        file,
        xShmMap,
        SQLITE_IOERR_SHMMAP,
        page,
        size,
        extend,
        out
    )
}

unsafe extern "C" fn shim_shm_lock(
    file: *mut sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    let rc = forward!(2, file, xShmLock, SQLITE_IOERR, offset, n, flags);
    // SAFETY: as in shim_read.
    if let (SQLITE_OK, (_, _, Some(tracked))) = (rc, unsafe { parts(file) }) {
        tracked.wal_lock();
        let read_locks = WAL_READ_LOCK..WAL_READ_LOCK + WAL_NREADER;
        if flags & SQLITE_SHM_UNLOCK != 0 && read_locks.contains(&offset) {
            tracked.read_ended();
        }
        if offset == WAL_WRITE_LOCK {
            let exclusive = SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE;
            if flags & exclusive == exclusive {
                tracked.wal_write_lock(true);
            } else if flags & SQLITE_SHM_UNLOCK != 0 {
                tracked.wal_write_lock(false);
            }
        }
    }
    rc
}

/// The WAL-index lock slot of the WAL writer (wal.c, WAL_WRITE_LOCK).
const WAL_WRITE_LOCK: c_int = 0;
/// The first WAL-index lock slot of the readers, and how many there are (wal.c, WAL_READ_LOCK(0) and
/// WAL_NREADER): a reader releases its slot when its read transaction ends.
const WAL_READ_LOCK: c_int = 3;
const WAL_NREADER: c_int = 5;

unsafe extern "C" fn shim_shm_barrier(file: *mut sqlite3_file) {
    forward!(2, file, xShmBarrier, ())
}

unsafe extern "C" fn shim_shm_unmap(file: *mut sqlite3_file, delete: c_int) -> c_int {
    forward!(2, file, xShmUnmap, SQLITE_OK, delete)
}

unsafe extern "C" fn shim_fetch(
    file: *mut sqlite3_file,
    offset: sqlite3_int64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // A wrapped file without xFetch gives no mapping, which SQLite accepts (it then calls xRead).
    let no_mapping = || {
        // SAFETY: SQLite passes a valid out pointer.
        unsafe { *out = ptr::null_mut() };
        SQLITE_OK
    };
    forward!(3, file, xFetch, no_mapping(), offset, amount, out)
}

unsafe extern "C" fn shim_unfetch(
    file: *mut sqlite3_file,
    offset: sqlite3_int64,
    page: *mut c_void,
) -> c_int {
    forward!(3, file, xUnfetch, SQLITE_OK, offset, page)
}

/// The connection record of `file` if it is a tracked main database file of this VFS.
///
/// # Safety
/// `file` is null or an open `sqlite3_file`.
pub unsafe fn connection_of(file: *mut sqlite3_file) -> Option<&'static Connection> {
    // SAFETY: an open file of this VFS starts with a `ShimFile` (its methods say so).
    unsafe {
        let file = file.as_ref()?;
        if !ptr::eq(file.pMethods, &SHIM_METHODS) {
            return None;
        }
        parts(ptr::from_ref(file).cast_mut())
            .2
            .map(Tracked::connection)
    }
}
