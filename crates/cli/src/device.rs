//! `prefetch device`: the measured profile of the device holding a file (far and near request
//! costs and transfer rate, `libprefetch::profile`), from which the library takes its infill gap
//! and how fast its window grows.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum DeviceCommand {
    /// Measure the device holding FILE (O_DIRECT reads of FILE, nothing written to it) and store its profile
    /// for the library, which then fills gaps between prefetched pages only where that pays on it
    Measure {
        /// A file of at least 64 MiB on the device (read, never written)
        file: PathBuf,
    },
    /// Print the stored profile of the device holding FILE
    Show {
        /// Any file on the device
        file: PathBuf,
    },
}

pub fn run(command: DeviceCommand) -> Result<()> {
    match command {
        DeviceCommand::Measure { file } => {
            let (measured, saved) = ::bench::device_profile::measure_and_save(&file)
                .with_context(|| format!("measuring the device of {}", file.display()))?;
            print_profile(&measured);
            println!("saved in {}", saved.display());
        }
        DeviceCommand::Show { file } => match ::bench::device_profile::stored(&file)? {
            Some((profile, stale)) => {
                print_profile(&profile);
                if let Some(reason) = stale {
                    println!(
                        "stale: {reason}; the library does not use it \
                         (`prefetch device measure {}` measures it again)",
                        file.display()
                    );
                }
            }
            None => println!(
                "no profile for the device of {}: the library fills no gaps there \
                 (`prefetch device measure {}` measures it)",
                file.display(),
                file.display()
            ),
        },
    }
    Ok(())
}

fn print_profile(profile: &libprefetch::profile::DeviceProfile) {
    const PAGE: u64 = 4096;
    println!(
        "far request (a scattered page, beyond its transfer): {:.1} us",
        profile.request_seconds * 1e6
    );
    match profile.near_request_seconds {
        Some(near) => println!(
            "near request (a page one page after the previous, beyond its transfer): {:.1} us",
            near * 1e6
        ),
        None => println!("near request: not measured"),
    }
    println!("transfer rate: {:.0} MB/s", profile.bytes_per_second / 1e6);
    println!(
        "break-even gap: infill pays for gaps up to {} bytes",
        profile.infill_gap_bytes()
    );
    println!(
        "a far request costs {} bytes of transfer (competitive prefetching's depth)",
        profile.break_even_gap_bytes()
    );
    let cost_pages = profile.request_cost_pages(PAGE);
    println!(
        "a far request costs {cost_pages} pages of transfer: the window grows {}x a step",
        plan::planner::growth_factor(cost_pages)
    );
    if let Some(mount) = profile.mount_id {
        println!("measured on mount {mount}");
    }
}
