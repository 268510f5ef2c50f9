//! The libprefetch client of a tracked file is registered at the first read the VFS follows: a
//! connection whose reads all find the file cached registers none (its allocations and system calls
//! stay out of a warm query), a cold one registers it at its first read and scans as before. One test
//! in this binary: it counts the extension's clients, which the other tests' connections would change.

mod common;

use common::{clients, evict, loaded, open, rows, tracked_files};
use prefetch_sqlite::gen::{generate, GenOptions};

const SCAN: &str = "SELECT * FROM customer ORDER BY c_zip";

#[test]
fn a_client_is_registered_only_once_a_read_is_followed() {
    loaded();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    generate(
        &path,
        &GenOptions {
            rows: 20_000,
            seed: 3,
        },
        |_| {},
    )
    .unwrap();
    let stock = rows(&open(&path, "unix"), SCAN);

    // Cached (just written and read by stock SQLite): every read goes straight on.
    let warm = open(&path, "prefetch");
    assert_eq!(rows(&warm, SCAN), stock);
    assert_eq!(tracked_files(), 1, "the file is tracked");
    assert_eq!(clients(), 0, "no read of a cached file was followed");

    // Cold: the gate is open from the first read, which registers the client.
    evict(&path);
    let cold = open(&path, "prefetch");
    assert_eq!(rows(&cold, SCAN), stock);
    assert_eq!(tracked_files(), 2);
    assert_eq!(clients(), 1, "the cold connection's reads were followed");

    drop(cold);
    drop(warm);
    assert_eq!((tracked_files(), clients()), (0, 0), "all released");
}
