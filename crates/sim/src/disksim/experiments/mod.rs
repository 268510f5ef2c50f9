//! Reproductions of the papers' disk-timed experiments (`prefetch repro dulo`, `prefetch repro
//! libprefetch`): each runs the engine over a set of workloads and policies, writes Markdown
//! tables, JSON rows and SVG figures into an output directory, and returns a summary to print
//! and the section of `docs/repro.md` that sets the paper's findings beside ours.
//!
//! Every number here is simulated, on a named disk model of crate `disk`.

pub mod dulo;
pub mod libprefetch;
pub mod synthetic;

use std::path::{Path, PathBuf};

use crate::SimError;

/// What a reproduction produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Tables to print, in Markdown.
    pub summary: String,
    /// The body of this reproduction's section of `docs/repro.md` (without its heading).
    pub section: String,
    /// Files written.
    pub files: Vec<PathBuf>,
}

/// Creates the output directory `dir`.
pub fn ensure_dir(dir: &Path) -> Result<(), SimError> {
    std::fs::create_dir_all(dir).map_err(|e| SimError::Output {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })
}

/// Writes `text` to `path`, creating its directory.
pub fn write_file(path: &Path, text: &str) -> Result<(), SimError> {
    let failed = |e: std::io::Error| SimError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    std::fs::write(path, text).map_err(failed)
}

/// Writes `rows` to `path` as pretty-printed JSON.
pub fn write_json(path: &Path, rows: &impl serde::Serialize) -> Result<(), SimError> {
    let encoded = serde_json::to_string_pretty(rows).map_err(|e| SimError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    write_file(path, &encoded)
}

/// Replaces the section `## heading` of the Markdown file `doc` (up to the next `## ` heading)
/// with `body`, or appends it; other sections are left byte for byte.
pub fn write_section(doc: &Path, heading: &str, body: &str) -> Result<(), SimError> {
    let old = match std::fs::read_to_string(doc) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(SimError::Output {
                path: doc.to_path_buf(),
                message: e.to_string(),
            })
        }
    };
    write_file(doc, &replace_section(&old, heading, body))
}

/// `text` with its section `## heading` replaced by `body` (appended if absent).
pub fn replace_section(text: &str, heading: &str, body: &str) -> String {
    let title = format!("## {heading}");
    let section = format!("{title}\n\n{}\n", body.trim_end());
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let Some(start) = lines.iter().position(|l| l.trim_end() == title) else {
        let sep = if text.is_empty() || text.ends_with("\n\n") {
            ""
        } else if text.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        return format!("{text}{sep}{section}");
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with("## "))
        .map_or(lines.len(), |i| start + 1 + i);
    let tail = if end < lines.len() { "\n" } else { "" };
    format!(
        "{}{section}{tail}{}",
        lines[..start].concat(),
        lines[end..].concat()
    )
}

/// Megabytes (MiB) of `blocks` blocks of `block_size` bytes, for tables.
pub fn mib(blocks: u64, block_size: u64) -> f64 {
    (blocks * block_size) as f64 / f64::from(1 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_its_own_section() {
        let doc = "# T\n\n## A\n\nold a\n\n## B\n\nb\n";
        assert_eq!(
            replace_section(doc, "A", "new a"),
            "# T\n\n## A\n\nnew a\n\n## B\n\nb\n"
        );
        assert_eq!(
            replace_section(doc, "B", "new b"),
            "# T\n\n## A\n\nold a\n\n## B\n\nnew b\n"
        );
        assert_eq!(
            replace_section(doc, "C", "c"),
            "# T\n\n## A\n\nold a\n\n## B\n\nb\n\n## C\n\nc\n"
        );
    }
}
