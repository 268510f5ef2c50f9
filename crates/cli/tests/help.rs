//! `--help` against what documents it: `prefetch man DIR` (what `make install` runs) writes one man
//! page per subcommand from the same clap definitions, and README.md's command table lists every
//! subcommand.

use std::process::Command;

/// The subcommand names `prefetch ARGS --help` lists under "Commands:" (without `help`).
fn subcommands(args: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run prefetch --help");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8 help")
        .split("Commands:\n")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Every (command, subcommand) pair `--help` lists; the subcommand is None for a leaf command.
fn command_pairs() -> Vec<(String, Option<String>)> {
    let top = subcommands(&[]);
    assert!(
        top.len() >= 7 && top.iter().any(|c| c == "sqlite"),
        "{top:?}"
    );
    let mut pairs = Vec::new();
    for command in top {
        let subs = subcommands(&[&command]);
        if subs.is_empty() {
            pairs.push((command.clone(), None));
        }
        pairs.extend(subs.into_iter().map(|sub| (command.clone(), Some(sub))));
    }
    pairs
}

#[test]
fn the_readme_command_table_lists_every_subcommand() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&path).expect("read README.md");
    for (command, sub) in command_pairs() {
        let row_start = format!("| `prefetch {command}");
        let listed = readme.lines().any(|line| {
            line.starts_with(&row_start)
                && sub.as_ref().is_none_or(|sub| line.contains(sub.as_str()))
        });
        assert!(
            listed,
            "README.md's command table has no row for `prefetch {command} {}`",
            sub.unwrap_or_default()
        );
    }
}

#[test]
fn every_subcommand_gets_a_man_page_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_prefetch"))
        .arg("man")
        .arg(dir.path())
        .status()
        .expect("run prefetch man");
    assert!(status.success());
    let top = subcommands(&[]);
    assert!(
        top.len() >= 7 && top.iter().any(|c| c == "sqlite"),
        "{top:?}"
    );
    let mut expected = vec!["prefetch".to_string()];
    for command in &top {
        expected.push(format!("prefetch-{command}"));
        for sub in subcommands(&[command]) {
            expected.push(format!("prefetch-{command}-{sub}"));
        }
    }
    assert!(
        expected.iter().any(|p| p == "prefetch-sqlite-query"),
        "{expected:?}"
    );
    for page in expected {
        let path = dir.path().join(format!("{page}.1"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.contains(".SH NAME\n"), "{page}: no NAME section");
        assert!(
            text.contains(".SH SYNOPSIS\n"),
            "{page}: no SYNOPSIS section"
        );
    }
    assert!(
        !dir.path().join("prefetch-man.1").exists(),
        "the hidden `man` got a page"
    );
}
