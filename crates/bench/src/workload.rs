//! The three access patterns of the libprefetch paper's evaluation, as lists of reads.
//!
//! - `random`: seeded uniformly random 4 KiB pages of a file, repeats allowed (section 3.2, Figure 2:
//!   "some blocks in the file may be accessed multiple times and others may not be accessed at all").
//! - `strided`: a 2-D array of square tiles stored row-major and read in column order, the swap-file
//!   pattern of GIMP's column pass (section 5.3, Figure 9): one tile read, then a jump of a whole
//!   tile row.
//! - `sequential`: the file from beginning to end in fixed-size reads, like `cat` (section 5.2, Figure 8).
//!
//! Each read is one `pread`; the access list handed to libprefetch is every page of every read, in order.
//! Deviations: the paper's Figure 2 benchmark used Direct I/O; here reads go through the page cache
//! (the live library needs it) and the cache is emptied before each run instead.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

/// The page size of access-list entries and of random reads.
pub const PAGE_SIZE: u64 = 4096;

/// One `pread` of the benchmark: `len` bytes at byte `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Read {
    /// Byte offset in the data file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

/// An access pattern over a data file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Workload {
    /// `pages` reads of single pages drawn uniformly (with repeats) from the first `span_bytes` of the file.
    Random {
        /// Number of page reads.
        pages: u64,
        /// Seed of the generator: the same seed gives the same list.
        seed: u64,
        /// Bytes of the file the pages are drawn from.
        span_bytes: u64,
        /// The application stops after this many reads although it listed all `pages` (a
        /// `LIMIT` query's abandoned index scan); `None`: it reads them all.
        #[serde(default)]
        abandon_after: Option<u64>,
    },
    /// A `tiles_per_side` x `tiles_per_side` array of `tile_bytes` tiles stored row-major, read column by column.
    Strided {
        /// Bytes of one tile (GIMP: 64x64 RGBA pixels = 16 KiB).
        tile_bytes: u64,
        /// Tiles in one row and in one column.
        tiles_per_side: u64,
    },
    /// The first `span_bytes` of the file in order, `read_bytes` per read.
    Sequential {
        /// Bytes read in all.
        span_bytes: u64,
        /// Bytes per read call.
        read_bytes: u64,
    },
}

impl Workload {
    /// The workload's name as the command line spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Workload::Random { .. } => "random",
            Workload::Strided { .. } => "strided",
            Workload::Sequential { .. } => "sequential",
        }
    }

    /// The reads the application performs, in access order: the list ([`Workload::listed`]) up to
    /// where it abandons it. Deterministic: the same workload gives the same reads.
    pub fn reads(&self) -> Vec<Read> {
        let mut reads = self.listed();
        if let Workload::Random {
            abandon_after: Some(count),
            ..
        } = *self
        {
            reads.truncate(usize::try_from(count).unwrap_or(usize::MAX));
        }
        reads
    }

    /// The reads the application lists for the library, in access order (all of them, even
    /// those of a list it abandons).
    pub fn listed(&self) -> Vec<Read> {
        match *self {
            Workload::Random {
                pages,
                seed,
                span_bytes,
                ..
            } => random_reads(pages, seed, span_bytes),
            Workload::Strided {
                tile_bytes,
                tiles_per_side,
            } => strided_reads(tile_bytes, tiles_per_side),
            Workload::Sequential {
                span_bytes,
                read_bytes,
            } => sequential_reads(span_bytes, read_bytes),
        }
    }

    /// The number of bytes at the start of the data file that the workload may read; `None`
    /// when it does not fit in 64 bits.
    pub fn span_bytes(&self) -> Option<u64> {
        match *self {
            Workload::Random { span_bytes, .. } | Workload::Sequential { span_bytes, .. } => {
                Some(span_bytes)
            }
            Workload::Strided {
                tile_bytes,
                tiles_per_side,
            } => tiles_per_side
                .checked_mul(tiles_per_side)?
                .checked_mul(tile_bytes),
        }
    }

    /// Bytes the read list and its access list take in memory ([`Workload::reads`] and
    /// [`access_pages`]), computed without building them; `None` when it does not fit in 64
    /// bits. Call before `reads` with sizes from the command line.
    pub fn list_bytes(&self) -> Option<u64> {
        let (reads, pages) = match *self {
            Workload::Random { pages, .. } => (pages, pages),
            Workload::Strided {
                tile_bytes,
                tiles_per_side,
            } => {
                let tiles = tiles_per_side.checked_mul(tiles_per_side)?;
                (
                    tiles,
                    tiles.checked_mul(tile_bytes.div_ceil(PAGE_SIZE) + 1)?,
                )
            }
            Workload::Sequential {
                span_bytes,
                read_bytes,
            } => {
                let reads = span_bytes.div_ceil(read_bytes.max(1));
                (reads, (span_bytes / PAGE_SIZE).checked_add(reads * 2)?)
            }
        };
        let read_size = std::mem::size_of::<Read>() as u64;
        reads
            .checked_mul(read_size)?
            .checked_add(pages.checked_mul(8)?)
    }

    /// A one-line description for report headers.
    pub fn describe(&self) -> String {
        use crate::size::format_bytes;
        match *self {
            Workload::Random {
                pages,
                seed,
                span_bytes,
                abandon_after,
            } => format!(
                "random: {pages} reads of 4 KiB pages drawn with repeats from {} (seed {seed}){}",
                format_bytes(span_bytes),
                abandon_after.map_or(String::new(), |reads| format!(
                    ", all listed, abandoned after {reads}"
                ))
            ),
            Workload::Strided {
                tile_bytes,
                tiles_per_side,
            } => format!(
                "strided: {tiles_per_side}x{tiles_per_side} tiles of {} stored row-major ({}), read column by column",
                format_bytes(tile_bytes),
                self.span_bytes().map_or("over 16 EiB".into(), format_bytes)
            ),
            Workload::Sequential {
                span_bytes,
                read_bytes,
            } => format!(
                "sequential: {} in reads of {}",
                format_bytes(span_bytes),
                format_bytes(read_bytes)
            ),
        }
    }
}

