//! Tests of the replayer (`replay.rs`): its budget cap, the reads made
//! before it is ready, and the order of its opens and first advice
//! (`replay_open.rs`).

use super::*;
use crate::replay_open::AHEAD_FILES;
use plan::recording::{FileIdentity, Via};

/// A list that fits leaves the budget alone; one that does not keeps
/// the replay to half the memory available, an eighth where its
/// mapped pages alone do not fit.
#[test]
fn the_budget_is_capped_only_where_the_list_does_not_fit() {
    assert_eq!(budget_cap(24 << 20, 24 << 20, 24 << 20), None);
    assert_eq!(budget_cap(1 << 20, 0, 24 << 20), None);
    assert_eq!(budget_cap(100 << 20, 0, 24 << 20), Some(12 << 20));
    assert_eq!(budget_cap(100 << 20, 20 << 20, 24 << 20), Some(12 << 20));
    assert_eq!(budget_cap(100 << 20, 30 << 20, 24 << 20), Some(3 << 20));
    assert_eq!(budget_cap(100 << 20, 100 << 20, 0), Some(1));
}

/// The tests that make a replay ready share its statics.
static SERIAL: Mutex<()> = Mutex::new(());

/// The identity of the file at `path` as a recording holds it.
fn identity_of(path: &std::path::Path) -> (FileIdentity, FileStat) {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let opened = std::fs::File::open(path).unwrap();
    let stat = FileStat::of(opened.as_raw_fd()).unwrap();
    let identity = FileIdentity {
        path: path.as_os_str().as_bytes().to_vec(),
        dev: stat.dev,
        ino: stat.ino,
        size: stat.size,
        mtime_ns: stat.mtime_ns,
    };
    (identity, stat)
}

/// Writes a recording of this executable reading `pages` pages of
/// each of `files`, in order, to `at`.
fn write_recording(at: &std::path::Path, files: Vec<FileIdentity>, pages: u64) {
    use std::os::unix::ffi::OsStrExt;
    let page_size = crate::memory::page_size();
    let runs = (0..files.len())
        .map(|file| plan::recording::Run {
            file,
            first: 0,
            count: pages,
            time_us: file as u64,
            via: Via::Read,
        })
        .collect();
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    let part = plan::recording::Part {
        pid: 1,
        exe: exe.as_os_str().as_bytes().to_vec(),
        args: None,
        files,
        runs,
    };
    let text = plan::recording::header(page_size, 0) + &part.to_text();
    std::fs::write(at, text).unwrap();
}

/// Writes `bytes` bytes to `path` and drops them from the page cache
/// (written back first: dirty pages are not dropped), so that the replay
/// does not pass the file over as cached.
fn write_uncached(path: &std::path::Path, bytes: usize) {
    std::fs::write(path, vec![7u8; bytes]).unwrap();
    let file = std::fs::File::open(path).unwrap();
    file.sync_all().unwrap();
    let evicted = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed);
    evicted.unwrap();
}

/// `count` uncached files of 16 pages in a temporary directory and a
/// recording of this executable reading them all in order: the
/// directory, the paths, their identities and the recording's path.
fn recorded_files(
    count: usize,
) -> (
    tempfile::TempDir,
    Vec<std::path::PathBuf>,
    Vec<(FileIdentity, FileStat)>,
    std::path::PathBuf,
) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let page_size = crate::memory::page_size();
    let paths: Vec<_> = (0..count)
        .map(|i| dir.path().join(format!("f{i}")))
        .collect();
    for path in &paths {
        write_uncached(path, 16 * page_size as usize);
    }
    let identities: Vec<_> = paths.iter().map(|p| identity_of(p)).collect();
    let recording = dir.path().join("recording");
    write_recording(
        &recording,
        identities.iter().map(|i| i.0.clone()).collect(),
        16,
    );
    (dir, paths, identities, recording)
}

