//! The built extension (target/*/libprefetch_sqlite.so) loaded into real SQLite processes: rusqlite's
//! bundled SQLite in this process, the sqlite3 shell, and Python's sqlite3. Every query must return the
//! same rows, in the same order, with and without it, including while another connection writes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{evict, extension, loaded, open, python_with_loader, rows};
use prefetch_sqlite::gen::{generate, GenOptions};
use rusqlite::types::Value;
use rusqlite::Connection;

/// The queries of the issue: the paper's, a range, descending, a second index, a join.
const QUERIES: [&str; 6] = [
    "SELECT * FROM customer ORDER BY c_zip",
    "SELECT * FROM customer WHERE c_zip BETWEEN '2000' AND '5999' ORDER BY c_zip",
    "SELECT * FROM customer ORDER BY c_zip DESC",
    "SELECT * FROM customer INDEXED BY customer_last WHERE c_w_id = 1 ORDER BY c_d_id, c_last, c_first",
    "SELECT c.c_id, c.c_zip, c.c_last, d.d_name FROM customer c JOIN district d \
     ON d.d_w_id = c.c_w_id AND d.d_id = c.c_d_id ORDER BY c.c_zip",
    "SELECT c_id, c_balance FROM customer INDEXED BY sqlite_autoindex_customer_1 ORDER BY c_w_id, c_d_id, c_id",
];

fn make_db(dir: &Path, rows: u64) -> PathBuf {
    let path = dir.join("c.db");
    generate(&path, &GenOptions { rows, seed: 9 }, |_| {}).unwrap();
    path
}

#[test]
fn queries_return_identical_rows_with_and_without_the_extension() {
    loaded();
    let dir = tempfile::tempdir().unwrap();
    let path = make_db(dir.path(), 25_000);
    for sql in QUERIES {
        let stock = rows(&open(&path, "unix"), sql);
        evict(&path);
        let with = rows(&open(&path, "prefetch"), sql);
        assert!(!stock.is_empty(), "{sql} returned nothing");
        assert_eq!(stock.len(), with.len(), "{sql}");
        assert!(stock == with, "{sql}: rows differ");
    }
}

/// `PRAGMA cache_size` passes through the VFS (which reads it to leave off the list the lookups
/// SQLite's own cache serves), and a scan with a cache far smaller than the default, whose lookups the
/// list must then hold, returns stock's rows.
#[test]
fn a_cache_size_pragma_reaches_sqlite_and_a_scan_under_it_returns_stocks_rows() {
    loaded();
    let dir = tempfile::tempdir().unwrap();
    let path = make_db(dir.path(), 25_000);
    let sql = QUERIES[0];
    let stock = rows(&open(&path, "unix"), sql);
    for size in [10, -64] {
        evict(&path);
        let conn = open(&path, "prefetch");
        conn.execute_batch(&format!("PRAGMA cache_size = {size}"))
            .unwrap();
        let set: i64 = conn
            .query_row("PRAGMA cache_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(set, size);
        assert!(rows(&conn, sql) == stock, "cache_size {size}: rows differ");
    }
}

#[test]
fn default_vfs_is_prefetch_after_loading() {
    loaded();
    let dir = tempfile::tempdir().unwrap();
    let conn = Connection::open(dir.path().join("v.db")).unwrap();
    conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
        .unwrap();
    assert_eq!(vfs_name(&conn), "prefetch/unix");
}

/// The VFS name through SQLITE_FCNTL_VFSNAME, as the shell's `.vfsname` reads it.
fn vfs_name(conn: &Connection) -> String {
    let mut name: *mut std::ffi::c_char = std::ptr::null_mut();
    // SAFETY: SQLITE_FCNTL_VFSNAME writes a string allocated by sqlite3_malloc into `name`.
    unsafe {
        rusqlite::ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_VFSNAME,
            std::ptr::from_mut(&mut name).cast(),
        );
        let text = std::ffi::CStr::from_ptr(name)
            .to_string_lossy()
            .into_owned();
        rusqlite::ffi::sqlite3_free(name.cast());
        text
    }
}

