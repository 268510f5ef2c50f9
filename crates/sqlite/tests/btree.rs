//! The b-tree reader against databases that SQLite itself wrote: the generator's data set, rows and index
//! keys that spill to overflow pages, a freelist, and the file after VACUUM. Ground truth comes from SQL
//! (`ORDER BY`) and from SQLite's `dbstat` table of pages.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use prefetch_sqlite::btree::{Database, TableMap};
use prefetch_sqlite::gen::{generate, GenOptions};
use rusqlite::Connection;

/// A `prefetch sqlite gen` database of `rows` customers in `dir`.
fn generated(dir: &Path, rows: u64, seed: u64) -> PathBuf {
    let path = dir.join("c.db");
    generate(&path, &GenOptions { rows, seed }, |_| {}).unwrap();
    path
}

/// The generated `customer` table's two indexes map to its leaves.
fn check_customer_indexes(path: &Path) {
    check_index(path, "customer", "customer_zip", "c_zip");
    check_index(
        path,
        "customer",
        "customer_last",
        "c_w_id, c_d_id, c_last, c_first",
    );
}

fn open_reader(path: &Path) -> Database<std::fs::File> {
    Database::open(Box::new(std::fs::File::open(path).unwrap())).unwrap()
}

fn root_of(db: &Database<std::fs::File>, name: &str) -> u32 {
    db.schema()
        .unwrap()
        .into_iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("{name} in schema"))
        .root
}

fn sql_rowids(conn: &Connection, sql: &str) -> Vec<i64> {
    let mut stmt = conn.prepare(sql).unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// Leaf pages of b-tree `name` according to SQLite's dbstat virtual table.
fn dbstat_leaves(conn: &Connection, name: &str) -> BTreeSet<u32> {
    let mut stmt = conn
        .prepare("SELECT pageno FROM dbstat WHERE name = ?1 AND pagetype = 'leaf'")
        .unwrap();
    let rows = stmt.query_map([name], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// Checks index `index` of table `table`: its rowids in key order match SQL, its leaves match dbstat,
/// and every rowid maps to the table leaf that holds it.
fn check_index(path: &Path, table: &str, index: &str, key: &str) {
    let conn = Connection::open(path).unwrap();
    let db = open_reader(path);
    let leaves = db
        .index_tree(root_of(&db, index))
        .map(|t| t.leaves)
        .unwrap();
    let mut in_order = Vec::new();
    for leaf in &leaves {
        in_order.extend(db.index_leaf_rowids(leaf.page).unwrap());
        in_order.extend(&leaf.then);
    }
    let expected = sql_rowids(
        &conn,
        &format!("SELECT rowid FROM {table} ORDER BY {key}, rowid"),
    );
    assert_eq!(in_order, expected, "index {index} in key order");
    let leaf_pages: BTreeSet<u32> = leaves.iter().map(|l| l.page).collect();
    assert_eq!(leaf_pages, dbstat_leaves(&conn, index), "leaves of {index}");

    let table_root = root_of(&db, table);
    let rows = db.table_rows(table_root).unwrap();
    assert_eq!(rows.len(), expected.len());
    let table_pages: BTreeSet<u32> = rows.iter().map(|&(page, _)| page).collect();
    assert_eq!(
        table_pages,
        dbstat_leaves(&conn, table),
        "leaves of {table}"
    );
    let mut map = TableMap::new(&db, table_root).unwrap();
    // Told from the left-most path alone, before any other interior page is read.
    let (estimated, leaves) = (map.estimated_leaves(), table_pages.len() as u64);
    assert!(
        leaves <= estimated * 2 && estimated <= leaves * 2,
        "{table}: {estimated} leaves estimated, {leaves} in the table"
    );
    for &(page, rowid) in &rows {
        assert_eq!(map.leaf_for(&db, rowid).unwrap(), page, "rowid {rowid}");
    }
}

#[test]
fn generated_database_indexes_map_to_table_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let path = generated(dir.path(), 20_000, 7);
    check_customer_indexes(&path);
    check_index(
        &path,
        "customer",
        "sqlite_autoindex_customer_1",
        "c_w_id, c_d_id, c_id",
    );
}

/// A table whose rows and index keys spill onto overflow pages (keys over 1002 bytes, rows over 4061).
fn make_overflowing(path: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA page_size = 4096; CREATE TABLE t (k TEXT, body TEXT); CREATE INDEX t_k ON t (k);",
    )
    .unwrap();
    for i in 0..400i64 {
        let key = format!(
            "{:05}{}",
            (i * 7919) % 400,
            "k".repeat(900 + (i as usize * 37) % 3000)
        );
        let body = "b".repeat(100 + (i as usize * 131) % 9000);
        conn.execute("INSERT INTO t VALUES (?1, ?2)", (key, body))
            .unwrap();
    }
}

#[test]
fn overflow_pages_in_rows_and_index_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("o.db");
    make_overflowing(&path);
    let conn = Connection::open(&path).unwrap();
    let overflow: i64 = conn
        .query_row(
            "SELECT count(*) FROM dbstat WHERE pagetype = 'overflow'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        overflow > 100,
        "the data set must spill: {overflow} overflow pages"
    );
    check_index(&path, "t", "t_k", "k");
}

