//! `prefetch`: the thin command line over the workspace crates.
//! Each subcommand lives in its own module; this file only parses and dispatches.

use clap::{Parser, Subcommand};

/// Application-directed prefetching for Linux, and the simulator of its papers.
#[derive(Parser)]
#[command(name = "prefetch", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {}
}