/// What the tests that force an order on one thread share: the statics
/// held, `count` recorded uncached files, and a replay ready on them.
struct Forced {
    _serial: std::sync::MutexGuard<'static, ()>,
    _dir: tempfile::TempDir,
    identities: Vec<(FileIdentity, FileStat)>,
    replay: &'static Replay,
    runs: Runs,
}

impl Forced {
    fn new(count: usize) -> Forced {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let (dir, _, identities, recording) = recorded_files(count);
        let (replay, runs) = ready(recording.as_os_str()).expect("the replay is ready");
        Forced {
            _serial: serial,
            _dir: dir,
            identities,
            replay,
            runs,
        }
    }

    /// The replay's descriptor of recorded file `file`.
    fn fd(&self, file: usize) -> RawFd {
        let identity = &self.identities[file].0;
        self.replay.files[&(identity.dev, identity.ino)]
    }
}

/// The replay advises once its first files are open, before the last
/// one is (counted by the replay's opener, not timed); the list grows
/// as the rest open, and never holds a file changed since recording.
#[test]
fn the_first_advice_comes_before_the_last_file_is_opened() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let page_size = crate::memory::page_size();
    let count = 3 * FIRST_FILES;
    let (_dir, paths, identities, recording) = recorded_files(count);
    let changed = &paths[count - 1];
    std::fs::write(changed, vec![8u8; 17 * page_size as usize]).unwrap();

    let (replay, runs) = ready(recording.as_os_str()).expect("the replay is ready");
    assert_eq!(replay.opening.opened(), (FIRST_FILES, count));
    on_read(&identities[0].1, 0, page_size);
    let stats = settled_stats;
    let first = stats();
    assert!(first.pages_prefetched > 0, "nothing advised: {first:?}");
    assert_eq!(replay.opening.opened(), (FIRST_FILES, count));

    open_files(replay, usize::MAX, &mut || false);
    assert_eq!(replay.opening.opened(), (count, count));
    on_read(&identities[0].1, page_size, page_size);
    let grown = stats();
    assert!(
        grown.pages_prefetched > first.pages_prefetched,
        "the list did not grow as the files opened: {first:?} then {grown:?}"
    );
    let changed_fd = replay.files[&(identities[count - 1].0.dev, identities[count - 1].0.ino)];
    assert!(!replay.opening.is_open(changed_fd));
    let index = INDEX.lock().unwrap().clone().unwrap();
    let index = index.lock().unwrap();
    let listed: Vec<_> = index.between(0, runs.entries.len()).collect();
    assert_eq!(listed.len(), (count - 1) * 16);
    assert!(listed.iter().all(|entry| entry.fd != changed_fd));
}

/// A read the program made before the replay was ready starts the list
/// at its page once the replay is: the ordering is forced (the read,
/// then the replay made ready on this thread), not raced.
#[test]
fn a_read_made_before_the_replay_is_ready_starts_the_list_there() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let page_size = crate::memory::page_size();
    let data = dir.path().join("data.bin");
    write_uncached(&data, 64 * page_size as usize);
    let (identity, stat) = identity_of(&data);
    let recording = dir.path().join("recording");
    write_recording(&recording, vec![identity], 64);

    // Another test's replay may be published: this one starts before any.
    REPLAY.store(std::ptr::null_mut(), Ordering::Release);
    PENDING.store(true, Ordering::Release);
    on_read(&stat, 10 * page_size, 11 * page_size);
    let (_, runs) = ready(recording.as_os_str()).expect("the replay is ready");
    assert_eq!(
        runs.relisted.load(Ordering::Acquire),
        10,
        "the read made before the replay was ready did not start the list"
    );
    assert!(!PENDING.load(Ordering::Acquire));
    assert!(EARLY.lock().unwrap().is_empty());
}

