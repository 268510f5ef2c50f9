//! `prefetch`: the thin command line over the workspace crates.
//! Each subcommand lives in its own module; this file only parses and dispatches.

use clap::{Parser, Subcommand};

mod bench;
mod demo;

/// Application-directed prefetching for Linux, and the simulator of its papers.
#[derive(Parser)]
#[command(name = "prefetch", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure the live library against plain reads: random, strided, sequential (paper section 5)
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
    /// Write a 1 GiB file and print the random-read benchmark table (what `make demo` runs)
    Demo(demo::DemoArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench { command } => bench::run(command),
        Command::Demo(args) => demo::run(args),
    }
}
