//! What `prefetch run` does in front of the program it starts, as a user sees it: the program gets
//! its arguments (options of `prefetch`'s own among them), environment, working directory and
//! exit status unchanged, whether the command line was parsed by the small `prefetch` front or
//! the full command line it hands every other one to (`prefetch-full`), which says what it always
//! says; a front without the full command line beside it says so in one line; a file that does not start as a snapshot (or a directory, or nothing) stops
//! `prefetch` before the program; a snapshot bad past its start is said in one line by the
//! restorer while the program runs.
//!
//! No paper section (the command line of `prefetch run`).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A directory of this test's own under the target directory.
fn test_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-launch-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A snapshot of `data` (a file it writes, read once so that it is cached) in `dir`.
fn snapshot_of_a_file(dir: &Path) -> PathBuf {
    let data = dir.join("data.txt");
    std::fs::write(&data, "some bytes\n").unwrap();
    std::fs::read(&data).unwrap();
    let snapshot = dir.join("snap.json");
    let out = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .arg("snapshot")
        .arg("-o")
        .arg(&snapshot)
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    snapshot
}

/// `program` run in `dir` with `LAUNCH_X` set, under `prefetch` with `options` before `--` (none:
/// stock).
fn run(dir: &Path, options: Option<&[&str]>, program: &[&str]) -> Output {
    let mut command = match options {
        Some(options) => {
            let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
            command.args(options).arg("--").args(program);
            command
        }
        None => {
            let mut command = Command::new(program[0]);
            command.args(&program[1..]);
            command
        }
    };
    command
        .current_dir(dir)
        .env("LAUNCH_X", "x y")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap()
}

#[test]
fn the_program_gets_its_arguments_environment_directory_and_status_unchanged() {
    let dir = test_dir("unchanged");
    let snapshot = snapshot_of_a_file(&dir);
    let script = "printf '[%s]' \"$0\" \"$@\"; echo; pwd; echo \"$LAUNCH_X\"; exit 7";
    let program = [
        "sh",
        "-c",
        script,
        "zero",
        "--help",
        "-V",
        "--restore",
        "a b",
        "",
        "--",
    ];
    let stock = run(&dir, None, &program);
    assert_eq!(stock.status.code(), Some(7));
    let snapshot = snapshot.to_str().unwrap();
    let restore_equals = format!("--restore={snapshot}");
    for options in [
        &["run"][..],
        &["run", "--restore", snapshot],
        &["run", &restore_equals],
        &[
            "run",
            "--no-children",
            "--restore",
            snapshot,
            "--competitive",
        ],
    ] {
        let under = run(&dir, Some(options), &program);
        assert_eq!(under.status.code(), Some(7), "{options:?}: {under:?}");
        assert_eq!(under.stdout, stock.stdout, "{options:?}");
        assert_eq!(under.stderr, stock.stderr, "{options:?}");
    }
    let killed = run(
        &dir,
        Some(&["run", "--restore", snapshot]),
        &["sh", "-c", "kill -TERM $$"],
    );
    assert_eq!(killed.status.signal(), Some(libc::SIGTERM));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn what_the_launch_does_not_parse_alone_the_whole_parser_says() {
    let dir = test_dir("whole");
    let help = run(&dir, Some(&["run", "--help"]), &[]);
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    assert!(help.contains("Usage: prefetch run"), "{help}");
    assert!(help.contains("Environment"), "{help}");
    let missing = run(&dir, Some(&["run"]), &[]);
    assert_eq!(missing.status.code(), Some(2), "{missing:?}");
    let twice = run(
        &dir,
        Some(&["run", "--competitive", "--competitive"]),
        &["true"],
    );
    assert_eq!(twice.status.code(), Some(2), "{twice:?}");
    let mistake = run(&dir, Some(&["run", "--no-such-option"]), &["true"]);
    assert_eq!(mistake.status.code(), Some(2), "{mistake:?}");
    assert!(String::from_utf8_lossy(&mistake.stderr).contains("--no-such-option"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_other_command_line_is_the_full_command_lines() {
    let dir = test_dir("handed-over");
    for args in [
        &["--version"][..],
        &["run", "--help"],
        &["sim", "--no-such-option"],
    ] {
        let front = run(&dir, Some(args), &[]);
        let mut full = Command::new(env!("CARGO_BIN_EXE_prefetch-full"));
        let full = full.arg0("prefetch").args(args).arg("--").output().unwrap();
        assert_eq!(front.status.code(), full.status.code(), "{args:?}");
        assert_eq!(front.stdout, full.stdout, "{args:?}");
        assert_eq!(front.stderr, full.stderr, "{args:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_front_without_the_full_command_line_beside_it_says_so_in_one_line() {
    let dir = test_dir("alone");
    let alone = dir.join("prefetch");
    // A link, not a copy: a copy's file, open for writing while another test's fork holds the
    // descriptor, could not be executed (ETXTBSY).
    std::fs::hard_link(env!("CARGO_BIN_EXE_prefetch"), &alone).unwrap();
    let out = Command::new(&alone)
        .args(["sim", "--help"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr.starts_with("prefetch: cannot run "), "{stderr}");
    assert!(stderr.contains("prefetch-full"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_that_does_not_start_as_a_snapshot_stops_prefetch_before_the_program() {
    let dir = test_dir("not-a-snapshot");
    let not_one = dir.join("notes.txt");
    std::fs::write(&not_one, "not a snapshot\n").unwrap();
    let marker = dir.join("ran");
    let program = ["touch", marker.to_str().unwrap()];
    for path in [not_one, dir.join("missing.json"), dir.clone()] {
        let out = run(
            &dir,
            Some(&["run", "--restore", path.to_str().unwrap()]),
            &program,
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(stderr.starts_with("prefetch: --restore: "), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!marker.exists());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_snapshot_bad_past_its_start_is_said_in_one_line_while_the_program_runs() {
    let dir = test_dir("bad-body");
    let snapshot = snapshot_of_a_file(&dir);
    let good = std::fs::read_to_string(&snapshot).unwrap();
    let bad = good.replace("\"pages\":[[0,1]]", "\"pages\":[[1,0]]");
    assert_ne!(bad, good, "{good}");
    std::fs::write(&snapshot, bad).unwrap();
    let out = run(
        &dir,
        Some(&["run", "--restore", snapshot.to_str().unwrap()]),
        &["sh", "-c", "echo ran; exit 3"],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"ran\n");
    // The restorer holds the program's standard error until it has said it: `output` waits.
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.starts_with("prefetch: --restore: "), "{stderr}");
    assert!(
        stderr.contains("the program runs without the restore"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
