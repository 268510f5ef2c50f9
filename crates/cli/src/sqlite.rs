//! `prefetch sqlite ...` and `prefetch bench sqlite`: thin wrappers over the `sqlite` crate (paper s5.4).
//! `gen` writes the TPC-C-like data set with a progress bar; `query` runs one query once (the process that
//! `bench sqlite` measures); `bench` compares stock SQLite with SQLite plus the prefetch extension.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

/// `prefetch sqlite` subcommands.
#[derive(Subcommand)]
pub enum SqliteCommand {
    /// Generate the TPC-C-like customer database of paper section 5.4 (4 KiB pages, index on c_zip).
    Gen(GenArgs),
    /// Run one query once and print its elapsed time and row count (what `bench sqlite` measures).
    Query(QueryArgs),
}

/// Arguments of `prefetch sqlite gen`.
#[derive(Args)]
pub struct GenArgs {
    /// Number of customer rows (about 600 bytes each; 1,700,000 rows make about 1 GiB).
    #[arg(long)]
    rows: u64,
    /// Database file to create (must not exist).
    #[arg(long)]
    out: PathBuf,
    /// Seed of the random source.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Arguments of `prefetch sqlite query`.
#[derive(Args)]
pub struct QueryArgs {
    /// Database file.
    #[arg(long)]
    db: PathBuf,
    /// SQL to run (default: the paper's query).
    #[arg(long, default_value = ::bench::sqlite::PAPER_QUERY)]
    sql: String,
    /// Load this SQLite extension first (target/release/libprefetch_sqlite.so after `make release`,
    /// PREFIX/lib/libprefetch_sqlite.so after `make install`; `.so` may be left out).
    #[arg(long)]
    ext: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    /// Open the database with `prefetch_scan=whole` (with --ext): on a seek-bound disk, a small table's
    /// full scan without LIMIT is listed to its index's end at once.
    #[arg(long, requires = "ext")]
    whole_scans: bool,
}

/// Runs a `prefetch sqlite` subcommand.
pub fn run(command: SqliteCommand) -> Result<()> {
    match command {
        SqliteCommand::Gen(args) => gen(&args),
        SqliteCommand::Query(args) => query(&args),
    }
}

/// Bytes a generated row takes at least, its share of the `c_zip` index included (1,700,000
/// rows make about 1 GiB): the free-space check below never refuses a database that would fit.
const MIN_BYTES_PER_ROW: u64 = 600;

/// Refuses `--rows` whose database cannot fit in the free space of `--out`'s directory.
fn check_room(args: &GenArgs) -> Result<()> {
    let dir = match args.out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "directory {} does not exist: create it or give another --out",
            dir.display()
        );
    }
    let free = ::bench::room::free_disk(dir)
        .with_context(|| format!("free space of {} (the --out directory)", dir.display()))?;
    let needed = args.rows.saturating_mul(MIN_BYTES_PER_ROW);
    if needed > free {
        bail!(
            "--rows {} needs at least {} but {} has {} free: choose fewer --rows (about {} fit) or another --out",
            args.rows,
            ::bench::size::format_bytes(needed),
            dir.display(),
            ::bench::size::format_bytes(free),
            free / MIN_BYTES_PER_ROW
        );
    }
    Ok(())
}

fn gen(args: &GenArgs) -> Result<()> {
    check_room(args)?;
    let bar = ProgressBar::new(args.rows).with_style(ProgressStyle::with_template(
        "{elapsed_precise} [{bar:40}] {pos}/{len} rows ({per_sec}, eta {eta})",
    )?);
    let opts = prefetch_sqlite::gen::GenOptions {
        rows: args.rows,
        seed: args.seed,
    };
    let bytes = prefetch_sqlite::gen::generate(&args.out, &opts, |n| bar.set_position(n))?;
    bar.finish();
    println!(
        "wrote {} rows to {} ({:.1} MiB, {} pages of {} bytes)",
        args.rows,
        args.out.display(),
        bytes as f64 / (1 << 20) as f64,
        bytes / u64::from(prefetch_sqlite::gen::PAGE_SIZE),
        prefetch_sqlite::gen::PAGE_SIZE
    );
    Ok(())
}

/// `db` if it is a file, or an error saying what to pass instead.
fn database_file(db: &Path) -> Result<&Path> {
    if db.is_dir() {
        bail!(
            "{} is a directory: pass --db the database file that `prefetch sqlite gen` wrote",
            db.display()
        );
    }
    if !db.is_file() {
        bail!(
            "{} does not exist: create it with `prefetch sqlite gen --rows N --out {}`",
            db.display(),
            db.display()
        );
    }
    Ok(db)
}

/// `ext` if it names an existing file with or without `.so` (as SQLite looks it up), or an error
/// saying where the extension is.
fn extension_file(ext: &Path) -> Result<&Path> {
    let with_suffix = PathBuf::from(format!("{}.so", ext.display()));
    if !ext.is_file() && !with_suffix.is_file() {
        bail!(
            "the SQLite extension {} does not exist: pass --ext target/release/libprefetch_sqlite.so \
             (built by `make release`) or PREFIX/lib/libprefetch_sqlite.so (after `make install`)",
            ext.display()
        );
    }
    Ok(ext)
}

