//! Reproductions of the papers' disk-timed experiments (`prefetch repro dulo`, `prefetch repro
//! libprefetch`): each runs the engine over a set of workloads and policies and returns its
//! Markdown tables, JSON rows and figures ([`Output`]), a summary to print and the section of
//! `docs/repro.md` that sets the paper's findings beside ours; the caller writes them.
//!
//! Every number here is simulated, on a named disk model of crate `disk`.

pub mod dulo;
pub mod libprefetch;
pub mod synthetic;

use crate::report::Panel;
use crate::SimError;

/// What a reproduction produced: the library writes no file, its caller (`prefetch repro`)
/// writes the outputs and the section.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Tables to print, in Markdown.
    pub summary: String,
    /// The body of this reproduction's section of `docs/repro.md` (without its heading).
    pub section: String,
    /// Files to write, in order.
    pub outputs: Vec<Output>,
}

/// One file of a reproduction, named relative to the output directory.
#[derive(Clone, Debug)]
pub struct Output {
    /// File name (`dulo.md`, `competitive-one-whole-0.svg`).
    pub name: String,
    /// What goes in it.
    pub content: Content,
}

/// The content of an [`Output`].
#[derive(Clone, Debug)]
pub enum Content {
    /// Text, written as is.
    Text(String),
    /// Line charts side by side, drawn as SVG (`crate::report::draw`).
    Figure(Vec<Panel>),
}

impl Output {
    /// The text file `name`.
    pub fn text(name: impl Into<String>, text: String) -> Output {
        Output {
            name: name.into(),
            content: Content::Text(text),
        }
    }

    /// The figure `name`.
    pub fn figure(name: impl Into<String>, panels: Vec<Panel>) -> Output {
        Output {
            name: name.into(),
            content: Content::Figure(panels),
        }
    }

    /// `rows` as pretty-printed JSON in the file `name`.
    pub fn json(name: &str, rows: &impl serde::Serialize) -> Result<Output, SimError> {
        let encoded = serde_json::to_string_pretty(rows).map_err(|e| SimError::Output {
            path: name.into(),
            message: e.to_string(),
        })?;
        Ok(Output::text(name, encoded))
    }
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
