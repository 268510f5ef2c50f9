//! Where each backing file lies on the emulated disk: the map from a file
//! offset to the disk byte address that the disk model sees.
//!
//! Two placements:
//! - `Physical` (the default) keeps the real file system's layout: each file's
//!   extents come from FIEMAP, so fragmentation, file order and the gaps
//!   between files are those of the backing directory's own disk.
//! - `Contiguous` lays the files end to end from address 0 in path order, each
//!   starting on a 4 KiB boundary: the "sequential layout" that section 3.5 of
//!   the libprefetch paper assumes for its seek-distance formula.
//!
//! Fitting physical addresses into the model's capacity: addresses are kept as
//! they are when they fit; otherwise they are shifted down so the first data
//! byte is at address 0; and when even the span is larger than the disk, the
//! gaps between extents shrink by one common factor (the extents themselves
//! keep their length, so reads that are sequential on the backing disk stay
//! sequential on the emulated one).
//!
//! Deviations: a hole in a sparse file maps to the addresses just after the
//! extent before it (or just before the first extent), as if it were
//! allocated there; a file with no allocated data at all lies from address 0.

use crate::fiemap::Extent;

/// Alignment of each file's start in the contiguous layout.
const CONTIGUOUS_ALIGN: u64 = 4096;

/// How files are placed on the emulated disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// The backing files' physical extents (FIEMAP).
    Physical,
    /// Files end to end from address 0, in path order.
    Contiguous,
}

/// The disk address of every byte of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileMap {
    /// `(file offset, disk address)` of each extent's start, by file offset.
    pieces: Vec<(u64, u64)>,
}

impl FileMap {
    /// The disk address of byte `offset` of the file. Bytes in a hole follow
    /// the extent before them (or precede the first one); a file with no
    /// allocated data at all lies from address 0.
    pub fn address(&self, offset: u64) -> u64 {
        let after = self
            .pieces
            .partition_point(|&(logical, _)| logical <= offset);
        match (after.checked_sub(1), self.pieces.first()) {
            (Some(index), _) => {
                let (logical, disk) = self.pieces[index];
                disk + (offset - logical)
            }
            (None, Some(&(logical, disk))) => disk.saturating_sub(logical - offset),
            (None, None) => offset,
        }
    }
}

/// Why the files cannot be placed on the disk.
#[derive(Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// Bytes the files need on the disk.
    pub needed: u64,
    /// Bytes the disk model holds.
    pub capacity: u64,
}

/// Places files of the given sizes end to end from address 0.
pub fn contiguous(sizes: &[u64], capacity: u64) -> Result<Vec<FileMap>, TooLarge> {
    let mut next = 0u64;
    let mut maps = Vec::with_capacity(sizes.len());
    for &size in sizes {
        maps.push(FileMap {
            pieces: vec![(0, next)],
        });
        next += size.div_ceil(CONTIGUOUS_ALIGN) * CONTIGUOUS_ALIGN;
    }
    if next > capacity {
        return Err(TooLarge {
            needed: next,
            capacity,
        });
    }
    Ok(maps)
}

/// Places files by their physical extents (one list per file), fitted into
/// `capacity` as the module comment describes.
pub fn physical(files: &[Vec<Extent>], capacity: u64) -> Result<Vec<FileMap>, TooLarge> {
    let runs = merged_runs(files);
    let disk = DiskRuns::fit(&runs, capacity)?;
    Ok(files
        .iter()
        .map(|extents| FileMap {
            pieces: extents
                .iter()
                .map(|e| (e.logical, disk.address(e.physical)))
                .collect(),
        })
        .collect())
}

/// The physical byte ranges `(start, end)` used by any file, sorted and with
/// overlaps (shared extents) merged.
fn merged_runs(files: &[Vec<Extent>]) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = files
        .iter()
        .flatten()
        .filter(|e| e.length > 0)
        .map(|e| (e.physical, e.physical + e.length))
        .collect();
    ranges.sort_unstable();
    let mut runs: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match runs.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => runs.push((start, end)),
        }
    }
    runs
}

/// `value * numerator / denominator` without overflow (`numerator <= denominator`).
fn scale(value: u64, numerator: u64, denominator: u64) -> u64 {
    if numerator == denominator {
        return value;
    }
    (u128::from(value) * u128::from(numerator) / u128::from(denominator)) as u64
}

/// The merged physical runs and the disk address each one starts at.
struct DiskRuns {
    /// `(physical start, physical end, disk start)`, sorted by physical start.
    runs: Vec<(u64, u64, u64)>,
}

