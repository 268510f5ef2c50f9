//! Bytes read from storage during a pass: the "read from disk" column of the report.
//!
//! On a real disk: `/proc/self/io` `read_bytes`, which counts the block-layer reads submitted in the
//! task's context: its own page-cache misses, kernel readahead triggered by its reads, and the reads its
//! `posix_fadvise(WILLNEED)` calls start; not pages found in the cache. On the emulated disk the reads
//! happen in the FUSE daemon, so the counter is the `bytes` the emulated disk has served, from its
//! `MOUNTPOINT/.emulate-stats` (crates/emulate, docs/emulate.md).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};

use crate::setting::Storage;

/// Where the bytes read from storage are counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskCounter {
    /// This process's `/proc/self/io`.
    OwnProcess,
    /// The emulated disk's statistics file.
    Emulated(PathBuf),
}

impl DiskCounter {
    /// The counter that sees the reads of a file on `storage`.
    pub fn for_storage(storage: &Storage) -> DiskCounter {
        match storage {
            Storage::Emulated { mount_point, .. } => {
                DiskCounter::Emulated(Path::new(mount_point).join(".emulate-stats"))
            }
            Storage::Disk { .. } | Storage::Memory { .. } => DiskCounter::OwnProcess,
        }
    }

    /// The counter's current value in bytes.
    pub fn read(&self) -> Result<u64> {
        match self {
            DiskCounter::OwnProcess => own_read_bytes(),
            DiskCounter::Emulated(stats) => emulated_bytes(stats),
        }
    }
}

/// The `bytes` field of an emulated disk's JSON statistics.
fn emulated_bytes(stats: &Path) -> Result<u64> {
    let text =
        std::fs::read_to_string(stats).with_context(|| format!("reading {}", stats.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", stats.display()))?;
    value["bytes"]
        .as_u64()
        .ok_or_else(|| anyhow!("{}: no \"bytes\" counter", stats.display()))
}

/// The `read_bytes` counter of the calling process.
pub fn own_read_bytes() -> Result<u64> {
    read_bytes_of(Path::new("/proc/self/io"))
}

/// The `read_bytes` field of an `io` file such as `/proc/PID/io`.
pub fn read_bytes_of(path: &Path) -> Result<u64> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_read_bytes(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Finds `read_bytes: N` in the text of an `io` file.
fn parse_read_bytes(text: &str) -> Result<u64> {
    for (index, line) in text.lines().enumerate() {
        if let Some(value) = line.strip_prefix("read_bytes:") {
            return value.trim().parse().map_err(|_| {
                anyhow!(
                    "line {}: bad read_bytes value {:?}",
                    index + 1,
                    value.trim()
                )
            });
        }
    }
    Err(anyhow!("no read_bytes line"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_format() {
        let text = "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\n\
                    read_bytes: 409600\nwrite_bytes: 323932160\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_read_bytes(text).unwrap(), 409600);
    }

    #[test]
    fn names_the_line_of_a_bad_value() {
        let error = parse_read_bytes("rchar: 1\nread_bytes: many\n").unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
        assert!(parse_read_bytes("rchar: 1\n").is_err());
    }

    #[test]
    fn the_emulated_disk_counter_is_its_bytes_field() {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join(".emulate-stats");
        std::fs::write(&stats, r#"{"bytes": 51228672, "requests": 7774}"#).unwrap();
        let storage = Storage::Emulated {
            mount_point: dir.path().to_string_lossy().into_owned(),
            model: None,
        };
        let counter = DiskCounter::for_storage(&storage);
        assert_eq!(counter, DiskCounter::Emulated(stats.clone()));
        assert_eq!(counter.read().unwrap(), 51228672);
        std::fs::write(&stats, "{}").unwrap();
        let error = counter.read().unwrap_err().to_string();
        assert!(error.contains(".emulate-stats: no \"bytes\""), "{error}");
    }

    #[test]
    fn own_counter_is_readable() {
        own_read_bytes().expect("/proc/self/io is readable on Linux");
    }
}
