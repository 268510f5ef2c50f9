//! The ways of reading a workload that the benchmark compares side by side.
//!
//! - `stock`: plain `pread`s in access order; the kernel's readahead is all the help there is.
//! - `naive`: `posix_fadvise(WILLNEED)` of every read in the list first, then the same `pread`s: the
//!   slides' "Example - Getting it Wrong" (prefetch the whole data set; slower once it exceeds the cache,
//!   because pages are evicted before their use and read twice).
//! - `libprefetch`: the live library (section 4, Figures 6 and 7), see [`crate::libprefetch_mode`].
//! - `whole-list` (asked for by name only): the same, the list given with `PF_WHOLE_LIST`, as a
//!   program that knows it reads its whole list says (Figure 7's): the paper's start at 90% of
//!   memory instead of the library's small first window.
//! - `limit-cache`: the bound on any prefetcher that works through the page cache, as libprefetch
//!   does: every distinct page advised at once, in offset order, before the same `pread`s
//!   ([`crate::limit`]). A bound only while the pages fit in memory.
//! - `limit`: not a way to serve the application but the bound on any: the distinct pages read once
//!   each with `O_DIRECT` at queue depth 32, the device's own best ([`crate::limit`]).
//!
//! Every mode but `limit` returns the CRC-32 of the bytes it read in access order, so a run proves
//! those modes read the same data.

use std::fs::File;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::cache::will_need;
use crate::libprefetch_mode::{read_with_library, LibraryTuning};
use crate::limit::{advise_pages_in_offset_order, read_pages_directly};
use crate::outcome::{read_in_order, Outcome};
use crate::workload::Read;

/// A way of reading the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Plain reads in access order.
    Stock,
    /// WILLNEED of the whole list first, then plain reads.
    Naive,
    /// The live library, given the list through a Figure 7 callback, then plain reads.
    Libprefetch,
    /// The live library, the list given with `PF_WHOLE_LIST`.
    #[serde(rename = "whole-list")]
    WholeList,
    /// The page cache's best for the same list: its distinct pages advised at once in offset
    /// order, then plain reads.
    #[serde(rename = "limit-cache")]
    LimitCache,
    /// The device's best for the same pages: each once, `O_DIRECT`, queue depth 32.
    Limit,
}

impl Mode {
    /// Every mode measured by default, in the order reports list them.
    pub const ALL: [Mode; 5] = [
        Mode::Stock,
        Mode::Naive,
        Mode::Libprefetch,
        Mode::LimitCache,
        Mode::Limit,
    ];

    /// The mode's name as the command line and the reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Stock => "stock",
            Mode::Naive => "naive",
            Mode::Libprefetch => "libprefetch",
            Mode::WholeList => "whole-list",
            Mode::LimitCache => "limit-cache",
            Mode::Limit => "limit",
        }
    }

    /// True if the mode reads the application's list, in its order (its checksum is comparable).
    pub fn reads_the_list(self) -> bool {
        self != Mode::Limit
    }

    /// True for the modes that read through the live library.
    pub fn uses_library(self) -> bool {
        matches!(self, Mode::Libprefetch | Mode::WholeList)
    }

    /// Parses a name produced by [`Mode::name`].
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .chain([Mode::WholeList])
            .find(|mode| mode.name() == name)
    }
}

/// Reads `reads` from `file` the way `mode` does. Blocks for the whole pass.
/// `tuning` configures libprefetch (ignored by the other modes).
pub fn execute(
    mode: Mode,
    file: &File,
    reads: &[Read],
    listed: &[Read],
    tuning: &LibraryTuning,
) -> Result<Outcome> {
    match mode {
        Mode::Stock => read_in_order(file, reads, |_| {}),
        Mode::Naive => {
            advise_everything(file, reads)?;
            read_in_order(file, reads, |_| {})
        }
        Mode::Libprefetch | Mode::WholeList => {
            let tuning = LibraryTuning {
                whole_list: mode == Mode::WholeList,
                ..*tuning
            };
            let (outcome, stats) = read_with_library(file, reads, listed, &tuning)?;
            Ok(Outcome {
                library: Some(stats),
                ..outcome
            })
        }
        Mode::LimitCache => {
            advise_pages_in_offset_order(file, reads)?;
            read_in_order(file, reads, |_| {})
        }
        Mode::Limit => read_pages_directly(file, reads),
    }
}

/// WILLNEED of every read of the list, in access order (one call per read, as a naive program would).
fn advise_everything(file: &File, reads: &[Read]) -> Result<()> {
    for read in reads {
        will_need(file, read.offset, read.len).with_context(|| {
            format!(
                "posix_fadvise(WILLNEED) of {} bytes at offset {}",
                read.len, read.offset
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for mode in Mode::ALL.into_iter().chain([Mode::WholeList]) {
            assert_eq!(Mode::from_name(mode.name()), Some(mode));
        }
        assert_eq!(Mode::from_name("turbo"), None);
    }

    #[test]
    fn reading_past_the_end_names_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        let file = File::open(&path).unwrap();
        let reads = [Read {
            offset: 4096,
            len: 4096,
        }];
        let error = execute(
            Mode::Stock,
            &file,
            &reads,
            &reads,
            &LibraryTuning::default(),
        )
        .unwrap_err();
        assert!(format!("{error:#}").contains("offset 4096"), "{error:#}");
    }

    #[test]
    fn checksum_is_the_crc32_of_the_bytes_in_access_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        std::fs::write(&path, b"abcdef").unwrap();
        let file = File::open(&path).unwrap();
        let reads = [Read { offset: 3, len: 3 }, Read { offset: 0, len: 3 }];
        let outcome = execute(
            Mode::Naive,
            &file,
            &reads,
            &reads,
            &LibraryTuning::default(),
        )
        .unwrap();
        assert_eq!(outcome.checksum, crc32fast::hash(b"defabc"));
        assert_eq!(outcome.bytes, 6);
    }

    #[test]
    fn limit_cache_reads_the_same_bytes_as_stock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages");
        let bytes: Vec<u8> = (0..8 * 4096u32)
            .map(|i| (i / 4096 * 31 + i % 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        let reads: Vec<Read> = [6u64, 1, 2, 6, 0]
            .into_iter()
            .map(|page| Read {
                offset: page * 4096,
                len: 4096,
            })
            .collect();
        let tuning = LibraryTuning::default();
        let stock = execute(Mode::Stock, &file, &reads, &reads, &tuning).unwrap();
        let limit_cache = execute(Mode::LimitCache, &file, &reads, &reads, &tuning).unwrap();
        assert_eq!(limit_cache, stock);
        assert!(Mode::LimitCache.reads_the_list());
    }
}
