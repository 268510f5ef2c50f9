//! A resting client's read is its own residency probe (`src/track_cached.rs`), on real files and
//! the real page cache: `read_cached` makes the first read at rest and then one every
//! `probe_period` with `preadv2(..., RWF_NOWAIT)` and only counts the others (the caller makes
//! them); a whole probe
//! read is only counted; a miss (`EAGAIN`) or a partly cached read wakes the client, which
//! prefetches the pages ahead, and hands the rest of the read back to the caller; a read reaching the file's
//! end is whole; errno is the caller's; a client that does not rest, and a filesystem that refuses
//! the flag (FUSE, once), leave the read to the usual path. The tests run one at a time
//! (`alone()`), as in `live.rs`.

mod common;

use common::{alone, PAGE};

use std::fs::{self, File};
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;

use libprefetch::residency::cachestat;
use libprefetch::{
    note_read, probe_period, read_cached, CachedRead, Client, Config, Mode, MAX_PROBE_PERIOD,
};

const PAGES: u64 = 2048;
const ERRNO_SENTINEL: i32 = 4242;

/// Page `p` holds bytes `(p + i) % 251`; the file ends `tail` bytes into page `pages`.
fn pattern(pages: u64, tail: u64) -> Vec<u8> {
    (0..pages * PAGE + tail)
        .map(|i| ((i / PAGE + i % PAGE) % 251) as u8)
        .collect()
}

fn data_file(dir: &std::path::Path, bytes: &[u8]) -> File {
    let path = dir.join("data");
    let mut file = File::create(&path).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_all().unwrap();
    File::open(&path).unwrap()
}

/// `POSIX_FADV_DONTNEED` calls `evict` makes before it gives up on a page.
const EVICT_TRIES: u32 = 10;

/// Drops `[offset, offset + len)` of `fd` (to the file's end if `len` is 0) from the page cache and
/// checks with `cachestat` that no page of it is left, dropping again up to `EVICT_TRIES` times, a
/// millisecond apart: the kernel keeps a page that is dirty, under writeback, locked or held by a
/// reference (a read in progress, a per-CPU batch), and a large folio reaching past the range.
/// Panics, with what is left, if a page stays.
fn evict(fd: RawFd, offset: u64, len: u64) {
    let mut left = None;
    for _ in 0..EVICT_TRIES {
        // SAFETY: fadvise on an open descriptor.
        unsafe { libc::posix_fadvise(fd, offset as i64, len as i64, libc::POSIX_FADV_DONTNEED) };
        let stat = cachestat(fd, offset, len).unwrap();
        if stat.nr_cache == 0 {
            return;
        }
        left = Some(stat);
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("[{offset}, +{len}) of fd {fd} still cached after {EVICT_TRIES} DONTNEED: {left:?}");
}

fn cached(fd: RawFd, page: u64) -> bool {
    cachestat(fd, page * PAGE, PAGE).is_ok_and(|c| c.nr_cache == 1)
}

/// `preadv2(fd, buf, offset, RWF_NOWAIT)`, as the interposers make it.
fn nowait(fd: RawFd, buf: &mut [u8], offset: i64) -> isize {
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: one iovec of `buf`.
    unsafe { libc::preadv2(fd, &iov, 1, offset, libc::RWF_NOWAIT) }
}

fn set_errno(value: i32) {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() = value };
}

fn errno() -> i32 {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() }
}

/// A client of the whole file listed every other page, whose first 512 reads found the file
/// cached: it rests (`src/client_warm.rs`). Returns it with the rest of its list.
fn resting_client(file: &File) -> (Client, Vec<u64>) {
    let fd = file.as_raw_fd();
    let mut buf = vec![0u8; PAGE as usize];
    for page in 0..PAGES {
        file.read_at(&mut buf, page * PAGE).unwrap();
    }
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    client.register_region(fd, 0, PAGES * PAGE + PAGE).unwrap();
    let pages: Vec<u64> = (0..PAGES / 2).map(|i| i * 2).collect();
    client
        .request_prefetching(
            &common::unmarked_entries(fd, &pages),
            Mode::SET | Mode::DONE,
        )
        .unwrap();
    for &page in &pages[..512] {
        note_read(fd, page * PAGE, PAGE);
        file.read_at(&mut buf, page * PAGE).unwrap();
        client.settle();
    }
    (client, pages[512..].to_vec())
}

