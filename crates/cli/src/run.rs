//! `prefetch run` and `prefetch record` as the full command line parses them (clap): their
//! options, with the help `prefetch run --help` prints, and what they do. The launch itself (the
//! environment, the library's checks, the restorer, the exec) is crate `launch`'s, which the small
//! `prefetch` front runs for the command lines it parses alone: the options set the variables of
//! `libprefetch::variables` (`--replay`, `--competitive`, `--cache-budget`, `--cache-policy`,
//! `--no-children`, `record -o` and `--rereads-after`; `prefetch run --help` lists them all),
//! plus the client tunables of docs/api.md ("Environment"), passed through as set.
//!
//! Children inherit the environment, and with it the library and its
//! policy, exec'd ones included; with `--no-children` the library, once
//! loaded into the program, takes itself and its variables out of the
//! program's environment, so programs it executes run without it (a
//! `fork` without `exec` is the same program and keeps it).
//!
//! Follows libprefetch (ATC 2009), section 4, through crate `launch`;
//! `--competitive` follows TR840 section 3 (`docs/competitive.md`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use libprefetch::variables;

/// Options of `prefetch run`.
#[derive(Args)]
pub struct RunArgs {
    /// Prefetch what this recording (written by `prefetch record`) says the program will read
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// Read back the missing pages of this snapshot (written by `prefetch snapshot`) beside the
    /// program, which starts at once; the restore stops when the program ends. Alone (without
    /// --replay, --competitive, --cache-budget or --library) the program runs without the library
    #[arg(long, value_name = "SNAPSHOT")]
    restore: Option<PathBuf>,
    /// Prefetch ahead of sequential and strided readers by their device's competitive depth
    /// (cost per request x transfer rate, from `prefetch device measure` or `prefetch emulate`)
    #[arg(long)]
    competitive: bool,
    /// Keep the pages the program reads within SIZE, dropping them (clean ones only) in the
    /// --cache-policy order before the kernel must evict (docs/cache-budget.md)
    #[arg(long, value_name = "SIZE", value_parser = ::bench::size::parse_size)]
    cache_budget: Option<u64>,
    /// The order pages leave the budget in: DULO's (long sequential runs first, random pages
    /// kept), LRU, CLOCK, or sequential runs dropped behind the reader
    #[arg(long, value_name = "NAME", requires = "cache_budget", default_value = "dulo",
          value_parser = clap::builder::PossibleValuesParser::new(plan::evict::POLICIES))]
    cache_policy: String,
    /// Start the writeback of the written pages the budget lets go (sync_file_range), so that
    /// they can be dropped once clean instead of filling the memory until the kernel writes
    /// them; the data reaches the disk sooner, in the same bytes
    #[arg(long, requires = "cache_budget")]
    cache_writeback: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// Options of `prefetch record`.
#[derive(Args)]
pub struct RecordArgs {
    /// Write the recording here (replaced if it exists)
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Also list a page read again after more than SIZE of page reads since its previous read
    /// (for a replay under less memory than the recording had) [default: first reads only]
    #[arg(long, value_name = "SIZE", value_parser = ::bench::size::parse_size)]
    rereads_after: Option<u64>,
    /// Record only with the interposers and mincore of mappings, even where the kernel's
    /// page-cache tracepoint is available (docs/record.md)
    #[arg(long)]
    no_tracepoint: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// What `run` and `record` share.
#[derive(Args)]
struct CommonArgs {
    /// Programs the command executes run without the library
    #[arg(long)]
    no_children: bool,
    /// The libprefetch.so to preload [default: next to `prefetch`, or in ../lib]
    #[arg(long, value_name = "PATH")]
    library: Option<PathBuf>,
    /// The program and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

/// What `prefetch run --help` says of the environment: every variable of
/// the table (`libprefetch::variables`).
pub fn environment_help() -> String {
    format!(
        "Environment (the options above set the library's own; the others pass through as set):\n{}",
        variables::table()
    )
}

/// `prefetch run`: replaces this process with the program (`launch::exec::run`; a restorer
/// stepping out of a memory cgroup executes this executable afresh).
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let run = launch::args::Run {
        replay: args.replay,
        restore: args.restore,
        competitive: args.competitive,
        cache_budget: args.cache_budget,
        cache_policy: args.cache_policy,
        cache_writeback: args.cache_writeback,
        common: args.common.into(),
    };
    launch::exec::run(run, Path::new("/proc/self/exe"))
}

impl From<CommonArgs> for launch::args::Common {
    fn from(args: CommonArgs) -> launch::args::Common {
        launch::args::Common {
            no_children: args.no_children,
            library: args.library,
            command: args.command,
        }
    }
}

/// `prefetch record`: starts the recording file, runs the program, whose
/// processes append to it, beside the page-cache tracepoint where the
/// machine allows it (`record.rs`), and says what each method saw.
pub fn record(args: RecordArgs) -> Result<ExitCode> {
    let path = launch::exec::absolute(&args.output)?;
    let rereads_after = args
        .rereads_after
        .map_or(0, |bytes| bytes.div_ceil(page_size()));
    let header = plan::recording::header(page_size(), rereads_after);
    std::fs::write(&path, header)
        .with_context(|| format!("cannot write the recording {}", path.display()))?;
    let variables = vec![
        (variables::RECORD.name, path.clone().into_os_string()),
        (
            variables::RECORD_REREADS.name,
            rereads_after.to_string().into(),
        ),
    ];
    let command = launch::exec::command(&args.common.into(), variables, true)?;
    crate::record::run(command, &path, !args.no_tracepoint)
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}
