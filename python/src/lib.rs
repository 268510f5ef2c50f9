//! `libprefetch._native`: the Rust API of crate `libprefetch` (the paper's interface, ATC 2009
//! section 4.2) as a Python extension module; `libprefetch/__init__.py` makes it Pythonic.
//!
//! Every library call runs with the GIL released (`Python::detach`), so other Python threads read while
//! one thread is in a prefetching round. The callback is the only way back into Python: it takes the
//! GIL itself, and an `Exception` it raises is reported as unraisable (the read that triggered it goes on,
//! as the library's contract requires: a callback never changes what a read returns). Anything else
//! (KeyboardInterrupt from Ctrl-C, SystemExit) is kept and raised by the `note_read` or `request` that
//! ran the callback once the library returns, before the read: a signal reaches the program as it would
//! without the library.
//!
//! Errors: `InvalidArgument` becomes `ValueError`; `BadFd` and `Forked` become `OSError` with the errno
//! the C API sets for them (EBADF, ESRCH).
//!
//! Deviations: `sqlite_auto_extension`, `record_pages`, `union_extents`, `share` and `LoaderPhases`
//! are this module's own additions.

use std::ffi::{c_char, c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex, PoisonError};

use libprefetch::{
    AccessEntry, CachedRead, CallbackInfo, Client, Config, IgnoreGuard, Mode, RegionId,
};
use pyo3::exceptions::{PyBaseException, PyException, PyOSError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

mod loader;
mod pages;
mod sim;

/// The library's error as the Python exception the package documents.
fn to_py(error: libprefetch::Error) -> PyErr {
    match error {
        libprefetch::Error::InvalidArgument(what) => PyValueError::new_err(what),
        other => PyOSError::new_err((other.errno(), other.to_string())),
    }
}

fn closed() -> PyErr {
    PyValueError::new_err("the client is closed")
}

/// A registered client; `close()` unregisters it (later calls raise `ValueError`).
#[pyclass(frozen, module = "libprefetch._native")]
struct NativeClient {
    client: Mutex<Option<Arc<Client>>>,
}

/// A registered region of a [`NativeClient`].
#[pyclass(frozen, module = "libprefetch._native")]
struct NativeRegion {
    id: RegionId,
}

/// One `ignore_accesses()` in force; `release()` (or garbage collection) ends it.
#[pyclass(frozen, module = "libprefetch._native")]
struct NativeIgnore {
    /// Dropped before `client`, which it borrows.
    guard: Mutex<Option<IgnoreGuard<'static>>>,
    client: Arc<Client>,
}

thread_local! {
    /// What a callback run by this thread raised that is not an `Exception`: the first one, raised
    /// by [`raise_pending`] (or [`pread`]) when the library returns.
    static PENDING: std::cell::RefCell<Option<PyErr>> = const { std::cell::RefCell::new(None) };
}

/// Calls the Python callback with `(last_marked, requested)`, each `(fd, offset)` or `None`.
fn call_python(callback: &Py<PyAny>, info: CallbackInfo) {
    Python::attach(|py| {
        if let Err(error) = callback.call1(py, (info.last_marked, info.requested)) {
            if error.is_instance_of::<PyException>(py) {
                error.write_unraisable(py, Some(callback.bind(py)));
            } else {
                PENDING.with(|pending| {
                    pending.borrow_mut().get_or_insert(error);
                });
            }
        }
    });
}

/// `Ok(value)`, or the KeyboardInterrupt (or other non-`Exception`) a callback of this thread raised.
fn raise_pending<T>(value: T) -> PyResult<T> {
    match PENDING.with(|pending| pending.borrow_mut().take()) {
        Some(error) => Err(error),
        None => Ok(value),
    }
}

impl NativeClient {
    /// The client, shared so that `close()` from another thread never frees it under a running call.
    fn get(&self) -> PyResult<Arc<Client>> {
        let slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        slot.clone().ok_or_else(closed)
    }
}

#[pymethods]
impl NativeClient {
    /// Registers a client. `callback(last_marked, requested)` is called when the library needs more of
    /// the access list; `max_memory` caps the memory it plans with; `infill` is the largest gap merged
    /// into one prefetch (0 disables infill); `list_capacity` is the most entries the list holds.
    /// What is not given comes from the `LIBPREFETCH_*` variables, as for the C API's clients.
    #[new]
    #[pyo3(signature = (callback=None, max_memory=None, infill=None, list_capacity=None))]
    fn new(
        py: Python<'_>,
        callback: Option<Py<PyAny>>,
        max_memory: Option<u64>,
        infill: Option<u64>,
        list_capacity: Option<usize>,
    ) -> PyResult<NativeClient> {
        let from_env = Config::from_env();
        from_env.warn_once();
        let defaults = from_env.config;
        let config = Config {
            max_budget_bytes: max_memory.or(defaults.max_budget_bytes),
            infill_bytes: infill.or(defaults.infill_bytes),
            capacity: list_capacity.unwrap_or(defaults.capacity),
            ..defaults
        };
        let client = py
            .detach(|| {
                Client::register(config, move |_: &Client, info: CallbackInfo| {
                    if let Some(callback) = &callback {
                        call_python(callback, info);
                    }
                })
            })
            .map_err(to_py)?;
        Ok(NativeClient {
            client: Mutex::new(Some(Arc::new(client))),
        })
    }

    /// Tracks reads of `[start, end)` of descriptor `fd`.
    fn register_region(
        &self,
        py: Python<'_>,
        fd: i32,
        start: u64,
        end: u64,
    ) -> PyResult<NativeRegion> {
        let client = self.get()?;
        let id = py
            .detach(|| client.register_region(fd, start, end))
            .map_err(to_py)?;
        Ok(NativeRegion { id })
    }

    /// Stops tracking a region.
    fn unregister_region(&self, py: Python<'_>, region: &NativeRegion) -> PyResult<()> {
        let client = self.get()?;
        py.detach(|| client.unregister_region(region.id))
            .map_err(to_py)
    }

    /// Updates the access list with `offsets` (native-endian int64, already checked non-negative) of
    /// `fd`, `marks` one byte per offset or None; `mode` is the paper's PF_* bits. Returns how many
    /// entries the list accepted.
    #[pyo3(signature = (offsets, fd, marks, mode))]
    fn request(
        &self,
        py: Python<'_>,
        offsets: &[u8],
        fd: i32,
        marks: Option<&[u8]>,
        mode: u32,
    ) -> PyResult<usize> {
        let mode = Mode::from_bits(mode).ok_or_else(|| PyValueError::new_err("unknown mode"))?;
        if !offsets.len().is_multiple_of(8) || marks.is_some_and(|m| m.len() * 8 != offsets.len()) {
            return Err(PyValueError::new_err(
                "marks must have one entry per offset",
            ));
        }
        let offset_at = |bytes: &[u8]| u64::from_ne_bytes(bytes.try_into().unwrap_or_default());
        if offsets
            .chunks_exact(8)
            .any(|bytes| offset_at(bytes) > i64::MAX as u64)
        {
            return Err(PyValueError::new_err(
                "offsets must be between 0 and 2**63-1",
            ));
        }
        let client = self.get()?;
        let entries = offsets.chunks_exact(8).enumerate().map(|(index, bytes)| {
            let offset = offset_at(bytes);
            AccessEntry {
                offset,
                fd,
                mark: marks.is_some_and(|m| m[index] != 0),
            }
        });
        let accepted = py
            .detach(|| client.request_from(entries, mode))
            .map_err(to_py)?;
        raise_pending(accepted)
    }

    /// The client's counters, in the order of `struct pf_stats`.
    fn stats(&self, py: Python<'_>) -> PyResult<[u64; 14]> {
        let client = self.get()?;
        let s = py.detach(|| client.stats());
        Ok([
            s.rounds,
            s.callbacks,
            s.tracked_reads,
            s.divergences,
            s.misses,
            s.premature_evictions,
            s.pages_prefetched,
            s.pages_dropped,
            s.budget_bytes,
            s.list_length,
            s.pages_fetched,
            s.prefetched_used,
            s.prefetched_unused_dropped,
            s.infill_pages,
        ])
    }

    /// Waits until the current round's advice has been issued.
    fn settle(&self, py: Python<'_>) -> PyResult<()> {
        let client = self.get()?;
        py.detach(|| client.settle());
        Ok(())
    }

    /// Stops tracking this client's reads until the returned object's `release()`.
    fn ignore_accesses(&self, py: Python<'_>) -> PyResult<NativeIgnore> {
        let client = self.get()?;
        let guard = py.detach(|| client.ignore_accesses());
        // SAFETY: the guard borrows the client behind `client`'s Arc, which NativeIgnore keeps alive
        // until after the guard is dropped (field order, and `release` drops only the guard).
        let guard: IgnoreGuard<'static> = unsafe { std::mem::transmute(guard) };
        Ok(NativeIgnore {
            guard: Mutex::new(Some(guard)),
            client,
        })
    }

    /// Unregisters the client and its regions; waits for a callback running in another thread.
    fn close(&self, py: Python<'_>) {
        let taken = self
            .client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        py.detach(move || drop(taken));
    }
}

#[pymethods]
impl NativeIgnore {
    /// Resumes tracking (once; later calls do nothing).
    fn release(&self, py: Python<'_>) {
        let guard = self
            .guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let _keep = &self.client;
        py.detach(move || drop(guard));
    }
}

/// Tells the library that `fd` is about to be read at `offset` for `length` bytes (what the C library's
/// read interposers do); may run a client's callback and a prefetching round.
#[pyfunction]
fn note_read(py: Python<'_>, fd: i32, offset: u64, length: u64) -> PyResult<()> {
    py.detach(|| libprefetch::note_read(fd, offset, length));
    raise_pending(())
}

/// Keeps `error` (what a callback raised that must reach the program: a signal handler's exception, which
/// the trampoline tells apart) for [`raise_pending`], unless one is kept already: the first one wins.
#[pyfunction]
fn keep_pending(error: Bound<'_, PyBaseException>) {
    PENDING.with(|pending| {
        pending
            .borrow_mut()
            .get_or_insert_with(|| PyErr::from_value(error.into_any()));
    });
}

/// `note_read` and then `os.pread(fd, length, offset)` in one call and one GIL release (no Python frame
/// between them): the read path of every record. What a callback left for the program is raised
/// before the read, as by `note_read`; `EINTR` runs the signal handlers and reads again, as `os.pread`
/// does (PEP 475); other errors are `OSError(errno, strerror)`. While the record's client rests, the
/// read is first made with `RWF_NOWAIT`, its own residency probe (`libprefetch::read_cached`); what
/// a miss leaves (the record's part not cached) is read as above.
///
/// The result is allocated unfilled and the read fills it, as `os.pread` does: zeroing it first (what
/// `PyBytes::new_with` does) was 15.4k of the 18.8k instructions of a call for a 15 KiB record.
#[pyfunction]
fn pread<'py>(
    py: Python<'py>,
    fd: i32,
    length: usize,
    offset: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let (signed, mut bytes) = unfilled_bytes(py, length, offset)?;
    // SAFETY: only the reads below write the buffer, and only the `got` bytes they report are
    // read back (a short read's prefix) or returned.
    let buffer = unsafe { unfilled_buffer(&mut bytes, length) };
    let (done, first) = py.detach(|| {
        let done = match libprefetch::read_cached(fd, offset, length as u64, || {
            nowait_read(fd, buffer, signed)
        }) {
            CachedRead::Whole(n) => return Ok((n, Ok(0))),
            CachedRead::Part(n) => n,
            CachedRead::Noted => 0,
        };
        match PENDING.with(|pending| pending.borrow_mut().take()) {
            Some(error) => Err(error),
            None => Ok((
                done,
                pread_once(fd, &mut buffer[done..], signed + done as i64),
            )),
        }
    })?;
    let got = match read_retrying(py, fd, &mut buffer[done..], signed + done as i64, first) {
        Ok(rest) => done + rest,
        // The part read from the cache is what the plain read returns when the rest fails.
        Err(error) if done == 0 => return Err(error),
        Err(_) => done,
    };
    if got == length {
        Ok(bytes)
    } else {
        // A short read (the file ended): the rare case, its prefix copied once (the limited API
        // has no `_PyBytes_Resize`).
        // SAFETY: the read initialised the first `got` (< `length`) bytes of `buffer`.
        let prefix = unsafe { std::slice::from_raw_parts(buffer.as_ptr().cast::<u8>(), got) };
        Ok(PyBytes::new(py, prefix))
    }
}

