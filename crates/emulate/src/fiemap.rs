//! Physical extents of a file, from the Linux FIEMAP ioctl
//! (Documentation/filesystems/fiemap.rst): where each stretch of the file
//! lies on the device that holds it.
//!
//! This is the only `unsafe` boundary of the layout code.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// One stretch of a file stored contiguously on its device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Byte offset of the stretch in the file.
    pub logical: u64,
    /// Byte offset of the stretch on the device.
    pub physical: u64,
    /// Length of the stretch in bytes.
    pub length: u64,
}

/// `struct fiemap` of linux/fiemap.h (the header before the extent array).
#[repr(C)]
#[derive(Default)]
struct FiemapHeader {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
}

/// `struct fiemap_extent` of linux/fiemap.h.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct FiemapExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

/// Extents asked for per ioctl call.
const BATCH: usize = 128;

/// The header followed by room for `BATCH` extents, as the ioctl expects.
#[repr(C)]
struct FiemapBuffer {
    header: FiemapHeader,
    extents: [FiemapExtent; BATCH],
}

/// `_IOWR('f', 11, struct fiemap)`: read-write, 32-byte argument, type 'f', number 11.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// Flush delayed allocation first, so freshly written files have real addresses.
const FIEMAP_FLAG_SYNC: u32 = 0x1;
/// Set on the file's last extent.
const FIEMAP_EXTENT_LAST: u32 = 0x1;

/// The physical extents of `file`, in file order. Fails where the file system
/// does not support FIEMAP (tmpfs, most FUSE and network file systems).
pub fn extents(file: &File) -> io::Result<Vec<Extent>> {
    let mut found = Vec::new();
    let mut next = 0u64;
    loop {
        let batch = fiemap_batch(file, next)?;
        let Some(last) = batch.last() else {
            return Ok(found);
        };
        next = last.0.logical + last.0.length;
        let done = last.1 & FIEMAP_EXTENT_LAST != 0;
        found.extend(batch.into_iter().map(|(extent, _)| extent));
        if done {
            return Ok(found);
        }
    }
}

/// Up to `BATCH` extents starting at byte `start`, each with its FIEMAP flags.
fn fiemap_batch(file: &File, start: u64) -> io::Result<Vec<(Extent, u32)>> {
    let mut buffer = FiemapBuffer {
        header: FiemapHeader {
            start,
            length: u64::MAX - start,
            flags: FIEMAP_FLAG_SYNC,
            extent_count: BATCH as u32,
            ..FiemapHeader::default()
        },
        extents: [FiemapExtent::default(); BATCH],
    };
    // SAFETY: `buffer` is a live, exclusively borrowed `struct fiemap` followed by
    // room for `extent_count` extents, exactly the layout FS_IOC_FIEMAP reads and
    // fills; the kernel writes no further than `extent_count` extents.
    let status = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            FS_IOC_FIEMAP,
            &mut buffer as *mut FiemapBuffer,
        )
    };
    if status < 0 {
        return Err(io::Error::last_os_error());
    }
    let mapped = (buffer.header.mapped_extents as usize).min(BATCH);
    Ok(buffer.extents[..mapped]
        .iter()
        .map(|e| {
            let extent = Extent {
                logical: e.logical,
                physical: e.physical,
                length: e.length,
            };
            (extent, e.flags)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn extents_cover_a_written_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let mut file = File::create(&path).unwrap();
        file.write_all(&vec![7u8; 3 * 1024 * 1024]).unwrap();
        drop(file);
        let file = File::open(&path).unwrap();
        match extents(&file) {
            Ok(found) => {
                let covered: u64 = found.iter().map(|e| e.length).sum();
                assert!(covered >= 3 * 1024 * 1024, "extents cover {covered} bytes");
                assert_eq!(found[0].logical, 0);
            }
            Err(e) => eprintln!("skipped (kernel feature missing): FIEMAP unsupported on the temp dir's file system: {e}"),
        }
    }

    #[test]
    fn empty_file_has_no_extents() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty");
        File::create(&path).unwrap();
        match extents(&File::open(&path).unwrap()) {
            Ok(found) => assert!(found.is_empty()),
            Err(e) => eprintln!("skipped (kernel feature missing): FIEMAP unsupported on the temp dir's file system: {e}"),
        }
    }
}
