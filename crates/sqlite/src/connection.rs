//! The database connection behind a tracked file, and what the statement it is running says of the rows
//! it reads ([`crate::statement`]): a VFS sees page reads, not statements, so the extension learns each
//! connection from SQLite itself.
//!
//! At load the extension registers [`connection_opened`] with `sqlite3_auto_extension` (an addition to
//! SQLite's list, replacing nothing the application set). SQLite calls it at the end of every
//! `sqlite3_open*` (main.c `openDatabase`: the main file is opened first, by `sqlite3BtreeOpen`); it asks
//! `SQLITE_FCNTL_FILE_POINTER` for the connection's main file and, if that is a file of this VFS, records
//! the connection there ([`Connection::claim`]). A file claimed twice (shared cache) is treated as having
//! no known connection.
//!
//! [`Connection::running_bound`] walks the connection's statements (`sqlite3_next_stmt`) and reads the
//! SQL (`sqlite3_sql`) of those running (`sqlite3_stmt_busy`). It reads and changes nothing else and
//! allocates nothing in SQLite. It is used only on the thread that is inside the VFS's `xRead` of the
//! very file ([`reading`]): that thread is inside an SQLite call on the connection and holds its mutex,
//! which is recursive (main.c: `SQLITE_MUTEX_RECURSIVE`), so `sqlite3_next_stmt` re-enters it safely;
//! without a mutex (`SQLITE_CONFIG_MULTITHREAD`) the application already lets only this thread use the
//! connection. A connection outlives its main file's `xClose`, so the recorded pointer is never stale
//! while the file is open.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use rusqlite::ffi::{sqlite3, sqlite3_file, SQLITE_FCNTL_FILE_POINTER, SQLITE_OK};

use crate::api::{ApiRoutines, AUTO_EXTENSION_VERSION};
use crate::statement::{row_bound, RowBound};

thread_local! {
    /// The connection whose file this thread is reading through the VFS now, if any.
    static READING: Cell<*const Connection> = const { Cell::new(ptr::null()) };
}

/// The connection of one tracked file, once SQLite has told it.
#[derive(Default)]
pub struct Connection {
    db: AtomicPtr<sqlite3>,
    api: AtomicPtr<ApiRoutines>,
    claims: AtomicU32,
}

impl Connection {
    /// Connection `db` (whose routines are `api`) opened this file as its main database. A claim by
    /// another connection (shared cache: several connections, one file) forgets it for good.
    pub fn claim(&self, db: *mut sqlite3, api: *const ApiRoutines) {
        if self.db.load(Ordering::Acquire) == db {
            return;
        }
        if self.claims.fetch_add(1, Ordering::AcqRel) == 0 {
            self.api.store(api.cast_mut(), Ordering::Release);
            self.db.store(db, Ordering::Release);
        } else {
            self.db.store(ptr::null_mut(), Ordering::Release);
        }
    }

    /// What the statements the connection is running say of the rows they read: `Unbounded` if each
    /// has no `LIMIT`, else the one statement's bound; `Unknown` with no statement running, no known
    /// connection, or when not called from inside this file's read ([`reading`]).
    pub fn running_bound(&self) -> RowBound {
        let db = self.db.load(Ordering::Acquire);
        let inside = READING.with(|r| ptr::eq(r.get(), self));
        // SAFETY: the table lives as long as the process's SQLite.
        let api = unsafe { self.api.load(Ordering::Acquire).as_ref() };
        let (Some(api), false, true) = (api, db.is_null(), inside) else {
            return RowBound::Unknown;
        };
        let mut bounds = Vec::new();
        // SAFETY: this thread is inside an SQLite call on `db` (see the module's text), which stays
        // open meanwhile; each statement handed out is valid until this thread returns to SQLite.
        unsafe {
            let mut stmt = (api.next_stmt)(db, ptr::null_mut());
            while !stmt.is_null() {
                if (api.stmt_busy)(stmt) != 0 {
                    let sql = (api.sql)(stmt);
                    bounds.push(match sql.is_null() {
                        true => RowBound::Unknown,
                        false => row_bound(CStr::from_ptr(sql).to_bytes()),
                    });
                }
                stmt = (api.next_stmt)(db, stmt);
            }
        }
        match bounds[..] {
            [] => RowBound::Unknown,
            [one] => one,
            _ if bounds.iter().all(|&b| b == RowBound::Unbounded) => RowBound::Unbounded,
            _ => RowBound::Unknown,
        }
    }
}

/// Runs `read` (a read of `connection`'s file by SQLite) with [`Connection::running_bound`] allowed on
/// this thread.
pub fn reading<R>(connection: &Connection, read: impl FnOnce() -> R) -> R {
    let before = READING.with(|r| r.replace(connection));
    let out = read();
    READING.with(|r| r.set(before));
    out
}

/// Registers [`connection_opened`] for every connection opened from now on, in hosts whose SQLite has
/// `sqlite3_auto_extension` in its routines table (3.8.7 and later; older ones know no connection).
///
/// # Safety
/// `api` must be SQLite's routines table.
pub unsafe fn register(api: &ApiRoutines) {
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

/// Records `db` as the connection of its main file if that file is one of this VFS's (see the module's
/// text). Always returns SQLITE_OK: the open goes on whatever happens here.
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
