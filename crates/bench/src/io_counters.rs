//! Bytes a process caused to be read from storage, from `/proc/self/io` (`read_bytes`).
//!
//! `read_bytes` counts the block-layer reads submitted in the task's context: its own page-cache misses,
//! kernel readahead triggered by its reads, and the reads its `posix_fadvise(WILLNEED)` calls start.
//! It does not count pages found in the cache, so it is the "bytes read from disk" column of the report.
//! Deviations: none (no paper section). On a FUSE mount the reads happen in the daemon, so the
//! counter of the benchmark process stays near zero there; reports say so.

use std::path::Path;

use anyhow::{anyhow, Context, Result};

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
    fn own_counter_is_readable() {
        own_read_bytes().expect("/proc/self/io is readable on Linux");
    }
}
