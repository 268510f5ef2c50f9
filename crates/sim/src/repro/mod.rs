//! Reproductions of the papers' simulation experiments. Each writes its tables (Markdown and
//! JSON) and SVG figures into an output directory and returns a summary to print; the command
//! line's `prefetch repro PAPER` calls them.

pub mod cao;
pub mod cao_models;
