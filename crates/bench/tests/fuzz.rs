//! Fuzzing the benchmark's size parser (`--file-size`, `--window`, ...) by byte mutation
//! (proptest, stable Rust). The corpus in `fuzz/corpus/bench-size/` is replayed first, then
//! mutated inputs (`FUZZ_CASES`, 256 by default). Invariant: any text gives a size or an
//! error quoting it; never a panic; an accepted size is what its digits and suffix say.

#[path = "../../../fuzz/mutate.rs"]
mod mutate;

use bench::size::parse_size;
use proptest::prelude::*;

fn check_size(text: &str) -> Result<(), TestCaseError> {
    match parse_size(text) {
        Ok(bytes) => {
            let trimmed = text.trim();
            let digits: String = trimmed.chars().take_while(char::is_ascii_digit).collect();
            let number: u128 = digits.parse().unwrap();
            prop_assert!(u128::from(bytes) >= number, "{text:?} gave {bytes}");
            prop_assert_eq!(u128::from(bytes) % number.max(1), 0, "{:?}", text);
        }
        Err(error) => {
            let message = error.to_string();
            prop_assert!(!message.contains('\n'), "{message}");
        }
    }
    Ok(())
}

#[test]
fn fuzz_bench_size_parser() {
    let seeds: Vec<Vec<u8>> = mutate::corpus("bench-size")
        .into_iter()
        .map(|(path, bytes)| {
            let text = String::from_utf8(bytes.clone()).unwrap();
            assert!(parse_size(&text).is_ok(), "{}", path.display());
            bytes
        })
        .collect();
    proptest!(mutate::config(), |(bytes in mutate::mutated(seeds.clone(), mutate::TEXT_TOKENS))| {
        check_size(&String::from_utf8_lossy(&bytes))?;
    });
}