/// `length` bytes of `fd` at `offset` if the page cache holds them all, else `None`: one
/// `preadv2(..., RWF_NOWAIT)`, which only the page cache serves, with the GIL released; nothing is
/// noted to the library. An epoch's reads before any miss (`Epoch`, `RecordDataset`'s workers):
/// while every record is cached no client is needed, and its list is never built. A short read
/// (the file's end, or part of the record not cached), a refused read (`EAGAIN`, or a file that does
/// not take the flag) and any error are `None`: the caller reads the record the usual way, which
/// returns what a plain read returns.
#[pyfunction]
fn pread_cached<'py>(
    py: Python<'py>,
    fd: i32,
    length: usize,
    offset: u64,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let (signed, mut bytes) = unfilled_bytes(py, length, offset)?;
    // SAFETY: only the read writes the buffer, and `bytes` is returned only when it filled it.
    let buffer = unsafe { unfilled_buffer(&mut bytes, length) };
    let got = py.detach(|| nowait_read(fd, buffer, signed));
    Ok((usize::try_from(got) == Ok(length)).then_some(bytes))
}

/// `offset` as a signed file offset and a new bytes object of `length` bytes whose contents are
/// left unset (a null source to `PyBytes_FromStringAndSize`), for a read to fill: ours alone, a new
/// reference shared with nothing until it is returned.
fn unfilled_bytes(
    py: Python<'_>,
    length: usize,
    offset: u64,
) -> PyResult<(i64, Bound<'_, PyBytes>)> {
    let signed =
        i64::try_from(offset).map_err(|_| PyValueError::new_err("offset must be below 2**63"))?;
    let size = ffi::Py_ssize_t::try_from(length)
        .map_err(|_| PyValueError::new_err("length must be below 2**63"))?;
    // SAFETY: a null source asks for a new bytes object of `size` bytes, contents unset.
    let bytes = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyBytes_FromStringAndSize(std::ptr::null(), size))?
            .cast_into_unchecked::<PyBytes>()
    };
    Ok((signed, bytes))
}

