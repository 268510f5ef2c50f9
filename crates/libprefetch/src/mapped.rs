//! The unprivileged recording of mapped files (`prefetch record` without
//! the kernel's page-cache tracepoint): pages a program reaches through
//! `mmap` never pass the read interposers, so the recorder asks the mappings
//! themselves which of their pages are resident, with `mincore`:
//!
//! - when the program unmaps a range of a file it mapped through the
//!   interposed `mmap` ([`on_munmap`], before the range goes away);
//! - at exit, for every file mapping of the process (`/proc/self/maps`,
//!   [`at_exit`]): what the program still maps, and what the dynamic loader
//!   mapped without libc's `mmap` (the executable, its shared libraries,
//!   `dlopen`ed ones).
//!
//! What this sees, and what it cannot: the pages resident when it looks,
//! not when they were touched (so no order within one mapping), including
//! pages cached before the program touched them where `mincore` reports the
//! page cache (the file's owner, a writer, root), and only the program's own
//! mapped pages otherwise. A mapping dropped by `exec` or `_exit`, or a page
//! evicted before the look, is not seen. The kernel's tracepoint
//! (`prefetch record`, where privileged) sees every page in order.
//!
//! Thread safety: one mutex over the table of mappings, held for the
//! bookkeeping and the `mincore` calls of one unmap. Fork: the child keeps
//! the parent's mappings and so keeps the table (a parent thread holding the
//! mutex at the fork is waited for at most never: the child uses `try_lock`).
//!
//! Follows libprefetch (ATC 2009) section 4.5: residency is asked of the
//! kernel with `mincore`, as the paper's `fincore`.
//! Deviations: the paper follows reads; mapped pages are observed after
//! the fact.

use std::ops::Range;
use std::sync::Mutex;

use crate::filestat::FileStat;
use crate::record;

/// A file range the program mapped through the interposed `mmap`.
#[derive(Clone)]
struct Mapping {
    addresses: Range<usize>,
    /// File offset of `addresses.start`, bytes.
    offset: u64,
    file: FileStat,
    path: Vec<u8>,
}

static MAPPINGS: Mutex<Vec<Mapping>> = Mutex::new(Vec::new());

/// Pages asked of `mincore` at once (a 4 KiB vector on the stack).
const CHUNK_PAGES: usize = 4096;

/// The program mapped `len` bytes of `fd` at `offset` to `address`
/// (a successful `mmap`); remembered if this process records and `fd` is
/// a regular file. The caller holds the re-entrancy guard.
pub(crate) fn on_mmap(address: usize, len: usize, fd: i32, offset: u64) {
    if !record::recording() || fd < 0 || len == 0 {
        return;
    }
    let Some(file) = FileStat::of(fd) else {
        return;
    };
    let path = crate::record::fd_path(fd);
    let mapping = Mapping {
        addresses: address..address.saturating_add(len),
        offset,
        file,
        path,
    };
    if let Ok(mut mappings) = MAPPINGS.try_lock() {
        mappings.push(mapping);
    }
}

/// The program is about to unmap `[address, address + len)`: the resident
/// pages of the file ranges it covers are recorded, and the table forgets
/// those ranges. The caller holds the re-entrancy guard.
pub(crate) fn on_munmap(address: usize, len: usize) {
    if !record::recording() || len == 0 {
        return;
    }
    let gone = address..address.saturating_add(len);
    let Ok(mut mappings) = MAPPINGS.try_lock() else {
        return;
    };
    // Nothing is allocated unless a file mapping is hit: malloc unmaps its
    // own (anonymous) memory while holding its locks.
    let hits = |m: &Mapping| m.addresses.start < gone.end && gone.start < m.addresses.end;
    if !mappings.iter().any(hits) {
        return;
    }
    let mut kept = Vec::with_capacity(mappings.len());
    for mapping in mappings.drain(..) {
        let overlap = gone.start.max(mapping.addresses.start)..gone.end.min(mapping.addresses.end);
        if overlap.is_empty() {
            kept.push(mapping);
            continue;
        }
        let offset = mapping.offset + (overlap.start - mapping.addresses.start) as u64;
        record_resident(&mapping.file, &mapping.path, overlap.clone(), offset);
        if mapping.addresses.start < overlap.start {
            kept.push(Mapping {
                addresses: mapping.addresses.start..overlap.start,
                ..mapping.clone()
            });
        }
        if overlap.end < mapping.addresses.end {
            let offset = mapping.offset + (overlap.end - mapping.addresses.start) as u64;
            kept.push(Mapping {
                addresses: overlap.end..mapping.addresses.end,
                offset,
                ..mapping.clone()
            });
        }
    }
    *mappings = kept;
}