/// A program that reads past the files opened so far (its threads open
/// files faster than the replay's one) moves the opener to a head start
/// past its file, and its first read of a file opened then starts the
/// list: without this, every touch lands on a file not open yet and
/// nothing is ever advised. The order is forced on this thread (ready,
/// the read, one open, the next read), not raced.
#[test]
fn a_read_past_the_opened_files_moves_the_opener_ahead_of_it() {
    let page_size = crate::memory::page_size();
    let count = 4 * FIRST_FILES;
    let forced = Forced::new(count);
    let (replay, runs, identities) = (forced.replay, &forced.runs, &forced.identities);
    assert_eq!(replay.opening.opened(), (FIRST_FILES, count));
    let past = 2 * FIRST_FILES;
    // A first read of a file not opened yet may be a stray one: the opener
    // skips from the second on.
    on_read(&identities[past - 1].1, 0, page_size);
    open_files(replay, 1, &mut || false);
    assert_eq!(replay.opening.opened(), (FIRST_FILES + 1, count));
    on_read(&identities[past].1, 0, page_size);
    open_files(replay, 1, &mut || false);
    let ahead = past + FIRST_FILES;
    assert_eq!(
        replay.opening.opened(),
        (ahead + 1, count),
        "the opener did not skip ahead of the file the program reads"
    );
    let key = |file: usize| (identities[file].0.dev, identities[file].0.ino);
    assert!(replay.opening.is_open(replay.files[&key(ahead)]));
    assert!(!replay.opening.is_open(replay.files[&key(past)]));
    on_read(&identities[ahead].1, 0, page_size);
    let stats = settled_stats();
    assert_eq!(
        runs.relisted.load(Ordering::Acquire),
        ahead * 16,
        "the read of the file opened ahead did not start the list there"
    );
    assert!(stats.pages_prefetched > 0, "nothing advised: {stats:?}");
}

/// The replay's thread runs at the lowest priority, so that its work
/// waits while the program's threads keep the processors busy; the
/// thread it runs on is the one [`start`] spawns, asked here directly.
#[test]
fn the_replay_yields_the_processor_to_the_program() {
    let before = rustix::process::getpriority_process(None).unwrap();
    let nice = std::thread::spawn(|| {
        yield_to_program();
        rustix::process::getpriority_process(None).unwrap()
    });
    assert_eq!(nice.join().unwrap(), BESIDE_NICE);
    // The nice value is the thread's, not the process's.
    assert_eq!(rustix::process::getpriority_process(None).unwrap(), before);
}

/// The replay's descriptors are private already (nothing reads them): its
/// advice goes through them, with no second descriptor opened for it.
#[test]
fn the_replays_own_descriptors_need_no_private_one() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, _, identities, recording) = recorded_files(2);
    let (replay, _) = ready(recording.as_os_str()).expect("the replay is ready");
    for (identity, _) in &identities {
        let private = replay.files[&(identity.dev, identity.ino)];
        assert!(replay.opening.is_open(private));
        assert!(globals().private_descriptors.is_unread(private));
    }
}

/// The replay's client's counters once its advice is issued.
fn settled_stats() -> crate::client::Stats {
    let client = CLIENT.lock().unwrap();
    let client = client.as_ref().unwrap();
    client.settle();
    client.stats()
}

/// True if this kernel has `cachestat` (tried on `path`), which the
/// replay needs to find wholly cached files; says so if not.
fn has_cachestat(path: &std::path::Path) -> bool {
    let probe = std::fs::File::open(path).unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&probe);
    let has = crate::residency::cachestat(fd, 0, 1).is_ok();
    if !has {
        eprintln!("skipped: this kernel has no cachestat");
    }
    has
}