/// `read_cached` until a read is the client's probe (within `MAX_PROBE_PERIOD` reads; the others are
/// only counted and left to the caller, `Noted`): the probe's outcome and the reads it took.
fn probed(fd: RawFd, at: u64, len: u64, mut read: impl FnMut() -> isize) -> (CachedRead, u64) {
    for made in 1..=MAX_PROBE_PERIOD {
        let mut called = false;
        let outcome = read_cached(fd, at, len, || {
            called = true;
            read()
        });
        if called {
            return (outcome, made);
        }
        assert_eq!(
            outcome,
            CachedRead::Noted,
            "an unprobed read is the caller's"
        );
    }
    panic!("no probe in {MAX_PROBE_PERIOD} reads");
}

/// Probes made by `probed_evicted` before it gives up, and the pause before each after the first.
const NOWAIT_TRIES: u32 = 16;
const NOWAIT_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// `probed` with `RWF_NOWAIT` of `buf.len()` bytes at `at`, after `evict_pages` dropped pages of
/// the read. A `RWF_NOWAIT` read that finds a page missing starts the kernel's read-ahead of it, and
/// the read returns the page if that read-ahead's I/O finished before the read looked at it again
/// (a device without seek cost, the thread preempted in between): the kernel served it, and the
/// test evicts and probes again, up to `NOWAIT_TRIES` times. On this machine's disk 0 to 3 such
/// reads in 100 are served, in bursts (one file served 8 back-to-back reads, then 1 of 8 made 20 ms
/// apart), so the tries are spaced `NOWAIT_PAUSE` apart. Only a read served whole though pages of
/// it were missing just before it is tried again: any other outcome is the caller's to judge.
fn probed_evicted(fd: RawFd, at: u64, buf: &mut [u8], evict_pages: impl Fn()) -> CachedRead {
    let len = buf.len() as u64;
    for tried in 0..NOWAIT_TRIES {
        if tried > 0 {
            std::thread::sleep(NOWAIT_PAUSE);
        }
        evict_pages();
        let mut cached_before = 0;
        let (outcome, _) = probed(fd, at, len, || {
            cached_before = cachestat(fd, at, len).unwrap().nr_cache * PAGE;
            nowait(fd, buf, at as i64)
        });
        match outcome {
            CachedRead::Whole(read) if read as u64 > cached_before => continue,
            _ => return outcome,
        }
    }
    panic!(
        "{NOWAIT_TRIES} RWF_NOWAIT reads at {at} of fd {fd}: each read in the pages it found missing"
    );
}

/// The far request's cost of `file`'s device, from its stored profile (`None` without one).
fn miss_seconds(file: &File) -> Option<f64> {
    use std::os::unix::fs::MetadataExt;
    let dev = file.metadata().unwrap().dev();
    let mount = libprefetch::profile::mount_id_of(file.as_raw_fd());
    libprefetch::profile::usable(libc::major(dev), libc::minor(dev), mount)
        .map(|p| p.request_seconds)
}

#[test]
fn resting_reads_are_made_nowait_one_a_probe_period_and_all_are_only_counted() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let bytes = pattern(PAGES, 0);
    let file = data_file(dir.path(), &bytes);
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    let before = client.stats();
    let mut buf = vec![0u8; PAGE as usize];
    let mut probes = 0;
    for &page in &rest[..256] {
        let mut calls = 0;
        set_errno(ERRNO_SENTINEL);
        let outcome = read_cached(fd, page * PAGE, PAGE, || {
            calls += 1;
            nowait(fd, &mut buf, (page * PAGE) as i64)
        });
        assert_eq!(errno(), ERRNO_SENTINEL);
        if calls == 0 {
            assert_eq!(outcome, CachedRead::Noted, "made by the caller");
            continue;
        }
        probes += 1;
        assert_eq!((outcome, calls), (CachedRead::Whole(PAGE as usize), 1));
        let at = (page * PAGE) as usize;
        assert_eq!(buf, bytes[at..at + PAGE as usize]);
    }
    // The first read at rest is a probe, and then one every `probe_period` of the reads so far.
    let miss = miss_seconds(&file);
    let expected = std::iter::successors(Some(0), |&at| Some(at + probe_period(miss, at)))
        .take_while(|&at| at < 256)
        .count();
    assert_eq!(probes, expected);
    let after = client.stats();
    assert_eq!(after.tracked_reads, before.tracked_reads + 256);
    assert_eq!(after.rounds, before.rounds, "no round while resting");
    assert_eq!(after.misses, 0);
}

