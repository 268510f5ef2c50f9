//! What one pass over a workload produced, and the plain reading loop every mode but `limit` ends
//! with (its checksum proves the modes read the same bytes).

use std::fs::File;
use std::os::unix::fs::FileExt;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::workload::Read;

/// What one pass over the workload produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// CRC-32 of all bytes read, in access order.
    pub checksum: u32,
    /// Bytes returned by the reads (repeats counted each time).
    pub bytes: u64,
    /// The library's counters (libprefetch mode only).
    pub library: Option<libprefetch::Stats>,
}

/// `pread`s every read in order, calling `before_read(index)` first, and checksums the bytes.
pub fn read_in_order(
    file: &File,
    reads: &[Read],
    mut before_read: impl FnMut(usize),
) -> Result<Outcome> {
    let longest = reads.iter().map(|read| read.len).max().unwrap_or(0);
    let mut buffer = vec![0u8; longest as usize];
    let mut hasher = crc32fast::Hasher::new();
    let mut bytes = 0;
    for (index, read) in reads.iter().enumerate() {
        let chunk = &mut buffer[..read.len as usize];
        before_read(index);
        file.read_exact_at(chunk, read.offset).with_context(|| {
            format!(
                "reading {} bytes at offset {} of the data file",
                read.len, read.offset
            )
        })?;
        hasher.update(chunk);
        bytes += read.len;
    }
    Ok(Outcome {
        checksum: hasher.finalize(),
        bytes,
        library: None,
    })
}
