//! `prefetch-full`: the full command line over the workspace crates, which the small `prefetch`
//! (`front.rs`, crate `launch`) executes for every command line but a well-formed `prefetch run`.
//! Each subcommand lives in its own module; this file only parses, dispatches, and prints an error
//! as one line (`prefetch: what failed: why`), never as a backtrace, even with `RUST_BACKTRACE` set:
//! errors here are the user's input or files; only a panic (a bug) prints a backtrace.
//!
//! No paper section (the command line).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};
// The read interposers: the binary's own reads of registered regions are
// followed by the library, as in a program linked with -lprefetch.
use interposers as _;

mod bench;
mod bench_replay;
mod bench_streams;
mod demo;
mod device;
mod disk;
mod emulate;
mod record;
mod repro;
mod residency;
mod restore_beside;
mod run;
mod sim;
mod sqlite;
mod tracepoint;

/// Application-directed prefetching for Linux, and the simulator of its papers.
#[derive(Parser)]
#[command(name = "prefetch", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure the live library against plain reads: random, strided, sequential, sqlite (paper section 5)
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
    /// Write a 1 GiB file and print the random-read benchmark table (what `make demo` runs)
    Demo(demo::DemoArgs),
    /// The measured profile of a device (cost per request, transfer rate) that sets the library's infill
    Device {
        #[command(subcommand)]
        command: device::DeviceCommand,
    },
    /// Disk models (simulated): `prefetch disk profile --model M` checks one against the papers
    Disk {
        #[command(subcommand)]
        command: disk::DiskCommand,
    },
    /// Mount an emulated disk: a FUSE view of a directory whose reads take a disk model's time.
    Emulate(emulate::EmulateArgs),
    /// SQLite with libprefetch (paper section 5.4): generate the TPC-C-like database, run a query
    Sqlite {
        #[command(subcommand)]
        command: sqlite::SqliteCommand,
    },
    /// Simulate prefetching and caching policies on a trace (simulated; Cao et al. 1995)
    Sim(sim::SimArgs),
    /// Reproduce a paper's simulations: tables and SVG figures (simulated)
    Repro(repro::ReproArgs),
    /// Which pages of files are in the page cache (cachestat; table or --json)
    Fincore(residency::FincoreArgs),
    /// Save which pages of files are cached, to restore them later
    Snapshot(residency::SnapshotArgs),
    /// Read back the pages of a snapshot that are missing now (C-LOOK order, infill, memory limit)
    Restore(residency::RestoreArgs),
    /// Run an unmodified program with libprefetch preloaded (`--replay FILE` prefetches a recording)
    #[command(after_help = run::environment_help())]
    Run(run::RunArgs),
    /// Run a program and record the pages it reads, for `prefetch run --replay` and `prefetch sim`
    Record(run::RecordArgs),
    /// The restorer of `prefetch run --restore`, executed afresh outside the program's memory cgroup
    #[command(hide = true)]
    RestoreBeside(restore_beside::BesideArgs),
    /// Write one man page per subcommand into DIR (what `make install` installs)
    #[command(hide = true)]
    Man {
        /// Directory to write prefetch.1, prefetch-bench.1, ... into (created if missing)
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    // A closed pipe (`prefetch sim ... | head`) ends the program quietly, as it does other command line
    // tools, instead of a panic on the next print. Rust starts programs with SIGPIPE ignored.
    // SAFETY: restoring a signal's default disposition before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    match run(Cli::parse().command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("prefetch: {}", launch::one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// Runs one subcommand.
fn run(command: Command) -> anyhow::Result<ExitCode> {
    let done = match command {
        // These replace the process with the program; they return only if it could not start.
        Command::Run(args) => return run::run(args),
        Command::Record(args) => return run::record(args),
        Command::RestoreBeside(args) => restore_beside::resume(args),
        Command::Bench { command } => bench::run(command),
        Command::Demo(args) => demo::run(args),
        Command::Device { command } => device::run(command),
        Command::Disk { command } => disk::run(command),
        Command::Emulate(args) => emulate::run(args),
        Command::Sqlite { command } => sqlite::run(command),
        Command::Sim(args) => sim::run(args),
        Command::Repro(args) => repro::run(args),
        Command::Fincore(args) => residency::fincore(args),
        Command::Snapshot(args) => residency::snapshot(args),
        Command::Restore(args) => residency::restore(args),
        Command::Man { dir } => write_man_pages(&dir),
    };
    done.map(|()| ExitCode::SUCCESS)
}

/// Writes the man pages of `prefetch` and every visible subcommand into `dir`, from the clap
/// definitions above (so they say what `--help` says).
fn write_man_pages(dir: &Path) -> anyhow::Result<()> {
    let writing = || format!("writing man pages into {}", dir.display());
    std::fs::create_dir_all(dir).with_context(writing)?;
    clap_mangen::generate_to(Cli::command(), dir).with_context(writing)
}