#[test]
fn a_nowait_miss_hands_the_read_back_and_the_usual_path_wakes_the_client() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), &pattern(PAGES, 0));
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    let before = client.stats();
    let mut buf = vec![0u8; PAGE as usize];
    let at = rest[0] * PAGE;
    let outcome = probed_evicted(fd, at, &mut buf, || evict(fd, 0, 0));
    assert_eq!(outcome, CachedRead::Part(0), "EAGAIN: nothing read");
    file.read_at(&mut buf, at).unwrap();
    client.settle();
    let woken = client.stats();
    assert_eq!(woken.misses, 1);
    assert!(woken.rounds > before.rounds, "the miss starts a round");
    assert!(cached(fd, rest[2]), "a page not read yet is prefetched");
    let at = rest[1] * PAGE;
    let mut calls = 0;
    let outcome = read_cached(fd, at, PAGE, || {
        calls += 1;
        nowait(fd, &mut buf, at as i64)
    });
    assert_eq!(
        (outcome, calls),
        (CachedRead::Noted, 0),
        "awake: the usual path"
    );
}

/// Reads `pages` through `read_cached` as the interposers make them; panics if one is a probe (the
/// client rests). The caller makes each read, as after `Noted`.
fn read_followed(file: &File, pages: &[u64]) {
    let fd = file.as_raw_fd();
    let mut buf = vec![0u8; PAGE as usize];
    for &page in pages {
        let outcome = read_cached(fd, page * PAGE, PAGE, || panic!("probed page {page}"));
        assert_eq!(outcome, CachedRead::Noted);
        file.read_exact_at(&mut buf, page * PAGE).unwrap();
    }
}

/// A list set on a resting client wakes it: a new list of pages not cached is planned at once and
/// its reads are followed, each round sliding the window along them, not left to a probe that
/// would see the first miss past the first window up to `probe_period - 1` reads late.
#[test]
fn a_list_set_on_a_resting_client_is_followed_from_its_first_read() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), &pattern(PAGES, 0));
    let fd = file.as_raw_fd();
    let (client, _) = resting_client(&file);
    evict(fd, 0, 0);
    let before = client.stats();
    // The odd pages, never listed before, none cached.
    let pages: Vec<u64> = (0..PAGES / 2).map(|i| 2 * i + 1).collect();
    client
        .request_prefetching(
            &common::unmarked_entries(fd, &pages),
            Mode::SET | Mode::DONE,
        )
        .unwrap();
    client.settle();
    assert!(client.stats().pages_fetched > before.pages_fetched);
    for chunk in pages[..256].chunks(8) {
        read_followed(&file, chunk);
        client.settle();
    }
    let after = client.stats();
    assert!(
        after.rounds >= before.rounds + 4,
        "rounds follow the reads: {before:?} {after:?}"
    );
    assert_eq!(after.divergences, before.divergences);
    assert!(cached(fd, pages[300]), "the window slid past the first");
}

/// An emptied list (`PF_SET` of nothing, as the SQLite extension drops a list found cached) wakes a
/// resting client: its next read is off the list and calls back, though it is cached (no probe
/// would ever find it missing).
#[test]
fn a_list_emptied_on_a_resting_client_calls_back_at_the_next_read() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), &pattern(PAGES, 0));
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    client
        .request_prefetching(&[], Mode::SET | Mode::DONE)
        .unwrap();
    let callbacks = client.stats().callbacks;
    read_followed(&file, &rest[..1]);
    assert_eq!(client.stats().callbacks, callbacks + 1);
    drop(client);
    // A resting client's next list that adds nothing (an empty append) leaves it resting.
    let (client, rest) = resting_client(&file);
    client.request_prefetching(&[], Mode::DONE).unwrap();
    let (outcome, _) = probed(fd, rest[0] * PAGE, PAGE, || PAGE as isize);
    assert_eq!(outcome, CachedRead::Whole(PAGE as usize));
}

