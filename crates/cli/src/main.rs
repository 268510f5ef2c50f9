//! `prefetch`: the thin command line over the workspace crates.
//! Each subcommand lives in its own module; this file only parses, dispatches, and prints an error
//! as one line (`prefetch: what failed: why`), never as a backtrace, even with `RUST_BACKTRACE` set:
//! errors here are the user's input or files; only a panic (a bug) prints a backtrace.

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

/// The commands that start a program (`run`, `record`) and the restorer beside it, parsed alone:
/// building every subcommand's definition cost each launch CPU in front of the program.
#[derive(Parser)]
#[command(name = "prefetch")]
struct Launch {
    #[command(subcommand)]
    command: LaunchCommand,
}

#[derive(Subcommand)]
enum LaunchCommand {
    Run(run::RunArgs),
    Record(run::RecordArgs),
    RestoreBeside(restore_beside::BesideArgs),
}

/// The command line: a launch parsed alone where it parses, otherwise (any other subcommand,
/// `--help`, a mistake) the whole command line, which says what the full parser says.
fn parse() -> Command {
    let launch = ["run", "record", "restore-beside"];
    if std::env::args_os()
        .nth(1)
        .is_some_and(|first| launch.iter().any(|name| first == *name))
    {
        if let Ok(Launch { command }) = Launch::try_parse() {
            return match command {
                LaunchCommand::Run(args) => Command::Run(args),
                LaunchCommand::Record(args) => Command::Record(args),
                LaunchCommand::RestoreBeside(args) => Command::RestoreBeside(args),
            };
        }
    }
    Cli::parse().command
}

fn main() -> ExitCode {
    // A closed pipe (`prefetch sim ... | head`) ends the program quietly, as it does other command line
    // tools, instead of a panic on the next print. Rust starts programs with SIGPIPE ignored.
    // SAFETY: restoring a signal's default disposition before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    match run(parse()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("prefetch: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined by ": ", leaving out a cause whose text is already in the line
/// (an error that prints its source would otherwise say it twice).
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain().map(ToString::to_string) {
        if line.contains(&cause) {
            continue;
        }
        if !line.is_empty() {
            line += ": ";
        }
        line += &cause;
    }
    line
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

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn one_line_joins_the_causes_and_says_each_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let error = anyhow::Error::new(io)
            .context("mount point /mnt/x: No such file or directory")
            .context("prefetch emulate");
        assert_eq!(
            one_line(&error),
            "prefetch emulate: mount point /mnt/x: No such file or directory"
        );
    }
}
