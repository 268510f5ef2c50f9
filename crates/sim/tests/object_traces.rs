//! libCacheSim's trace forms: `oracleGeneral` (plain and zstd) and csv, on small samples and
//! on malformed input (a wrong record size, a truncated zstd stream, a bad line): the error
//! names the file and the record or line, and nothing panics.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use sim::refstring::{RefString, Times};
use sim::trace::oracle::{OracleRecord, RECORD_BYTES};
use sim::trace::{detect, Reference, FILE_SHIFT};
use sim::{Format, TraceError, TraceFile};

fn record(time: u32, obj_id: u64, size: u32) -> OracleRecord {
    OracleRecord {
        time,
        obj_id,
        size,
        next_access_vtime: -1,
    }
}

fn oracle_bytes(records: &[OracleRecord]) -> Vec<u8> {
    records.iter().flat_map(|r| r.encode()).collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn open(trace: TraceFile) -> Result<Vec<Reference>, TraceError> {
    trace.open()?.collect()
}

/// Objects 7, 9, 7 at seconds 0, 2, 2, with a size-0 request (skipped) between.
fn sample() -> Vec<OracleRecord> {
    vec![
        record(0, 7, 4096),
        record(1, 8, 0),
        record(2, 9, 10_000),
        record(2, 7, 4096),
    ]
}

#[test]
fn oracle_general_is_one_reference_per_object_with_times_in_microseconds() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.oracleGeneral.bin", &oracle_bytes(&sample()));
    assert_eq!(detect(&path).unwrap(), Format::OracleGeneral);
    let refs = open(TraceFile::new(&path)).unwrap();
    let expected = [(7, 2_000_000), (9, 0), (7, 0)];
    let got: Vec<(u64, u64)> = refs.iter().map(|r| (r.block, r.think.unwrap())).collect();
    assert_eq!(got, expected);
}

#[test]
fn a_record_decodes_as_libcachesim_lays_it_out() {
    let mut bytes = [0u8; RECORD_BYTES];
    bytes[0] = 1; // clock_time = 1
    bytes[4] = 2; // obj_id = 2
    bytes[13] = 1; // obj_size = 256
    bytes[16..24].copy_from_slice(&(-1i64).to_le_bytes());
    let decoded = OracleRecord::decode(&bytes);
    assert_eq!(
        (
            decoded.time,
            decoded.obj_id,
            decoded.size,
            decoded.next_access_vtime
        ),
        (1, 2, 256, -1)
    );
    assert_eq!(decoded.encode(), bytes);
}

#[test]
fn oracle_general_zstd_is_recognised_by_name_and_magic() {
    let dir = tempfile::tempdir().unwrap();
    let compressed = zstd::encode_all(&oracle_bytes(&sample())[..], 3).unwrap();
    for name in [
        "s.oracleGeneral.zst",
        "s.oracleGeneral",
        "s.oracleGeneral.sample10.zst",
    ] {
        let path = write(dir.path(), name, &compressed);
        let refs = open(TraceFile::new(&path)).unwrap();
        assert_eq!(refs.iter().map(|r| r.block).collect::<Vec<_>>(), [7, 9, 7]);
    }
    // Any name, with the format given.
    let path = write(dir.path(), "plain.bin", &compressed);
    let trace = TraceFile {
        format: Some(Format::OracleGeneral),
        ..TraceFile::new(&path)
    };
    assert_eq!(open(trace).unwrap().len(), 3);
    assert_eq!(
        "oracle-general".parse::<Format>(),
        Ok(Format::OracleGeneral)
    );
}

#[test]
fn oracle_general_split_by_size_gives_each_object_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.oracleGeneral.bin", &oracle_bytes(&sample()));
    let trace = TraceFile {
        block_size: 4096,
        split_objects: true,
        ..TraceFile::new(&path)
    };
    let blocks: Vec<u64> = open(trace).unwrap().iter().map(|r| r.block).collect();
    let file1 = 1 << FILE_SHIFT;
    assert_eq!(blocks, [0, file1, file1 | 1, file1 | 2, 0]);
}

