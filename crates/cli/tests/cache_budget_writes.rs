//! `prefetch run --cache-budget` around programs that write and copy: `cp` (coreutils 9 copies
//! with `copy_file_range`, no `read`), `dd` (`read` and `write`) and a program copying a whole
//! file in one
//! `copy_file_range` have the source's pages counted as read and the destination's as
//! written, copy the same bytes (the one call returns the whole length, though the library
//! makes it in pieces of one batch), and, with `--cache-writeback`, leave no more than the
//! budget, a batch, a folio and the chunks still under writeback of either file cached.
//!
//! Follows DULO (FAST'05) sections 3-4 through `plan::evict`. A missing program (python3, cp, dd)
//! fails the test, naming it.

mod common;
use common::library;
#[path = "common/build_c.rs"]
mod build_c;
use build_c::build_c;

use std::fs;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Output};

use plan::evict::budget::batch_pages;

const PAGE: u64 = 4096;
const FILE_BYTES: u64 = 64 << 20;
const BUDGET: &str = "4M";
const BUDGET_PAGES: usize = 1024;

/// A file of `FILE_BYTES` varied bytes, written back and evicted.
fn cold_file(path: &Path) {
    let mut file = fs::File::create(path).unwrap();
    for i in 0..FILE_BYTES >> 20 {
        let block: Vec<u8> = (0..1u64 << 20)
            .map(|j| ((i + j * 13) % 241) as u8)
            .collect();
        file.write_all(&block).unwrap();
    }
    file.sync_all().unwrap();
    // SAFETY: fadvise on an open descriptor.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "fadvise DONTNEED");
}

/// Bytes of `path` in the page cache.
fn cached(path: &Path) -> u64 {
    let file = fs::File::open(path).unwrap();
    libprefetch::residency::cachestat(file.as_raw_fd(), 0, FILE_BYTES)
        .expect("cachestat (Linux 6.5 or later)")
        .nr_cache
        * PAGE
}

/// `program` under a 4 MiB budget with `--cache-writeback`, reporting its counts, in `dir`.
fn budgeted(dir: &Path, program: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args([
            "run",
            "--cache-budget",
            BUDGET,
            "--cache-writeback",
            "--library",
        ])
        .arg(library())
        .arg("--")
        .args(program)
        .env("LIBPREFETCH_CACHE_BUDGET_REPORT", "1")
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program:?} must be installed: {e}"));
    assert!(output.status.success(), "{output:?}");
    output
}

/// The count `what` in the last report line of `stderr`.
fn count(stderr: &[u8], what: &str) -> u64 {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .rfind(|l| l.contains("cache budget"))
        .expect("a report");
    line.split([',', ':'])
        .find_map(|part| part.trim().strip_suffix(what))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {what:?} in {line:?}"))
}

/// Asserts that the report in `stderr` counts the `pages` of output written, up to two fewer
/// (the stream's last partial buffer) or one more per batch.
fn counted_written(stderr: &[u8], pages: u64) {
    let batches = pages / batch_pages(BUDGET_PAGES) as u64 + 2;
    let counted = count(stderr, "written");
    assert!(
        (pages - 2..=pages + batches).contains(&counted),
        "{counted} pages counted written, {pages} to {} expected",
        pages + batches
    );
}

/// Most bytes of one file a copy may leave cached: the budget, a batch, a 2 MiB folio, and
/// the pages the report says were still dirty or under writeback as the program exited.
fn most_cached(stderr: &[u8]) -> u64 {
    let slack = (batch_pages(BUDGET_PAGES) as u64 + count(stderr, "left dirty")) * PAGE;
    ((BUDGET_PAGES as u64) * PAGE) + slack + (2 << 20)
}

/// `cp` copies with `copy_file_range`, `dd` with `read` and `write`.
#[test]
fn cp_and_dd_have_their_copies_counted_and_kept_within_the_budget() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let copies: [&[&str]; 2] = [
        &["cp", "src.bin", "dst.bin"],
        &["dd", "if=src.bin", "of=dst.bin", "bs=1M", "status=none"],
    ];
    for copy in copies {
        cold_file(&dir.path().join("src.bin"));
        let _ = fs::remove_file(dir.path().join("dst.bin"));
        let output = budgeted(dir.path(), copy);
        let pages = FILE_BYTES / PAGE;
        assert_eq!(count(&output.stderr, "written"), pages, "{copy:?}");
        assert_eq!(count(&output.stderr, "pages read"), 2 * pages, "{copy:?}");
        // Looked at before the files are read back here, which caches them.
        for file in ["src.bin", "dst.bin"] {
            let left = cached(&dir.path().join(file));
            let most = most_cached(&output.stderr);
            assert!(
                left <= most,
                "{copy:?} {file}: {left} bytes cached, at most {most}"
            );
        }
        assert!(
            fs::read(dir.path().join("src.bin")).unwrap()
                == fs::read(dir.path().join("dst.bin")).unwrap(),
            "{copy:?}: the copy differs"
        );
    }
}

/// Copies src.bin to a.bin in one `copy_file_range` at the file positions and to b.bin in one
/// at given offsets; prints what each returned.
const ONE_CALL_COPIES: &str = "import os\n\
src = os.open('src.bin', os.O_RDONLY)\n\
size = os.fstat(src).st_size\n\
for name, offsets in (('a.bin', ()), ('b.bin', (0, 0))):\n\
\x20   dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n\
\x20   os.lseek(src, 0, os.SEEK_SET)\n\
\x20   print(os.copy_file_range(src, dst, size, *offsets), os.lseek(src, 0, os.SEEK_CUR))\n\
\x20   os.close(dst)\n";

