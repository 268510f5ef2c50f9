//! Descriptors per connection: the prefetch VFS opens none of its own, so a process opens as many
//! connections with it as with SQLite's own VFS, down to a low RLIMIT_NOFILE. One test in this binary:
//! it counts the process's descriptors and lowers its limit.

mod common;

use std::path::Path;

use common::{loaded, tracked_files};
use rusqlite::{Connection, OpenFlags};

const CONNECTIONS: usize = 30;

/// Descriptors open in the process (not counting the one that lists them).
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count() - 1
}

/// Opens `n` connections with `vfs` and reads through each, or says how many opened before one failed.
fn connect(path: &Path, vfs: &str, n: usize) -> Result<Vec<Connection>, usize> {
    let mut conns = Vec::new();
    for i in 0..n {
        let conn =
            Connection::open_with_flags_and_vfs(path, OpenFlags::SQLITE_OPEN_READ_WRITE, vfs)
                .map_err(|_| i)?;
        conn.query_row("SELECT count(*) FROM t WHERE v > '0'", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(|_| i)?;
        conns.push(conn);
    }
    Ok(conns)
}

/// Descriptors that `n` connections with `vfs` add to the process.
fn descriptors_of(path: &Path, vfs: &str, n: usize) -> usize {
    let before = open_descriptors();
    let conns = connect(path, vfs, n).unwrap();
    if vfs == "prefetch" {
        assert_eq!(tracked_files(), n, "the VFS follows every connection");
    }
    let added = open_descriptors() - before;
    drop(conns);
    added
}

fn set_open_files_limit(limit: u64) {
    let rlimit = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: setrlimit reads a valid struct rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit) }, 0);
}

#[test]
fn one_descriptor_per_connection_as_with_sqlites_own_vfs() {
    loaded();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t (v);
             INSERT INTO t (v) VALUES ('a'), ('b'), ('c');",
        )
        .unwrap();
    let stock = descriptors_of(&path, "unix", CONNECTIONS);
    assert_eq!(stock, CONNECTIONS, "SQLite's own VFS: one descriptor each");
    assert_eq!(descriptors_of(&path, "prefetch", CONNECTIONS), stock);

    // With room for about 40 more descriptors, as many connections open as with SQLite's own VFS
    // (three descriptors each allowed only a third of them).
    set_open_files_limit(open_descriptors() as u64 + 40);
    let stock = connect(&path, "unix", 1000).err();
    assert!(stock.is_some_and(|n| n >= 39), "{stock:?}");
    assert_eq!(connect(&path, "prefetch", 1000).err(), stock);
}