/// Records under a name that does not say `.oracleGeneral` are read as text: the error says how
/// to read them as records, and `--format oracle-general` does.
#[test]
fn records_under_a_plain_name_point_to_the_format_option() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "sample.bin", &oracle_bytes(&sample()));
    let message = open(TraceFile::new(&path)).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}:1: not UTF-8 text", path.display()))
            && message.contains("--format oracle-general"),
        "{message}"
    );
    let trace = TraceFile {
        format: Some(Format::OracleGeneral),
        ..TraceFile::new(&path)
    };
    assert_eq!(open(trace).unwrap().len(), 3);
}

#[test]
fn a_file_that_is_not_whole_records_names_the_short_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = oracle_bytes(&sample()[..2]);
    bytes.push(0);
    let path = write(dir.path(), "bad.oracleGeneral.bin", &bytes);
    let message = open(TraceFile::new(&path)).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!(
            "{}: record 3: cut short: 1 of 24 bytes",
            path.display()
        )),
        "{message}"
    );
}

#[test]
fn a_truncated_zstd_stream_names_file_and_the_records_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<_> = (0..100_000)
        .map(|i| record(i, u64::from(i) * 7919, 512))
        .collect();
    let compressed = zstd::encode_all(&oracle_bytes(&records)[..], 3).unwrap();
    let whole_before_cut = |cut: usize| {
        let path = write(dir.path(), "cut.oracleGeneral.zst", &compressed[..cut]);
        let message = open(TraceFile::new(&path)).unwrap_err().to_string();
        let prefix = format!("{}: read failed after ", path.display());
        assert!(message.starts_with(&prefix), "{message}");
        assert!(message.contains("truncated or damaged"), "{message}");
        let whole = message[prefix.len()..].split(' ').next().unwrap();
        whole.parse::<u64>().unwrap()
    };
    // Whole zstd blocks (128 KiB each) before the cut decode; a cut inside the first block leaves
    // no record whole, which is said as such rather than as a fault of record 1.
    assert!((1..100_000).contains(&whole_before_cut(compressed.len() / 2)));
    assert_eq!(whole_before_cut(100), 0);
}

/// The trace numbers of a trace read whole into memory, or the error's message.
fn read_whole(trace: &TraceFile) -> Result<Vec<u64>, String> {
    let string = RefString::read(trace, Times::Drop).map_err(|e| e.to_string())?;
    Ok(string
        .blocks()
        .iter()
        .map(|&b| string.ids().raw(b))
        .collect())
}

/// A string's dense ids and the trace number of each id, or the error's message.
fn numbered(string: Result<RefString, sim::SimError>) -> Result<(Vec<u32>, Vec<u64>), String> {
    let string = string.map_err(|e| e.to_string())?;
    let raw = (0..string.distinct() as u32).map(|id| string.ids().raw(id));
    Ok((string.blocks().to_vec(), raw.collect()))
}

/// The trace numbers of a trace streamed, or the error's message.
fn streamed(trace: &TraceFile) -> Result<Vec<u64>, String> {
    let refs = open(trace.clone()).map_err(|e| e.to_string())?;
    Ok(refs.iter().map(|r| r.block).collect())
}

