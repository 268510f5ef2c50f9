//! CPython's own `test_sqlite3` suite (about 440 tests of the `sqlite3` module: transactions, locking
//! between connections, backups, blobs, threads...) run twice in fresh interpreters, once stock and once
//! with the extension's VFS as the process default; every test must end the same way in both.
//!
//! The extension is loaded through `ctypes` into the very libsqlite3 that Python's `_sqlite3` module
//! uses, so interpreters built without `enable_load_extension` (pyenv's) run it as well.

mod common;

use std::process::Command;

use common::{extension, python_with_loader};
use prefetch_sqlite::feed::STATS_ENV;

/// Loads the extension (argv[1], if not empty) into the interpreter's libsqlite3, checks that its VFS is
/// the default, then runs test.test_sqlite3 and prints one line per test: "<status> <test id>".
const RUNNER: &str = r#"
import io, sys, unittest
ext = sys.argv[1]
if ext:
    lib = load_prefetch(ext)
    class Vfs(ctypes.Structure):
        _fields_ = [("iVersion", ctypes.c_int), ("szOsFile", ctypes.c_int), ("mxPathname", ctypes.c_int),
                    ("pNext", ctypes.c_void_p), ("zName", ctypes.c_char_p)]
    lib.sqlite3_vfs_find.restype = ctypes.POINTER(Vfs)
    assert lib.sqlite3_vfs_find(None).contents.zName == b"prefetch", "the VFS is the default"
import test.test_sqlite3 as suite_module
suite = unittest.defaultTestLoader.loadTestsFromModule(suite_module)
result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
outcome = {}
for kind, cases in (("fail", result.failures), ("error", result.errors), ("skip", result.skipped),
                    ("xfail", result.expectedFailures), ("xpass", [(c, "") for c in result.unexpectedSuccesses])):
    for case, _ in cases:
        outcome[case.id()] = kind
print("run", result.testsRun)
for case_id, kind in sorted(outcome.items()):
    print(kind, case_id)
"#;

/// The first Python whose standard library ships `test.test_sqlite3`.
fn python_with_the_suite() -> &'static str {
    ["python3", "/usr/bin/python3"]
        .into_iter()
        .find(|python| {
            Command::new(python)
                .args(["-c", "import test.test_sqlite3"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect(
            "a python3 with test.test_sqlite3 (Debian: apt-get install libpython3.11-testsuite)",
        )
}

/// The suite's outcome lines, and how many database files the VFS tracked (each prints its counters
/// when closed, with [`STATS_ENV`] set).
fn run_suite(python: &str, ext: &str) -> (String, usize) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(python)
        .args(["-c", &python_with_loader(RUNNER), ext])
        .env(STATS_ENV, "1")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{python} (extension {ext:?}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tracked = String::from_utf8_lossy(&out.stderr)
        .matches("prefetch VFS: database closed")
        .count();
    (String::from_utf8(out.stdout).unwrap(), tracked)
}

#[test]
fn cpython_test_sqlite3_ends_the_same_with_the_vfs_as_default() {
    let python = python_with_the_suite();
    let (stock, _) = run_suite(python, "");
    let (with, tracked) = run_suite(python, extension().to_str().unwrap());
    assert!(
        tracked > 10,
        "the VFS tracked only {tracked} database files"
    );
    let run: usize = stock
        .lines()
        .find_map(|line| line.strip_prefix("run "))
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(run > 300, "the suite ran only {run} tests");
    assert_eq!(stock, with, "test_sqlite3 outcomes differ with the VFS");
}
