//! `prefetch repro NAME`: reproduce a paper's simulation experiments, writing tables and SVG
//! figures. Only dispatches: the experiments are `sim::experiment::EXPERIMENTS`, which return
//! their files as data; this looks the name up, shows progress, prints the report, writes its
//! files into the output directory, and rewrites the experiment's section of `docs/repro.md`
//! when it has one.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::builder::PossibleValuesParser;
use clap::Args;
use sim::experiment::{Content, Entry, Report, Setup, EXPERIMENTS};

use crate::sim::emit;

/// Arguments of `prefetch repro`.
#[derive(Args, Debug)]
pub struct ReproArgs {
    /// Which paper's experiments to run
    #[arg(value_parser = PossibleValuesParser::new(EXPERIMENTS.iter().map(|e| e.name)))]
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
    let entry = EXPERIMENTS
        .iter()
        .find(|e| e.name == args.paper)
        .context("unknown paper")?;
    let traces = args.traces.unwrap_or_else(|| repo_root().join("traces"));
    anyhow::ensure!(
        !entry.needs_traces || traces.is_dir(),
        "no reference traces in {}: pass --traces DIR, the traces/ folder of the libprefetch \
         repository (its README.md lists where each trace comes from)",
        traces.display()
    );
    let out = args
        .out
        .unwrap_or_else(|| repo_root().join("target/repro").join(entry.name));
    let bar = match std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        true => indicatif::ProgressBar::new(0),
        false => indicatif::ProgressBar::hidden(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .context("progress style")?,
    );
    let progress = |done: u64, total: u64, what: &str| {
        bar.set_length(total);
        bar.set_position(done);
        bar.set_message(what.to_string());
    };
    let setup = Setup {
        traces: &traces,
        progress: &progress,
    };
    let report = entry.experiment.run(&setup).with_context(|| {
        format!(
            "prefetch repro {} --traces {}",
            entry.name,
            traces.display()
        )
    })?;
    bar.finish_and_clear();
    publish(entry, &report, &out)
}

/// Prints the report's summary, writes its files into `out`, rewrites its section of the
/// repository's `docs/repro.md` (other sections are left alone), and lists the files written.
fn publish(entry: &Entry, report: &Report, out: &Path) -> anyhow::Result<()> {
    emit(&report.summary)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut files = Vec::new();
    for output in &report.outputs {
        let path = out.join(&output.name);
        write_output(&path, &output.content)?;
        files.push(path);
    }
    let doc = repo_root().join("docs/repro.md");
    if let Some(heading) = entry.doc_heading {
        write_section(&doc, heading, &report.section)
            .with_context(|| format!("writing section `{heading}` of {}", doc.display()))?;
        files.push(doc);
    }
    let mut text = "\nwrote:\n".to_string();
    for file in files {
        text += &format!("  {}\n", file.display());
    }
    emit(&text)
}

/// Writes one file of a reproduction: text as is, a figure as SVG.
fn write_output(path: &Path, content: &Content) -> anyhow::Result<()> {
    match content {
        Content::Text(text) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
        }
        Content::Figure(panels) => Ok(sim::report::draw(path, panels)?),
    }
}

/// Replaces the section `## heading` of the Markdown file `doc` with `body`, or appends it;
/// other sections are left byte for byte.
fn write_section(doc: &Path, heading: &str, body: &str) -> anyhow::Result<()> {
    let old = match std::fs::read_to_string(doc) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e.into()),
    };
    let new = sim::disksim::experiments::replace_section(&old, heading, body);
    Ok(std::fs::write(doc, new)?)
}