/// Reading an oracleGeneral trace whole (decoded straight from its records, as a sweep reads
/// it) gives the references and the errors of reading it as a stream: size-0 records skipped,
/// records straddling two buffer fills, a short last record, a truncated zstd stream; and
/// reading it in parts on several threads numbers the blocks as reading it in one piece.
#[test]
fn reading_whole_matches_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let many: Vec<_> = (0..100_000)
        .map(|i| record(i, u64::from(i % 5000) * 7919, 512 * (i % 7)))
        .collect();
    let plain = oracle_bytes(&many);
    let zstd = zstd::encode_all(&plain[..], 3).unwrap();
    let mut short = oracle_bytes(&sample());
    short.extend_from_slice(&[1, 2, 3]);
    let cases = [
        ("sample.oracleGeneral.bin", oracle_bytes(&sample())),
        ("many.oracleGeneral.bin", plain.clone()),
        ("many.oracleGeneral.zst", zstd.clone()),
        ("cut.oracleGeneral.zst", zstd[..zstd.len() / 2].to_vec()),
        ("short.oracleGeneral.bin", short),
    ];
    for (name, bytes) in cases {
        let trace = TraceFile::new(write(dir.path(), name, &bytes));
        let expected = streamed(&trace);
        assert_eq!(read_whole(&trace), expected, "{name}");
        for threads in [2, 3, 7] {
            assert_eq!(
                numbered(RefString::read_on(&trace, Times::Drop, threads)),
                numbered(RefString::read(&trace, Times::Drop)),
                "{name} on {threads} threads"
            );
        }
        if name.starts_with("many") {
            assert_eq!(expected.map(|b| b.len()), Ok(100_000 - 100_000 / 7 - 1));
        }
    }
}

#[test]
fn libcachesim_csv_finds_its_columns_by_header_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = "time,op,obj_size,obj_id\n0,r,100,5\n# comment\n\n3,r,0,6\n4,w,100,5\n";
    let path = write(dir.path(), "t.csv", text.as_bytes());
    assert_eq!(detect(&path).unwrap(), Format::CachesimCsv);
    let refs = open(TraceFile::new(&path)).unwrap();
    let got: Vec<(u64, u64)> = refs.iter().map(|r| (r.block, r.think.unwrap())).collect();
    assert_eq!(got, [(5, 4_000_000), (5, 0)]);
}

#[test]
fn libcachesim_csv_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let csv = |name: &str, text: &str| TraceFile {
        format: Some(Format::CachesimCsv),
        ..TraceFile::new(write(dir.path(), name, text.as_bytes()))
    };
    let bad_id = csv("a.csv", "time,obj_id\n1,x\n");
    let message = open(bad_id).unwrap_err().to_string();
    assert!(
        message.ends_with("a.csv:2: obj_id \"x\" is not a valid number"),
        "{message}"
    );
    let no_header = csv("b.csv", "1,2,3\n");
    let message = open(no_header).unwrap_err().to_string();
    assert!(
        message.contains("b.csv:1: the header names no object id"),
        "{message}"
    );
    let short = csv("c.csv", "obj_id,size\n1\n");
    let message = open(short).unwrap_err().to_string();
    assert!(
        message.contains("c.csv:2: expected 2 comma-separated fields"),
        "{message}"
    );
}

#[test]
fn libcachesim_txt_is_the_blocks_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.txt", b"42932745\n42932746\n42932745\n");
    let trace = TraceFile {
        format: Some("txt".parse().unwrap()),
        ..TraceFile::new(&path)
    };
    let blocks: Vec<u64> = open(trace).unwrap().iter().map(|r| r.block).collect();
    assert_eq!(blocks, [42932745, 42932746, 42932745]);
}

proptest! {
    /// Any bytes, plain or as a damaged zstd stream, read as oracleGeneral: references or an
    /// error naming the file and a record, never a panic.
    #[test]
    fn any_bytes_read_as_oracle_general_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
        compress in any::<bool>(),
        cut in 0usize..100,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let content = match compress {
            true => {
                let whole = zstd::encode_all(&bytes[..], 1).unwrap();
                whole[..whole.len().saturating_sub(cut)].to_vec()
            }
            false => bytes,
        };
        let path = write(dir.path(), "f.oracleGeneral", &content);
        if let Err(error) = open(TraceFile::new(&path)) {
            let message = error.to_string();
            prop_assert!(message.starts_with(&path.display().to_string()), "{message}");
            prop_assert!(!message.contains('\n'), "{message}");
        }
    }
}