/// A file whose pages are all cached when the opener reaches it is left
/// out of the list (no region, no advice, no following of its reads); the
/// uncached files around it are listed.
#[test]
fn a_file_wholly_cached_when_reached_is_not_listed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, paths, identities, recording) = recorded_files(3);
    if !has_cachestat(&paths[0]) {
        return;
    }
    let cached = std::fs::read(&paths[1]).unwrap();
    assert_eq!(cached.len() as u64, identities[1].0.size);

    let (replay, runs) = ready(recording.as_os_str()).expect("the replay is ready");
    open_files(replay, usize::MAX, &mut || false);
    let fd = |file: usize| replay.files[&(identities[file].0.dev, identities[file].0.ino)];
    assert!(replay.opening.is_open(fd(0)));
    assert!(!replay.opening.is_open(fd(1)), "the cached file was opened");
    assert!(replay.opening.is_open(fd(2)));
    let index = INDEX.lock().unwrap().clone().unwrap();
    let index = index.lock().unwrap();
    let listed: Vec<_> = index.between(0, runs.entries.len()).collect();
    assert_eq!(listed.len(), 2 * 16);
    assert!(listed.iter().all(|entry| entry.fd != fd(1)));
}

/// A read of a file left out as wholly cached starts the list at that
/// file's place, as a read of a listed file would: a program whose first
/// read is of a cached file is followed from there, and the uncached file
/// after it is prefetched before the program reads it.
#[test]
fn a_read_of_a_file_left_out_as_cached_starts_the_list_there() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, paths, identities, recording) = recorded_files(2);
    if !has_cachestat(&paths[0]) {
        return;
    }
    std::fs::read(&paths[0]).unwrap();
    let (replay, runs) = ready(recording.as_os_str()).expect("the replay is ready");
    open_files(replay, usize::MAX, &mut || false);
    let fd = |file: usize| replay.files[&(identities[file].0.dev, identities[file].0.ino)];
    assert!(!replay.opening.is_open(fd(0)), "the cached file was opened");

    on_read(&identities[0].1, 0, crate::memory::page_size());
    let stats = settled_stats();
    assert_eq!(
        runs.relisted.load(Ordering::Acquire),
        0,
        "the read of the cached file did not start the list at its place"
    );
    assert!(
        stats.pages_prefetched >= 16,
        "the next file was not advised: {stats:?}"
    );
}

/// The opener stays [`AHEAD_FILES`] files past the furthest file the
/// program has read: it waits there, and a read further on lets it open
/// more (the order forced on this thread, with the opener's bounded wait).
#[test]
fn the_opener_stays_a_bounded_number_of_files_ahead_of_the_program() {
    let page_size = crate::memory::page_size();
    let count = AHEAD_FILES + 2 * FIRST_FILES;
    let forced = Forced::new(count);
    let (replay, identities) = (forced.replay, &forced.identities);
    open_files(replay, AHEAD_FILES, &mut || false);
    assert_eq!(replay.opening.opened(), (AHEAD_FILES, count));
    assert!(
        !replay.opening.has_room(),
        "the opener may run past its bound"
    );

    on_read(&identities[FIRST_FILES].1, 0, page_size);
    assert!(replay.opening.has_room());
    open_files(replay, 2 * FIRST_FILES, &mut || false);
    assert_eq!(
        replay.opening.opened(),
        (AHEAD_FILES + FIRST_FILES + 1, count),
        "the opener did not stop {AHEAD_FILES} files past the program's file"
    );
}