#[test]
fn freelist_then_vacuum() {
    let dir = tempfile::tempdir().unwrap();
    let path = generated(dir.path(), 6_000, 3);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("DELETE FROM customer WHERE c_id % 3 <> 0")
        .unwrap();
    let free: i64 = conn
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .unwrap();
    assert!(free > 10, "deleting rows must free pages: {free}");
    check_index(&path, "customer", "customer_zip", "c_zip");

    conn.execute_batch("VACUUM").unwrap();
    let free: i64 = conn
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .unwrap();
    assert_eq!(free, 0);
    check_customer_indexes(&path);
}

#[test]
fn not_a_database_is_an_error() {
    let junk: Box<[u8]> = vec![7u8; 8192].into_boxed_slice();
    assert!(Database::open(junk).is_err());
    let empty: Box<[u8]> = Vec::new().into_boxed_slice();
    assert!(Database::open(empty).is_err());
}

#[test]
fn refresh_sees_a_wal_checkpoint_that_keeps_the_length() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
        .unwrap();
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t (v) VALUES ('a'), ('b');
         PRAGMA wal_checkpoint(TRUNCATE);",
    )
    .unwrap();
    let mut db = Database::open(Box::new(std::fs::File::open(&path).unwrap())).unwrap();
    assert!(!db.refresh().unwrap(), "nothing changed yet");
    // Past the file system's timestamp granularity (a jiffy), so the checkpoint's write shows.
    std::thread::sleep(std::time::Duration::from_millis(20));
    conn.execute_batch("UPDATE t SET v = 'c' WHERE id = 1; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    assert!(
        db.refresh().unwrap(),
        "a checkpoint rewrote a page in place"
    );
}

/// The schema says which tables are `WITHOUT ROWID`, whatever the case and spacing of the option and
/// whatever other option stands beside it; a column or index named like it does not count.
#[test]
fn the_schema_tells_without_rowid_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE plain (without_rowid TEXT);
         CREATE TABLE w1 (k INTEGER PRIMARY KEY, v) WITHOUT ROWID;
         CREATE TABLE w2 (k TEXT PRIMARY KEY, v INT) strict ,  without
           rowid;
         CREATE INDEX w1_v ON w1 (v);",
    )
    .unwrap();
    drop(conn);
    let db = Database::open(Box::new(std::fs::File::open(&path).unwrap())).unwrap();
    let flag = |name: &str| {
        let schema = db.schema().unwrap();
        schema
            .iter()
            .find(|e| e.name == name)
            .unwrap()
            .without_rowid
    };
    assert!(!flag("plain"));
    assert!(flag("w1"));
    assert!(flag("w2"));
    assert!(!flag("w1_v"), "an index is not a table");
}