/// The buffer of `bytes` (made by [`unfilled_bytes`] with `length`), seen as possibly
/// uninitialised memory.
///
/// # Safety
/// Only bytes a read has written may be read back or returned (`bytes` is borrowed mutably, so
/// unshared).
unsafe fn unfilled_buffer<'a>(
    bytes: &'a mut Bound<'_, PyBytes>,
    length: usize,
) -> &'a mut [MaybeUninit<u8>] {
    // SAFETY: `bytes` holds `length` bytes, lives as long as the slice and is borrowed mutably
    // for as long (a new object no other reference reaches).
    unsafe { std::slice::from_raw_parts_mut(ffi::PyBytes_AsString(bytes.as_ptr()).cast(), length) }
}

/// `preadv2(2)` into `buffer` with `RWF_NOWAIT`, which only the page cache serves (a resting
/// client's read, `libprefetch::read_cached`): the system call's result, errno set.
fn nowait_read(fd: i32, buffer: &mut [MaybeUninit<u8>], offset: i64) -> isize {
    let iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    // SAFETY: one iovec of `buffer`, valid for writes of its length for the duration of the call.
    unsafe { libc::preadv2(fd, &iov, 1, offset, libc::RWF_NOWAIT) }
}

/// One `pread(2)` into `buffer`: the byte count, or the error.
fn pread_once(fd: i32, buffer: &mut [MaybeUninit<u8>], offset: i64) -> std::io::Result<usize> {
    // SAFETY: `buffer` is valid for writes of its length for the duration of the call.
    let n = unsafe { libc::pread(fd, buffer.as_mut_ptr().cast(), buffer.len(), offset) };
    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
}