impl DiskRuns {
    /// Chooses disk addresses for `runs`: unchanged, shifted, or with the gaps
    /// shrunk, whichever is the first to fit in `capacity`.
    fn fit(runs: &[(u64, u64)], capacity: u64) -> Result<Self, TooLarge> {
        let (Some(first), Some(last)) = (runs.first(), runs.last()) else {
            return Ok(DiskRuns { runs: Vec::new() });
        };
        let data: u64 = runs.iter().map(|(start, end)| end - start).sum();
        if data > capacity {
            return Err(TooLarge {
                needed: data,
                capacity,
            });
        }
        let span = last.1 - first.0;
        // Gaps are multiplied by `room / gaps`: 1 when they fit as they are.
        let gaps = span - data;
        let (shift, room) = if last.1 <= capacity {
            (0, gaps)
        } else if span <= capacity {
            (first.0, gaps)
        } else {
            (first.0, capacity - data)
        };
        let mut placed = Vec::with_capacity(runs.len());
        let mut disk = first.0 - shift;
        let mut previous_end = first.0;
        for &(start, end) in runs {
            disk += scale(start - previous_end, room, gaps);
            placed.push((start, end, disk));
            disk += end - start;
            previous_end = end;
        }
        Ok(DiskRuns { runs: placed })
    }

    /// The disk address of physical byte `physical` (which lies in some run).
    fn address(&self, physical: u64) -> u64 {
        let after = self
            .runs
            .partition_point(|&(start, _, _)| start <= physical);
        let (start, _, disk) = self.runs[after.saturating_sub(1)];
        disk + physical.saturating_sub(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(logical: u64, physical: u64, length: u64) -> Extent {
        Extent {
            logical,
            physical,
            length,
        }
    }

    #[test]
    fn contiguous_aligns_each_file_to_4k() {
        let maps = contiguous(&[10, 4096, 5000, 0, 1], 1 << 20).unwrap();
        let starts: Vec<u64> = maps.iter().map(|m| m.address(0)).collect();
        assert_eq!(starts, [0, 4096, 8192, 16384, 16384]);
        assert_eq!(maps[2].address(4999), 8192 + 4999);
    }

    #[test]
    fn contiguous_rejects_files_larger_than_the_disk() {
        assert_eq!(
            contiguous(&[4096, 4097], 8192),
            Err(TooLarge {
                needed: 12288,
                capacity: 8192
            })
        );
    }

    #[test]
    fn physical_addresses_that_fit_are_kept() {
        let files = vec![
            vec![extent(0, 1000, 100), extent(100, 5000, 50)],
            vec![extent(0, 2000, 10)],
        ];
        let maps = physical(&files, 10_000).unwrap();
        assert_eq!(maps[0].address(0), 1000);
        assert_eq!(maps[0].address(99), 1099);
        assert_eq!(maps[0].address(120), 5020);
        assert_eq!(maps[1].address(5), 2005);
    }

    #[test]
    fn physical_addresses_past_the_end_are_shifted_to_zero() {
        let files = vec![vec![extent(0, 50_000, 100), extent(100, 50_300, 100)]];
        let maps = physical(&files, 1_000).unwrap();
        assert_eq!(maps[0].address(0), 0);
        assert_eq!(maps[0].address(150), 350);
    }

    #[test]
    fn a_span_larger_than_the_disk_shrinks_only_the_gaps() {
        // 200 bytes of data with a 9_800-byte gap on a 1_000-byte disk: the gap
        // shrinks to 800 bytes, each extent keeps its 100 bytes.
        let files = vec![vec![extent(0, 0, 100)], vec![extent(0, 9_900, 100)]];
        let maps = physical(&files, 1_000).unwrap();
        assert_eq!(maps[0].address(99), 99);
        assert_eq!(maps[1].address(0), 900);
        assert_eq!(maps[1].address(99), 999);
    }

    #[test]
    fn shared_extents_are_counted_once() {
        let files = vec![vec![extent(0, 0, 600)], vec![extent(0, 0, 600)]];
        assert!(physical(&files, 1_000).is_ok());
    }

    #[test]
    fn holes_follow_the_extent_before_them() {
        let files = vec![vec![extent(4096, 8192, 4096)]];
        let maps = physical(&files, 1 << 20).unwrap();
        assert_eq!(maps[0].address(0), 4096);
        assert_eq!(maps[0].address(8192 + 100), 8192 + 4096 + 100);
    }

    #[test]
    fn a_file_with_no_extents_lies_from_address_zero() {
        let maps = physical(&[Vec::new()], 1 << 20).unwrap();
        assert_eq!(maps[0].address(0), 0);
        assert_eq!(maps[0].address(123_456), 123_456);
    }
}
