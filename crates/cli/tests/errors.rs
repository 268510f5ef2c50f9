//! What a user sees when a command fails: one line on stderr that names the file and says what to
//! do, and no backtrace even with `RUST_BACKTRACE=1` set (the errors are the user's input, not bugs).

use std::process::Command;

/// Runs `prefetch ARGS` with backtraces enabled and returns its stderr, asserting it failed.
fn failing(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run prefetch");
    assert_eq!(
        out.status.code(),
        Some(1),
        "prefetch {args:?} should fail: {out:?}"
    );
    String::from_utf8(out.stderr).expect("utf-8 stderr")
}

/// Asserts `stderr` is one line starting with `prefetch: ` and containing every one of `parts`.
fn assert_one_line(stderr: &str, parts: &[&str]) {
    assert_eq!(stderr.lines().count(), 1, "not one line:\n{stderr}");
    assert!(stderr.starts_with("prefetch: "), "{stderr}");
    for part in parts {
        assert!(stderr.contains(part), "{part:?} missing from: {stderr}");
    }
}

#[test]
fn a_directory_given_as_the_database_says_to_pass_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    let stderr = failing(&["sqlite", "query", "--db", path]);
    assert_one_line(&stderr, &[path, "is a directory", "prefetch sqlite gen"]);
}

#[test]
fn a_missing_database_says_how_to_create_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.db");
    let path = path.to_str().unwrap();
    let stderr = failing(&["sqlite", "query", "--db", path]);
    assert_one_line(
        &stderr,
        &[path, "does not exist", "prefetch sqlite gen --rows N --out"],
    );
}

#[test]
fn a_file_that_is_not_a_database_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("text.db");
    std::fs::write(
        &path,
        "not a database, just text of some length ".repeat(200),
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let stderr = failing(&["sqlite", "query", "--db", path]);
    assert_one_line(&stderr, &[path, "not a database"]);
}

#[test]
fn a_missing_extension_is_named_as_given_and_the_built_one_is_suggested() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    std::fs::write(&db, "").unwrap();
    for ext in ["/nonexistent/nope.so", "/nonexistent/nope"] {
        let stderr = failing(&[
            "sqlite",
            "query",
            "--db",
            db.to_str().unwrap(),
            "--ext",
            ext,
        ]);
        assert_one_line(
            &stderr,
            &[&format!("{ext} does not exist"), "libprefetch_sqlite.so"],
        );
        assert!(!stderr.contains(".so.so"), "{stderr}");
    }
}

#[test]
fn a_missing_trace_directory_says_where_the_traces_live() {
    let stderr = failing(&["repro", "cao", "--traces", "/nonexistent/traces"]);
    assert_one_line(&stderr, &["/nonexistent/traces", "--traces DIR", "traces/"]);
}

#[test]
fn a_missing_mount_point_says_to_create_it() {
    let dir = tempfile::tempdir().unwrap();
    let mountpoint = dir.path().join("mnt");
    let mountpoint = mountpoint.to_str().unwrap();
    let backing = dir.path().to_str().unwrap();
    let args = [
        "emulate",
        "--model",
        "st3500320as",
        "--backing",
        backing,
        mountpoint,
    ];
    let stderr = failing(&args);
    assert_one_line(&stderr, &[mountpoint, "does not exist", "mkdir -p"]);
}

#[test]
fn a_database_larger_than_the_free_space_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.db");
    let out = out.to_str().unwrap();
    let stderr = failing(&[
        "sqlite",
        "gen",
        "--rows",
        "18446744073709551615",
        "--out",
        out,
    ]);
    let dir = dir.path().to_str().unwrap();
    assert_one_line(
        &stderr,
        &[
            "--rows 18446744073709551615",
            dir,
            "free",
            "choose fewer --rows",
        ],
    );
    assert!(!std::path::Path::new(out).exists(), "wrote {out}");
}

#[test]
fn a_library_that_is_not_a_shared_object_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.so");
    std::fs::write(&text, "not a library\n").unwrap();
    let library = text.to_str().unwrap();
    let stderr = failing(&["run", "--library", library, "--", "true"]);
    assert_one_line(&stderr, &[library, "is not a shared library", "--library"]);
}

#[test]
fn a_demo_file_smaller_than_its_reads_says_how_large_to_make_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.bin");
    let file = file.to_str().unwrap();
    let stderr = failing(&["demo", "--file-size", "1", "--file", file, "--runs", "1"]);
    assert_one_line(&stderr, &["--file-size 4096"]);
}

#[test]
fn a_database_in_a_missing_directory_says_to_create_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let out = missing.join("g.db");
    let stderr = failing(&[
        "sqlite",
        "gen",
        "--rows",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_one_line(
        &stderr,
        &[missing.to_str().unwrap(), "does not exist", "--out"],
    );
}