/// The outcome of a first `pread(2)` into `buffer` (`result`) made final: after `EINTR`, once Python's
/// signal handlers have run (an exception they raise ends it), the read again with the GIL released.
fn read_retrying(
    py: Python<'_>,
    fd: i32,
    buffer: &mut [MaybeUninit<u8>],
    offset: i64,
    mut result: std::io::Result<usize>,
) -> PyResult<usize> {
    loop {
        match result {
            Ok(n) => return Ok(n),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => py.check_signals()?,
            Err(error) => {
                let errno = error.raw_os_error().unwrap_or(libc::EIO);
                return Err(PyOSError::new_err((errno, strerror(errno))));
            }
        }
        result = py.detach(|| pread_once(fd, buffer, offset));
    }
}

/// The C library's message for `errno`, as Python's `OSError` gives it.
fn strerror(errno: i32) -> String {
    let message = std::io::Error::from_raw_os_error(errno).to_string();
    // Rust's text is strerror's followed by " (os error N)".
    match message.rfind(" (os error") {
        Some(end) => message[..end].to_string(),
        None => message,
    }
}

/// Tells the library that `fd` is about to be closed (what the C library's `close` interposer does): its
/// regions stop being followed and the library's private descriptor of its file, if any, goes with it.
#[pyfunction]
fn note_close(py: Python<'_>, fd: i32) {
    py.detach(|| libprefetch::note_close(fd));
}

