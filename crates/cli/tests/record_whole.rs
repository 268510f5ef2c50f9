//! `prefetch record` sees whole programs: pages a program reaches only
//! through `mmap`, the pages of a binary it `exec`s and of a shared library
//! it loads from a test directory are in the recording, with both methods
//! (the kernel's page-cache tracepoint, and the unprivileged interposed
//! `mmap` with `mincore`); and the tracepoint's recording is scoped to the
//! program's process tree. The tracepoint's tests skip, saying so, only
//! where the kernel lacks the tracepoint or the test lacks the privilege.
//! Files live on disk (tmpfs pages cannot be evicted) and start cold.

mod common;
use common::library;

use std::collections::HashSet;
use std::fs;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Output};

use plan::recording::{Recording, Via};

/// The real python3 (not a pyenv shim).
fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 must be installed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The recording methods.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Method {
    Tracepoint,
    Unprivileged,
}

/// `prefetch record -o REC [--no-tracepoint] -- program` in `dir`; `None`
/// (with the reason printed) where the tracepoint was asked for and the
/// kernel or the privileges do not allow it.
fn record(dir: &Path, method: Method, program: &[&str]) -> Option<(Recording, Output)> {
    let recording = dir.join("rec");
    let mut command = Command::new(env!("CARGO_BIN_EXE_prefetch"));
    command.args(["record", "-o"]).arg(&recording);
    if method == Method::Unprivileged {
        command.arg("--no-tracepoint");
    }
    command
        .arg("--library")
        .arg(library())
        .arg("--")
        .args(program);
    let out = command.current_dir(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{program:?}: {out:?}");
    if let Some(reason) = stderr.lines().find(|l| l.contains("trace: not used")) {
        assert!(
            reason.contains("tracepoint") || reason.contains("root") || reason.contains("ermission"),
            "the tracepoint failed for another reason than a missing feature or privilege: {reason}"
        );
        eprintln!("SKIP: the kernel feature or privilege is missing: {reason}");
        return None;
    }
    let text = fs::read_to_string(&recording).unwrap();
    Some((Recording::parse(&text).expect("a valid recording"), out))
}

/// The pages of `path` the recording holds, seen by `via`.
fn pages_of(recording: &Recording, path: &Path, via: Via) -> HashSet<u64> {
    let path = fs::canonicalize(path).unwrap();
    let path = path.as_os_str().as_encoded_bytes();
    let mut pages = HashSet::new();
    for part in &recording.parts {
        for run in part.runs.iter().filter(|run| run.via == via) {
            if part.files[run.file].path == path {
                pages.extend(run.first..run.first + run.count);
            }
        }
    }
    pages
}

/// The method's tag in the recording.
fn via(method: Method) -> Via {
    match method {
        Method::Tracepoint => Via::Trace,
        Method::Unprivileged => Via::Map,
    }
}

/// Writes `path` back and drops its pages from the page cache.
fn evict(path: &Path) {
    let file = fs::File::open(path).unwrap();
    file.sync_all().unwrap();
    // SAFETY: fadvise on an open descriptor.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
}

/// Asserts every page of `touched` is in the recording as seen by `method`.
fn assert_recorded(recording: &Recording, path: &Path, method: Method, touched: &[u64]) {
    let pages = pages_of(recording, path, via(method));
    let missing: Vec<u64> = touched
        .iter()
        .copied()
        .filter(|p| !pages.contains(p))
        .collect();
    assert!(
        missing.is_empty(),
        "{method:?}: pages {missing:?} of {} were touched and not recorded ({} recorded)",
        path.display(),
        pages.len()
    );
}

/// The preloaded library is the recorder's, not the program's: no method lists its file.
fn assert_library_left_out(recording: &Recording) {
    let own = fs::canonicalize(library()).unwrap();
    let own = own.as_os_str().as_encoded_bytes();
    let listed = recording
        .parts
        .iter()
        .flat_map(|p| &p.files)
        .any(|f| f.path == own);
    assert!(!listed, "the preloaded library's pages were recorded");
}

fn mmap_reader(method: Method) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let data = dir.path().join("mapped.bin");
    fs::write(&data, vec![5u8; 4 << 20]).unwrap();
    evict(&data);
    let touched = [0u64, 100, 700, 1023];
    let script = "import mmap,sys\n\
                  f=open(sys.argv[1],'rb'); m=mmap.mmap(f.fileno(),0,access=mmap.ACCESS_READ)\n\
                  print(sum(m[p*4096] for p in (0,100,700,1023))); m.close()";
    let python = python();
    let program = [python.as_str(), "-c", script, data.to_str().unwrap()];
    let Some((recording, out)) = record(dir.path(), method, &program) else {
        return;
    };
    assert_eq!(out.stdout, b"20\n");
    assert_recorded(&recording, &data, method, &touched);
    assert_library_left_out(&recording);
    let read = pages_of(&recording, &data, Via::Read);
    assert!(
        read.is_empty(),
        "the file was never read, only mapped: {read:?}"
    );
}

