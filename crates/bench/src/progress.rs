//! Progress bars (indicatif) for the long parts: writing the data file and the measured runs.
//!
//! Bars draw on stderr, and indicatif hides them when stderr is not a terminal, so `--json` output
//! and logs stay clean.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting bytes, or a hidden one when `enabled` is false.
pub fn bytes_bar(total: u64, message: &'static str, enabled: bool) -> ProgressBar {
    styled(
        total,
        message,
        enabled,
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
    )
}

/// A bar counting measured runs, or a hidden one when `enabled` is false.
pub fn runs_bar(total: u64, enabled: bool) -> ProgressBar {
    styled(
        total,
        "runs",
        enabled,
        "[{elapsed_precise}] [{bar:30}] {pos}/{len} {msg}",
    )
}

fn styled(total: u64, message: &'static str, enabled: bool, template: &str) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total).with_message(message);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
