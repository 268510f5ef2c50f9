//! `prefetch run`: runs an unmodified program with the read interposers
//! (`libprefetch.so`) preloaded, the policy chosen through the environment
//! the library reads when it is loaded (`LD_PRELOAD`, with the library
//! prepended, and the variables of `libprefetch::variables` that the
//! options set), plus the client tunables of docs/api.md ("Environment"),
//! passed through as set.
//!
//! **The program replaces `prefetch`** (`execvp`, as `env`, `nice` and
//! `taskset` do): there is no supervising parent, so the exit status, a
//! death by signal (and its core dump), the process id, the terminal's job
//! control and the signals sent to the program are exactly the program's.
//! Only if the program cannot be started does `prefetch` itself exit: 127
//! when it is not found, 126 when it cannot be executed, as a shell does.
//!
//! `--restore` alone (none of the library's options, no `--library`) runs the program without
//! the library: the restore runs beside it (`restorer.rs`), and the interposers, with no
//! policy to follow, would only cost it their calls.
//!
//! Follows libprefetch (ATC 2009), section 4: the interposed read family
//! is how the library follows an application's reads.
//! Deviations: the paper's applications linked the library and called its
//! API; here the program is unmodified and the access list comes from a
//! recording (`docs/record.md`).

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use libprefetch::variables;
use plan::recording::PartReader;

use crate::args::{Common, Run};

/// The library file name (the cdylib of crate `preload`).
const LIBRARY: &str = "libprefetch.so";

/// `prefetch run`: replaces this process with the program; `full` is the full command line's
/// executable, which the restorer of `--restore` executes.
pub fn run(args: Run, full: &Path) -> Result<ExitCode> {
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
        crate::restorer::start(path, full).context("--restore")?;
    }
    let mut command = command(&args.common, variables, preload)?;
    let error = command.exec();
    Ok(cannot_run(command.get_program(), &error))
}

/// The exit of a `prefetch` whose program could not be started: one line, and 127 if it was
/// not found, 126 otherwise, as a shell's.
pub fn cannot_run(program: &OsStr, error: &std::io::Error) -> ExitCode {
    let program = Path::new(program).display();
    eprintln!("prefetch: cannot run {program}: {error}");
    ExitCode::from(match error.kind() {
        std::io::ErrorKind::NotFound => 127,
        _ => 126,
    })
}

/// The command with `variables` set and, if `preload`, the library preloaded.
pub fn command(
    common: &Common,
    variables: Vec<(&str, OsString)>,
    preload: bool,
) -> Result<Command> {
    let (program, arguments) = common.command.split_first().context("no program to run")?;
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
pub fn find_library() -> Result<PathBuf> {
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
pub fn absolute(path: &Path) -> Result<PathBuf> {
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
