//! Trace readers on small samples, including malformed lines (the error names file and line),
//! and on the reference traces of the repository's `traces/`.

use std::io::Write;
use std::path::{Path, PathBuf};

use sim::trace::{detect, Reference, FILE_SHIFT};
use sim::{Format, Future, TraceError, TraceFile};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn read(path: &Path, format: Format, block_size: u64) -> Result<Vec<Reference>, TraceError> {
    TraceFile {
        format: Some(format),
        block_size,
        ..TraceFile::new(path)
    }
    .open()?
    .collect()
}

fn blocks(refs: &[Reference]) -> Vec<u64> {
    refs.iter().map(|r| r.block).collect()
}

/// Reading `path` fails with a message that starts `PATH:LINE: ` and contains `what`.
fn assert_error_at(path: &Path, format: Format, line: u64, what: &str) {
    let message = read(path, format, 4096).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}:{line}: ", path.display())) && message.contains(what),
        "{message}"
    );
}

#[test]
fn block_trace_skips_stars_and_blank_lines_plain_and_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let plain = write(dir.path(), "t.trace", "0\n1\n*\n2\n\n5\n");
    assert_eq!(
        blocks(&read(&plain, Format::Blocks, 1).unwrap()),
        [0, 1, 2, 5]
    );
    let gz = dir.path().join("t.trace.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    encoder.write_all(b"7\n*\n8\n").unwrap();
    encoder.finish().unwrap();
    let refs = read(&gz, Format::Blocks, 1).unwrap();
    assert_eq!(blocks(&refs), [7, 8]);
    assert!(refs.iter().all(|r| r.think.is_none()));
}

#[test]
fn block_trace_rejects_a_malformed_line_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bad.trace", "0\n1\nx12\n3\n");
    assert_error_at(&path, Format::Blocks, 3, "");
}

#[test]
fn block_trace_accepts_hash_comments_and_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "c.trace",
        "\u{feff}# header\n4\n# note\n5\n*\n6\n",
    );
    assert_eq!(blocks(&read(&path, Format::Blocks, 1).unwrap()), [4, 5, 6]);
    assert_eq!(detect(&path).unwrap(), Format::Blocks);
    let bom_first = write(dir.path(), "b.trace", "\u{feff}7\n8\n");
    assert_eq!(
        blocks(&read(&bom_first, Format::Blocks, 1).unwrap()),
        [7, 8]
    );
}

#[test]
fn csv_with_a_byte_order_mark_before_its_header_is_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "bom.csv",
        "\u{feff}time_us,file,offset,length,op\n0,a,0,4096,R\n",
    );
    assert_eq!(detect(&path).unwrap(), Format::Csv);
    assert_eq!(blocks(&read(&path, Format::Csv, 4096).unwrap()), [0]);
}

#[test]
fn csv_times_that_go_backwards_are_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "back.csv",
        "0,a,0,10,R\n100,a,0,10,R\n100,a,0,10,R\n99,a,0,10,R\n",
    );
    assert_error_at(&path, Format::Csv, 4, "non-decreasing");
}

#[test]
fn msr_trace_starting_with_its_header_line_is_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let text = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
                128166372003061629,wdev,0,Read,8192,8192,1607\n";
    let path = write(dir.path(), "msr_header.csv", text);
    assert_eq!(detect(&path).unwrap(), Format::Msr);
    let refs: Vec<Reference> = TraceFile {
        block_size: 4096,
        ..TraceFile::new(&path)
    }
    .open()
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap();
    assert_eq!(blocks(&refs), [2, 3]);
}

#[test]
fn a_request_longer_than_memory_can_simulate_is_an_error_not_an_allocation() {
    // 8e15 bytes in 8 KiB blocks is ~1e12 blocks: far more than any machine's memory. Before
    // the fix the request was expanded into a list of its blocks and the process aborted.
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "absurd.csv",
        "0,a,0,4096,R\n0,a,0,8000000000000000,R\n5,a,0,4096,R\n",
    );
    let trace = TraceFile {
        block_size: 8192,
        ..TraceFile::new(&path)
    };
    let mut refs = trace.open().unwrap();
    assert_eq!(refs.next().unwrap().unwrap().block, 0);
    let message = refs.next().unwrap().unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}:2: ", path.display())) && message.contains("blocks"),
        "{message}"
    );
}

