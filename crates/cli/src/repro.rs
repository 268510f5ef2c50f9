//! `prefetch repro PAPER`: reproduce a paper's simulation experiments, writing tables and SVG
//! figures. Each paper is one line of [`REPROS`]; its function calls the crate and prints.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::builder::PossibleValuesParser;
use clap::Args;

/// Where a reproduction reads and writes.
pub struct Dirs {
    /// The reference traces.
    pub traces: PathBuf,
    /// The output directory.
    pub out: PathBuf,
}

impl Dirs {
    /// The reference trace directory, or an error saying where the traces live.
    pub fn existing_traces(&self) -> anyhow::Result<&Path> {
        anyhow::ensure!(
            self.traces.is_dir(),
            "no reference traces in {}: pass --traces DIR, the traces/ folder of the libprefetch \
             repository (its README.md lists where each trace comes from)",
            self.traces.display()
        );
        Ok(&self.traces)
    }
}

/// A reproducible paper.
pub struct Repro {
    /// Name on the command line.
    pub name: &'static str,
    /// Runs it.
    pub run: fn(&Dirs) -> anyhow::Result<()>,
}

impl Repro {
    /// A table entry: `name` on the command line runs `run`.
    const fn new(name: &'static str, run: fn(&Dirs) -> anyhow::Result<()>) -> Self {
        Repro { name, run }
    }
}

/// Every reproduction; adding a paper is one line here.
pub const REPROS: &[Repro] = &[
    Repro::new("cao", cao),
    Repro::new("dulo", crate::repro_disk::dulo),
    Repro::new("libprefetch", crate::repro_disk::libprefetch),
    Repro::new("competitive", crate::repro_competitive::run),
];

/// Arguments of `prefetch repro`.
#[derive(Args, Debug)]
pub struct ReproArgs {
    /// Which paper's experiments to run
    #[arg(value_parser = PossibleValuesParser::new(REPROS.iter().map(|r| r.name)))]
    paper: String,
    /// Directory of the reference traces [default: traces/ in the repository this binary was built from]
    #[arg(long)]
    traces: Option<PathBuf>,
    /// Output directory [default: target/repro/PAPER in the repository]
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The repository root this binary was built from.
pub fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// Runs `prefetch repro`.
pub fn run(args: ReproArgs) -> anyhow::Result<()> {
    let repro = REPROS
        .iter()
        .find(|r| r.name == args.paper)
        .context("unknown paper")?;
    let dirs = Dirs {
        traces: args.traces.unwrap_or_else(|| repo_root().join("traces")),
        out: args
            .out
            .unwrap_or_else(|| repo_root().join("target/repro").join(repro.name)),
    };
    (repro.run)(&dirs)
}

/// The list of files a reproduction wrote, printed after its summary.
pub fn wrote<'a>(files: impl IntoIterator<Item = &'a PathBuf>) -> String {
    let mut text = "\nwrote:\n".to_string();
    for file in files {
        text += &format!("  {}\n", file.display());
    }
    text
}

/// Cao et al.'s Figure 3 and model comparison on the reference traces.
fn cao(dirs: &Dirs) -> anyhow::Result<()> {
    let report = ::sim::repro::cao::run(dirs.existing_traces()?, &dirs.out)
        .with_context(|| format!("prefetch repro cao --traces {}", dirs.traces.display()))?;
    crate::sim::emit(&(report.summary + &wrote(&report.files)))
}
