//! The `limit` mode: the device's own best for a workload's pages, beside which the other modes are
//! judged; and the `limit-cache` mode's advice, the best a prefetcher working through the page cache
//! can do for the same list (below).
//!
//! `limit`: every distinct page the workload reads is read once, in file-offset order, with `O_DIRECT`
//! (no page cache, no readahead) by [`QUEUE_DEPTH`] threads, so the device has that many requests
//! queued at all times: what `fio --direct=1 --iodepth=32` measures, for exactly these pages.
//! Consecutive pages go in one request of up to [`MAX_REQUEST_BYTES`], as a block layer merges them. No
//! prefetcher can fetch the pages an application needs in less time than this on the same device,
//! and none can read fewer bytes when all of them fit in memory (with less memory, the optimum's
//! fetch count, which the report prints, is the bound on bytes).
//!
//! The mode reads pages, not the application's list, so its checksum is the CRC-32 of the distinct
//! pages in offset order and is not compared with the other modes'.
//!
//! Deviations: threads rather than io_uring: each thread keeps one `pread` in flight, which gives
//! the device the same queue depth, with no dependency and no kernel-version probing.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{anyhow, Context, Result};

use crate::cache::will_need;
use crate::outcome::Outcome;
use crate::workload::{access_pages, Read, PAGE_SIZE};

/// Requests kept in flight.
pub const QUEUE_DEPTH: usize = 32;

/// Longest request: consecutive pages up to this many bytes are read with one `pread`.
pub const MAX_REQUEST_BYTES: u64 = 512 << 10;

/// Consecutive page offsets as requests: (index of the first page in `offsets`, pages).
fn requests(offsets: &[u64]) -> Vec<(usize, usize)> {
    let most = (MAX_REQUEST_BYTES / PAGE_SIZE) as usize;
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (index, &offset) in offsets.iter().enumerate() {
        match out.last_mut() {
            Some((first, pages))
                if *pages < most && offsets[*first] + *pages as u64 * PAGE_SIZE == offset =>
            {
                *pages += 1;
            }
            _ => out.push((index, 1)),
        }
    }
    out
}

/// The offsets of the distinct pages `reads` touch, ascending.
fn distinct_pages(reads: &[Read]) -> Vec<u64> {
    let mut offsets = access_pages(reads);
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}

/// `limit-cache`: `posix_fadvise(WILLNEED)` of every distinct page of `reads` at once, in offset order,
/// consecutive pages in one call of up to [`MAX_REQUEST_BYTES`]: what a prefetcher that knew the whole
/// list and had room for all of it would ask of the page cache before the first read. The caller then
/// reads the list; the gap between this and `limit` is the page cache's own cost (page allocation,
/// LRU insertion, the copy to the reader), which no such prefetcher avoids.
pub fn advise_pages_in_offset_order(data: &File, reads: &[Read]) -> Result<()> {
    let offsets = distinct_pages(reads);
    for (first, pages) in requests(&offsets) {
        let offset = offsets[first];
        let len = pages as u64 * PAGE_SIZE;
        will_need(data, offset, len).with_context(|| {
            format!("posix_fadvise(WILLNEED) of {len} bytes at offset {offset}")
        })?;
    }
    Ok(())
}

/// Reads the distinct pages of `reads` from `data` once each, `O_DIRECT` (through a descriptor of
/// its own, opened again by `/proc/self/fd`), at [`QUEUE_DEPTH`]. Blocks until done.
pub fn read_pages_directly(data: &File, reads: &[Read]) -> Result<Outcome> {
    let path = format!("/proc/self/fd/{}", data.as_raw_fd());
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .context(
            "opening the data file with O_DIRECT for the limit mode (its file system must support direct I/O)",
        )?;
    let offsets = distinct_pages(reads);
    let requests = requests(&offsets);
    let next = AtomicUsize::new(0);
    let checksums = Mutex::new(vec![0u32; offsets.len()]);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..QUEUE_DEPTH.min(requests.len().max(1)))
            .map(|_| scope.spawn(|| read_share(&file, &offsets, &requests, &next, &checksums)))
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .map_err(|_| anyhow!("a limit-mode reader panicked"))?
            })
            .collect::<Result<Vec<()>>>()
    })?;
    let mut hasher = crc32fast::Hasher::new();
    for checksum in checksums.into_inner().unwrap_or_else(|e| e.into_inner()) {
        hasher.update(&checksum.to_le_bytes());
    }
    Ok(Outcome {
        checksum: hasher.finalize(),
        bytes: offsets.len() as u64 * PAGE_SIZE,
        library: None,
    })
}

/// One reader: takes the next request until none is left; records each page's CRC-32.
fn read_share(
    file: &File,
    offsets: &[u64],
    requests: &[(usize, usize)],
    next: &AtomicUsize,
    checksums: &Mutex<Vec<u32>>,
) -> Result<()> {
    let mut buffer =
        vec![AlignedPage([0; PAGE_SIZE as usize]); (MAX_REQUEST_BYTES / PAGE_SIZE) as usize];
    loop {
        let Some(&(first, pages)) = requests.get(next.fetch_add(1, Ordering::Relaxed)) else {
            return Ok(());
        };
        let offset = offsets[first];
        // SAFETY: the pages are contiguous, aligned and initialised; the slice covers `pages` of them.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                buffer.as_mut_ptr().cast::<u8>(),
                pages * PAGE_SIZE as usize,
            )
        };
        let read = file
            .read_at(bytes, offset)
            .with_context(|| format!("O_DIRECT read of {pages} pages at offset {offset}"))?;
        let page_checksums: Vec<u32> = bytes[..read]
            .chunks(PAGE_SIZE as usize)
            .map(crc32fast::hash)
            .collect();
        let mut all = checksums.lock().unwrap_or_else(|e| e.into_inner());
        for (page, checksum) in page_checksums.into_iter().enumerate() {
            all[first + page] = checksum;
        }
    }
}

/// One page of memory aligned as `O_DIRECT` requires.
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct AlignedPage([u8; PAGE_SIZE as usize]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_pages_make_one_request_up_to_the_longest() {
        let most = (MAX_REQUEST_BYTES / PAGE_SIZE) as usize;
        let offsets: Vec<u64> = [0, 1, 2, 5]
            .into_iter()
            .chain(10..10 + most as u64 + 1)
            .map(|page| page * PAGE_SIZE)
            .collect();
        assert_eq!(
            requests(&offsets),
            vec![(0, 3), (3, 1), (4, most), (4 + most, 1)]
        );
    }

    #[test]
    fn reads_every_distinct_page_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let data: Vec<u8> = (0..16 * PAGE_SIZE).map(|i| (i / PAGE_SIZE) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let reads = [
            Read {
                offset: 5 * PAGE_SIZE,
                len: PAGE_SIZE,
            },
            Read {
                offset: 2 * PAGE_SIZE + 100,
                len: PAGE_SIZE,
            },
            Read {
                offset: 5 * PAGE_SIZE,
                len: 10,
            },
        ];
        let outcome = read_pages_directly(&File::open(&path).unwrap(), &reads).unwrap();
        assert_eq!(outcome.bytes, 3 * PAGE_SIZE, "pages 2, 3 and 5, once each");
        let mut hasher = crc32fast::Hasher::new();
        for page in [2u64, 3, 5] {
            let bytes = &data[(page * PAGE_SIZE) as usize..((page + 1) * PAGE_SIZE) as usize];
            hasher.update(&crc32fast::hash(bytes).to_le_bytes());
        }
        assert_eq!(outcome.checksum, hasher.finalize());
    }
}
