//! Tests of the libprefetch side of a tracked file (`feed.rs`): the settings read at open, the
//! schedule, the cached-list checks, and a scan listed again after its list was dropped as cached.

use super::*;
use crate::gate::tests::cached_file;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// The memory limits and the device's profile are read at open only for a file not mostly cached,
/// whose first read registers the client at once; a connection to a cached file reads them when
/// its client is registered, at the first read the gate lets through (which may never come).
#[test]
fn the_settings_are_read_at_open_only_when_the_gate_starts_open() {
    let file = cached_file(64);
    let warm = Tracked::open(file.as_raw_fd(), false);
    assert!(warm.settings.get().is_none());
    assert!(
        !warm.note_read(0, 4096),
        "a cached file's read goes straight on"
    );
    assert!(warm.settings.get().is_none(), "and reads no settings");
    assert!(warm.client().is_some());
    assert!(warm.settings.get().is_some(), "registering reads them");
    // Pages 64-127: a hole never read, so not in the page cache.
    file.set_len(128 * 4096).unwrap();
    let cold = Tracked::open(file.as_raw_fd(), false);
    assert!(cold.settings.get().is_some());
}

/// A scan whose list was dropped as cached while its client rested is listed again at its next
/// leaf (the emptied list wakes the client, `libprefetch::client_warm`, which calls back for the
/// leaf's read though SQLite made it before reporting it). Before, the scan stayed unlisted for the
/// rest of its transaction.
#[test]
fn a_scan_dropped_as_cached_while_its_client_rested_is_listed_again_at_its_next_leaf() {
    use crate::btree::Database;
    use crate::gen::{generate, GenOptions};
    use crate::scan::{FIRST_LOOKAHEAD, MIN_LEAVES};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    generate(
        &path,
        &GenOptions {
            rows: 30_000,
            seed: 5,
        },
        |_| {},
    )
    .unwrap();
    let db = Database::open(Box::new(std::fs::File::open(&path).unwrap())).unwrap();
    let page_size = u64::from(db.header().page_size);
    let schema = db.schema().unwrap();
    let root = |name: &str| schema.iter().find(|e| e.name == name).unwrap().root;
    let zip_root = root("customer_zip");
    let leaves = db.index_tree(zip_root).unwrap().leaves;
    let page_of: std::collections::HashMap<i64, u32> = db
        .table_rows(root("customer"))
        .unwrap()
        .into_iter()
        .map(|(page, rowid)| (rowid, page))
        .collect();
    let file = std::fs::File::open(&path).unwrap();
    let tracked = Tracked::open(file.as_raw_fd(), false);
    let client = &tracked.client().unwrap().client;
    // A table far larger than the memory: followed.
    tracked.planner.lock().unwrap().set_memory(64 << 10);
    // Written back first: a dirty page is not dropped.
    file.sync_all().unwrap();
    evict(&file);
    let read = |page: u32, kind: u8| {
        let offset = i64::try_from(u64::from(page - 1) * page_size).unwrap();
        tracked.after_read(offset, &vec![kind; page_size as usize]);
    };
    let walk = |i: usize| {
        read(leaves[i].page, INDEX_LEAF);
        for rowid in db.index_leaf_rowids(leaves[i].page).unwrap() {
            read(page_of[&rowid], TABLE_LEAF);
        }
    };
    read(zip_root, INDEX_INTERIOR);
    (0..MIN_LEAVES).for_each(walk);
    assert!(
        tracked.listed.load(Ordering::Acquire),
        "listed at its MIN_LEAVES-th leaf"
    );
    put_to_rest(&file, client, page_size);
    tracked.release_cached_list();
    assert!(!tracked.listed.load(Ordering::Acquire));
    evict(&file);
    let next = MIN_LEAVES + FIRST_LOOKAHEAD + 1;
    // SQLite read the leaf before the VFS reports it: cached.
    let mut buf = vec![0u8; page_size as usize];
    file.read_at(&mut buf, u64::from(leaves[next].page - 1) * page_size)
        .unwrap();
    let callbacks = client.stats().callbacks;
    walk(next);
    assert!(
        client.stats().callbacks > callbacks,
        "libprefetch calls back for the leaf"
    );
    assert!(
        tracked.listed.load(Ordering::Acquire),
        "the scan's next leaf past its list lists it again"
    );
}