/// `pages` single-page reads drawn uniformly with repeats from the pages of `[0, span_bytes)`.
fn random_reads(pages: u64, seed: u64, span_bytes: u64) -> Vec<Read> {
    let page_count = (span_bytes / PAGE_SIZE).max(1);
    let mut rng = StdRng::seed_from_u64(seed);
    (0..pages)
        .map(|_| Read {
            offset: rng.random_range(0..page_count) * PAGE_SIZE,
            len: PAGE_SIZE,
        })
        .collect()
}

/// Tile reads of a row-major tiled square array, in column-major order.
fn strided_reads(tile_bytes: u64, tiles_per_side: u64) -> Vec<Read> {
    let tile_at = |row: u64, column: u64| (row * tiles_per_side + column) * tile_bytes;
    (0..tiles_per_side)
        .flat_map(|column| (0..tiles_per_side).map(move |row| (row, column)))
        .map(|(row, column)| Read {
            offset: tile_at(row, column),
            len: tile_bytes,
        })
        .collect()
}

/// Consecutive reads of `read_bytes` covering `[0, span_bytes)`; the last one may be shorter.
fn sequential_reads(span_bytes: u64, read_bytes: u64) -> Vec<Read> {
    let step = read_bytes.max(1);
    (0..span_bytes)
        .step_by(step as usize)
        .map(|offset| Read {
            offset,
            len: step.min(span_bytes - offset),
        })
        .collect()
}

/// The byte offsets of every page touched by `reads`, in access order (the access list).
pub fn access_pages(reads: &[Read]) -> Vec<u64> {
    reads
        .iter()
        .flat_map(|read| {
            let first = read.offset / PAGE_SIZE;
            let end = (read.offset + read.len).div_ceil(PAGE_SIZE);
            (first..end).map(|page| page * PAGE_SIZE)
        })
        .collect()
}

