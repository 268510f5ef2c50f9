//! `prefetch bench` as a real process on sizes that do not fit: each is refused up front with
//! one line saying which option to change, before anything is allocated or written.

use std::path::Path;
use std::process::{Command, Output};

fn bench(args: &[&str], file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .arg("bench")
        .args(args)
        .arg("--file")
        .arg(file)
        .args(["--no-progress", "--runs", "1"])
        // The one-line error is checked; how backtraces print is another test's concern.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .expect("run prefetch")
}

/// The single error line of a refused run (exit status 1, not a panic's 101 or a signal).
fn refusal(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
    stderr
}

#[test]
fn a_page_count_that_cannot_fit_in_memory_is_refused_not_a_capacity_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.bin");
    let output = bench(
        &[
            "random",
            "--pages",
            "18446744073709551615",
            "--file-size",
            "1M",
        ],
        &file,
    );
    assert!(refusal(&output).contains("--pages"));
    assert!(!file.exists(), "refused before writing the data file");
}

#[test]
fn strided_tiles_whose_size_overflows_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.bin");
    let output = bench(
        &[
            "strided",
            "--tiles-per-side",
            "4294967296",
            "--file-size",
            "1M",
        ],
        &file,
    );
    assert!(refusal(&output).contains("--tiles-per-side"));
    assert!(!file.exists());
}

#[test]
fn a_data_file_larger_than_the_free_disk_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.bin");
    // 1024T (1 PiB): more than this machine's disk has free.
    let output = bench(&["random", "--pages", "10", "--file-size", "1024T"], &file);
    assert!(refusal(&output).contains("free in"));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing written: {left:?}");
}

#[test]
fn a_data_file_in_a_missing_directory_is_refused_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing/dir");
    let output = bench(
        &["random", "--pages", "10", "--file-size", "1M"],
        &missing.join("x"),
    );
    assert!(refusal(&output).contains("does not exist"));
    assert!(!dir.path().join("missing").exists());
}