#[test]
fn pages_reached_only_through_mmap_are_recorded_unprivileged() {
    mmap_reader(Method::Unprivileged);
}

#[test]
fn pages_reached_only_through_mmap_are_recorded_by_the_tracepoint() {
    mmap_reader(Method::Tracepoint);
}

/// The page of an ELF file holding its entry point (and page 0, its header).
fn entry_pages(binary: &Path) -> [u64; 2] {
    let bytes = fs::read(binary).unwrap();
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap());
    assert_eq!(&bytes[..5], b"\x7fELF\x02", "a 64-bit ELF file");
    let (entry, phoff) = (u64_at(0x18), u64_at(0x20) as usize);
    let (size, count) = (u16_at(0x36) as usize, u16_at(0x38) as usize);
    for header in (0..count).map(|i| phoff + i * size) {
        let loadable = u32::from_le_bytes(bytes[header..header + 4].try_into().unwrap()) == 1;
        let (offset, vaddr, filesz) =
            (u64_at(header + 8), u64_at(header + 16), u64_at(header + 32));
        if loadable && (vaddr..vaddr + filesz).contains(&entry) {
            return [0, (entry - vaddr + offset) / 4096];
        }
    }
    panic!(
        "no loadable segment holds the entry point of {}",
        binary.display()
    );
}

fn exec_of_a_binary(method: Method) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let binary = dir.path().join("mycat");
    fs::copy("/usr/bin/cat", &binary).unwrap();
    let text = dir.path().join("small.txt");
    fs::write(&text, "hello\n").unwrap();
    evict(&binary);
    let script = format!("exec {} {}", binary.display(), text.display());
    let Some((recording, out)) = record(dir.path(), method, &["/bin/sh", "-c", &script]) else {
        return;
    };
    assert_eq!(out.stdout, b"hello\n");
    assert_recorded(&recording, &binary, method, &entry_pages(&binary));
}

#[test]
fn the_pages_of_an_executed_binary_are_recorded_unprivileged() {
    exec_of_a_binary(Method::Unprivileged);
}

#[test]
fn the_pages_of_an_executed_binary_are_recorded_by_the_tracepoint() {
    exec_of_a_binary(Method::Tracepoint);
}

fn shared_library(method: Method) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let library = dir.path().join("libtestz.so");
    fs::copy("/lib/x86_64-linux-gnu/libz.so.1", &library).unwrap();
    evict(&library);
    // Prints the page of the library holding the function it called.
    let script = "import ctypes,sys\n\
                  lib=ctypes.CDLL(sys.argv[1]); lib.zlibVersion.restype=ctypes.c_char_p\n\
                  lib.zlibVersion()\n\
                  at=ctypes.cast(lib.zlibVersion,ctypes.c_void_p).value\n\
                  for line in open('/proc/self/maps'):\n\
                  \x20   f=line.split()\n\
                  \x20   lo,hi=(int(x,16) for x in f[0].split('-'))\n\
                  \x20   if f[-1]==sys.argv[1] and lo<=at<hi: print((at-lo+int(f[2],16))//4096)";
    let python = python();
    let program = [python.as_str(), "-c", script, library.to_str().unwrap()];
    let Some((recording, out)) = record(dir.path(), method, &program) else {
        return;
    };
    let page: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_recorded(&recording, &library, method, &[0, page]);
}

#[test]
fn the_pages_of_a_shared_library_from_a_test_directory_are_recorded_unprivileged() {
    shared_library(Method::Unprivileged);
}

#[test]
fn the_pages_of_a_shared_library_from_a_test_directory_are_recorded_by_the_tracepoint() {
    shared_library(Method::Tracepoint);
}