#[test]
fn reads_stay_exact_while_another_connection_writes() {
    loaded();
    let dir = tempfile::tempdir().unwrap();
    let path = make_db(dir.path(), 15_000);
    let sql = QUERIES[0];
    // Rollback journal: a writer commits between the reader's queries.
    let reader = open(&path, "prefetch");
    let writer = open(&path, "unix");
    for round in 0..3 {
        writer
            .execute_batch(&format!(
                "UPDATE customer SET c_zip = '{round:04}11111', c_balance = c_balance + 1 WHERE c_id % 5 = {round};
                 INSERT INTO customer SELECT c_id + 100000, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1,
                   c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount,
                   c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data
                   FROM customer WHERE c_id % 97 = {round} AND c_id < 100000;"
            ))
            .unwrap();
        assert!(
            rows(&reader, sql) == rows(&writer, sql),
            "round {round}: rows differ after a write"
        );
    }
    drop((reader, writer));

    // WAL: the writer commits while the reader is in the middle of its scan; the reader sees its snapshot.
    open(&path, "unix")
        .execute_batch("PRAGMA journal_mode = WAL")
        .unwrap();
    let snapshot = rows(&open(&path, "unix"), sql);
    let reader = open(&path, "prefetch");
    let mut stmt = reader.prepare(sql).unwrap();
    let n = stmt.column_count();
    let mut cursor = stmt.query([]).unwrap();
    let mut seen = Vec::new();
    let writer = std::thread::spawn({
        let path = path.clone();
        move || {
            let conn = open(&path, "prefetch");
            for i in 0..20 {
                conn.execute(
                    &format!("UPDATE customer SET c_zip = '9{i:03}11111' WHERE c_id % 20 = {i}"),
                    [],
                )
                .unwrap();
            }
        }
    });
    while let Some(row) = cursor.next().unwrap() {
        seen.push(
            (0..n)
                .map(|i| row.get::<_, Value>(i).unwrap())
                .collect::<Vec<_>>(),
        );
        if seen.len() == 100 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    writer.join().unwrap();
    assert!(
        seen == snapshot,
        "a WAL reader must see its snapshot, through the prefetch VFS too"
    );
    drop(cursor);
    drop(stmt);
    assert!(
        rows(&reader, sql) == rows(&open(&path, "unix"), sql),
        "after the writes"
    );
}

/// Output of the sqlite3 shell for `sql` on `db`, with or without `.load EXT`.
fn shell(db: &Path, sql: &str, ext: Option<&Path>) -> std::process::Output {
    let mut cmd = Command::new("sqlite3");
    if let Some(ext) = ext {
        cmd.arg("-cmd")
            .arg(format!(".load {}", ext.display()))
            .arg("-cmd")
            .arg(format!(".open {}", db.display()));
        cmd.arg("-cmd").arg(".vfsname").arg(":memory:");
    } else {
        cmd.arg(db);
    }
    cmd.arg(sql).output().unwrap()
}

#[test]
fn sqlite3_shell_returns_identical_rows() {
    assert!(
        Command::new("sqlite3").arg("--version").output().is_ok(),
        "no sqlite3 shell on PATH: install the sqlite3 package (.ci/run does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = make_db(dir.path(), 10_000);
    for sql in QUERIES {
        let stock = shell(&path, sql, None);
        evict(&path);
        let with = shell(&path, sql, Some(&extension()));
        assert!(
            stock.status.success() && with.status.success(),
            "{}",
            String::from_utf8_lossy(&with.stderr)
        );
        let with_out = String::from_utf8(with.stdout).unwrap();
        let (vfs, body) = with_out.split_once('\n').unwrap();
        assert_eq!(
            vfs, "prefetch/unix",
            "the shell's .vfsname after .load and .open"
        );
        assert!(
            body == String::from_utf8(stock.stdout).unwrap(),
            "{sql}: shell output differs"
        );
    }
}

/// Runs argv[2] on argv[1] and prints the row count and a hash of the rows; with argv[3], first loads that
/// extension into the interpreter's libsqlite3 through ctypes (so that interpreters built without
/// `enable_load_extension` run it too) and opens the database through the `prefetch` VFS.
const PYTHON_SCRIPT: &str = r#"
import hashlib, sys
db, sql, ext = sys.argv[1], sys.argv[2], sys.argv[3]
if ext:
    load_prefetch(ext)
conn = sqlite3.connect(f"file:{db}?vfs=prefetch" if ext else db, uri=bool(ext))
h = hashlib.sha256()
n = 0
for row in conn.execute(sql):
    h.update(repr(row).encode())
    n += 1
print(n, h.hexdigest())
"#;

#[test]
fn python_sqlite3_returns_identical_rows() {
    let python = "python3";
    let dir = tempfile::tempdir().unwrap();
    let path = make_db(dir.path(), 10_000);
    let ext = extension();
    for sql in QUERIES {
        let run = |ext: &str| {
            let out = Command::new(python)
                .args(["-c", &python_with_loader(PYTHON_SCRIPT)])
                .arg(&path)
                .arg(sql)
                .arg(ext)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "python: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let stock = run("");
        evict(&path);
        assert_eq!(stock, run(ext.to_str().unwrap()), "{sql}");
    }
}

/// libprefetch's counters after `sql` ran in the sqlite3 shell with the extension, as printed at close.
fn counters_after(db: &Path, sql: &str) -> String {
    let out = Command::new("sqlite3")
        .arg("-cmd")
        .arg(format!(".load {}", extension().display()))
        .arg("-cmd")
        .arg(format!(".open {}", db.display()))
        .arg(":memory:")
        .arg(sql)
        .env(prefetch_sqlite::feed::STATS_ENV, "1")
        // A memory cap of a quarter of the tables, as in the benchmark's cgroup: with all of this
        // machine's memory, the extension leaves the scan of a small table alone.
        .env("LIBPREFETCH_MAX_MEMORY", "4M")
        .output()
        .expect("the sqlite3 shell runs (.ci/run installs it)");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The counter `name` in the printed `counters`.
fn counter(counters: &str, name: &str) -> u64 {
    let (_, after) = counters
        .split_once(&format!("{name} "))
        .unwrap_or_else(|| panic!("no counter {name} printed: {counters}"));
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap()
}

/// Pages libprefetch advised for `sql`, run cold in the sqlite3 shell with the extension.
fn advised_for(db: &Path, sql: &str) -> u64 {
    evict(db);
    counter(&counters_after(db, sql), "pages advised")
}

#[test]
fn a_scan_cut_short_by_limit_advises_little() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_db(dir.path(), 25_000);
    let whole = advised_for(&path, QUERIES[0]);
    let within_a_leaf = advised_for(&path, &format!("{} LIMIT 10", QUERIES[0]));
    let a_few_leaves = advised_for(&path, &format!("{} LIMIT 500", QUERIES[0]));
    let pages = std::fs::metadata(&path).unwrap().len() / 4096;
    assert!(
        whole * 2 > pages,
        "the whole scan advised {whole} of {pages} pages"
    );
    // Ten rows lie within the index's first leaf: no list, nothing advised, no cost. Five hundred
    // span a few leaves: at most the first stretch is listed.
    assert_eq!(within_a_leaf, 0, "LIMIT 10 advised {within_a_leaf} pages");
    assert!(
        a_few_leaves * 2 < whole,
        "LIMIT 500 advised {a_few_leaves} pages, the whole scan {whole}"
    );
}

#[test]
fn a_scan_of_a_cached_database_with_a_few_pages_missing_is_soon_left_alone() {
    // Following a read costs 1.5-2 us; with (almost) every page cached it buys nothing. One page in
    // 200 missing opens the gate and sets a list; once rounds find (almost) nothing left to fetch, the
    // list is dropped and the rest of the scan goes straight to SQLite.
    const EVERY: u64 = 200;
    let dir = tempfile::tempdir().unwrap();
    let path = make_db(dir.path(), 60_000);
    std::fs::read(&path).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    file.sync_all().unwrap();
    let pages = file.metadata().unwrap().len() / 4096;
    for page in (0..pages).step_by(EVERY as usize) {
        use std::os::fd::AsRawFd;
        // SAFETY: fadvise on an open descriptor.
        let status = unsafe {
            libc::posix_fadvise(
                file.as_raw_fd(),
                (page * 4096) as i64,
                4096,
                libc::POSIX_FADV_DONTNEED,
            )
        };
        assert_eq!(status, 0, "posix_fadvise(DONTNEED)");
    }
    let counters = counters_after(&path, QUERIES[0]);
    let followed = counter(&counters, "reads followed");
    // Every read followed, as before the list was dropped, is about 58,000 (4,400 now).
    assert!(
        followed < 15_000,
        "{followed} of about 58,000 reads followed: {counters}"
    );
}