/// A resting client whose reads pass the end of its list calls back at the next read, off the
/// list (as the SQLite extension's scan reads its next index leaf, cached, after the stretch it
/// listed): reads only counted at rest can pass a list's end unseen, so the rest ends there.
#[test]
fn a_resting_client_calls_back_at_a_read_past_its_list() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), &pattern(PAGES, 0));
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    let mut buf = vec![0u8; PAGE as usize];
    for &page in &rest {
        note_read(fd, page * PAGE, PAGE);
        file.read_exact_at(&mut buf, page * PAGE).unwrap();
    }
    client.settle();
    let callbacks = client.stats().callbacks;
    note_read(fd, PAGE, PAGE);
    assert_eq!(
        client.stats().callbacks,
        callbacks + 1,
        "a read past the list's end calls back"
    );
}

/// A client over a cached file listed every other page, each hundredth entry marked (the last mark
/// is entry 1,000, page 2,000), whose reads of the first `followed` entries found the file cached: it
/// rests. Returns it with the pages of its list and the last marks its callbacks are told.
fn resting_marked_client(file: &File, followed: usize) -> (Client, Vec<u64>, Marks) {
    let fd = file.as_raw_fd();
    let mut buf = vec![0u8; PAGE as usize];
    // Read back page by page without the kernel's read-ahead, so that a page can be dropped alone
    // (a large folio cannot be dropped in part).
    evict(fd, 0, 0);
    // SAFETY: fadvise on an open descriptor.
    unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM) };
    for page in 0..PAGES {
        file.read_at(&mut buf, page * PAGE).unwrap();
    }
    let marks = Marks::default();
    let seen = std::sync::Arc::clone(&marks);
    let client = Client::register(Config::default(), move |_, info| {
        seen.lock().unwrap().push(info.last_marked);
    })
    .unwrap();
    client.register_region(fd, 0, PAGES * PAGE + PAGE).unwrap();
    let pages: Vec<u64> = (0..PAGES / 2).map(|i| i * 2).collect();
    let entries: Vec<libprefetch::AccessEntry> = (0..pages.len())
        .map(|i| libprefetch::AccessEntry {
            offset: pages[i] * PAGE,
            fd,
            mark: i % 100 == 0,
        })
        .collect();
    client
        .request_prefetching(&entries, Mode::SET | Mode::DONE)
        .unwrap();
    for &page in &pages[..followed] {
        note_read(fd, page * PAGE, PAGE);
        file.read_at(&mut buf, page * PAGE).unwrap();
        client.settle();
    }
    marks.lock().unwrap().clear();
    (client, pages, marks)
}

/// The last marks a client's callbacks were told.
type Marks = std::sync::Arc<std::sync::Mutex<Vec<Option<(RawFd, u64)>>>>;

/// A client over `file` resting after its first 512 reads (`resting_marked_client`) reads the
/// entries `rest` of its list at rest; `wake` is then given the client and the file's descriptor
/// (to drop page 1, or to change the list); then a read of page 1, off the list, calls back once:
/// the last mark it is told.
fn mark_told_after_rest(
    rest: std::ops::Range<usize>,
    wake: impl FnOnce(&Client, RawFd),
) -> Option<(RawFd, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), &pattern(PAGES, 0));
    let fd = file.as_raw_fd();
    let (client, pages, marks) = resting_marked_client(&file, 512);
    let mut buf = vec![0u8; PAGE as usize];
    for &page in &pages[rest] {
        note_read(fd, page * PAGE, PAGE);
        file.read_at(&mut buf, page * PAGE).unwrap();
    }
    wake(&client, fd);
    note_read(fd, PAGE, PAGE);
    let told = marks.lock().unwrap().clone();
    assert_eq!(told.len(), 1, "one callback: {told:?}");
    told[0]
}

/// The odd pages from 3 on, none on `resting_marked_client`'s list, and not page 1.
fn odd_entries(fd: RawFd) -> Vec<libprefetch::AccessEntry> {
    let odd: Vec<u64> = (1..64).map(|i| 2 * i + 1).collect();
    common::unmarked_entries(fd, &odd)
}

