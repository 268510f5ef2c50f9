//! `prefetch repro dulo` and `prefetch repro libprefetch`: the disk-timed reproductions of
//! crate `sim` (`sim::disksim::experiments`). Prints the tables, lists the files written, and
//! rewrites this reproduction's section of `docs/repro.md` (other sections are left alone).

use std::path::{Path, PathBuf};

use anyhow::Context;
use sim::disksim::experiments::{self, Report};

use crate::repro::Dirs;

/// `docs/repro.md` of the repository this binary was built from.
fn repro_doc() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/repro.md")
}

fn publish(report: &Report, heading: &str) -> anyhow::Result<()> {
    print!("{}", report.summary);
    let doc = repro_doc();
    experiments::write_section(&doc, heading, &report.section)
        .with_context(|| format!("writing section `{heading}` of {}", doc.display()))?;
    println!("\nwrote:");
    for file in report.files.iter().chain([&doc]) {
        println!("  {}", file.display());
    }
    Ok(())
}

/// DULO against CLOCK on the mixed traces and synthetic ones, with sensitivity tables.
pub fn dulo(dirs: &Dirs) -> anyhow::Result<()> {
    let setup = experiments::dulo::Setup::new(&dirs.traces, &dirs.out);
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
