//! The loadable-extension entry points: `.load libprefetch_sqlite` in the sqlite3 shell,
//! `sqlite3_load_extension`, or Python's `conn.load_extension` call one of them; it registers the `prefetch`
//! VFS (see [`crate::vfs`]) and makes it the default for connections opened afterwards, each of which
//! then tells the VFS which connection it is (see [`crate::connection`]).
//!
//! SQLite derives the entry point from the file name (sqlite.org "Run-Time Loadable Extensions": strip the
//! directory, a leading "lib" and everything from the first "."; keep the letters, lower-cased), so
//! `libprefetch_sqlite.so` is looked up as `sqlite3_prefetchsqlite_init`, after which SQLite falls back to
//! `sqlite3_extension_init`. Both are exported.
//!
//! The extension runs inside a process that has its own SQLite (the shell, Python, rusqlite), so it calls
//! SQLite only through the `sqlite3_api_routines` table the loader passes in, never through linked
//! symbols: the library holds no copy of SQLite.

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use rusqlite::ffi::{
    sqlite3, sqlite3_file, SQLITE_ERROR, SQLITE_FCNTL_FILE_POINTER, SQLITE_OK,
    SQLITE_OK_LOAD_PERMANENTLY,
};

use crate::api::{ApiRoutines, AUTO_EXTENSION_VERSION};

/// Entry point SQLite derives from the file name `libprefetch_sqlite.so`.
///
/// # Safety
/// Called by SQLite's extension loader with a valid `api` table.
#[no_mangle]
pub unsafe extern "C" fn sqlite3_prefetchsqlite_init(
    db: *mut sqlite3,
    errmsg: *mut *mut c_char,
    api: *const ApiRoutines,
) -> c_int {
    // SAFETY: same contract as ours.
    unsafe { sqlite3_extension_init(db, errmsg, api) }
}

/// SQLite's generic extension entry point: registers the `prefetch` VFS as the default.
/// Returns SQLITE_OK_LOAD_PERMANENTLY so that the library stays loaded after the loading connection
/// closes (the VFS outlives it), or SQLITE_ERROR if `api` is null or registration fails.
///
/// # Safety
/// Called by SQLite's extension loader with a valid `api` table.
#[no_mangle]
pub unsafe extern "C" fn sqlite3_extension_init(
    db: *mut sqlite3,
    _errmsg: *mut *mut c_char,
    api: *const ApiRoutines,
) -> c_int {
    // SAFETY: the loader passes a valid table that lives as long as the process's SQLite.
    let Some(api) = (unsafe { api.as_ref() }) else {
        return SQLITE_ERROR;
    };
    // SAFETY: `api` is SQLite's own routines table.
    if let Err(code) = unsafe { crate::vfs::register(api) } {
        return code;
    }
    // SAFETY: as above; the loading connection is open, and is recorded if its main file is already
    // one of the VFS's (the extension loaded again).
    unsafe {
        register_connections(api);
        connection_opened(db, ptr::null_mut(), api);
    }
    SQLITE_OK_LOAD_PERMANENTLY
}

/// For programs that link rusqlite (the benchmark, the tests): loads the extension file `ext` into
/// this process's SQLite through rusqlite (it stays loaded; its VFS becomes the default).
pub fn load_extension(ext: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let loader = rusqlite::Connection::open_in_memory()?;
    // SAFETY: loading a trusted extension named by the user; it only registers a VFS.
    unsafe {
        loader.load_extension_enable()?;
        loader.load_extension(ext, None::<&str>)
    }
    .with_context(|| format!("loading the SQLite extension {}", ext.display()))
}

/// Registers [`connection_opened`] for every connection opened from now on, in hosts whose SQLite has
/// `sqlite3_auto_extension` in its routines table (3.8.7 and later; older ones know no connection).
///
/// # Safety
/// `api` must be SQLite's routines table.
pub unsafe fn register_connections(api: &ApiRoutines) {
    // SAFETY: present in every version's table.
    if unsafe { (api.libversion_number)() } < AUTO_EXTENSION_VERSION {
        return;
    }
    type Entry = unsafe extern "C" fn(*mut sqlite3, *mut *mut c_char, *const ApiRoutines) -> c_int;
    // SAFETY: SQLite calls an automatic extension with these three arguments (sqlite3_auto_extension's
    // documentation); the declared type is a placeholder that is cast back before the call.
    let entry = unsafe { std::mem::transmute::<Entry, unsafe extern "C" fn()>(connection_opened) };
    // SAFETY: the version check above guarantees the entry exists. Registering twice is a no-op.
    let _ = unsafe { (api.auto_extension)(Some(entry)) };
}

/// Records `db` as the connection of its main file if that file is one of this VFS's (see [`crate::connection`]). Always returns SQLITE_OK: the open goes on whatever happens here.
///
/// # Safety
/// Called by SQLite with an open connection and its routines table.
pub unsafe extern "C" fn connection_opened(
    db: *mut sqlite3,
    _errmsg: *mut *mut c_char,
    api: *const ApiRoutines,
) -> c_int {
    // SAFETY: SQLite passes its own table.
    let Some(api_ref) = (unsafe { api.as_ref() }) else {
        return SQLITE_OK;
    };
    let mut file: *mut sqlite3_file = ptr::null_mut();
    let arg = ptr::from_mut(&mut file).cast::<c_void>();
    // SAFETY: FILE_POINTER writes the main file's pointer into `file`.
    let rc =
        unsafe { (api_ref.file_control)(db, c"main".as_ptr(), SQLITE_FCNTL_FILE_POINTER, arg) };
    if rc == SQLITE_OK {
        // SAFETY: `file` is the connection's open main file (or null).
        if let Some(connection) = unsafe { crate::vfs::connection_of(file) } {
            connection.claim(db, api);
        }
    }
    SQLITE_OK
}