/// Total bytes requested by `reads` (repeats counted each time).
pub fn requested_bytes(reads: &[Read]) -> u64 {
    reads.iter().map(|read| read.len).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An abandoned list: the library is given all of it, the application reads its start.
    #[test]
    fn an_abandoned_list_is_listed_whole_and_read_to_where_it_stops() {
        let abandoned = Workload::Random {
            pages: 300,
            seed: 2,
            span_bytes: 1 << 20,
            abandon_after: Some(20),
        };
        let listed = abandoned.listed();
        assert_eq!(listed.len(), 300, "the whole list is listed");
        assert_eq!(
            abandoned.reads(),
            listed[..20].to_vec(),
            "its first 20 are read"
        );
    }

    #[test]
    fn strided_reads_a_row_major_array_column_by_column() {
        let reads = Workload::Strided {
            tile_bytes: 16384,
            tiles_per_side: 3,
        }
        .reads();
        let tiles: Vec<u64> = reads.iter().map(|read| read.offset / 16384).collect();
        // Row-major layout: tile (row, column) is tile number row * 3 + column.
        assert_eq!(tiles, vec![0, 3, 6, 1, 4, 7, 2, 5, 8]);
        assert!(reads.iter().all(|read| read.len == 16384));
    }

    #[test]
    fn sequential_covers_the_span_in_order_with_a_short_last_read() {
        let reads = Workload::Sequential {
            span_bytes: 10_000,
            read_bytes: 4096,
        }
        .reads();
        let expected = [(0, 4096), (4096, 4096), (8192, 1808)];
        let got: Vec<(u64, u64)> = reads.iter().map(|read| (read.offset, read.len)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn access_pages_lists_every_page_of_every_read() {
        let reads = [
            Read {
                offset: 8192,
                len: 16384,
            },
            Read {
                offset: 4096,
                len: 100,
            },
            Read {
                offset: 8192,
                len: 4096,
            },
        ];
        assert_eq!(
            access_pages(&reads),
            vec![8192, 12288, 16384, 20480, 4096, 8192]
        );
    }

    #[test]
    fn random_has_repeats_on_a_small_file() {
        let reads = Workload::Random {
            pages: 200,
            seed: 7,
            span_bytes: 100 * PAGE_SIZE,
            abandon_after: None,
        }
        .reads();
        let mut unique: Vec<u64> = reads.iter().map(|read| read.offset).collect();
        unique.sort_unstable();
        unique.dedup();
        assert!(
            unique.len() < reads.len(),
            "200 draws of 100 pages must repeat"
        );
    }

    proptest! {
        #[test]
        fn random_is_seeded_deterministic_and_in_range(seed in any::<u64>(), pages in 0u64..500, span_pages in 1u64..10_000) {
            let workload = Workload::Random { pages, seed, span_bytes: span_pages * PAGE_SIZE, abandon_after: None };
            let first = workload.reads();
            prop_assert_eq!(&first, &workload.reads());
            prop_assert_eq!(first.len() as u64, pages);
            for read in &first {
                prop_assert_eq!(read.offset % PAGE_SIZE, 0);
                prop_assert_eq!(read.len, PAGE_SIZE);
                prop_assert!(read.offset + read.len <= span_pages * PAGE_SIZE);
            }
        }

        #[test]
        fn strided_reads_every_tile_exactly_once(side in 1u64..40, tile_pages in 1u64..5) {
            let tile_bytes = tile_pages * PAGE_SIZE;
            let workload = Workload::Strided { tile_bytes, tiles_per_side: side };
            let reads = workload.reads();
            let mut offsets: Vec<u64> = reads.iter().map(|read| read.offset).collect();
            // Consecutive reads in one column are one tile row apart.
            for pair in reads.windows(2) {
                if pair[1].offset > pair[0].offset {
                    prop_assert_eq!(pair[1].offset - pair[0].offset, side * tile_bytes);
                }
            }
            offsets.sort_unstable();
            let expected: Vec<u64> = (0..side * side).map(|tile| tile * tile_bytes).collect();
            prop_assert_eq!(offsets, expected);
            prop_assert_eq!(Some(requested_bytes(&reads)), workload.span_bytes());
            let listed = reads.len() * std::mem::size_of::<Read>() + access_pages(&reads).len() * 8;
            prop_assert!(listed as u64 <= workload.list_bytes().unwrap());
        }
    }

    #[test]
    fn sizes_that_overflow_64_bits_are_none_not_a_wrap() {
        let strided = Workload::Strided {
            tile_bytes: 16384,
            tiles_per_side: 1 << 32,
        };
        assert_eq!(strided.span_bytes(), None);
        assert_eq!(strided.list_bytes(), None);
        let random = Workload::Random {
            pages: u64::MAX,
            seed: 1,
            span_bytes: 1 << 20,
            abandon_after: None,
        };
        assert_eq!(random.list_bytes(), None);
    }

    #[test]
    fn list_bytes_bounds_the_lists_of_every_workload() {
        for workload in [
            Workload::Random {
                pages: 1000,
                seed: 3,
                span_bytes: 1 << 20,
                abandon_after: None,
            },
            Workload::Sequential {
                span_bytes: 1_000_000,
                read_bytes: 7000,
            },
        ] {
            let reads = workload.reads();
            let listed = reads.len() * std::mem::size_of::<Read>() + access_pages(&reads).len() * 8;
            assert!(
                listed as u64 <= workload.list_bytes().unwrap(),
                "{workload:?}"
            );
        }
    }

    #[test]
    fn different_seeds_give_different_lists() {
        let list = |seed| {
            Workload::Random {
                pages: 100,
                seed,
                span_bytes: 1 << 30,
                abandon_after: None,
            }
            .reads()
        };
        assert_ne!(list(1), list(2));
    }
}
