//! Advice on a FUSE file is not lost to the kernel's congestion check
//! (`src/descriptors.rs`): on the emulated disk (`prefetch emulate`, a real
//! FUSE mount of a real file, disk time at scale 1), an application reads
//! the head of a file sequentially, which grows its descriptor's readahead
//! state, then lists every other page of the rest (a list of adjacent pages
//! would be left to the kernel's read-ahead, `plan::readahead`); once the
//! round's advice is issued, (nearly) every listed page is in the page cache (advised through the application's
//! descriptor, about half of them were dropped); the library's private
//! descriptor is kept, under any lock the application takes, until the
//! application closes the file. Skipped, saying why, where FUSE is
//! unavailable.

use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use emulate::{Config as MountConfig, Placement};
use libprefetch::residency::cachestat;
use libprefetch::{AccessEntry, Client, Config, Mode};

const PAGE: u64 = 4096;
/// More than the emulator's 256 queued 128 KiB requests, so the queue fills.
const FILE_BYTES: u64 = 64 << 20;
const HEAD_BYTES: u64 = 2 << 20;
const READ_BYTES: usize = 128 << 10;

/// A file of the given bytes on a fresh emulated disk (model `st3500320as`, contiguous placement),
/// unmounted when dropped.
struct Emulated {
    file: std::path::PathBuf,
    _mounted: emulate::Mounted,
    _dir: tempfile::TempDir,
}

/// What the `close` interposer does, when dropped (also when an assertion
/// fails): the library's private descriptor of the file goes with it, else it
/// keeps the mount busy and the unmount waits for it.
struct NoteCloseOnDrop(std::os::fd::RawFd);

impl Drop for NoteCloseOnDrop {
    fn drop(&mut self) {
        libprefetch::note_close(self.0);
    }
}

impl Emulated {
    /// `None`, saying why, where FUSE is unavailable.
    fn with_file(bytes: &[u8]) -> Option<Emulated> {
        if let Some(reason) = emulate::fuse_kernel_missing() {
            println!("skipped (kernel feature missing): {reason}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let (backing, mountpoint) = (dir.path().join("backing"), dir.path().join("mnt"));
        fs::create_dir(&backing).unwrap();
        fs::create_dir(&mountpoint).unwrap();
        fs::write(backing.join("data"), bytes).unwrap();
        let mut config = MountConfig::new("st3500320as", &backing, &mountpoint);
        config.placement = Placement::Contiguous;
        let mounted = emulate::mount(&config).expect("mount the emulated disk");
        Some(Emulated {
            file: mountpoint.join("data"),
            _mounted: mounted,
            _dir: dir,
        })
    }
}

#[test]
fn advice_through_a_sequentially_read_descriptor_reaches_the_page_cache() {
    let bytes: Vec<u8> = (0..FILE_BYTES).map(|i| (i % 251) as u8).collect();
    let Some(emulated) = Emulated::with_file(&bytes) else {
        return;
    };
    let file = File::open(&emulated.file).unwrap();
    let _closing = NoteCloseOnDrop(file.as_raw_fd());
    let mut buffer = vec![0u8; READ_BYTES];
    for offset in (0..HEAD_BYTES).step_by(READ_BYTES) {
        file.read_exact_at(&mut buffer, offset).unwrap();
    }
    let client = Client::register(
        Config {
            max_budget_bytes: Some(1 << 30),
            infill_bytes: Some(0),
            // The whole list in one round (no slow start).
            start_window_bytes: None,
            ..Config::default()
        },
        |_, _| {},
    )
    .unwrap();
    client
        .register_region(file.as_raw_fd(), 0, FILE_BYTES)
        .unwrap();
    let entries: Vec<AccessEntry> = (HEAD_BYTES..FILE_BYTES)
        .step_by(2 * PAGE as usize)
        .map(|offset| AccessEntry {
            offset,
            fd: file.as_raw_fd(),
            mark: false,
        })
        .collect();
    client
        .request_prefetching(&entries, Mode::SET | Mode::DONE)
        .unwrap();
    client.settle();
    let listed = entries.len() as u64;
    let cached = entries
        .iter()
        .map(|entry| {
            cachestat(file.as_raw_fd(), entry.offset, PAGE)
                .unwrap()
                .nr_cache
        })
        .sum::<u64>();
    // Not all pages: some machines (this one included) run a DAMON
    // `pageout` scheme that may reclaim page cache nobody has touched yet at
    // any moment (seen: 44 of 15872 pages gone). The drop this test guards
    // against loses about 45% of the list.
    assert!(
        cached >= listed * 95 / 100,
        "only {cached} of the {listed} listed pages are in the page cache"
    );
}

/// Whether another process could take a write lock on the whole of `file` now (F_GETLK from a
/// forked child, which does only async-signal-safe calls).
fn another_process_could_lock(file: &File) -> bool {
    // SAFETY: the child calls only fcntl and _exit before it ends.
    match unsafe { libc::fork() } {
        0 => {
            let mut probe = whole_file_lock(libc::F_WRLCK);
            // SAFETY: F_GETLK with a valid struct flock on an open descriptor.
            let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut probe) };
            let free = rc == 0 && probe.l_type == libc::F_UNLCK as libc::c_short;
            // SAFETY: ends the child without running the parent's destructors.
            unsafe { libc::_exit(i32::from(free)) }
        }
        child => {
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
            libc::WEXITSTATUS(status) == 1
        }
    }
}