#[test]
fn a_database_larger_than_memory_gets_the_conservative_schedule() {
    assert_eq!(schedule_for(1 << 30, 256 << 20), Schedule::Conservative);
    assert_eq!(schedule_for(1 << 30, 20 << 30), Schedule::Window);
    assert_eq!(schedule_for(1 << 30, 1 << 30), Schedule::Window);
}

#[test]
fn memory_under_an_eighth_of_the_database_gets_the_window() {
    assert_eq!(schedule_for(90 << 20, 6 << 20), Schedule::Window);
    assert_eq!(schedule_for(90 << 20, 8 << 20), Schedule::Window);
    assert_eq!(schedule_for(96 << 20, 12 << 20), Schedule::Conservative);
    assert_eq!(schedule_for(64 << 20, 12 << 20), Schedule::Conservative);
}

#[test]
fn an_append_is_dropped_when_its_own_pages_are_cached_whatever_the_rest_of_the_file() {
    let file = cached_file(64);
    // Pages 64-127: a hole never read, so not in the page cache.
    file.set_len(128 * 4096).unwrap();
    let fd = file.as_raw_fd();
    let entries = |pages: &[u64]| -> Vec<Entry> {
        pages
            .iter()
            .map(|&page| Entry {
                offset: page * 4096,
                mark: false,
            })
            .collect()
    };
    assert!(appended_all_cached(fd, &entries(&[3, 9, 40])));
    assert!(!appended_all_cached(fd, &entries(&[3, 100, 40])));
    assert!(!appended_all_cached(fd, &[]), "nothing appended");
    let leaf = Entry {
        offset: 0,
        mark: true,
    };
    assert!(!appended_all_cached(fd, &[leaf]), "index leaves only");
}

/// A new list is mostly cached when at most one in 32 of its distinct table pages is missing,
/// however often the list names each; its index leaves do not count.
#[test]
fn a_list_is_mostly_cached_by_its_distinct_pages() {
    let file = cached_file(64);
    file.set_len(128 * 4096).unwrap();
    let fd = file.as_raw_fd();
    let page = |page: u64| Entry {
        offset: page * 4096,
        mark: false,
    };
    let leaf = Entry {
        offset: 100 * 4096,
        mark: true,
    };
    // 40 cached pages named 10 times each, one missing page named 400 times: 1 in 41 missing.
    let mut entries: Vec<Entry> = (0..400).map(|i| page(i % 40)).collect();
    entries.extend((0..400).map(|_| page(70)));
    entries.push(leaf);
    assert!(list_mostly_cached(fd, &entries));
    // Three missing pages of 43: more than 1 in 32.
    entries.push(page(71));
    entries.push(page(72));
    assert!(!list_mostly_cached(fd, &entries));
    assert!(list_mostly_cached(fd, &[leaf]), "no table page");
}

/// Drops `file`'s pages from the page cache.
fn evict(file: &std::fs::File) {
    // SAFETY: posix_fadvise takes plain integers.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
}

/// Puts `client` to rest: its list set to every other page of `file`, read whole into the page
/// cache, and 512 of those read, each round finding its window cached (`libprefetch::client_warm`).
fn put_to_rest(file: &std::fs::File, client: &Client, page_size: u64) {
    let fd = file.as_raw_fd();
    let pages = file.metadata().unwrap().len() / page_size;
    let mut buf = vec![0u8; page_size as usize];
    for page in 0..pages {
        file.read_at(&mut buf, page * page_size).unwrap();
    }
    let entries: Vec<AccessEntry> = (0..pages / 2)
        .map(|i| AccessEntry {
            offset: 2 * i * page_size,
            fd,
            mark: false,
        })
        .collect();
    client
        .request_prefetching(&entries, Mode::SET | Mode::DONE)
        .unwrap();
    for entry in &entries[..512] {
        libprefetch::note_read(fd, entry.offset, page_size);
        client.settle();
    }
}
