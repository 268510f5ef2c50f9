//! Tests of the fast path for resting reads (`track_fast.rs`), on a real file and the real page
//! cache: a resting client's reads of its descriptor's only region take it whenever nothing in
//! the registry changed, closes of other descriptors included; a descriptor closed (or its number
//! reused for another file), a second region on the descriptor, and a client ignoring its reads
//! never do, and their reads are counted as on the usual path.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;

use super::HITS;
use crate::registry::globals;
use crate::track::note_close;
use crate::track_cached::{read_cached, CachedRead};
use crate::{note_read, AccessEntry, Client, Config, Mode};

const PAGE: u64 = 4096;
const PAGES: u64 = 2048;

fn hits() -> u64 {
    HITS.with(|hits| hits.get())
}

/// A file of `PAGES` pages, all cached.
fn cached_file(dir: &std::path::Path, name: &str) -> File {
    let path = dir.join(name);
    let mut file = File::create(&path).unwrap();
    file.write_all(&vec![3u8; (PAGES * PAGE) as usize]).unwrap();
    file.sync_all().unwrap();
    let file = File::open(&path).unwrap();
    let mut buf = vec![0u8; PAGE as usize];
    for page in 0..PAGES {
        file.read_exact_at(&mut buf, page * PAGE).unwrap();
    }
    file
}

/// A client of the whole file listed every other page, whose first 256 reads found the file
/// cached: it rests (`client_warm.rs`). Returns it with the rest of its list.
fn resting_client(file: &File) -> (Client, Vec<u64>) {
    let fd = file.as_raw_fd();
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    client.register_region(fd, 0, PAGES * PAGE).unwrap();
    let pages: Vec<u64> = (0..PAGES / 2).map(|i| i * 2).collect();
    let entries: Vec<AccessEntry> = pages
        .iter()
        .map(|&page| AccessEntry {
            offset: page * PAGE,
            fd,
            mark: false,
        })
        .collect();
    client
        .request_prefetching(&entries, Mode::SET | Mode::DONE)
        .unwrap();
    for &page in &pages[..256] {
        note_read(fd, page * PAGE, PAGE);
        client.settle();
    }
    (client, pages[256..].to_vec())
}

/// `read_cached` of `page` of `fd`, its probe answered as a whole cached read: the outcome, and
/// whether the fast path took it.
fn read(fd: RawFd, page: u64) -> (CachedRead, bool) {
    let before = hits();
    let outcome = read_cached(fd, page * PAGE, PAGE, || PAGE as isize);
    (outcome, hits() > before)
}

#[test]
fn a_resting_clients_reads_of_its_only_region_take_the_fast_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = cached_file(dir.path(), "data");
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    let before = client.stats().tracked_reads;
    // Once a read took the fast path (the client rests: tests beside this one may delay its
    // rounds), each later one takes it unless another test changed the registry since the read
    // before it began (which then kept the region anew).
    let (mut previous_start, mut fast) = (globals().epoch(), 0);
    for &page in &rest[..512] {
        let start = globals().epoch();
        let (_, took) = read(fd, page);
        if fast > 0 && globals().epoch() == previous_start {
            assert!(took, "page {page} took the usual path");
        }
        fast += u64::from(took);
        previous_start = start;
    }
    assert!(fast > 0, "no read took the fast path: {:?}", client.stats());
    assert_eq!(client.stats().tracked_reads, before + 512);
}

#[test]
fn a_closed_descriptor_and_its_number_reused_never_take_the_fast_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = cached_file(dir.path(), "data");
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    read(fd, rest[0]);
    // As the `close` interposer does, before the close.
    note_close(fd);
    drop(file);
    let before = (client.stats(), hits());
    let other = cached_file(dir.path(), "other");
    let reused = other.as_raw_fd();
    for &page in &rest[1..65] {
        assert_eq!(read(reused, page).0, CachedRead::Noted);
    }
    assert_eq!((client.stats(), hits()), before, "fd {fd}, then {reused}");
}

#[test]
fn a_second_region_of_the_descriptor_leaves_its_reads_to_the_usual_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = cached_file(dir.path(), "data");
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    read(fd, rest[0]);
    let other = Client::register(Config::default(), |_, _| {}).unwrap();
    other.register_region(fd, 0, PAGES * PAGE).unwrap();
    let before = (
        client.stats().tracked_reads,
        other.stats().tracked_reads,
        hits(),
    );
    for &page in &rest[1..65] {
        read(fd, page);
    }
    let after = (
        client.stats().tracked_reads,
        other.stats().tracked_reads,
        hits(),
    );
    assert_eq!(after, (before.0 + 64, before.1 + 64, before.2));
}

#[test]
fn a_client_ignoring_its_reads_counts_none() {
    let dir = tempfile::tempdir().unwrap();
    let file = cached_file(dir.path(), "data");
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    read(fd, rest[0]);
    let before = (client.stats().tracked_reads, hits());
    {
        let _ignoring = client.ignore_accesses();
        for &page in &rest[1..65] {
            assert_eq!(read(fd, page).0, CachedRead::Noted);
        }
    }
    assert_eq!((client.stats().tracked_reads, hits()), before);
    read(fd, rest[65]);
    assert_eq!(client.stats().tracked_reads, before.0 + 1, "counted again");
}

#[test]
fn closing_a_descriptor_without_regions_leaves_the_fast_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = cached_file(dir.path(), "data");
    let fd = file.as_raw_fd();
    let (_client, rest) = resting_client(&file);
    read(fd, rest[0]);
    let mut fast = 0;
    for &page in &rest[1..129] {
        // As the `close` interposer tells of every close of the process.
        let other = File::open(dir.path().join("data")).unwrap();
        note_close(other.as_raw_fd());
        drop(other);
        fast += u64::from(read(fd, page).1);
    }
    assert!(fast > 0, "every close ended the fast path");
}
