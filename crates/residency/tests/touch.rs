//! The first touch of a snapshot's files by a process tree: a file opened by a child (after
//! the check before it was not), a file mapped by the process itself, and a snapshot of files
//! nobody has open or mapped, which is never touched; and through fanotify, an open by a
//! child of the program is reported, with the file it opened, and one by a process outside
//! its tree is not.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use residency::opens::{Opened, Opens};
use residency::probe::{page_size, Mapping};
use residency::touch::Files;
use residency::Snapshot;

/// A fresh file of 4 pages under the target directory.
fn file(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("residency-touch-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{}", std::process::id()));
    File::create(&path)
        .unwrap()
        .write_all(&vec![1u8; 4 * page_size() as usize])
        .unwrap();
    path
}

fn files_of(path: &PathBuf) -> Files {
    Files::of(&Snapshot::take(std::slice::from_ref(path)).unwrap())
}

#[test]
fn a_file_opened_by_a_child_is_a_touch_and_one_nobody_opened_is_not() {
    let opened = file("opened");
    let untouched = file("untouched");
    let (files, others) = (files_of(&opened), files_of(&untouched));
    let me = std::process::id();
    assert!(!files.touched_by(me), "nobody has the file open yet");
    let mut child = Command::new("sh")
        .args(["-c", "exec 3<\"$1\"; echo ready; read line", "sh"])
        .arg(&opened)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready, "ready\n");
    let touched = (files.touched_by(child.id()), files.touched_by(me));
    let other_touched = others.touched_by(me);
    drop(child.stdin.take());
    child.wait().unwrap();
    std::fs::remove_file(&opened).unwrap();
    std::fs::remove_file(&untouched).unwrap();
    assert_eq!(
        touched,
        (true, true),
        "the child, and this process as its parent"
    );
    assert!(!other_touched, "a file nobody opened");
}

#[test]
fn a_file_mapped_is_a_touch() {
    let path = file("mapped");
    let files = files_of(&path);
    let me = std::process::id();
    let before = files.touched_by(me);
    let mapping = Mapping::new(&File::open(&path).unwrap(), 4).unwrap();
    let during = files.touched_by(me);
    drop(mapping);
    std::fs::remove_file(&path).unwrap();
    assert!(!before);
    assert!(during, "mapped, its descriptor closed");
}

/// Reads one line of `child`'s output.
fn line_of(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

#[test]
fn an_open_by_a_child_of_the_program_is_reported_and_one_outside_its_tree_is_not() {
    let path = file("fanotify");
    let snapshot = Snapshot::take(std::slice::from_ref(&path)).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    let id = (meta.dev(), meta.ino());
    let Some(opens) = Opens::watch(&snapshot) else {
        std::fs::remove_file(&path).unwrap();
        eprintln!("SKIP: fanotify needs CAP_SYS_ADMIN and a kernel that has it (privilege or kernel feature missing)");
        return;
    };
    // The program: a shell whose child opens the file (and keeps it open) once told to.
    let mut program = Command::new("sh")
        .args([
            "-c",
            "echo started; read go; sh -c 'exec 3<\"$1\"; echo opened; read end' sh \"$1\"",
            "sh",
        ])
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(line_of(&mut program), "started\n");
    let pid = program.id();
    let (seen, told) = mpsc::channel();
    std::thread::spawn(move || seen.send(opens.wait_for(pid).ok()).unwrap());
    // This process is the program's parent, not in its tree: its open is not the program's.
    drop(File::open(&path).unwrap());
    let early = told.recv_timeout(Duration::from_millis(300));
    writeln!(program.stdin.as_mut().unwrap(), "go").unwrap();
    assert_eq!(line_of(&mut program), "opened\n");
    let reported = told.recv_timeout(Duration::from_secs(20));
    drop(program.stdin.take());
    program.wait().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(
        early.is_err(),
        "an open outside the tree was taken for the program's"
    );
    assert_eq!(
        reported,
        Ok(Some(Opened::File(id))),
        "the child's open of the file was not reported"
    );
}
