//! Byte mutation for the fuzz tests: proptest strategies that take a seed input from the
//! repository's corpus (`fuzz/corpus/TARGET/`) and apply a few random edits (bit flips,
//! overwrites, insertions of interesting tokens, deletions, duplications), as libFuzzer's
//! mutators do. Shared by the crates' `tests/fuzz*.rs` through `#[path]`, so it needs only
//! proptest.
#![allow(dead_code)]

use proptest::prelude::*;
use proptest::sample::Index;
use std::path::{Path, PathBuf};

/// Cases per fuzz target: 256 in CI (a second or two each); `FUZZ_CASES=100000` runs longer.
pub fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(256)
}

/// The configuration of every fuzz test: [`cases`] cases, no failure files (a failing input
/// goes into the corpus by hand, named `crash-*`, and is replayed first from then on).
pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The seed inputs of `target`, every file of `fuzz/corpus/TARGET/` sorted by name. Panics
/// when there are none: a fuzz test without its corpus fails instead of testing nothing.
pub fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("fuzz corpus {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "fuzz corpus {} is empty", dir.display());
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// Tokens worth inserting into text formats: separators, signs, comments, a byte order mark,
/// and numbers at the edges of the integer types.
pub const TEXT_TOKENS: &[&[u8]] = &[
    b",",
    b"\n",
    b"\r\n",
    b"#",
    b"*",
    b"-",
    b".",
    b" ",
    b"0",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\x1f\x8b",
    b"18446744073709551615",
    b"18446744073709551616",
    b"9223372036854775807",
    b"4294967295",
    b"8000000000000000",
    b"1e300",
    b"NaN",
    b"K",
    b"M",
    b"G",
    b"T",
    b"iB",
    b"=",
    b":",
];

/// Values worth writing into binary formats: zero, all ones and the sign boundaries.
pub const BINARY_TOKENS: &[&[u8]] = &[
    b"\x00",
    b"\xff",
    b"\x7f",
    b"\x80",
    b"\x00\x00",
    b"\xff\xff",
    b"\x00\x01",
    b"\x80\x00",
    b"\xff\xff\xff\xff",
    b"\x00\x00\x00\x00",
    b"\x7f\xff\xff\xff",
    b"\x02",
    b"\x05",
    b"\x0a",
    b"\x0d",
];

/// One edit of a byte string; positions are proportions, so they fit any length.
#[derive(Clone, Debug)]
pub enum Edit {
    /// Flips one bit.
    Flip(Index, u8),
    /// Overwrites one byte.
    Set(Index, u8),
    /// Overwrites with a token (clipped at the end).
    Overwrite(Index, usize),
    /// Inserts a token.
    Insert(Index, usize),
    /// Inserts random bytes.
    InsertBytes(Index, Vec<u8>),
    /// Removes up to `n` bytes.
    Remove(Index, usize),
    /// Repeats a stretch of up to `n` bytes right after itself.
    Duplicate(Index, usize),
}

fn edit(tokens: usize) -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Edit::Flip(at, bit)),
        (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Edit::Set(at, byte)),
        (any::<Index>(), 0..tokens).prop_map(|(at, token)| Edit::Overwrite(at, token)),
        (any::<Index>(), 0..tokens).prop_map(|(at, token)| Edit::Insert(at, token)),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Edit::InsertBytes(at, bytes)),
        (any::<Index>(), 1usize..64).prop_map(|(at, n)| Edit::Remove(at, n)),
        (any::<Index>(), 1usize..64).prop_map(|(at, n)| Edit::Duplicate(at, n)),
    ]
}

/// Applies `edit` to `bytes`, inserting from `tokens`.
pub fn apply(bytes: &mut Vec<u8>, edit: &Edit, tokens: &[&[u8]]) {
    let position = |at: &Index, extra: usize| at.index(bytes.len() + extra);
    match edit {
        Edit::Flip(at, bit) if !bytes.is_empty() => {
            let i = position(at, 0);
            bytes[i] ^= 1 << bit;
        }
        Edit::Set(at, byte) if !bytes.is_empty() => {
            let i = position(at, 0);
            bytes[i] = *byte;
        }
        Edit::Overwrite(at, token) if !bytes.is_empty() => {
            let i = position(at, 0);
            let token = tokens[*token];
            let end = (i + token.len()).min(bytes.len());
            bytes[i..end].copy_from_slice(&token[..end - i]);
        }
        Edit::Insert(at, token) => {
            let i = position(at, 1);
            bytes.splice(i..i, tokens[*token].iter().copied());
        }
        Edit::InsertBytes(at, inserted) => {
            let i = position(at, 1);
            bytes.splice(i..i, inserted.iter().copied());
        }
        Edit::Remove(at, n) if !bytes.is_empty() => {
            let i = position(at, 0);
            let end = (i + n).min(bytes.len());
            bytes.drain(i..end);
        }
        Edit::Duplicate(at, n) if !bytes.is_empty() => {
            let i = position(at, 0);
            let end = (i + n).min(bytes.len());
            let stretch = bytes[i..end].to_vec();
            bytes.splice(end..end, stretch);
        }
        _ => {}
    }
}

/// Inputs made from `seeds`: a seed with 1 to 8 edits, or (one case in eight) arbitrary bytes.
pub fn mutated(
    seeds: Vec<Vec<u8>>,
    tokens: &'static [&'static [u8]],
) -> impl Strategy<Value = Vec<u8>> {
    let edited = (
        any::<Index>(),
        prop::collection::vec(edit(tokens.len()), 1..8),
    )
        .prop_map(move |(seed, edits)| {
            let mut bytes = seed.get(&seeds).clone();
            for edit in &edits {
                apply(&mut bytes, edit, tokens);
            }
            bytes
        });
    prop_oneof![
        7 => edited,
        1 => prop::collection::vec(any::<u8>(), 0..512),
    ]
}
