//! The C ABI of `include/libprefetch.h` (libprefetch, ATC 2009, Figure 6),
//! exported with the `pf_` prefix; the header maps the paper's names onto
//! these.
//!
//! Error convention (stated once in the header): -1 or NULL with errno set;
//! errno untouched on success. A panic never crosses this boundary: it is
//! caught and reported as EIO. Handles are checked against the set of live
//! handles, so a stale or bogus handle gives EINVAL instead of undefined
//! behaviour.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::client::{AccessEntry, CallbackInfo, Client, Config, RegionId, Stats};
use crate::guard::{CancelGuard, ErrnoGuard};
use crate::registry::{globals, HandleKind};
use crate::{Error, Mode};

/// `struct access_entry` of the header: byte offset, descriptor, mark.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CAccessEntry {
    /// Byte offset (`pageOffset` / `page_offset`).
    pub offset: i64,
    /// File descriptor.
    pub fd: i32,
    /// Marked entry (`mark` / `marked`).
    pub mark: bool,
}

/// `pf_callback_t`.
pub type CCallback = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        last_fd: i32,
        last_offset: i64,
        req_fd: i32,
        req_offset: i64,
    ),
>;

/// Opaque `pf_client_t` target.
pub struct PfClient(Client);

/// Opaque `pf_region_t` target.
pub struct PfRegion(RegionId);

/// The application's callback and argument, called from whichever thread
/// needs the list updated (the C API documents this).
struct ForeignCallback {
    function: unsafe extern "C" fn(*mut c_void, i32, i64, i32, i64),
    arg: *mut c_void,
}

// SAFETY: the header documents that the callback may run on any thread
// that reads a registered region; the pointer is only handed back to it.
unsafe impl Send for ForeignCallback {}

impl ForeignCallback {
    fn call(&self, info: CallbackInfo) {
        let (last_fd, last_offset) = info
            .last_marked
            .map_or((-1, -1), |(fd, off)| (fd, off as i64));
        // SAFETY: the application registered this function with this argument.
        unsafe {
            (self.function)(
                self.arg,
                last_fd,
                last_offset,
                info.requested.0,
                info.requested.1 as i64,
            )
        };
    }
}

/// Runs `body`, keeping errno unless it fails; a failure sets errno and
/// yields `failed`. A panic counts as EIO.
fn c_call<T>(failed: T, body: impl FnOnce() -> Result<T, i32>) -> T {
    let result = {
        let _errno = ErrnoGuard::save();
        let _no_cancel = CancelGuard::hold();
        catch_unwind(AssertUnwindSafe(body)).unwrap_or(Err(libc::EIO))
    };
    result.unwrap_or_else(|errno| {
        // SAFETY: writing this thread's errno.
        unsafe { *libc::__errno_location() = errno };
        failed
    })
}

/// The two kinds of C handle, kept apart in the live set: a region handle
/// passed where a client is expected (or the reverse) is EINVAL, never
/// taken for the other kind.
trait Handle {
    const KIND: HandleKind;
}

impl Handle for PfClient {
    const KIND: HandleKind = HandleKind::Client;
}

impl Handle for PfRegion {
    const KIND: HandleKind = HandleKind::Region;
}

fn is_live<T: Handle>(handle: *const T) -> bool {
    !handle.is_null()
        && globals()
            .handles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(handle as usize))
            == Some(&T::KIND)
}

fn leak_handle<T: Handle>(value: T) -> *mut T {
    let pointer = Box::into_raw(Box::new(value));
    globals()
        .handles
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(pointer as usize, T::KIND);
    pointer
}

/// Takes a handle of kind `T` out of the live set; `None` if no live
/// handle of that kind has this address.
fn retire_handle<T: Handle>(pointer: *mut T) -> Option<Box<T>> {
    let mut handles = globals().handles.lock().unwrap_or_else(|e| e.into_inner());
    if handles.get(&(pointer as usize)) != Some(&T::KIND) {
        return None;
    }
    handles.remove(&(pointer as usize));
    // SAFETY: the address was produced by leak_handle::<T> (its kind says
    // so) and was still live, so it is a valid Box<T> owned by the set
    // until now.
    Some(unsafe { Box::from_raw(pointer) })
}

/// # Safety
/// The handle must be live (checked) and not freed concurrently.
unsafe fn client_ref<'a>(c: *mut PfClient) -> Result<&'a Client, i32> {
    if !is_live(c) {
        return Err(libc::EINVAL);
    }
    // SAFETY: live handles point to boxes made by pf_register_client.
    Ok(unsafe { &(*c).0 })
}

/// `pf_register_client`: see include/libprefetch.h. The client's tunables
/// come from the `LIBPREFETCH_*` environment variables (`Config::from_env`);
/// a refused value keeps its default and is reported once on stderr.
#[no_mangle]
pub extern "C" fn pf_register_client(cb: CCallback, arg: *mut c_void) -> *mut PfClient {
    c_call(std::ptr::null_mut(), || {
        let foreign = cb.map(|function| ForeignCallback { function, arg });
        let from_env = Config::from_env();
        from_env.warn_once();
        let client = Client::register(from_env.config, move |_, info| {
            if let Some(foreign) = &foreign {
                foreign.call(info);
            }
        })
        .map_err(|e| e.errno())?;
        Ok(leak_handle(PfClient(client)))
    })
}