fn whole_file_lock(kind: libc::c_int) -> libc::flock {
    libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

/// Descriptors of this process naming `path` (other tests run in this process, on other files).
fn descriptors_of(path: &std::path::Path) -> usize {
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target == path)
        .count()
}

#[test]
fn a_private_descriptor_stays_open_until_the_application_closes_its_file() {
    let Some(emulated) = Emulated::with_file(&[1u8; 1 << 20]) else {
        return;
    };
    let file = File::open(&emulated.file).unwrap();
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    let region = client
        .register_region(file.as_raw_fd(), 0, 1 << 20)
        .unwrap();
    advise_first_page(&client, &file);
    assert_eq!(
        descriptors_of(&emulated.file),
        2,
        "a private descriptor for the FUSE file"
    );
    client.unregister_region(region).unwrap();

    // A lock taken after the region went: the private descriptor must not be closed under it.
    // The emulated disk is read-only: a read lock, which another process's write lock conflicts with.
    let lock = whole_file_lock(libc::F_RDLCK);
    // SAFETY: F_SETLK with a valid struct flock on an open descriptor.
    assert_eq!(
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) },
        0
    );
    drop(client);
    assert!(
        !another_process_could_lock(&file),
        "the library released the application's lock"
    );
    assert_eq!(
        descriptors_of(&emulated.file),
        2,
        "kept while the file is open"
    );

    // The application's close (told first, as the interposers do) retires it at once.
    libprefetch::note_close(file.as_raw_fd());
    drop(file);
    assert_eq!(descriptors_of(&emulated.file), 0, "retired with the file");
}

#[test]
fn a_round_advised_after_the_close_is_noted_leaves_no_descriptor_behind() {
    let Some(emulated) = Emulated::with_file(&[1u8; 1 << 20]) else {
        return;
    };
    let file = File::open(&emulated.file).unwrap();
    let client = Client::register(Config::default(), |_, _| {}).unwrap();
    client
        .register_region(file.as_raw_fd(), 0, 1 << 20)
        .unwrap();
    // The close interposer tells the library first; a round advised before the real close (a
    // round queued for the advice thread, or another thread's request) still names the file.
    libprefetch::note_close(file.as_raw_fd());
    advise_first_page(&client, &file);
    drop(file);
    let left = descriptors_of(&emulated.file);
    // Closed here, so that a failure reads as one rather than an unmount waiting for ever.
    close_descriptors_of(&emulated.file);
    assert_eq!(
        left, 0,
        "a private descriptor opened after the close was noted outlives the file"
    );
}

/// Lists the first page of `file` and waits for the round's advice.
fn advise_first_page(client: &Client, file: &File) {
    let entry = AccessEntry {
        offset: 0,
        fd: file.as_raw_fd(),
        mark: false,
    };
    client
        .request_prefetching(&[entry], Mode::SET | Mode::DONE)
        .unwrap();
    client.settle();
}

fn close_descriptors_of(path: &std::path::Path) {
    for entry in fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let names_path = fs::read_link(entry.path()).is_ok_and(|target| target == path);
        let fd = entry.file_name().to_string_lossy().parse::<libc::c_int>();
        if let (true, Ok(fd)) = (names_path, fd) {
            // SAFETY: closes a descriptor of this test's file, which nothing else uses.
            unsafe { libc::close(fd) };
        }
    }
}
