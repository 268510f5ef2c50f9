//! `libprefetch.so` as a packager sees it: the soname is `libprefetch.so.0`; the dynamic symbol table
//! exports exactly the functions `include/libprefetch.h` declares plus the read family its comment says
//! the library interposes (nothing of Rust's standard library leaks out); and every declared function
//! has its man page in `man/man3` with the sections of a C library's manual.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `libprefetch.so` cargo built for this test run (next to the test executable, or in `target/debug`).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test executable");
    let deps = exe.parent().expect("directory of the test executable");
    [deps.join("libprefetch.so"), deps.join("../libprefetch.so")]
        .into_iter()
        .find(|path| path.exists())
        .expect("libprefetch.so next to the test executable: run `cargo build -p preload`")
}

/// The text of `include/libprefetch.h`.
fn header() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/libprefetch.h");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Runs a binutils tool on the library and returns its standard output.
fn binutils(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool)
        .args(args)
        .arg(library())
        .output()
        .unwrap_or_else(|e| panic!("run {tool} (binutils, installed with gcc): {e}"));
    assert!(out.status.success(), "{tool} failed: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// The `pf_*` functions the header declares (the paper-name wrappers are static inline, not exported).
fn declared_functions(header: &str) -> BTreeSet<String> {
    header
        .lines()
        .filter(|line| !line.starts_with(' ') && !line.starts_with("static"))
        .filter_map(|line| line.split_once('(')?.0.split([' ', '*']).next_back())
        .filter(|name| name.starts_with("pf_"))
        .map(str::to_string)
        .collect()
}

/// The paper's names the header defines as `static inline` wrappers of the `pf_` functions.
fn paper_names(header: &str) -> BTreeSet<(String, String)> {
    header
        .lines()
        .filter_map(|line| line.strip_prefix("static inline "))
        .filter_map(|line| line.split_once('(')?.0.split([' ', '*']).next_back())
        .map(|name| (name.to_string(), format!("pf_{name}")))
        .collect()
}

/// The functions the header's comment lists after each "interposes" (up to the next " (").
fn interposed_functions(header: &str) -> BTreeSet<String> {
    let text = header.replace(['\n', '*'], " ");
    let lists: Vec<&str> = text
        .split("interposes ")
        .skip(1)
        .filter_map(|rest| Some(rest.split_once(" (")?.0))
        .collect();
    assert!(
        !lists.is_empty(),
        "the header lists no interposed functions after \"interposes\""
    );
    lists
        .iter()
        .flat_map(|list| list.split([',', ' ']))
        .filter(|word| !word.is_empty() && *word != "and")
        .map(str::to_string)
        .collect()
}

#[test]
fn soname_is_libprefetch_so_0() {
    let dynamic = binutils("readelf", &["-d"]);
    assert!(
        dynamic.contains("Library soname: [libprefetch.so.0]"),
        "no soname libprefetch.so.0 in:\n{dynamic}"
    );
}

#[test]
fn exports_only_the_header_functions_and_the_interposers() {
    let header = header();
    let mut expected = declared_functions(&header);
    assert_eq!(
        expected.len(),
        10,
        "pf_ functions parsed from the header: {expected:?}"
    );
    let interposed = interposed_functions(&header);
    assert!(
        interposed.contains("read") && interposed.contains("__pread64_chk"),
        "{interposed:?}"
    );
    expected.extend(interposed);
    // How the copies of the library in one process find each other (libprefetch's instance.rs); not
    // for programs, so not in the header.
    expected.insert("libprefetch_instance_v1".to_string());
    let exported: BTreeSet<String> =
        binutils("nm", &["-D", "--defined-only", "--format=just-symbols"])
            .lines()
            .map(str::to_string)
            .collect();
    assert_eq!(exported, expected);
}

#[test]
fn every_header_function_has_a_man_page_with_the_usual_sections() {
    let man3 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../man/man3");
    for function in declared_functions(&header()) {
        let path = man3.join(format!("{function}.3"));
        let page = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("no man page for {function}: {}: {e}", path.display()));
        let title = format!(".TH {} 3 ", function.to_uppercase());
        assert!(page.contains(&title), "{}: no `{title}`", path.display());
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "RETURN VALUE", "ERRORS"] {
            let heading = format!("\n.SH {section}\n");
            assert!(
                page.contains(&heading),
                "{}: no {section} section",
                path.display()
            );
        }
        let name_line = format!("\n.SH NAME\n{function} \\- ");
        assert!(
            page.contains(&name_line),
            "{}: NAME is not `{function} \\- ...`",
            path.display()
        );
        let synopsis = page.split("\n.SH DESCRIPTION").next().unwrap_or_default();
        assert!(
            synopsis.contains(&format!("{function}(")),
            "{}: the SYNOPSIS does not declare {function}",
            path.display()
        );
    }
}

#[test]
fn every_paper_name_finds_its_pf_page() {
    let man3 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../man/man3");
    let names = paper_names(&header());
    assert!(names.len() >= 7, "{names:?}");
    for (alias, function) in names {
        let path = man3.join(format!("{alias}.3"));
        let page = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("no man page for {alias}: {}: {e}", path.display()));
        assert_eq!(
            page,
            format!(".so man3/{function}.3\n"),
            "{}",
            path.display()
        );
        assert!(man3.join(format!("{function}.3")).exists(), "{function}.3");
    }
}