/// At exit, before the recorder's last part: the resident pages of every
/// file mapping of the process (`/proc/self/maps`), whose file is still
/// the one mapped (device and inode).
pub(crate) fn at_exit() {
    let Some(maps) = crate::rawio::read_to_string("/proc/self/maps") else {
        return;
    };
    for line in maps.lines() {
        let Some(entry) = MapsLine::parse(line) else {
            continue;
        };
        let Some(file) = stat_path(&entry.path) else {
            continue;
        };
        if (file.dev, file.ino) != (entry.dev, entry.ino) {
            continue;
        }
        record_resident(&file, entry.path.as_bytes(), entry.addresses, entry.offset);
    }
}

/// One file mapping of `/proc/self/maps`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct MapsLine {
    pub(crate) addresses: Range<usize>,
    /// File offset of `addresses.start`, bytes.
    pub(crate) offset: u64,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) path: String,
}

impl MapsLine {
    /// `START-END PERMS OFFSET MAJOR:MINOR INODE PATH` of a regular file
    /// outside the kernel's own file systems; `None` for anything else.
    pub(crate) fn parse(line: &str) -> Option<MapsLine> {
        let mut fields = line.splitn(6, ' ');
        let (start, end) = fields.next()?.split_once('-')?;
        let _perms = fields.next()?;
        let offset = u64::from_str_radix(fields.next()?, 16).ok()?;
        let (major, minor) = fields.next()?.split_once(':')?;
        let ino: u64 = fields.next()?.parse().ok()?;
        let path = fields.next()?.trim_start();
        let special = ["/dev/", "/proc/", "/sys/", "/memfd:"];
        if ino == 0
            || !path.starts_with('/')
            || path.ends_with(" (deleted)")
            || special.iter().any(|prefix| path.starts_with(prefix))
        {
            return None;
        }
        let dev = libc::makedev(
            u32::from_str_radix(major, 16).ok()?,
            u32::from_str_radix(minor, 16).ok()?,
        );
        Some(MapsLine {
            addresses: usize::from_str_radix(start, 16).ok()?
                ..usize::from_str_radix(end, 16).ok()?,
            offset,
            dev,
            ino,
            path: path.to_string(),
        })
    }
}

/// What `stat` says of the regular file at `path`.
fn stat_path(path: &str) -> Option<FileStat> {
    let stat = rustix::fs::statat(rustix::fs::CWD, path, rustix::fs::AtFlags::empty()).ok()?;
    (stat.st_mode & libc::S_IFMT == libc::S_IFREG).then(|| FileStat {
        dev: stat.st_dev,
        ino: stat.st_ino,
        size: u64::try_from(stat.st_size).unwrap_or(0),
        mtime_ns: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
    })
}

/// Records the pages of `file` that `mincore` reports resident in the
/// mapped `addresses`, whose first byte is at file offset `offset`; pages
/// past the end of the file are left out.
fn record_resident(file: &FileStat, path: &[u8], addresses: Range<usize>, offset: u64) {
    let page = crate::memory::page_size() as usize;
    let file_pages = file.size.div_ceil(page as u64);
    let mut vector = [0u8; CHUNK_PAGES];
    let mut start = addresses.start;
    while start < addresses.end {
        let len = (addresses.end - start).min(CHUNK_PAGES * page);
        // SAFETY: mincore only reads the page tables of the range, which the
        // caller says is mapped; the vector holds one byte per page of it.
        let rc = unsafe { libc::mincore(start as *mut libc::c_void, len, vector.as_mut_ptr()) };
        if rc != 0 {
            return;
        }
        let first_page = (offset + (start - addresses.start) as u64) / page as u64;
        let pages = len.div_ceil(page);
        let mut at = 0;
        while at < pages {
            let run_start = at;
            while at < pages && vector[at] & 1 == 1 {
                at += 1;
            }
            let first = first_page + run_start as u64;
            let last = (first_page + at as u64).min(file_pages);
            if last > first {
                record::on_mapped_pages(file, path, first..=last - 1);
            }
            at += 1;
        }
        start += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_mapping_line_is_read_and_others_are_left_out() {
        let line = "7f1c2a000000-7f1c2a021000 r-xp 00002000 fd:01 1311 /usr/lib/a b.so";
        assert_eq!(
            MapsLine::parse(line),
            Some(MapsLine {
                addresses: 0x7f1c2a000000..0x7f1c2a021000,
                offset: 0x2000,
                dev: libc::makedev(0xfd, 1),
                ino: 1311,
                path: "/usr/lib/a b.so".into(),
            })
        );
        let others = [
            "7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]",
            "7ffd1000-7ffd2000 rw-p 00000000 00:00 0",
            "7ffd1000-7ffd2000 rw-s 00000000 00:05 77 /dev/zero (deleted)",
            "7ffd1000-7ffd2000 rw-s 00000000 00:1a 77 /dev/shm/table",
            "7ffd1000-7ffd2000 r--p 00000000 08:01 12 /var/tmp/gone (deleted)",
        ];
        for line in others {
            assert_eq!(MapsLine::parse(line), None, "{line}");
        }
    }
}
