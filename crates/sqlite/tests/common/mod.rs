//! Helpers shared by the tests that load the built extension (target/*/libprefetch_sqlite.so) into this
//! process's SQLite (rusqlite's bundled one).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use prefetch_sqlite::ext::load_extension;
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};

/// The extension cdylib that cargo built alongside this test.
pub fn extension() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [
        deps.join("libprefetch_sqlite.so"),
        deps.parent().unwrap().join("libprefetch_sqlite.so"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .expect("cargo builds libprefetch_sqlite.so with the tests")
}

/// Loads the extension into this process's SQLite once; its VFS becomes the default.
pub fn loaded() {
    static LOADED: OnceLock<()> = OnceLock::new();
    LOADED.get_or_init(|| load_extension(&extension()).unwrap());
}

/// How many database files the loaded extension tracks now (its `prefetch_sqlite_tracked_files`).
#[allow(dead_code)] // not every test binary that includes this module asks
pub fn tracked_files() -> usize {
    counter(c"prefetch_sqlite_tracked_files")
}

/// How many libprefetch clients the loaded extension holds now (its `prefetch_sqlite_clients`).
#[allow(dead_code)] // not every test binary that includes this module asks
pub fn clients() -> usize {
    counter(c"prefetch_sqlite_clients")
}

/// The value of a counter the loaded extension exports as `extern "C" fn() -> usize`.
#[allow(dead_code)] // not every test binary that includes this module asks
fn counter(name: &std::ffi::CStr) -> usize {
    loaded();
    let path = std::ffi::CString::new(extension().into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: RTLD_NOLOAD only returns the handle of the library already loaded; dlsym looks up a symbol the
    // extension exports with this exact signature.
    unsafe {
        let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!handle.is_null(), "the extension is loaded");
        let symbol = libc::dlsym(handle, name.as_ptr());
        assert!(!symbol.is_null(), "the extension exports {name:?}");
        let count: extern "C" fn() -> usize = std::mem::transmute(symbol);
        count()
    }
}

/// Opens `path` read-write through the VFS named `vfs` ("unix" for stock SQLite, "prefetch").
#[allow(dead_code)] // not every test binary that includes this module opens databases
pub fn open(path: &Path, vfs: &str) -> Connection {
    Connection::open_with_flags_and_vfs(path, OpenFlags::SQLITE_OPEN_READ_WRITE, vfs).unwrap()
}

/// Every row `sql` returns on `conn`, every column as a value.
#[allow(dead_code)] // not every test binary that includes this module queries
pub fn rows(conn: &Connection, sql: &str) -> Vec<Vec<Value>> {
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    let mapped = stmt
        .query_map([], |r| {
            (0..n)
                .map(|i| r.get::<_, Value>(i))
                .collect::<Result<Vec<_>, _>>()
        })
        .unwrap();
    mapped.map(Result::unwrap).collect()
}

/// Empties the page cache of `path` (written back first: dirty pages cannot be dropped).
#[allow(dead_code)] // not every test binary that includes this module evicts
pub fn evict(path: &Path) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).unwrap();
    file.sync_all().unwrap();
    // SAFETY: fadvise on an open descriptor.
    let status = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(status, 0, "posix_fadvise(DONTNEED)");
}

/// Python that defines `load_prefetch(ext)`: loads the extension `ext` through ctypes into the
/// interpreter's own libsqlite3 (the one its `sqlite3` module uses, checked by version), so that
/// interpreters built without `enable_load_extension` (pyenv's) run it too; returns that library.
const PYTHON_LOADER: &str = r#"
import ctypes, sqlite3
def load_prefetch(ext):
    lib = ctypes.CDLL("libsqlite3.so.0")
    lib.sqlite3_libversion.restype = ctypes.c_char_p
    assert lib.sqlite3_libversion().decode() == sqlite3.sqlite_version, "not the module's libsqlite3"
    handle = ctypes.c_void_p()
    assert lib.sqlite3_open(b":memory:", ctypes.byref(handle)) == 0
    assert lib.sqlite3_enable_load_extension(handle, 1) == 0
    err = ctypes.c_char_p()
    assert lib.sqlite3_load_extension(handle, ext.encode(), None, ctypes.byref(err)) == 0, err.value
    return lib
"#;

/// The Python program `body`, which may call `load_prefetch(ext)` ([`PYTHON_LOADER`]).
#[allow(dead_code)] // not every test binary that includes this module runs Python
pub fn python_with_loader(body: &str) -> String {
    format!("{PYTHON_LOADER}{body}")
}