/// `pf_unregister_client`: see include/libprefetch.h.
#[no_mangle]
pub extern "C" fn pf_unregister_client(c: *mut PfClient) -> i32 {
    c_call(-1, || retire_handle(c).map(|_| 0).ok_or(libc::EINVAL))
}

/// `pf_register_region`: see include/libprefetch.h.
///
/// # Safety
/// `c` must be NULL or a handle from `pf_register_client` (checked).
#[no_mangle]
pub unsafe extern "C" fn pf_register_region(
    c: *mut PfClient,
    fd: i32,
    start: i64,
    end: i64,
) -> *mut PfRegion {
    c_call(std::ptr::null_mut(), || {
        // SAFETY: forwarded contract.
        let client = unsafe { client_ref(c) }?;
        let (start, end) = match (u64::try_from(start), u64::try_from(end)) {
            (Ok(s), Ok(e)) => (s, e),
            _ => return Err(libc::EINVAL),
        };
        let id = client
            .register_region(fd, start, end)
            .map_err(|e| e.errno())?;
        Ok(leak_handle(PfRegion(id)))
    })
}

/// `pf_unregister_region`: see include/libprefetch.h.
///
/// # Safety
/// `c` and `r` must be NULL or handles from this library (checked).
#[no_mangle]
pub unsafe extern "C" fn pf_unregister_region(c: *mut PfClient, r: *mut PfRegion) -> i32 {
    c_call(-1, || {
        // SAFETY: forwarded contract.
        let client = unsafe { client_ref(c) }?;
        if !is_live(r) {
            return Err(libc::EINVAL);
        }
        // SAFETY: live region handles point to boxes made by pf_register_region.
        let id = unsafe { (*r).0 };
        client.unregister_region(id).map_err(|e| e.errno())?;
        retire_handle(r);
        Ok(0)
    })
}

/// `pf_request_prefetching`: see include/libprefetch.h.
///
/// # Safety
/// `a` must point to `n` readable entries (NULL only with `n == 0`).
#[no_mangle]
pub unsafe extern "C" fn pf_request_prefetching(
    c: *mut PfClient,
    a: *const CAccessEntry,
    n: usize,
    kind: i32,
) -> isize {
    c_call(-1, || {
        // SAFETY: forwarded contract.
        let client = unsafe { client_ref(c) }?;
        let mode = u32::try_from(kind)
            .ok()
            .and_then(Mode::from_bits)
            .ok_or(libc::EINVAL)?;
        if a.is_null() && n > 0 {
            return Err(libc::EFAULT);
        }
        let raw: &[CAccessEntry] = if n == 0 {
            &[]
        } else {
            // SAFETY: the caller promises n readable entries at a.
            unsafe { std::slice::from_raw_parts(a, n) }
        };
        validate(raw)?;
        let entries = raw.iter().map(|e| AccessEntry {
            offset: e.offset as u64,
            fd: e.fd,
            mark: e.mark,
        });
        let accepted = client.request_from(entries, mode).map_err(|e| e.errno())?;
        Ok(accepted as isize)
    })
}

/// All-or-nothing validation of C entries, without allocating.
fn validate(entries: &[CAccessEntry]) -> Result<(), i32> {
    for entry in entries {
        if entry.fd < 0 {
            return Err(libc::EBADF);
        }
        if entry.offset < 0 {
            return Err(libc::EINVAL);
        }
    }
    Ok(())
}

/// `pf_note_read`: see include/libprefetch.h.
#[no_mangle]
pub extern "C" fn pf_note_read(fd: i32, offset: i64, len: usize) {
    if let Ok(offset) = u64::try_from(offset) {
        crate::note_read(fd, offset, len as u64);
    }
}

/// `pf_ignore_accesses`: see include/libprefetch.h.
///
/// # Safety
/// `c` must be NULL or a handle from `pf_register_client` (checked).
#[no_mangle]
pub unsafe extern "C" fn pf_ignore_accesses(c: *mut PfClient) -> i32 {
    // SAFETY: forwarded contract.
    c_call(-1, || {
        unsafe { client_ref(c) }?
            .adjust_ignore(1)
            .map(|_| 0)
            .map_err(|e: Error| e.errno())
    })
}

/// `pf_unignore_accesses`: see include/libprefetch.h.
///
/// # Safety
/// `c` must be NULL or a handle from `pf_register_client` (checked).
#[no_mangle]
pub unsafe extern "C" fn pf_unignore_accesses(c: *mut PfClient) -> i32 {
    // SAFETY: forwarded contract.
    c_call(-1, || {
        unsafe { client_ref(c) }?
            .adjust_ignore(-1)
            .map(|_| 0)
            .map_err(|e: Error| e.errno())
    })
}

/// `pf_get_stats`: see include/libprefetch.h.
///
/// # Safety
/// `out` must point to a writable `struct pf_stats` (NULL gives EFAULT).
#[no_mangle]
pub unsafe extern "C" fn pf_get_stats(c: *mut PfClient, out: *mut Stats) -> i32 {
    c_call(-1, || {
        // SAFETY: forwarded contract.
        let client = unsafe { client_ref(c) }?;
        if out.is_null() {
            return Err(libc::EFAULT);
        }
        let stats = client.stats();
        // SAFETY: out is non-null and the caller promises it is writable.
        unsafe { out.write(stats) };
        Ok(0)
    })
}

/// `pf_instance_id`: see include/libprefetch.h. Never fails.
#[no_mangle]
pub extern "C" fn pf_instance_id() -> u64 {
    crate::instance_entry::id()
}