/// Which libprefetch instance this module uses: the same number as `pf_instance_id` of
/// `libprefetch.so` or of the SQLite extension when the process shares one (docs/api.md).
#[pyfunction]
fn instance_id() -> u64 {
    libprefetch::instance_id()
}

/// Bytes the page cache may hold for this process now: what the library plans its budget from
/// (`MemAvailable`, capped by the memory cgroup's room).
#[pyfunction]
fn available_for_cache() -> u64 {
    libprefetch::memory::available_for_cache()
}

/// Bytes one WILLNEED call loads for files on `fd`'s device (what the library cuts its advice by).
#[pyfunction]
fn willneed_limit(fd: i32) -> u64 {
    libprefetch::device::willneed_limit(fd)
}

/// What one far request (a scattered page, beyond its transfer) costs on `fd`'s device, as bytes of
/// transfer, from the device's measured profile (`prefetch device measure`); `None` without a usable
/// profile (none stored, or one measured on another mount) or if `fd` cannot be looked at.
#[pyfunction]
fn far_request_bytes(fd: i32) -> Option<u64> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a struct stat into the buffer on success.
    if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded, so the struct is initialised.
    let device = unsafe { stat.assume_init() }.st_dev;
    let mount = libprefetch::profile::mount_id_of(fd);
    libprefetch::profile::usable(libc::major(device), libc::minor(device), mount)
        .map(|profile| profile.break_even_gap_bytes())
}

/// WILLNEED of each `(offset, length)` byte range of `ranges` (native int64 pairs) on `fd` in turn,
/// with the GIL released, skipping a range whose pages are all cached already (one `cachestat` call,
/// as the library's own advice does); returns how many ranges were advised. Advice is a hint: its
/// errors are not raised.
#[pyfunction]
fn willneed(py: Python<'_>, fd: i32, ranges: &[u8]) -> u64 {
    let values: Vec<i64> = ranges
        .chunks_exact(8)
        .map(|bytes| i64::from_ne_bytes(bytes.try_into().expect("8 bytes")))
        .collect();
    // SAFETY: sysconf takes a plain constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    py.detach(|| {
        let mut advised = 0;
        for pair in values.chunks_exact(2) {
            let (offset, length) = (pair[0].max(0) as u64, pair[1].max(0) as u64);
            let cached = libprefetch::residency::cachestat(fd, offset, length)
                .is_ok_and(|stat| stat.nr_cache >= length.div_ceil(page));
            if !cached {
                // SAFETY: posix_fadvise takes plain integers; a bad fd only yields EBADF.
                unsafe { libc::posix_fadvise(fd, pair[0], pair[1], libc::POSIX_FADV_WILLNEED) };
                advised += 1;
            }
        }
        advised
    })
}

