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

use std::ffi::{c_char, c_int};
use std::ptr;

use rusqlite::ffi::{sqlite3, SQLITE_ERROR, SQLITE_OK_LOAD_PERMANENTLY};

use crate::api::ApiRoutines;

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
        crate::connection::register(api);
        crate::connection::connection_opened(db, ptr::null_mut(), api);
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
