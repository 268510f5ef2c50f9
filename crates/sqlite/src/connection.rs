//! The database connection behind a tracked file, and what the statement it is running says of the rows
//! it reads ([`crate::statement`]): a VFS sees page reads, not statements, so the extension learns each
//! connection from SQLite itself (for the section 5.4 callback's rule on seek-bound devices, `scan.rs`).
//!
//! At load the extension registers its `connection_opened` (in `ext.rs`) with `sqlite3_auto_extension`
//! (an addition to SQLite's list, replacing nothing the application set). SQLite calls it at the end of
//! every `sqlite3_open*` (main.c `openDatabase`: the main file is opened first, by `sqlite3BtreeOpen`);
//! it asks `SQLITE_FCNTL_FILE_POINTER` for the connection's main file and, if that is a file of this
//! VFS, records the connection there ([`Connection::claim`]). A file claimed by two connections (shared
//! cache) is treated as having no known connection.
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
use std::ffi::CStr;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use rusqlite::ffi::sqlite3;

use crate::api::ApiRoutines;
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