#[test]
fn a_long_request_is_split_one_block_at_a_time_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "long.csv", "0,a,4096,40960,R\n90,b,0,1,R\n");
    let refs = read(&path, Format::Csv, 4096).unwrap();
    assert_eq!(
        blocks(&refs),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1 << FILE_SHIFT]
    );
    let thinks: u64 = refs.iter().map(|r| r.think.unwrap()).sum();
    assert_eq!(
        thinks, 90,
        "the gap to the next request is spread over the blocks"
    );
    assert_eq!(refs[9].think, Some(9), "9 us per block, no remainder");
}

#[test]
fn a_device_is_refused_instead_of_read_until_memory_runs_out() {
    let mut trace = TraceFile::new("/dev/zero");
    let message = trace.read_once().unwrap_err().to_string();
    assert!(
        message.contains("neither a regular file nor a pipe"),
        "{message}"
    );
}

#[test]
fn a_fifo_is_read_once_and_every_open_sees_the_whole_trace() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let mut trace = TraceFile::new(&fifo);
    let unread = trace
        .open()
        .err()
        .expect("a FIFO cannot be opened twice")
        .to_string();
    assert!(unread.contains("read_once"), "{unread}");
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, "3\n1\n4\n1\n5\n").unwrap())
    };
    trace.read_once().unwrap();
    writer.join().unwrap();
    for _ in 0..2 {
        let refs: Vec<Reference> = trace.open().unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(blocks(&refs), [3, 1, 4, 1, 5]);
    }
}

#[test]
fn project_csv_splits_requests_into_blocks_and_spreads_time() {
    let dir = tempfile::tempdir().unwrap();
    let text = "time_us,file,offset,length,op\n# comment\n0,a.db,0,8192,R\n100,b.db,4096,4096,W\n\n130,a.db,8192,1,r\n";
    let path = write(dir.path(), "t.csv", text);
    let refs = read(&path, Format::Csv, 4096).unwrap();
    let b = 1u64 << FILE_SHIFT;
    assert_eq!(blocks(&refs), [0, 1, b + 1, 2]);
    let thinks: Vec<_> = refs.iter().map(|r| r.think).collect();
    assert_eq!(thinks, [Some(50), Some(50), Some(30), Some(0)]);
    let csv = TraceFile {
        block_size: 4096,
        ..TraceFile::new(path)
    };
    assert_eq!(
        csv.mean_service_time().unwrap(),
        None,
        "the CSV records no service times"
    );
}

#[test]
fn project_csv_rejects_malformed_lines() {
    let dir = tempfile::tempdir().unwrap();
    for (text, line, what) in [
        ("0,a,0,10,R\n5,a,0,10\n", 2, "expected 5"),
        ("0,a,0,10,X\n", 1, "op"),
        (
            "time_us,file,offset,length,op\n0,a,zero,10,R\n",
            2,
            "offset",
        ),
        ("0,a,18446744073709551615,10,R\n", 1, "overflows"),
    ] {
        let path = write(dir.path(), "bad.csv", text);
        assert_error_at(&path, Format::Csv, line, what);
    }
}

#[test]
fn msr_cambridge_reads_disks_as_files_and_filetime_as_microseconds() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        "128166372003061629,wdev,0,Read,8192,8192,1607\n128166372003071629,wdev,1,Write,0,512,20\n";
    let path = write(dir.path(), "msr.csv", text);
    let refs = read(&path, Format::Msr, 4096).unwrap();
    assert_eq!(blocks(&refs), [2, 3, 1 << FILE_SHIFT]);
    assert_eq!(refs[0].think.unwrap() + refs[1].think.unwrap(), 1000);
    let msr = TraceFile {
        format: Some(Format::Msr),
        block_size: 4096,
        ..TraceFile::new(&path)
    };
    assert_eq!(
        msr.mean_service_time().unwrap(),
        Some(54),
        "160 us over 2 blocks, 2 us over 1"
    );
    let bad = write(
        dir.path(),
        "bad.csv",
        "128166372003061629,wdev,0,Read,0,512,1\n128166372003061630,wdev,0,Erase,0,512,1\n",
    );
    assert_error_at(&bad, Format::Msr, 2, "");
}

#[test]
fn umass_spc_reads_sectors_and_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "f1.spc",
        "0,16,4096,r,0.000000\n1,0,512,W,0.000250,extra\n",
    );
    let refs = read(&path, Format::Spc, 4096).unwrap();
    assert_eq!(blocks(&refs), [2, 1 << FILE_SHIFT]);
    assert_eq!(refs[0].think, Some(250));
    for (text, what) in [
        ("0,16,4096,q,0.0\n", "opcode"),
        ("0,16,4096,r,-1\n", "negative"),
        ("0,16,4096\n", "expected 5"),
    ] {
        let bad = write(dir.path(), "bad.spc", text);
        assert_error_at(&bad, Format::Spc, 1, what);
    }
}

