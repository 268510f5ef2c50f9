//! Pages left to the kernel's read-ahead (`plan::readahead`) on a
//! descriptor the kernel does not read ahead for (`POSIX_FADV_RANDOM`,
//! which makes the kernel read only the pages asked for): the library sees
//! from the reads' misses that the read-ahead does not come and advises
//! the pages itself, so a cold pass misses about what it misses on a
//! descriptor the kernel reads ahead for; there the pages stay the
//! kernel's. Counts misses and advised pages, no timings. Reads are
//! reported with `note_read` (this test binary does not link the
//! interposers). The files live under the build's target directory (a
//! disk the kernel reads ahead on, not a memory file system): a device
//! with no read-ahead window fails the test, saying so. Follows libprefetch
//! (ATC 2009) section 4.5: the library follows the reads.

mod common;

use common::{alone, data_file, PAGE};

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::MetadataExt;

use libprefetch::{note_read, Client, Config, Mode};

const FILE_PAGES: u64 = 2048;

fn fadvise(file: &File, advice: libc::c_int) {
    // SAFETY: fadvise on an open descriptor.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice) };
}

/// The read-ahead window of `file`'s device, KiB (0: none or unknown).
fn read_ahead_kb(file: &File) -> u64 {
    let dev = file.metadata().unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    std::fs::read_to_string(format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb"))
        .ok()
        .and_then(|kb| kb.trim().parse().ok())
        .unwrap_or(0)
}

/// Misses and pages advised by a fresh client given `pages` as its list,
/// read `read_pages` at a time, on a cold file of `file_pages` with
/// `advice` set.
fn cold_pass(pages: &[u64], read_pages: u64, file_pages: u64, advice: libc::c_int) -> (u64, u64) {
    let (_dir, file) = data_file(file_pages);
    assert!(
        read_ahead_kb(&file) > 0,
        "the test file's device has no read-ahead window (read_ahead_kb 0): build into a \
         target directory on a disk (CARGO_TARGET_DIR)"
    );
    fadvise(&file, advice);
    let fd = file.as_raw_fd();
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    client.register_region(fd, 0, file_pages * PAGE).unwrap();
    client
        .request_prefetching(&common::unmarked_entries(fd, pages), Mode::SET)
        .unwrap();
    let mut buf = vec![0u8; (read_pages * PAGE) as usize];
    for read in pages.chunks(read_pages as usize) {
        note_read(fd, read[0] * PAGE, read.len() as u64 * PAGE);
        file.read_exact_at(&mut buf[..read.len() * PAGE as usize], read[0] * PAGE)
            .unwrap();
    }
    client.settle();
    let stats = client.stats();
    (stats.misses, stats.pages_prefetched)
}

/// Misses a random descriptor may have beyond a normal one's in a pass of
/// `reads` reads: an eighth of them. The kernel's read-ahead comes in the
/// reading thread; the library's advice comes from its own thread, which on
/// two busy processors can be late for a read that then finds its page still
/// being read, a miss (step 17 under two CPU burners: 243 against 173, 1 run
/// in 16). A library that does not advise misses nearly every read (994 of
/// 1,024).
fn late_misses(reads: u64) -> u64 {
    reads / 8
}

/// 1,024 single-page reads stepping `step` pages at a time around an 8 MiB
/// file, down from its last page when `down`: interleaved streams of
/// adjacent pages (each continued every 15th read at 273 pages down, every
/// 120th or so at 17 up), which the planner leaves to the kernel's context
/// read-ahead from each stream's third page on.
fn strided(step: u64, down: bool) -> Vec<u64> {
    (0..FILE_PAGES / 2)
        .map(|i| (i * step) % FILE_PAGES)
        .map(|page| if down { FILE_PAGES - 1 - page } else { page })
        .collect()
}

/// Stepping down 273 pages: on a random descriptor every page left to the
/// kernel missed (994 of 1,024 reads, 30 pages advised) until a stream's
/// second miss in a row showed that the kernel reads nothing ahead.
#[test]
fn interleaved_streams_on_a_random_descriptor_miss_what_they_miss_on_a_normal_one() {
    let _alone = alone();
    for (step, down) in [(273, true), (17, false)] {
        let pages = strided(step, down);
        let normal = cold_pass(&pages, 1, FILE_PAGES, libc::POSIX_FADV_NORMAL);
        let random = cold_pass(&pages, 1, FILE_PAGES, libc::POSIX_FADV_RANDOM);
        println!("step {step} down {down}: (misses, advised) normal {normal:?} random {random:?}");
        assert!(
            random.0 <= normal.0 + late_misses(pages.len() as u64),
            "step {step}: random {random:?} against normal {normal:?}"
        );
    }
    let normal = cold_pass(&strided(273, true), 1, FILE_PAGES, libc::POSIX_FADV_NORMAL);
    assert!(normal.1 < 64, "the streams stay the kernel's: {normal:?}");
}

/// A 32 MiB file read from start to end, 128 KiB at a time: on a normal
/// descriptor all but the first read-ahead window of it is left to the
/// kernel, with few misses; on a random one the library advises it.
#[test]
fn a_sequential_pass_is_left_to_the_kernel_only_where_it_reads_ahead() {
    let _alone = alone();
    let file_pages = 8192;
    let pages: Vec<u64> = (0..file_pages).collect();
    let normal = cold_pass(&pages, 32, file_pages, libc::POSIX_FADV_NORMAL);
    let random = cold_pass(&pages, 32, file_pages, libc::POSIX_FADV_RANDOM);
    println!("(misses, advised) normal {normal:?} random {random:?}");
    assert!(normal.1 < file_pages / 2, "left to the kernel: {normal:?}");
    assert!(
        random.0 <= normal.0 + late_misses(file_pages / 32),
        "random {random:?} against normal {normal:?}"
    );
}