#[test]
fn the_tracepoint_records_only_the_programs_process_tree() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let other = dir.path().join("other.bin");
    fs::write(&other, vec![1u8; 1 << 20]).unwrap();
    evict(&other);
    let go = dir.path().join("go");
    // The program waits until this test (not its descendant) has read the
    // file cold, then reads it from the cache: the interposers name it, and
    // a tracepoint that saw the test's reads would list its pages.
    let script = format!(
        "import os,time\n\
         while not os.path.exists('{go}'): time.sleep(0.01)\n\
         print(len(open('{other}','rb').read()))",
        go = go.display(),
        other = other.display()
    );
    let reader = std::thread::spawn({
        let (other, go) = (other.clone(), go.clone());
        move || {
            std::thread::sleep(std::time::Duration::from_millis(500));
            assert_eq!(fs::read(&other).unwrap().len(), 1 << 20);
            fs::write(&go, b"").unwrap();
        }
    });
    let python = python();
    let recorded = record(
        dir.path(),
        Method::Tracepoint,
        &[python.as_str(), "-c", &script],
    );
    reader.join().unwrap();
    let Some((recording, out)) = recorded else {
        return;
    };
    assert_eq!(out.stdout, b"1048576\n");
    assert_eq!(
        pages_of(&recording, &other, Via::Read).len(),
        256,
        "the program read it"
    );
    let traced = pages_of(&recording, &other, Via::Trace);
    assert!(
        traced.is_empty(),
        "another process's pages were recorded: {traced:?}"
    );
}

/// The program of [`a_replay_of_an_mmap_reader_prefetches_the_mapped_pages`]: reads two small
/// files, maps `data.bin` (`MADV_RANDOM`: a fault reads its page alone) and faults in page 0; with
/// `WAIT_SECONDS` set above 0 it first waits for the replay's own descriptor of `data.bin` (the
/// replay follows faults once its files are open: a page faulted in before looks cached already
/// and is passed over, see docs/record.md; if the opener skipped the file, the fault opens it and
/// the wait runs out first), then until 11 of its pages are cached (or that many seconds pass)
/// and prints how many are; then it faults in every 100th page. The same command line recorded
/// and replayed (a replay keeps only the parts of its own command line).
const MAPPED_SCRIPT: &str = "import mmap,os,subprocess,time\n\
    open('a.bin','rb').read(); open('b.bin','rb').read()\n\
    f=open('data.bin','rb'); m=mmap.mmap(f.fileno(),0,access=mmap.ACCESS_READ)\n\
    m.madvise(mmap.MADV_RANDOM)\n\
    wait=int(os.environ.get('WAIT_SECONDS','0')); end=time.time()+wait\n\
    opened=lambda: sum(os.path.realpath(f'/proc/self/fd/{d}').endswith('/data.bin') for d in os.listdir('/proc/self/fd'))\n\
    while wait and opened()<2 and time.time()<end: time.sleep(0.01)\n\
    s=m[0]; end=time.time()+wait\n\
    while wait:\n\
    \x20   n=int(subprocess.run(['fincore','--noheadings','--output','PAGES','data.bin'],capture_output=True).stdout)\n\
    \x20   if n>=11 or time.time()>end: print(n); break\n\
    \x20   time.sleep(0.05)\n\
    print(s+sum(m[p*4096] for p in range(0,1024,100)))";

/// A replay of a recording of a program that reads a file only through `mmap` (the tracepoint's
/// record, in touch order) prefetches the pages of the mapped file once the program faults in its
/// first: the replay follows faults, opens the mapped file whenever the opener left it (skipped
/// behind the files the program read first, or not reached yet), and advises its pages; without
/// the replay the program's first fault brings in one page.
#[test]
fn a_replay_of_an_mmap_reader_prefetches_the_mapped_pages() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let data = dir.path().join("data.bin");
    fs::write(&data, vec![5u8; 4 << 20]).unwrap();
    for small in ["a.bin", "b.bin"] {
        fs::write(dir.path().join(small), vec![1u8; 8192]).unwrap();
    }
    let evict_all = || {
        for name in ["data.bin", "a.bin", "b.bin"] {
            evict(&dir.path().join(name));
        }
    };
    evict_all();
    let python = python();
    let program = [python.as_str(), "-c", MAPPED_SCRIPT];
    let Some((recording, out)) = record(dir.path(), Method::Tracepoint, &program) else {
        return;
    };
    assert_eq!(out.stdout, b"60\n", "{out:?}");
    let touched: Vec<u64> = (0..1024).step_by(100).collect();
    assert_recorded(&recording, &data, Method::Tracepoint, &touched);

    evict_all();
    // 20 s is a deadlock detector: the pages arrive in milliseconds.
    let out = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(["run", "--library"])
        .arg(library())
        .arg("--replay")
        .arg(dir.path().join("rec"))
        .arg("--")
        .args(program)
        .env("WAIT_SECONDS", "20")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let cached: u64 = text
        .lines()
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        cached >= 11,
        "the mapped file's pages were not prefetched: {cached} cached; {out:?}"
    );
    assert!(text.ends_with("\n60\n"), "{out:?}");
}