#[test]
fn formats_are_recognised_from_the_first_data_line() {
    let dir = tempfile::tempdir().unwrap();
    for (text, format) in [
        ("*\n12\n", Format::Blocks),
        ("time_us,file,offset,length,op\n", Format::Csv),
        ("# x\n0,a,0,1,W\n", Format::Csv),
        ("128166372003061629,wdev,0,Read,0,512,1\n", Format::Msr),
        ("0,16,4096,r,0.0\n", Format::Spc),
    ] {
        assert_eq!(
            detect(&write(dir.path(), "t", text)).unwrap(),
            format,
            "{text}"
        );
    }
    let unknown = write(dir.path(), "u", "a,b\n");
    assert!(detect(&unknown).unwrap_err().to_string().contains(":1: "));
}

#[test]
fn a_missing_file_is_named_in_the_error() {
    let message = TraceFile::new("/nonexistent/x.trace")
        .open()
        .err()
        .unwrap()
        .to_string();
    assert!(message.starts_with("/nonexistent/x.trace: "), "{message}");
}

/// The reference traces: lengths and distinct blocks as their README's table lists them (gli's
/// 6,016 lines hold one blank line, skipped).
#[test]
fn reference_traces_have_the_documented_sizes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    assert!(
        dir.is_dir(),
        "the reference traces are missing: {} is not a directory",
        dir.display()
    );
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let number = |cell: &str| cell.trim().replace(',', "").parse::<usize>().ok();
    let mut checked = Vec::new();
    for row in readme.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row.split('|').collect();
        let (Some(references), Some(distinct)) = (number(cells[2]), number(cells[3])) else {
            continue;
        };
        let name = cells[1].trim();
        let trace = TraceFile::new(dir.join(format!("{name}.trace.gz")));
        let future = Future::load(trace.open().unwrap()).unwrap();
        assert_eq!(
            (future.len(), future.distinct()),
            (references, distinct),
            "{name}"
        );
        checked.push(name.to_string());
    }
    assert_eq!(
        checked,
        ["cs", "cpp", "gli", "ps", "sprite", "multi1", "multi2"]
    );
}

use proptest::prelude::*;

/// Lines of comma-separated fields drawn from numbers at the edges and the formats' keywords.
fn records() -> impl Strategy<Value = String> {
    let field = prop::sample::select(vec![
        "0",
        "1",
        "4096",
        "18446744073709551615",
        "99999999999999999999",
        "-1",
        "1e30",
        "NaN",
        "0.5",
        "Read",
        "Write",
        "r",
        "w",
        "R",
        "W",
        "x",
        "a.db",
        "",
        "*",
        "time_us",
        "128166372003061629",
    ]);
    let line = prop::collection::vec(field, 1..8).prop_map(|f| f.join(","));
    prop::collection::vec(line, 1..10).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Nothing panics on arbitrary input: every reader returns references or an error that
    /// names the file.
    #[test]
    fn readers_never_panic_on_garbage(text in prop_oneof!["[0-9a-zA-Z,.*# \\-\n]{0,300}", records()]) {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "g", &text);
        for format in [None, Some(Format::Blocks), Some(Format::Csv), Some(Format::Msr), Some(Format::Spc)] {
            let trace = TraceFile { format, block_size: 512, ..TraceFile::new(&path) };
            let result: Result<Vec<Reference>, TraceError> = trace.open().and_then(|refs| refs.collect());
            if let Err(e) = result {
                prop_assert!(e.to_string().starts_with(&path.display().to_string()), "{}", e);
            }
            let _ = trace.mean_service_time();
        }
    }
}

/// docs/traces.md gives every format `--format` accepts a section with a sample in a text block.
#[test]
fn every_format_is_documented_with_a_sample() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/traces.md");
    let doc = std::fs::read_to_string(&doc).unwrap();
    let names = sim::trace::FORMAT_NAMES
        .split(", ")
        .map(|n| n.split(' ').next().unwrap());
    for name in names {
        assert!(name.parse::<Format>().is_ok(), "{name}");
        let heading = doc
            .split("\n## ")
            .find(|section| {
                section.starts_with(&format!("{name} "))
                    || section.starts_with(&format!("{name}\n"))
            })
            .unwrap_or_else(|| panic!("docs/traces.md has no section `## {name}`"));
        assert!(
            heading.contains("```text\n"),
            "section {name} has no sample"
        );
    }
}
