//! The environment variables are one set: the table `libprefetch::variables`, the header
//! `include/libprefetch.h`, `docs/api.md` and `prefetch run --help` name the same variables.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// C macros of the header that share the prefix but are not environment variables.
const NOT_VARIABLES: [&str; 2] = ["LIBPREFETCH_H", "LIBPREFETCH_NO_PAPER_NAMES"];

/// Every whole word of `text` that starts with `LIBPREFETCH_` or `PREFETCH_SQLITE_`.
fn variables_named_in(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
        .filter(|word| word.starts_with("LIBPREFETCH_") || word.starts_with("PREFETCH_SQLITE_"))
        .filter(|word| !word.ends_with('_') && !NOT_VARIABLES.contains(word))
        .map(str::to_string)
        .collect()
}

fn repository_file(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn table() -> BTreeSet<String> {
    libprefetch::variables::ALL
        .iter()
        .map(|v| v.name.to_string())
        .collect()
}

#[test]
fn the_header_lists_the_tables_variables() {
    assert_eq!(
        variables_named_in(&repository_file("include/libprefetch.h")),
        table()
    );
}

#[test]
fn the_api_documentation_lists_the_tables_variables() {
    assert_eq!(variables_named_in(&repository_file("docs/api.md")), table());
}

#[test]
fn run_help_lists_the_tables_variables() {
    let output = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(["run", "--help"])
        .output()
        .expect("running prefetch run --help");
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("help is UTF-8");
    assert_eq!(variables_named_in(&help), table());
}
