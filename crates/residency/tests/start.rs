//! When the restore beside a program starts (`residency::start`), on real files and a real
//! program (a shell): a program that opens only a small file of the snapshot (one page, as
//! every git command opens `.git/HEAD`) does not start it; its open of the snapshot's larger
//! file, past one read-around window, does. A snapshot no larger than a window starts at the
//! first touch. Seen through fanotify where privileged, else by looks in `/proc`.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use residency::probe::page_size;
use residency::start::wait_until_touched;
use residency::Snapshot;

/// The read-around window the tests give, in pages.
const WINDOW: u64 = 8;

/// A fresh file of `pages` pages under the target directory (cached: a snapshot of it holds
/// them all).
fn file(name: &str, pages: u64) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("residency-start-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{}", std::process::id()));
    File::create(&path)
        .unwrap()
        .write_all(&vec![1u8; (pages * page_size()) as usize])
        .unwrap();
    path
}

/// A shell that opens (and keeps open) each of `paths` in turn, saying "opened" after each
/// and waiting for a line before the next.
fn opener(paths: &[&PathBuf]) -> Child {
    let script = (1..=paths.len())
        .map(|n| format!("exec {}<\"${n}\"; echo opened; read go", n + 2))
        .collect::<Vec<_>>()
        .join("; ");
    Command::new("sh")
        .args(["-c", &script, "sh"])
        .args(paths)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads one line of `child`'s output.
fn line_of(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

/// Waits for the restore of `snapshot` beside `program` to start, in a thread; the channel
/// hears when it does.
fn start_beside(snapshot: Snapshot, program: &Child) -> mpsc::Receiver<()> {
    let pid = program.id();
    let (started, heard) = mpsc::channel();
    std::thread::spawn(move || {
        wait_until_touched(&snapshot, pid, WINDOW);
        let _ = started.send(());
    });
    heard
}

#[test]
fn a_small_file_every_program_opens_does_not_start_the_restore_and_a_larger_one_does() {
    let small = file("small", 1);
    let large = file("large", 4 * WINDOW);
    let snapshot = Snapshot::take(&[small.clone(), large.clone()]).unwrap();
    let mut program = opener(&[&small, &large]);
    assert_eq!(line_of(&mut program), "opened\n");
    let started = start_beside(snapshot, &program);
    // Past the first looks, which stay 2 ms apart for 128 ms.
    let early = started.recv_timeout(Duration::from_millis(400));
    writeln!(program.stdin.as_mut().unwrap(), "go").unwrap();
    assert_eq!(line_of(&mut program), "opened\n");
    // A deadlock detector, not a time limit.
    let late = started.recv_timeout(Duration::from_secs(20));
    drop(program.stdin.take());
    program.wait().unwrap();
    std::fs::remove_file(&small).unwrap();
    std::fs::remove_file(&large).unwrap();
    assert!(early.is_err(), "the one-page file started the restore");
    assert_eq!(late, Ok(()), "the larger file did not start the restore");
}

#[test]
fn a_snapshot_within_one_window_starts_at_the_first_touch() {
    let small = file("alone", 1);
    let snapshot = Snapshot::take(std::slice::from_ref(&small)).unwrap();
    let mut program = opener(&[&small]);
    assert_eq!(line_of(&mut program), "opened\n");
    let started = start_beside(snapshot, &program);
    let heard = started.recv_timeout(Duration::from_secs(20));
    drop(program.stdin.take());
    program.wait().unwrap();
    std::fs::remove_file(&small).unwrap();
    assert_eq!(heard, Ok(()));
}
