//! `prefetch run` and `prefetch record`: run an unmodified program with the
//! read interposers (`libprefetch.so`) preloaded, the policy chosen through
//! the environment the library reads when it is loaded (`LD_PRELOAD`, with
//! the library prepended, and the variables of `libprefetch::variables`
//! that the options set: `--replay`, `--competitive`, `--cache-budget`,
//! `--cache-policy`, `--no-children`, `record -o` and `--rereads-after`;
//! `prefetch run --help` lists them all), plus the client tunables of
//! docs/api.md ("Environment"), passed through as set.
//!
//! **The program replaces `prefetch`** (`execvp`, as `env`, `nice` and
//! `taskset` do): there is no supervising parent, so the exit status, a
//! death by signal (and its core dump), the process id, the terminal's job
//! control and the signals sent to the program are exactly the program's.
//! Only if the program cannot be started does `prefetch` itself exit: 127
//! when it is not found, 126 when it cannot be executed, as a shell does.
//!
//! `--restore` alone (none of the library's options, no `--library`) runs the program without
//! the library: the restore runs beside it (`restore_beside.rs`), and the interposers, with no
//! policy to follow, would only cost it their calls.
//!
//! Children inherit the environment, and with it the library and its
//! policy, exec'd ones included; with `--no-children` the library, once
//! loaded into the program, takes itself and its variables out of the
//! program's environment, so programs it executes run without it (a
//! `fork` without `exec` is the same program and keeps it).
//!
//! Follows libprefetch (ATC 2009), section 4: the interposed read family
//! is how the library follows an application's reads; `--competitive`
//! follows TR840 section 3 (`docs/competitive.md`).
//! Deviations: the paper's applications linked the library and called its
//! API; here the program is unmodified and the access list comes from a
//! recording (`docs/record.md`).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use clap::Args;
use libprefetch::variables;
use plan::recording::PartReader;

/// The library file name (the cdylib of crate `preload`).
const LIBRARY: &str = "libprefetch.so";

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

/// `prefetch run`: replaces this process with the program.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let mut variables = Vec::new();
    if let Some(recording) = &args.replay {
        let path = absolute(recording)?;
        check_recording(&path)?;
        variables.push((variables::REPLAY.name, path.into_os_string()));
    }
    if args.competitive {
        variables.push((variables::COMPETITIVE.name, "1".into()));
    }
    if let Some(bytes) = args.cache_budget {
        if bytes == 0 {
            bail!("--cache-budget 0 keeps nothing: give a size above 0, such as 64M");
        }
        variables.push((variables::CACHE_BUDGET.name, bytes.to_string().into()));
        variables.push((variables::CACHE_POLICY.name, args.cache_policy.into()));
        if args.cache_writeback {
            variables.push((variables::CACHE_WRITEBACK.name, "1".into()));
        }
    }
    // `--restore` alone leaves the library out: it would have no policy to follow, and its
    // interposers cost `git grep` 2.6 ms of CPU a run (8.8 ms warm without, 11.4 ms with).
    let preload = args.restore.is_none() || !variables.is_empty() || args.common.library.is_some();
    if let Some(path) = &args.restore {
        crate::restore_beside::start(path).context("--restore")?;
    }
    exec(&args.common, variables, preload)
}

/// `prefetch record`: starts the recording file, runs the program, whose
/// processes append to it, beside the page-cache tracepoint where the
/// machine allows it (`record.rs`), and says what each method saw.
pub fn record(args: RecordArgs) -> Result<ExitCode> {
    let path = absolute(&args.output)?;
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
    let command = command(&args.common, variables, true)?;
    crate::record::run(command, &path, !args.no_tracepoint)
}

/// Execs the command with `variables` set and, if `preload`, the library preloaded; returns only
/// if it could not be started.
fn exec(common: &CommonArgs, variables: Vec<(&str, OsString)>, preload: bool) -> Result<ExitCode> {
    let mut command = command(common, variables, preload)?;
    let error = command.exec();
    Ok(crate::record::cannot_run(command.get_program(), &error))
}