/// A file the program maps and faults in is opened whether the opener has
/// not reached it yet or skipped it (the program's reads of two files
/// before the opener reached them move it past the next ones): a mapped
/// file is come back to, run after run. Without this, the replay of a
/// program reading one file through `mmap` after reading its script never
/// opened the file and advised nothing. The order is forced on this thread.
#[test]
fn a_mapped_file_faulted_in_is_opened_even_where_the_opener_skipped_it() {
    let page_size = crate::memory::page_size();
    let forced = Forced::new(4 * FIRST_FILES);
    let (replay, runs, identities) = (forced.replay, &forced.runs, &forced.identities);
    let fd = |file: usize| forced.fd(file);
    let run_of = |file: usize| -> Vec<Entry> { (0..16).map(|page| (fd(file), page)).collect() };

    // Faults in a file not opened yet, run after run: it is opened next,
    // not skipped as a file read before the opener reached it.
    let waiting = FIRST_FILES + 1;
    faulted_in(replay, &run_of(waiting)[..8]);
    faulted_in(replay, &run_of(waiting)[8..]);
    open_files(replay, 1, &mut || false);
    assert!(
        replay.opening.is_open(fd(waiting)),
        "the mapped file was skipped"
    );

    // Two reads of files not opened yet move the opener past the file
    // after them; faulting that file in opens it.
    let past = 2 * FIRST_FILES;
    on_read(&identities[past].1, 0, page_size);
    on_read(&identities[past + 1].1, 0, page_size);
    open_files(replay, 1, &mut || false);
    let skipped = past + 2;
    assert!(!replay.opening.is_open(fd(skipped)));
    faulted_in(replay, &run_of(skipped));
    assert!(
        replay.opening.is_open(fd(skipped)),
        "the skipped mapped file was not opened"
    );
    follow_regions(globals(), fd(skipped), 0, page_size);
    let stats = settled_stats();
    assert!(runs.relisted.load(Ordering::Acquire) >= skipped * 16);
    assert!(stats.pages_prefetched > 0, "nothing advised: {stats:?}");
}

/// The follower of mapped pages looks while the opener waits at its bound
/// (`meanwhile`), not only once every file is open: a program that moves
/// forward only through faults (the shared libraries of `import numpy,
/// pandas`) gives the opener room through it. Here the fault of a file at
/// the bound, seen by the follower's look, lets the opener open past it;
/// with the follower after the opener, the opener stayed at its bound. The
/// order is forced on this thread.
#[test]
fn the_follower_looks_while_the_opener_waits_for_the_program() {
    let count = AHEAD_FILES + 2 * FIRST_FILES;
    let forced = Forced::new(count);
    let replay = forced.replay;
    let faulted: Vec<Entry> = (0..16).map(|page| (forced.fd(FIRST_FILES), page)).collect();
    let mut looks_at_the_bound = 0;
    open_files(replay, count - FIRST_FILES, &mut || {
        if !replay.opening.has_room() {
            looks_at_the_bound += 1;
            faulted_in(replay, &faulted);
        }
        true
    });
    assert!(
        looks_at_the_bound > 0,
        "the follower never looked at the bound"
    );
    assert_eq!(
        replay.opening.opened(),
        (AHEAD_FILES + FIRST_FILES + 1, count),
        "the opener did not move past its bound with the fault"
    );
}

/// Files the opener leapt over to get ahead of the program (two reads of
/// files it had not opened yet move it [`FIRST_FILES`] past the second),
/// and that the program has not reached, are opened once every file has
/// had its turn, and the list starts again at the program's file to take
/// them in. Before, a program that read two files ahead of the opener and
/// then waited (a Python program polling a file before reading its data
/// file) never had the file it read next opened, and its replay advised
/// nothing of it. The order is forced on this thread.
#[test]
fn files_skipped_ahead_of_the_program_are_opened_once_every_file_had_its_turn() {
    let page_size = crate::memory::page_size();
    let count = 4 * FIRST_FILES;
    let forced = Forced::new(count);
    let (replay, runs, identities) = (forced.replay, &forced.runs, &forced.identities);
    let fd = |file: usize| forced.fd(file);

    on_read(&identities[0].1, 0, page_size);
    let past = 2 * FIRST_FILES;
    on_read(&identities[past].1, 0, page_size);
    on_read(&identities[past + 1].1, 0, page_size);
    let next = past + 2;
    open_files(replay, 1, &mut || false);
    assert!(
        !replay.opening.is_open(fd(next)),
        "the opener did not skip ahead"
    );
    open_files(replay, count, &mut || false);
    assert!(
        replay.opening.is_open(fd(next)),
        "the skipped file the program reads next was never opened"
    );
    assert_eq!(
        runs.relisted.load(Ordering::Acquire),
        (past + 1) * 16,
        "the list did not start again at the program's file"
    );
}
