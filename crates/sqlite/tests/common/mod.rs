//! Helpers shared by the tests that load the built extension (target/*/libprefetch_sqlite.so) into this
//! process's SQLite (rusqlite's bundled one).

use std::path::PathBuf;
use std::sync::OnceLock;

use prefetch_sqlite::ext::load_extension;

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
    loaded();
    let path = std::ffi::CString::new(extension().into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: RTLD_NOLOAD only returns the handle of the library already loaded; dlsym looks up a symbol the
    // extension exports with this exact signature.
    unsafe {
        let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!handle.is_null(), "the extension is loaded");
        let symbol = libc::dlsym(handle, c"prefetch_sqlite_tracked_files".as_ptr());
        assert!(!symbol.is_null(), "the extension exports its counter");
        let count: extern "C" fn() -> usize = std::mem::transmute(symbol);
        count()
    }
}
