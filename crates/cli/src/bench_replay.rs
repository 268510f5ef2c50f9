//! `prefetch bench replay`: parses the options, runs `bench::replay` (the stock `sqlite3` shell
//! recorded, plain and replayed on a cold cache), prints its table.
//!
//! Follows libprefetch (ATC 2009) section 5.4 through crate bench.

use std::path::PathBuf;

use ::bench::replay::{self, ReplayBench, Where};
use anyhow::Result;
use clap::{Args, ValueEnum};

/// Where the runs read the database.
#[derive(Clone, Copy, ValueEnum)]
pub enum Setting {
    /// The emulated 7200 RPM disk (`prefetch emulate --model st3500320as`)
    Emulated,
    /// This machine's disk, inside a memory cgroup of a quarter of the database
    Cgroup,
}

/// Options of `prefetch bench replay`.
#[derive(Args)]
pub struct ReplayArgs {
    /// Database made by `prefetch sqlite gen`
    #[arg(long)]
    db: PathBuf,
    /// Where to read it
    #[arg(long, value_enum, default_value = "emulated")]
    setting: Setting,
    /// SQL the sqlite3 shell runs
    #[arg(long, default_value = ::bench::sqlite::PAPER_QUERY)]
    sql: String,
    /// The libprefetch.so to preload [default: as `prefetch run` finds it]
    #[arg(long, value_name = "PATH")]
    library: Option<PathBuf>,
}

/// Runs the three cold runs and prints their table.
pub fn run(args: ReplayArgs) -> Result<()> {
    let bench = ReplayBench {
        db: args.db,
        setting: match args.setting {
            Setting::Emulated => Where::Emulated,
            Setting::Cgroup => Where::Cgroup,
        },
        sql: args.sql,
        library: match args.library {
            Some(path) => path,
            None => launch::exec::find_library()?,
        },
        prefetch: std::env::current_exe()?,
    };
    let report = replay::run(&bench)?;
    print!("{}", replay::table(&bench, &report));
    Ok(())
}
