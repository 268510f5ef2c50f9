//! The `prefetch` executable users run: `prefetch run` with well-formed options is done here
//! ([`crate::parse`], [`crate::exec`]); every other command line is handed, unchanged, to the
//! full command line (`prefetch-full`, next to this executable), which it replaces.
//!
//! The full command line is a large executable (every subcommand's definition, the simulator,
//! SQLite, the benchmarks, the read interposers linked in and their constructors): loading it
//! cost each `prefetch run` 90 page faults and a millisecond more than this one, in front of the
//! program (docs/record.md, "Trials of `run --restore`").
//!
//! No paper section (the command line of `prefetch run`).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result};

/// The full command line's file name, next to `prefetch`.
pub const FULL: &str = "prefetch-full";

/// `prefetch`'s `main`.
pub fn main() -> ExitCode {
    // A closed pipe ends the program quietly, as it does other command line tools, instead of a
    // panic on the next print. Rust starts programs with SIGPIPE ignored.
    // SAFETY: restoring a signal's default disposition before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let args: Vec<OsString> = std::env::args_os().collect();
    let parsed = match args.get(1) {
        Some(first) if first == "run" => crate::parse::run(&args[2..]),
        _ => None,
    };
    let done = full().and_then(|full| match parsed {
        Some(run) => crate::exec::run(run, &full),
        None => Err(hand_over(&full, &args)),
    });
    done.unwrap_or_else(|error| {
        eprintln!("prefetch: {}", crate::one_line(&error));
        ExitCode::FAILURE
    })
}

/// The full command line next to this executable.
fn full() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the prefetch executable")?;
    Ok(exe.with_file_name(FULL))
}

/// Replaces this process with the full command line given `args`; returns only why it could not.
fn hand_over(full: &std::path::Path, args: &[OsString]) -> anyhow::Error {
    let mut command = Command::new(full);
    if let Some(name) = args.first() {
        command.arg0(name);
    }
    let error = command.args(args.iter().skip(1)).exec();
    anyhow::Error::new(error).context(format!(
        "cannot run {} (installed next to prefetch)",
        full.display()
    ))
}
