//! `prefetch device`: the measured profile of the device holding a file (cost per request and
//! transfer rate, `libprefetch::profile`), from which the library takes its infill gap.

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
            Some(profile) => print_profile(&profile),
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
    println!(
        "cost per request (beyond its transfer, at queue depth 32): {:.1} us",
        profile.request_seconds * 1e6
    );
    println!("transfer rate: {:.0} MB/s", profile.bytes_per_second / 1e6);
    println!(
        "infill pays for gaps up to {} bytes",
        profile.break_even_gap_bytes()
    );
}
