//! Fuzzing the library's environment parsing (`LIBPREFETCH_*` sizes, counts and switches) by
//! byte mutation (proptest, stable Rust). The corpus in `fuzz/corpus/env-size/` is replayed
//! first, then mutated values (`FUZZ_CASES`, 256 by default) are given to every variable.
//! Invariant: any value is accepted or refused with a one-line warning naming the variable;
//! never a panic.

#[path = "../../../fuzz/mutate.rs"]
mod mutate;

use libprefetch::Config;
use proptest::prelude::*;

/// Every variable the library reads, with the same value, and the refusals checked.
fn check_value(value: &str) -> Result<(), TestCaseError> {
    let env = Config::from_lookup(|name| name.starts_with("LIBPREFETCH_").then(|| value.into()));
    for refused in &env.refused {
        let warning = refused.to_string();
        prop_assert!(
            warning.starts_with("libprefetch: ignoring LIBPREFETCH_"),
            "{warning}"
        );
        prop_assert!(!warning.contains('\n'), "{warning}");
    }
    Ok(())
}

#[test]
fn fuzz_environment_values() {
    let seeds: Vec<Vec<u8>> = mutate::corpus("env-size")
        .into_iter()
        .map(|(_, bytes)| bytes)
        .collect();
    for seed in &seeds {
        check_value(&String::from_utf8_lossy(seed)).unwrap();
    }
    proptest!(mutate::config(), |(bytes in mutate::mutated(seeds.clone(), mutate::TEXT_TOKENS))| {
        check_value(&String::from_utf8_lossy(&bytes))?;
    });
}