/// A resting client whose count of reads ran out at its list's end takes the list as read through:
/// the read past it calls back with the list's last marked entry as the last mark passed (an index
/// scan's callback plans from its most recently read index page, ATC 2009 section 4.1), not the
/// last one passed before the rest.
#[test]
fn a_rest_that_ran_out_at_the_list_s_end_calls_back_with_its_last_mark() {
    let _alone = alone();
    let told = mark_told_after_rest(512..PAGES as usize / 2, |_, _| {});
    assert_eq!(told.map(|(_, offset)| offset), Some(2000 * PAGE));
}

/// A resting client woken by a read off its list that misses takes the reads it counted at rest to
/// have followed the list: its callback is told the last mark among them (250 reads at rest, entries
/// 512 to 761: entry 700, page 1,400).
#[test]
fn a_rest_woken_off_the_list_calls_back_with_the_last_mark_its_reads_passed() {
    let _alone = alone();
    let told = mark_told_after_rest(512..762, |_, fd| {
        evict(fd, PAGE, PAGE);
        assert!(!cached(fd, 1));
    });
    assert_eq!(told.map(|(_, offset)| offset), Some(1400 * PAGE));
}

/// A resting client woken by entries appended to its list takes the reads it counted at rest to
/// have followed the list, as a read does that wakes it: its next read, off the list (page 1, still
/// cached), calls back with the last mark among them (entry 700, page 1,400), not the last passed
/// before the rest (entry 0: the client rests within its first reads).
#[test]
fn a_rest_woken_by_an_append_calls_back_with_the_last_mark_its_reads_passed() {
    let _alone = alone();
    let told = mark_told_after_rest(512..762, |client, fd| {
        let appended = client
            .request_prefetching(&odd_entries(fd), Mode::APPEND)
            .unwrap();
        assert_eq!(appended, 63);
    });
    assert_eq!(told.map(|(_, offset)| offset), Some(1400 * PAGE));
}

/// A list set on a resting client replaces the list its reads at rest followed: they are passed on
/// it first, and the new list's callback is told the last mark among them (entry 700, page 1,400),
/// which setting a list keeps, not the last passed before the rest (entry 0), with `PF_SET` as with
/// `PF_SET_FROM_MARK` (which cuts at the position either way).
#[test]
fn a_list_set_on_a_rest_keeps_the_last_mark_its_reads_passed() {
    let _alone = alone();
    for mode in [Mode::SET, Mode::SET_FROM_MARK] {
        let told = mark_told_after_rest(512..762, |client, fd| {
            client
                .request_prefetching(&odd_entries(fd), mode | Mode::DONE)
                .unwrap();
            client.settle();
        });
        assert_eq!(
            told.map(|(_, offset)| offset),
            Some(1400 * PAGE),
            "{mode:?}"
        );
    }
}

/// Entries appended to a resting client's list wake it; its position, left where it came to rest,
/// moves up to the entry of the next read, which is no divergence (no callback).
#[test]
fn entries_appended_to_a_resting_list_wake_it_where_the_reads_are() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), &pattern(PAGES, 0));
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    // Reads only counted while the client rests.
    for &page in &rest[..200] {
        read_cached(fd, page * PAGE, PAGE, || PAGE as isize);
    }
    let before = client.stats();
    let odd: Vec<u64> = (0..16).map(|i| 2 * i + 1).collect();
    client
        .request_prefetching(&common::unmarked_entries(fd, &odd), Mode::APPEND)
        .unwrap();
    read_followed(&file, &rest[200..201]);
    client.settle();
    let after = client.stats();
    assert_eq!(after.divergences, before.divergences);
    assert_eq!(after.callbacks, before.callbacks);
    assert_eq!(after.tracked_reads, before.tracked_reads + 1);
    // Followed, at its entry past the window: the window slides there.
    assert!(after.rounds > before.rounds, "{before:?} {after:?}");
}