#[test]
fn a_whole_file_copy_in_one_call_returns_its_length_and_stays_within_the_budget() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let src = dir.path().join("src.bin");
    cold_file(&src);
    let output = budgeted(dir.path(), &["/usr/bin/python3", "-c", ONE_CALL_COPIES]);
    // The first copy moved the position to the end; the second, at offsets, left it at 0.
    let expected = format!("{FILE_BYTES} {FILE_BYTES}\n{FILE_BYTES} 0\n");
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
    let pages = FILE_BYTES / PAGE;
    assert_eq!(count(&output.stderr, "written"), 2 * pages);
    assert!(
        count(&output.stderr, "pages read") >= 4 * pages,
        "python3 reads its own files too"
    );
    let left = cached(&src);
    let most = most_cached(&output.stderr);
    assert!(left <= most, "src.bin: {left} bytes cached, at most {most}");
    let bytes = fs::read(&src).unwrap();
    for copy in ["a.bin", "b.bin"] {
        assert!(fs::read(dir.path().join(copy)).unwrap() == bytes, "{copy}");
    }
}

/// Writes dst.bin in records of 10 KiB with `os.write`, its second half first (after a seek
/// to it), then its first half (after a seek back to 0); prints the position after each half.
const RECORDS_OUT_OF_ORDER: &str = "import os\n\
size = 64 << 20\n\
half = size // 2\n\
data = open('src.bin', 'rb').read()\n\
dst = os.open('dst.bin', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n\
for start in (half, 0):\n\
\x20   os.lseek(dst, start, os.SEEK_SET)\n\
\x20   for at in range(start, start + half, 10240):\n\
\x20       os.write(dst, data[at:min(at + 10240, start + half)])\n\
\x20   print(os.lseek(dst, 0, os.SEEK_CUR))\n\
os.close(dst)\n";

/// Writes at the file position are told a batch at a time (one `lseek` per batch), and the
/// bytes held back before a seek are told before it: every page written is counted, each at
/// most once more per batch (the page two batches share), the file stays within the budget,
/// and the bytes and positions are the program's.
#[test]
fn records_written_out_of_order_are_counted_and_kept_within_the_budget() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let src = dir.path().join("src.bin");
    cold_file(&src);
    let output = budgeted(
        dir.path(),
        &["/usr/bin/python3", "-c", RECORDS_OUT_OF_ORDER],
    );
    let expected = format!("{FILE_BYTES}\n{}\n", FILE_BYTES / 2);
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
    let pages = FILE_BYTES / PAGE;
    let batches = pages / batch_pages(BUDGET_PAGES) as u64 + 2;
    let written = count(&output.stderr, "written");
    assert!(
        (pages..=pages + batches).contains(&written),
        "{written} pages counted written, {pages} to {} expected",
        pages + batches
    );
    let left = cached(&dir.path().join("dst.bin"));
    let most = most_cached(&output.stderr);
    assert!(left <= most, "dst.bin: {left} bytes cached, at most {most}");
    assert!(fs::read(&src).unwrap() == fs::read(dir.path().join("dst.bin")).unwrap());
}

/// `base64` writes its output through stdio (`fwrite`), which glibc flushes with its internal
/// `write`: the stdio interposers tell the budget of it, so every page of the output is
/// counted written (up to one more per batch) and the output stays within the budget, with the
/// same bytes as `base64` without the library.
#[test]
fn output_written_through_stdio_is_counted_and_kept_within_the_budget() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    cold_file(&dir.path().join("src.bin"));
    let output = budgeted(dir.path(), &["sh", "-c", "exec base64 src.bin > dst.b64"]);
    // Looked at before the output is read back here, which caches it.
    let left = cached(&dir.path().join("dst.b64"));
    let most = most_cached(&output.stderr);
    assert!(left <= most, "dst.b64: {left} bytes cached, at most {most}");
    let expected = Command::new("base64")
        .arg(dir.path().join("src.bin"))
        .output()
        .expect("base64 must be installed");
    let written = fs::read(dir.path().join("dst.b64")).unwrap();
    assert!(written == expected.stdout, "the output differs");
    counted_written(&output.stderr, (written.len() as u64).div_ceil(PAGE));
}

/// A program writing one character at a time (`putc`, a call, and `putc_unlocked`, which glibc
/// expands inline and which calls `__overflow` only when the stream's buffer is full) has its
/// output counted written as each full buffer is flushed, and kept within the budget, with
/// the bytes it writes without the library.
#[test]
fn output_written_a_character_at_a_time_is_counted_and_kept_within_the_budget() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temporary directory");
    let program = build_c("crates/cli/tests/programs/putc_writer.c", dir.path());
    let size = FILE_BYTES.to_string();
    let shell = format!("exec {} {size} > dst.bin", program.display());
    let output = budgeted(dir.path(), &["sh", "-c", &shell]);
    // Looked at before the output is read back here, which caches it.
    let left = cached(&dir.path().join("dst.bin"));
    let most = most_cached(&output.stderr);
    assert!(left <= most, "dst.bin: {left} bytes cached, at most {most}");
    let expected = Command::new(&program).arg(&size).output().unwrap();
    let written = fs::read(dir.path().join("dst.bin")).unwrap();
    assert!(written == expected.stdout, "the output differs");
    counted_written(&output.stderr, FILE_BYTES / PAGE);
}
