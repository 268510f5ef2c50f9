//! `prefetch repro dulo` and `prefetch repro libprefetch`: the disk-timed reproductions of
//! crate `sim` (`sim::disksim::experiments`). Prints the tables, lists the files written, and
//! rewrites this reproduction's section of `docs/repro.md` (other sections are left alone).

use anyhow::Context;
use sim::disksim::experiments::{self, Report};

use crate::repro::{repo_root, wrote, Dirs};
use crate::sim::emit;

/// Prints the report's summary, rewrites its section `heading` of the repository's
/// `docs/repro.md`, and lists the files written.
fn publish(report: &Report, heading: &str) -> anyhow::Result<()> {
    emit(&report.summary)?;
    let doc = repo_root().join("docs/repro.md");
    experiments::write_section(&doc, heading, &report.section)
        .with_context(|| format!("writing section `{heading}` of {}", doc.display()))?;
    emit(&wrote(report.files.iter().chain([&doc])))
}

/// DULO against CLOCK on the mixed traces and synthetic ones, with sensitivity tables.
pub fn dulo(dirs: &Dirs) -> anyhow::Result<()> {
    let setup = experiments::dulo::Setup::new(dirs.existing_traces()?, &dirs.out);
    let report = experiments::dulo::run(&setup)
        .with_context(|| format!("prefetch repro dulo --traces {}", dirs.traces.display()))?;
    publish(&report, "DULO")
}

/// libprefetch's Figures 2 and 3 on the simulated disk.
pub fn libprefetch(dirs: &Dirs) -> anyhow::Result<()> {
    let setup = experiments::libprefetch::Setup::new(&dirs.out);
    let report = experiments::libprefetch::run(&setup).context("prefetch repro libprefetch")?;
    publish(&report, "libprefetch reorder buffer and infill (simulated)")
}