#[test]
fn a_partly_cached_read_returns_its_cached_part_and_a_read_to_the_end_is_whole() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let bytes = pattern(PAGES, 100);
    let file = data_file(dir.path(), &bytes);
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    // A whole 2 MiB block is evicted: the page cache may hold the file in folios that large, and
    // a folio is evicted whole or not at all.
    let block = 6 << 20;
    let at = block - 2 * PAGE;
    assert!(rest.contains(&(at / PAGE)));
    let rounds = client.stats().rounds;
    let mut buf = vec![0u8; 3 * PAGE as usize];
    let outcome = probed_evicted(fd, at, &mut buf, || evict(fd, block, 2 << 20));
    assert_eq!(outcome, CachedRead::Part(2 * PAGE as usize));
    assert_eq!(buf[..2 * PAGE as usize], bytes[at as usize..block as usize]);
    assert_eq!(client.stats().misses, 1, "the read's rest missed");
    assert!(client.stats().rounds > rounds, "which starts a round");
    // A read reaching the file's end, of a client at rest again, is whole.
    drop(client);
    let (client, _) = resting_client(&file);
    let tracked = client.stats().tracked_reads;
    let last = PAGES * PAGE;
    let (outcome, made) = probed(fd, last, PAGE, || {
        nowait(fd, &mut buf[..PAGE as usize], last as i64)
    });
    assert_eq!(outcome, CachedRead::Whole(100));
    assert_eq!(buf[..100], bytes[last as usize..]);
    assert_eq!(client.stats().tracked_reads, tracked + made);
}

#[test]
fn a_failing_or_refused_read_leaves_errno_and_goes_the_usual_way() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), &pattern(PAGES, 0));
    let fd = file.as_raw_fd();
    let (_client, rest) = resting_client(&file);
    let at = rest[0] * PAGE;
    for (failure, tried_again) in [(libc::EBADF, true), (libc::EOPNOTSUPP, false)] {
        set_errno(ERRNO_SENTINEL);
        let (outcome, _) = probed(fd, at, PAGE, || {
            set_errno(failure);
            -1
        });
        assert_eq!(outcome, CachedRead::Noted);
        assert_eq!(errno(), ERRNO_SENTINEL, "after {failure}");
        let mut calls = 0;
        for _ in 0..MAX_PROBE_PERIOD {
            read_cached(fd, at, PAGE, || {
                calls += 1;
                PAGE as isize
            });
        }
        assert_eq!(
            calls > 0,
            tried_again,
            "the file is tried again after {failure}"
        );
    }
}

#[test]
fn on_fuse_a_refused_nowait_read_goes_back_to_the_probe_once() {
    let _alone = alone();
    if let Some(reason) = emulate::fuse_kernel_missing() {
        println!("skipped (kernel feature missing): {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (backing, mountpoint) = (dir.path().join("backing"), dir.path().join("mnt"));
    fs::create_dir(&backing).unwrap();
    fs::create_dir(&mountpoint).unwrap();
    let bytes = pattern(PAGES, 0);
    fs::write(backing.join("data"), &bytes).unwrap();
    let config = emulate::Config::new("st3500320as", &backing, &mountpoint);
    let _mounted = emulate::mount(&config).expect("mount the emulated disk");
    let file = File::open(mountpoint.join("data")).unwrap();
    let fd = file.as_raw_fd();
    let (client, rest) = resting_client(&file);
    let mut buf = vec![0u8; PAGE as usize];
    let at = rest[0] * PAGE;
    let mut calls = 0;
    let mut refused = 0;
    for _ in 0..2 * MAX_PROBE_PERIOD {
        read_cached(fd, at, PAGE, || {
            calls += 1;
            let n = nowait(fd, &mut buf, at as i64);
            refused += usize::from(n < 0 && errno() == libc::EOPNOTSUPP);
            n
        });
    }
    if refused == 0 {
        println!("this kernel's FUSE serves RWF_NOWAIT: nothing to fall back from");
        return;
    }
    assert_eq!(calls, 1, "refused once, then the usual path");
    note_read(fd, at, PAGE);
    file.read_exact_at(&mut buf, at).unwrap();
    assert_eq!(buf, bytes[at as usize..(at + PAGE) as usize]);
    assert_eq!(
        client.stats().misses,
        0,
        "the usual probe still finds it cached"
    );
    // A round still queued when the client goes opens no private descriptor of the FUSE file
    // (which would keep the mount busy): no settling first.
    drop(client);
    libprefetch::note_close(fd);
}
