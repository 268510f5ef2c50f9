//! SQLite's routines table as the extension loader passes it to the entry points (`ext.rs`); the VFS
//! (`vfs.rs`) calls SQLite only through it.
//!
//! Deviations: libsqlite3-sys's `loadable_extension` feature would provide the routines table, but Cargo's
//! `links` rule allows one libsqlite3-sys per workspace and the generator needs its `bundled` feature, so
//! the entries this extension uses are declared here ([`ApiRoutines`]); their positions are fixed by
//! SQLite's append-only `sqlite3ext.h`.

use std::ffi::{c_char, c_int, c_void};

use rusqlite::ffi::{sqlite3, sqlite3_stmt, sqlite3_vfs};

/// The start of SQLite's `sqlite3_api_routines` (sqlite3ext.h), up to `auto_extension`; only the
/// routines this extension calls are named, at their positions in the header (0-based: free 58,
/// libversion_number 67, malloc 68, file_control 127, vfs_find 141, vfs_register 142, next_stmt 152,
/// sql 153, stmt_busy 184, uri_parameter 189, auto_extension 192). The entries from `stmt_busy` on are
/// read only from SQLite 3.8.7 ([`AUTO_EXTENSION_VERSION`]); older hosts' tables may end before them.
#[repr(C)]
pub struct ApiRoutines {
    unused_0: [*const c_void; 58],
    /// `sqlite3_free`.
    pub free: unsafe extern "C" fn(*mut c_void),
    unused_59: [*const c_void; 8],
    /// `sqlite3_libversion_number`.
    pub libversion_number: unsafe extern "C" fn() -> c_int,
    /// `sqlite3_malloc`.
    pub malloc: unsafe extern "C" fn(c_int) -> *mut c_void,
    unused_69: [*const c_void; 58],
    /// `sqlite3_file_control`.
    pub file_control:
        unsafe extern "C" fn(*mut sqlite3, *const c_char, c_int, *mut c_void) -> c_int,
    unused_128: [*const c_void; 13],
    /// `sqlite3_vfs_find`.
    pub vfs_find: unsafe extern "C" fn(*const c_char) -> *mut sqlite3_vfs,
    /// `sqlite3_vfs_register`.
    pub vfs_register: unsafe extern "C" fn(*mut sqlite3_vfs, c_int) -> c_int,
    unused_143: [*const c_void; 9],
    /// `sqlite3_next_stmt`.
    pub next_stmt: unsafe extern "C" fn(*mut sqlite3, *mut sqlite3_stmt) -> *mut sqlite3_stmt,
    /// `sqlite3_sql`.
    pub sql: unsafe extern "C" fn(*mut sqlite3_stmt) -> *const c_char,
    unused_154: [*const c_void; 30],
    /// `sqlite3_stmt_busy`.
    pub stmt_busy: unsafe extern "C" fn(*mut sqlite3_stmt) -> c_int,
    unused_185: [*const c_void; 4],
    /// `sqlite3_uri_parameter`.
    pub uri_parameter: unsafe extern "C" fn(*const c_char, *const c_char) -> *const c_char,
    unused_190: [*const c_void; 2],
    /// `sqlite3_auto_extension`.
    pub auto_extension: unsafe extern "C" fn(Option<unsafe extern "C" fn()>) -> c_int,
}

/// The first SQLite release whose routines table holds `auto_extension` (and `stmt_busy`).
pub const AUTO_EXTENSION_VERSION: c_int = 3_008_007;