/// Pages of `[offset, offset + length)` of `fd` not in the page cache (one `cachestat` call); all of
/// them where `cachestat` is unavailable.
#[pyfunction]
fn missing_pages(py: Python<'_>, fd: i32, offset: u64, length: u64) -> u64 {
    // SAFETY: sysconf takes a plain constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    let pages = (offset + length).div_ceil(page) - offset / page;
    py.detach(
        || match libprefetch::residency::cachestat(fd, offset, length) {
            Ok(stat) => pages.saturating_sub(stat.nr_cache),
            Err(_) => pages,
        },
    )
}

/// SQLite's result codes (sqlite3.h) that the auto-extension entry point translates.
const SQLITE_OK: c_int = 0;
const SQLITE_OK_LOAD_PERMANENTLY: c_int = 256;

/// The SQLite extension entry point as an auto-extension: registers the `prefetch` VFS through the
/// routines table SQLite passes to auto-extensions, and answers SQLITE_OK where the loadable entry
/// point answers SQLITE_OK_LOAD_PERMANENTLY (which an auto-extension may not return).
///
/// # Safety
/// Called by SQLite with a connection, an error-message slot and its routines table (or null).
unsafe extern "C" fn sqlite_auto_init(
    db: *mut c_void,
    errmsg: *mut *mut c_char,
    api: *const prefetch_sqlite::api::ApiRoutines,
) -> c_int {
    // SAFETY: SQLite's own arguments, passed on unchanged.
    let code = unsafe { prefetch_sqlite::ext::sqlite3_extension_init(db.cast(), errmsg, api) };
    match code {
        SQLITE_OK_LOAD_PERMANENTLY => SQLITE_OK,
        other => other,
    }
}

/// The address of an `sqlite3_auto_extension` entry point that registers the `prefetch` VFS.
#[pyfunction]
fn sqlite_auto_extension() -> usize {
    sqlite_auto_init as *const () as usize
}

/// The extension module.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<NativeClient>()?;
    module.add_class::<NativeRegion>()?;
    module.add_class::<NativeIgnore>()?;
    module.add_function(wrap_pyfunction!(note_read, module)?)?;
    module.add_function(wrap_pyfunction!(note_close, module)?)?;
    module.add_function(wrap_pyfunction!(pread, module)?)?;
    module.add_function(wrap_pyfunction!(pread_cached, module)?)?;
    module.add_function(wrap_pyfunction!(keep_pending, module)?)?;
    module.add_function(wrap_pyfunction!(instance_id, module)?)?;
    module.add_function(wrap_pyfunction!(available_for_cache, module)?)?;
    module.add_function(wrap_pyfunction!(willneed_limit, module)?)?;
    module.add_function(wrap_pyfunction!(far_request_bytes, module)?)?;
    module.add_function(wrap_pyfunction!(willneed, module)?)?;
    module.add_function(wrap_pyfunction!(missing_pages, module)?)?;
    module.add_function(wrap_pyfunction!(sqlite_auto_extension, module)?)?;
    module.add_function(wrap_pyfunction!(pages::record_pages, module)?)?;
    module.add_function(wrap_pyfunction!(loader::union_extents, module)?)?;
    module.add_function(wrap_pyfunction!(loader::share, module)?)?;
    module.add_class::<loader::LoaderPhases>()?;
    sim::register(module)?;
    Ok(())
}
