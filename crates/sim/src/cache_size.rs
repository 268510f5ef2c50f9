//! Cache sizes as a researcher writes them (libCacheSim's `cachesim` accepts the same three
//! forms): a count of blocks (objects, for object traces), a byte size (`64M`, `1.5G`, `512KiB`:
//! powers of 1024, divided by the block size), or a share of the trace's working set (`1%`,
//! `0.5%`: of its distinct blocks, rounded down, at least one).

use std::str::FromStr;

use crate::disksim::spec::parse_bytes;
use crate::SimError;

/// One cache size as given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CacheSize {
    /// A number of blocks.
    Blocks(usize),
    /// Bytes, turned into blocks of the trace's block size.
    Bytes(u64),
    /// A share of the working set, in (0, 1].
    Share(f64),
}

impl CacheSize {
    /// Whether the size needs the trace's working set to be known.
    pub fn needs_working_set(&self) -> bool {
        matches!(self, CacheSize::Share(_))
    }

    /// The size in blocks of `block_size` bytes, for a trace of `distinct` blocks (only read
    /// for a share).
    pub fn blocks(&self, block_size: u64, distinct: usize) -> usize {
        let blocks = match *self {
            CacheSize::Blocks(n) => n,
            CacheSize::Bytes(bytes) => {
                usize::try_from(bytes / block_size.max(1)).unwrap_or(usize::MAX)
            }
            CacheSize::Share(share) => (share * distinct as f64) as usize,
        };
        blocks.max(1)
    }
}

impl FromStr for CacheSize {
    type Err = SimError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let bad = || {
            SimError::Config(format!(
                "cache size {text:?}: give a number of blocks (1000), a byte size (64M) or a \
                 share of the working set (1%)"
            ))
        };
        if let Some(percent) = text.strip_suffix('%') {
            let share: f64 = percent.trim().parse().map_err(|_| bad())?;
            return match share > 0.0 && share <= 100.0 {
                true => Ok(CacheSize::Share(share / 100.0)),
                false => Err(SimError::Config(format!(
                    "cache size {text:?}: a share must be above 0% and at most 100%"
                ))),
            };
        }
        if let Ok(blocks) = text.parse::<usize>() {
            return match blocks {
                0 => Err(SimError::Config("a cache holds at least one block".into())),
                n => Ok(CacheSize::Blocks(n)),
            };
        }
        match parse_bytes(text) {
            Some(0) | None => Err(bad()),
            Some(bytes) => Ok(CacheSize::Bytes(bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_bytes_and_shares_resolve_to_blocks() {
        let sizes: Vec<usize> = ["1000", "64M", "1%", "0.5%", "100%", "1K"]
            .iter()
            .map(|t| t.parse::<CacheSize>().unwrap().blocks(8192, 12_345))
            .collect();
        assert_eq!(sizes, [1000, 8192, 123, 61, 12_345, 1]);
        for bad in ["0", "0%", "101%", "x", "-3", "1.5"] {
            assert!(bad.parse::<CacheSize>().is_err(), "{bad}");
        }
    }
}