fn query(args: &QueryArgs) -> Result<()> {
    let ext = args.ext.as_deref().map(extension_file).transpose()?;
    let db = database_file(&args.db)?;
    let run = ::bench::sqlite::run_query(db, &args.sql, ext, args.whole_scans)
        .with_context(|| format!("querying {}", db.display()))?;
    if args.json {
        println!("{}", serde_json::to_string(&run)?);
    } else {
        println!("{} rows in {:.3} s", run.rows, run.seconds);
    }
    Ok(())
}

/// `prefetch bench sqlite`.
pub mod bench {
    use ::bench::sqlite::{BenchOptions, Setting, EXTENSION_FILE};
    use anyhow::{Context, Result};
    use clap::Args;
    use std::path::{Path, PathBuf};

    use super::{database_file, extension_file};

    /// Arguments of `prefetch bench sqlite`.
    #[derive(Args)]
    pub struct BenchArgs {
        /// Database made by `prefetch sqlite gen`.
        #[arg(long)]
        db: PathBuf,
        /// Settings to measure: disk (this machine's disk), cgroup (memory limit of a quarter of the
        /// database), emulated (the emulated 7200 RPM disk of `prefetch emulate`); and where the extension
        /// must cost nothing (on a copy of the database): warm, warm-reclaimed (one page in 200 dropped from
        /// the cache before each run, as the kernel reclaims an idle file), wal-writer, delete.
        #[arg(long, value_delimiter = ',', default_value = "disk,cgroup")]
        settings: Vec<Setting>,
        /// Runs per variant (at least); the median is reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// More alternated runs past --runs until the stock runs add up to this many seconds, so that a
        /// short query's median (and the 95% interval of its ratio) rests on enough runs.
        #[arg(long, default_value_t = 3.0)]
        min_seconds: f64,
        /// The most runs per variant --min-seconds may ask for.
        #[arg(long, default_value_t = 41)]
        max_runs: usize,
        /// The extension to load (default: libprefetch_sqlite.so next to this binary, or in ../lib
        /// beside its bin/ directory after `make install`).
        #[arg(long)]
        ext: Option<PathBuf>,
        /// SQL to run.
        #[arg(long, default_value = ::bench::sqlite::PAPER_QUERY)]
        sql: String,
        /// Measure the queries of this file instead (one a line; `--` starts a comment line), each stock
        /// against the extension with identical rows checked, in the settings disk, cgroup, emulated or
        /// warm (the database in the page cache).
        #[arg(long, conflicts_with = "sql")]
        queries: Option<PathBuf>,
        /// Memory limit of the cgroup setting, in bytes (default: a quarter of the database).
        #[arg(long)]
        cgroup_bytes: Option<u64>,
        /// Wall seconds per emulated second on the emulated disk (as `prefetch emulate --time-scale`).
        #[arg(long, default_value_t = 1.0)]
        time_scale: f64,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// The extension's connections open the database with `prefetch_scan=whole`: on a seek-bound
        /// disk, a small table's full scan without LIMIT is listed to its index's end at once.
        #[arg(long)]
        whole_scans: bool,
    }

    /// The extension of an installed `prefetch` (PREFIX/bin/prefetch and PREFIX/lib/), or the one
    /// next to the binary in the build tree.
    fn installed_extension(exe: &Path) -> Result<PathBuf> {
        let bin = exe
            .parent()
            .context("this program's path has no directory")?;
        let installed = bin.join("../lib").join(EXTENSION_FILE);
        if installed.is_file() {
            return Ok(installed);
        }
        ::bench::sqlite::extension_next_to(exe)
    }

    /// Runs `prefetch bench sqlite` and prints its table (or JSON).
    pub fn run(args: BenchArgs) -> Result<()> {
        let exe = std::env::current_exe().context("finding this program's own path")?;
        let ext = match args.ext {
            Some(ext) => extension_file(&ext)?.to_path_buf(),
            None => installed_extension(&exe)?,
        };
        let opts = BenchOptions {
            db: database_file(&args.db)?.to_path_buf(),
            ext,
            sql: args.sql,
            runs: args.runs,
            min_seconds: args.min_seconds,
            max_runs: args.max_runs,
            runner: exe,
            cgroup_bytes: args.cgroup_bytes,
            time_scale: args.time_scale,
            whole_scans: args.whole_scans,
        };
        if let Some(file) = &args.queries {
            let queries = ::bench::sqlite_queries::read_queries(file)?;
            let log = |line: &str| eprintln!("{line}");
            let rows = ::bench::sqlite_queries::run(&opts, &queries, &args.settings, log)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                print!("{}", ::bench::sqlite_queries::table(&rows));
            }
            return Ok(());
        }
        let report = ::bench::sqlite::run(&opts, &args.settings, |line| eprintln!("{line}"))?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{}", report.table());
        }
        Ok(())
    }
}
