//! Fuzzing the simulator's input parsers by byte mutation (proptest, stable Rust): each trace
//! reader and the disk-simulator policy specs. The corpus in `fuzz/corpus/TARGET/` is replayed
//! first, then mutated inputs (`FUZZ_CASES` of them, 256 by default). Invariant: any input
//! gives references or an error naming the file (and the line, for malformed records); never
//! a panic, and memory bounded by the references read (a request is split lazily).

#[path = "../../../fuzz/mutate.rs"]
mod mutate;

use proptest::prelude::*;
use sim::disksim::spec::{parse_bytes, PolicySpec};
use sim::trace::Reference;
use sim::{Format, RunSetup, TraceError, TraceFile};

/// References read from one input at most: enough to cross any request of the corpus, few
/// enough that a mutated length of 2^60 bytes stays cheap (it is split one block at a time).
const MOST_REFERENCES: usize = 20_000;

/// Reads `bytes` as a trace of `format` (`None`: detected) held in memory, through the same
/// code as a file, and checks the invariant.
fn read_trace(bytes: &[u8], format: Option<Format>) -> Result<(), TestCaseError> {
    let trace = TraceFile {
        format,
        block_size: 4096,
        content: Some(bytes.into()),
        ..TraceFile::new("fuzzed.trace")
    };
    let result: Result<Vec<Reference>, TraceError> = trace
        .open()
        .and_then(|refs| refs.take(MOST_REFERENCES).collect());
    if let Err(error) = result {
        check_error(&error)?;
    }
    if let Err(error) = trace.mean_service_time() {
        check_error(&error)?;
    }
    if let Ok(refs) = trace.open() {
        let policy = sim::find("lru-demand").unwrap();
        let setup = RunSetup::simplified(4, 3);
        if let Err(error) = sim::run_stream(policy, refs.take(MOST_REFERENCES), &setup) {
            prop_assert!(error.to_string().starts_with("fuzzed.trace"), "{error}");
        }
    }
    Ok(())
}

/// A trace error names the file; a parse error also names its line (`FILE:LINE: what`) and
/// is one line.
fn check_error(error: &TraceError) -> Result<(), TestCaseError> {
    let message = error.to_string();
    prop_assert!(message.starts_with("fuzzed.trace"), "{message}");
    if let TraceError::Parse { .. } = error {
        prop_assert!(!message.contains('\n'), "{message}");
        let line = message.trim_start_matches("fuzzed.trace:");
        prop_assert!(line.starts_with(|c: char| c.is_ascii_digit()), "{message}");
    }
    Ok(())
}

/// Replays the corpus of `target`, then checks `mutated` inputs from it.
fn fuzz_trace(target: &str, format: Format) {
    let seeds: Vec<Vec<u8>> = mutate::corpus(target)
        .into_iter()
        .map(|(path, bytes)| {
            read_trace(&bytes, Some(format)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            read_trace(&bytes, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            bytes
        })
        .collect();
    proptest!(mutate::config(), |(bytes in mutate::mutated(seeds.clone(), mutate::TEXT_TOKENS))| {
        read_trace(&bytes, Some(format))?;
        read_trace(&bytes, None)?;
    });
}

#[test]
fn fuzz_block_trace_reader() {
    fuzz_trace("trace-blocks", Format::Blocks);
}

#[test]
fn fuzz_csv_trace_reader() {
    fuzz_trace("trace-csv", Format::Csv);
}

#[test]
fn fuzz_msr_trace_reader() {
    fuzz_trace("trace-msr", Format::Msr);
}

#[test]
fn fuzz_spc_trace_reader() {
    fuzz_trace("trace-spc", Format::Spc);
}

#[test]
fn the_corpus_traces_read_without_error() {
    for (target, format) in [
        ("trace-blocks", Format::Blocks),
        ("trace-csv", Format::Csv),
        ("trace-msr", Format::Msr),
        ("trace-spc", Format::Spc),
    ] {
        for (path, _) in mutate::corpus(target) {
            let trace = TraceFile::new(&path);
            let refs: Vec<Reference> = trace.open().unwrap().collect::<Result<_, _>>().unwrap();
            assert!(!refs.is_empty(), "{}", path.display());
            assert_eq!(
                sim::trace::detect(&path).unwrap(),
                format,
                "{}",
                path.display()
            );
        }
    }
}

/// A spec's accessors answer or refuse; a parsed spec prints back to one that parses equal.
fn check_spec(text: &str) -> Result<(), TestCaseError> {
    let _ = parse_bytes(text);
    let Ok(spec) = PolicySpec::parse(text) else {
        return Ok(());
    };
    for key in ["bank", "evict", "buffer", "depth", "init", "max", ""] {
        let _ = spec.bytes(key, 1);
        let _ = spec.count(key, 1);
        let _ = spec.text(key, "");
    }
    let _ = spec.only(&["bank", "evict"]);
    let printed = spec.to_string();
    prop_assert_eq!(PolicySpec::parse(&printed).ok(), Some(spec), "{}", printed);
    Ok(())
}

#[test]
fn fuzz_disksim_policy_specs() {
    let seeds: Vec<Vec<u8>> = mutate::corpus("disksim-spec")
        .into_iter()
        .map(|(_, bytes)| bytes)
        .collect();
    for seed in &seeds {
        let text = String::from_utf8_lossy(seed);
        check_spec(&text).unwrap();
        assert!(PolicySpec::parse(&text).is_ok(), "{text}");
    }
    proptest!(mutate::config(), |(bytes in mutate::mutated(seeds.clone(), mutate::TEXT_TOKENS))| {
        check_spec(&String::from_utf8_lossy(&bytes))?;
    });
}