/// The command with `variables` set and, if `preload`, the library preloaded.
fn command(
    common: &CommonArgs,
    variables: Vec<(&str, OsString)>,
    preload: bool,
) -> Result<Command> {
    let (program, arguments) = common.command.split_first().expect("clap requires CMD");
    let mut command = Command::new(program);
    command.args(arguments).envs(variables);
    if !preload {
        return Ok(command);
    }
    let library = match &common.library {
        Some(path) => absolute(path)?,
        None => find_library()?,
    };
    check_library(&library)?;
    command.env("LD_PRELOAD", preload_list(&library));
    if common.no_children {
        command.env(variables::NO_CHILDREN.name, "1");
    }
    Ok(command)
}

/// Fails with one line unless `library` is a shared object the dynamic loader would preload into
/// a program of this machine: an ELF `ET_DYN` file of the same class, byte order and machine as
/// this executable (the loader ignores any other with a warning, and the program would run without
/// the library). Read by hand: twenty bytes of the ELF header.
fn check_library(library: &Path) -> Result<()> {
    let fix = "give the path of libprefetch.so with --library";
    if !library.is_file() {
        bail!("{} is not a file: {fix}", library.display());
    }
    let header = |path: &Path| -> Option<[u8; 20]> {
        let mut bytes = [0; 20];
        std::io::Read::read_exact(&mut std::fs::File::open(path).ok()?, &mut bytes).ok()?;
        Some(bytes)
    };
    let ours = header(Path::new("/proc/self/exe"));
    match header(library) {
        Some(theirs)
            if theirs[..4] == *b"\x7fELF"
                && u16::from_ne_bytes([theirs[16], theirs[17]]) == 3
                && ours.is_none_or(|ours| {
                    ours[4..6] == theirs[4..6] && ours[18..20] == theirs[18..20]
                }) =>
        {
            Ok(())
        }
        _ => bail!(
            "{} is not a shared library for this machine (ELF, {}): {fix}",
            library.display(),
            std::env::consts::ARCH
        ),
    }
}

/// `library` ahead of whatever `LD_PRELOAD` already holds.
fn preload_list(library: &Path) -> OsString {
    let mut list = library.as_os_str().to_os_string();
    if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        list.push(":");
        list.push(existing);
    }
    list
}

/// The library next to this executable (a build tree: `target/debug/`, or
/// its `deps/`), or in `../lib` (an installation: `bin/` and `lib/`).
pub(crate) fn find_library() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the prefetch executable")?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [
        dir.join(LIBRARY),
        dir.join("../lib").join(LIBRARY),
        dir.join("deps").join(LIBRARY),
    ];
    match candidates.iter().find(|path| path.is_file()) {
        Some(found) => Ok(found.canonicalize().unwrap_or_else(|_| found.clone())),
        None => bail!(
            "cannot find {LIBRARY} next to {} or in ../lib: give its path with --library",
            exe.display()
        ),
    }
}

/// `path` made absolute (the program's processes may change directory).
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("bad path {}", path.display()))
}

/// Fails with one line if `path` is not a readable recording: a regular
/// file (checked before it is opened: a FIFO would block, a device never
/// end) that starts with a recording's header. Its parts are read by the
/// replay beside the program, which says in one line if one is bad and
/// runs the program without it: reading them here, in front of the
/// program, cost every run time in proportion to the recording (1.3 ms for
/// `git grep`'s 170 KB), however little of it the program replays.
fn check_recording(path: &Path) -> Result<()> {
    let not_one = || {
        format!(
            "{} is not a recording of `prefetch record -o FILE`",
            path.display()
        )
    };
    let metadata = std::fs::metadata(path)
        .with_context(|| format!("cannot read the recording {}", path.display()))?;
    if !metadata.is_file() {
        bail!("{}: not a regular file", not_one());
    }
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the recording {}", path.display()))?;
    PartReader::new(std::io::BufReader::new(file)).with_context(not_one)?;
    Ok(())
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}
