//! SQLite's routines table as the extension loader passes it to the entry points (`ext.rs`); the VFS
//! (`vfs.rs`) calls SQLite only through it.
//!
//! Deviations: libsqlite3-sys's `loadable_extension` feature would provide the routines table, but Cargo's
//! `links` rule allows one libsqlite3-sys per workspace and the generator needs its `bundled` feature, so
//! the entries this extension uses are declared here ([`ApiRoutines`]); their positions are fixed by
//! SQLite's append-only `sqlite3ext.h`.

use std::ffi::{c_char, c_int, c_void};

use rusqlite::ffi::sqlite3_vfs;

/// The start of SQLite's `sqlite3_api_routines` (sqlite3ext.h), up to the VFS routines; only the
/// routines this extension calls are named, at their positions in the header (0-based: free 58,
/// malloc 68, vfs_find 141, vfs_register 142).
#[repr(C)]
pub struct ApiRoutines {
    unused_0: [*const c_void; 58],
    /// `sqlite3_free`.
    pub free: unsafe extern "C" fn(*mut c_void),
    unused_59: [*const c_void; 9],
    /// `sqlite3_malloc`.
    pub malloc: unsafe extern "C" fn(c_int) -> *mut c_void,
    unused_69: [*const c_void; 72],
    /// `sqlite3_vfs_find`.
    pub vfs_find: unsafe extern "C" fn(*const c_char) -> *mut sqlite3_vfs,
    /// `sqlite3_vfs_register`.
    pub vfs_register: unsafe extern "C" fn(*mut sqlite3_vfs, c_int) -> c_int,
}
