//! The replayer of `prefetch run --replay FILE`: a recording (`record.rs`,
//! docs/record.md) handed to the library as one client's access list, so an
//! unmodified program gets the window, budget, C-LOOK order with infill and
//! AIMD of an application that lists its own reads.
//!
//! At start the replayer checks that the recording is a regular file (a
//! FIFO or a device is refused with one line, before it is opened); then,
//! on a thread of its own while the program's `main` runs, it reads the
//! recording one part at a time (`replay_read.rs`; what it holds is one part and the list,
//! which stops at 1/`plan::LIST_MEMORY_SHARE` of the memory available),
//! keeps the parts recorded by the
//! same executable (`/proc/self/exe`), each process's runs in the order
//! they were touched, and opens each of their
//! files itself: read-only, close-on-exec, a private descriptor that the
//! program never reads (as on FUSE, `descriptors.rs`), so pages of files the
//! program has not opened yet can be prefetched. The files are opened in
//! the order the list reaches them, the first [`FIRST_FILES`] before the
//! replay follows the program and the rest beside it, the list growing as
//! they open (`replay_open.rs`): each open on a slow file system waits in
//! line with the program's requests. A file whose device,
//! inode, size or modification time differs from the recording's is
//! skipped, as are files past [`Descriptors::max_files`]. The pages of the rest become
//! the list, each on its private descriptor, with a region covering each
//! file. Nothing is advised until the program first touches a page the
//! list holds (a read of a replayed file, or a page of one it maps found
//! present, `replay_mapped.rs`): a recording the program does not follow
//! costs its reading and nothing else. Reads the program makes while the
//! replay is getting ready (its latest [`EARLY_READS`]) are remembered and
//! told, in their order, when it is: a program whose first touch comes
//! before the replay's thread has read the recording is still followed
//! from there. From that touch on, the list runs
//! from the page's place with the paper's first window (90% of the memory
//! available, then AIMD; the budget is capped where the list does not fit
//! in that memory, [`budget_cap`]), not the 128 KiB of the slow start
//! (`LIBPREFETCH_START_WINDOW` still sets it). Slow start guards a list its
//! application may abandon early; a recording is the whole run, known in
//! advance (the 64 MiB index scan of the stock sqlite3 shell on the emulated
//! 7200 RPM disk replays in 4.3-13.1 s from 128 KiB, 1.1-2.0 s from the
//! paper's window; stock ~60 s).
//!
//! The program's reads are matched by file identity (`observe.rs`): the
//! reads of a replayed file that the recording would list (each page's
//! first read, and rereads as the recording's `rereads_after` says, counted
//! as when recording) are handed to the client as reads of the private
//! descriptor, so the planner follows the program through the list; other
//! rereads are left out, as the recording left them out. Where the program
//! reads a page out of the list's order, the callback looks the page up in
//! the recording (from where the list last started, then from the start)
//! and restarts the list there (`PF_SET`, as Figure 7 lists from the requested offset); a page
//! the recording does not hold leaves the list alone: the planner counts a
//! divergence, the read is a plain read, and prefetching resumes when the
//! program comes back to the list. Pages the program faults in through its
//! mappings move the list too (`replay_mapped.rs`, on the replay's thread
//! once the client is registered). Bytes, errno and file positions are the
//! kernel's: the replayer only advises.
//!
//! The replay's thread runs at the lowest priority ([`yield_to_program`]):
//! its work waits while the program's threads keep the processors busy.
//! The advice thread keeps its priority (docs/record.md).
//!
//! Fork: a forked child does not replay (the parent's client is inert in
//! it, `registry.rs`). Exec: the new program replays the parts of its own
//! executable, if the environment still holds the variable.
//!
//! Follows libprefetch (ATC 2009) sections 4.1-4.6 through `client.rs`.
//! Deviations: the access list comes from a recording, not from the
//! application; the client and its descriptors live until the process exits;
//! no slow start (above); its thread runs at the lowest priority.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use plan::Mode;
use rustix::fs::CWD;

use crate::client::{AccessEntry, CallbackInfo, Client, Config};
use crate::filestat::FileStat;
use crate::registry::{follow_regions, globals};
use crate::replay_mapped::{self, Entry, Follower, Runs};
use crate::replay_open::{Opening, FIRST_FILES};

/// The variable that sets the first window (`env.rs`); a replay without it
/// starts at the paper's window, not the slow start's 128 KiB.
const START_WINDOW: &str = crate::variables::START_WINDOW.name;

static REPLAY: AtomicPtr<Replay> = AtomicPtr::new(std::ptr::null_mut());

/// Told when the replay finds nothing to replay (`observe::replay_has_nothing`,
/// given by [`start`]'s caller, since `observe.rs` calls into this file).
static HAS_NOTHING: OnceLock<fn()> = OnceLock::new();

/// There is nothing to replay: tells [`HAS_NOTHING`].
fn nothing_to_replay() {
    if let Some(has_nothing) = HAS_NOTHING.get() {
        has_nothing();
    }
}

/// Most reads remembered while the replay gets ready (the latest are kept:
/// the last one places the list).
const EARLY_READS: usize = 4096;

/// A read of bytes `[offset, end)` of the file (device, inode).
type Read = ((u64, u64), u64, u64);

/// Set from [`start`] until the replay is ready or gives up: meanwhile the
/// program's reads go to [`EARLY`].
static PENDING: AtomicBool = AtomicBool::new(false);

/// The program's reads made while [`PENDING`], oldest first.
static EARLY: Mutex<VecDeque<Read>> = Mutex::new(VecDeque::new());

/// The whole list, for the callback: (private descriptor, page) pairs,
/// 8 bytes an entry (a recording of a long program lists millions).
struct ListIndex {
    entries: Arc<Vec<Entry>>,
    page_size: u64,
    /// Which files are open, and up to where the list may go.
    opening: Arc<Opening>,
    /// Where the list handed to the client last started.
    start: usize,
    /// Where it ends (the frontier when it was handed over or last grown);
    /// `None` until the program first touches a listed page.
    listed_to: Option<usize>,
    /// The same, for the follower of mapped pages (`replay_mapped.rs`).
    relisted: Arc<AtomicUsize>,
    /// The client's divergences at the last callback: a callback after
    /// none since asks only for more list ([`ListIndex::relist`]).
    divergences: u64,
}

/// Starts replaying the recording at `path` beside the program: a
/// recording that is not a regular file is refused at once (one line, and
/// the variable is taken out of the environment so that the programs this
/// one runs do not warn again); the rest (reading it, opening its files,
/// the first round) runs on a thread of its own while `main` starts.
/// A recording that cannot be read prints one line and is left alone.
/// Called before `main`, while the process has one thread; `has_nothing`
/// is called if there turns out to be nothing to replay.
pub(crate) fn start(path: OsString, has_nothing: fn()) {
    let _ = HAS_NOTHING.set(has_nothing);
    if let Err(reason) = check_regular(&path) {
        warn(&path, &reason);
        std::env::remove_var(crate::variables::REPLAY.name);
        return;
    }
    PENDING.store(true, Ordering::Release);
    if !spawn_beside("libprefetch-replay", move || start_beside(&path)) {
        give_up_early();
        warn(
            OsStr::new("(no thread)"),
            "cannot start the replay's thread",
        );
    }
}

/// Runs `job` on a thread of the replay's named `name`: inside the library
/// (its reads are not the program's), at the lowest priority; false if no
/// thread can be had.
fn spawn_beside(name: &str, job: impl FnOnce() + Send + 'static) -> bool {
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _inside = crate::guard::Reentry::enter();
            crate::client::reads_on_behalf();
            yield_to_program();
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        });
    spawned.is_ok()
}

/// The nice value of the replay's threads: the lowest priority.
const BESIDE_NICE: i32 = 19;

/// Puts the calling thread (the replay's) at the lowest priority: the
/// replay's work (reading the recording, opening and registering files,
/// following mapped pages) then runs on a processor the program leaves
/// idle, as while it waits for the disk, and waits while the program's
/// threads keep every processor busy, where advice could not make it
/// faster and the replay's own work would make it slower (docs/record.md).
fn yield_to_program() {
    // On Linux the nice value is a thread's: `None` is the calling thread.
    let _ = rustix::process::setpriority_process(None, BESIDE_NICE);
}

/// The recording's one line on stderr.
fn warn(path: &OsStr, reason: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "libprefetch: not replaying {}: {reason} (the program runs without it; \
         give a recording written by `prefetch record -o FILE`)",
        path.to_string_lossy()
    );
}

/// Reads the recording, opens its files and starts the first round; then
/// follows the program through its mapped pages (`replay_mapped.rs`). The
/// rest of the files are opened on this thread first, kept
/// [`crate::replay_open::AHEAD_FILES`] ahead of the program, and the
/// follower looks at the page table between opens and while the opener
/// waits for the program: a program that moves forward only through page
/// faults (the shared libraries of `import numpy, pandas`) moves the opener
/// only through the follower. With the opener on a thread of its own the
/// follower ran from the start beside it, and its tells cost `git grep` in
/// a 3 MiB memory cgroup on the emulated disk some 25 requests a run (585
/// against 563 here, the same recording).
fn start_beside(path: &OsStr) {
    match ready(path) {
        Some((replay, runs)) => {
            let mut follower = follower(replay, &runs);
            open_files(replay, usize::MAX, &mut || {
                follower.look();
                follower.watching()
            });
            follower.follow()
        }
        None => give_up_early(),
    }
}

/// Reads the recording, opens its files, registers the client and tells it
/// the reads the program made meanwhile ([`publish`]); `None` if there is
/// nothing to replay.
fn ready(path: &OsStr) -> Option<(&'static Replay, Runs)> {
    let exe = rustix::fs::readlinkat(CWD, "/proc/self/exe", Vec::new())
        .map(|target| target.into_bytes())
        .unwrap_or_default();
    let available = crate::memory::available_for_cache();
    let max_entries = max_entries(available);
    let (replay, runs, mapped_bytes) = match read_recording(path, &exe, max_entries) {
        Ok(read) => read,
        Err(reason) => {
            nothing_to_replay();
            warn(path, &reason);
            return None;
        }
    };
    if runs.entries.is_empty() {
        nothing_to_replay();
        return None;
    }
    let index = Arc::new(Mutex::new(ListIndex {
        entries: Arc::clone(&runs.entries),
        page_size: replay.page_size,
        opening: Arc::clone(&replay.opening),
        start: 0,
        listed_to: None,
        divergences: 0,
        relisted: Arc::clone(&runs.relisted),
    }));
    let list_bytes = runs.entries.len() as u64 * replay.page_size;
    let cap = budget_cap(list_bytes, mapped_bytes, available);
    let client = register(Arc::clone(&index), cap)?;
    let replay: &'static Replay = Box::leak(Box::new(replay));
    *CLIENT.lock().unwrap_or_else(|e| e.into_inner()) = Some(client);
    *INDEX.lock().unwrap_or_else(|e| e.into_inner()) = Some(index);
    // SAFETY: a plain extern "C" fn without arguments.
    unsafe { libc::atexit(unregister_at_exit) };
    open_files(replay, FIRST_FILES, &mut || false);
    publish(replay);
    Some((replay, runs))
}

/// The list, shared by the callback and [`open_files`].
static INDEX: Mutex<Option<Arc<Mutex<ListIndex>>>> = Mutex::new(None);

/// Opens up to `count` more of the replay's files in list order
/// (`replay_open.rs`), registering a region for each one unchanged, and
/// grows the client's list to the new frontier if the program has started
/// it: each time the files opened since the opener last skipped to the
/// program double, and at the end (each growth probes the memory
/// available, `Client::request_from`). `meanwhile` runs after each open
/// and while the opener waits for the program (the follower of mapped
/// pages); it says whether it is watching mapped pages, and the wait is
/// then short ([`replay_mapped::LOOK_EVERY`] rather than the opener's own
/// step): a program that maps no replayed file (`grep -rn`) sees the
/// opener as before.
fn open_files(replay: &Replay, count: usize, meanwhile: &mut dyn FnMut() -> bool) {
    // The client's lock is taken for each file, not for the whole loop: a
    // program's read of a file left out as cached takes it ([`start_at`]).
    // Files opened since the opener last skipped to the program (or since
    // it started): the list grows each time they double.
    let mut run = 0usize;
    let mut relist = false;
    for _ in 0..count {
        // A wait that ends without room counts as one of `count`: the
        // opener beside the program (`usize::MAX`) waits on.
        if !replay.opening.has_room() {
            grow_list();
            let wait = match meanwhile() {
                true => replay_mapped::LOOK_EVERY,
                false => Duration::MAX,
            };
            if !replay.opening.wait_for_room(wait) {
                continue;
            }
        }
        let before = replay.opening.done();
        let late = replay.opening.opened_late();
        let Ok(opened) = replay.opening.open_next() else {
            break;
        };
        if replay.opening.opened_late() > late {
            // A file skipped ahead of the program, opened once every file
            // had its turn: the list so far left it out (started again
            // once, when the last of them is open).
            if let Some((private, size)) = opened {
                adopt(private, size);
                relist = true;
            }
            continue;
        }
        run = if replay.opening.done() == before + 1 {
            run + 1
        } else {
            1
        };
        if let Some((private, size)) = opened {
            adopt(private, size);
        }
        if run.is_power_of_two() {
            grow_list();
        }
        meanwhile();
    }
    if relist {
        relist_at_program(replay);
    }
    grow_list();
}

/// Takes a file the opener opened at `private` into the replay: its
/// descriptor is the library's, and its region the client's.
fn adopt(private: RawFd, size: u64) {
    globals().private_descriptors.adopt_unread(private);
    let client = CLIENT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(client) = client.as_ref() {
        let _ = client.register_region(private, 0, size.max(1));
    }
}

/// Starts the list again at the first entry of the furthest file the
/// program has reached, if it has started the list: files opened out of
/// their turn since are in it from there.
fn relist_at_program(replay: &Replay) {
    let Some(at) = replay.opening.program_entry() else {
        return;
    };
    let index = INDEX.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let client = CLIENT.lock().unwrap_or_else(|e| e.into_inner());
    if let (Some(index), Some(client)) = (index, client.as_ref()) {
        let mut index = index.lock().unwrap_or_else(|e| e.into_inner());
        if index.listed_to.is_some() {
            index.list_from(client, at);
            client.run_round_now();
        }
    }
}

/// Grows the client's list to the frontier of files opened, if the program
/// has started it.
fn grow_list() {
    let index = INDEX.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let client = CLIENT.lock().unwrap_or_else(|e| e.into_inner());
    if let (Some(index), Some(client)) = (index, client.as_ref()) {
        index.lock().unwrap_or_else(|e| e.into_inner()).grow(client);
    }
}

/// Tells the client the reads remembered while the replay got ready, in
/// order, then makes it the replay the read path sees. The reads are told
/// without the lock (the program's threads keep remembering meanwhile);
/// the replay is published under it once nothing is left, so no read is
/// told out of order.
fn publish(replay: &'static Replay) {
    loop {
        let mut early = EARLY.lock().unwrap_or_else(|e| e.into_inner());
        if early.is_empty() {
            REPLAY.store(std::ptr::from_ref(replay).cast_mut(), Ordering::Release);
            PENDING.store(false, Ordering::Release);
            *early = VecDeque::new();
            return;
        }
        let reads = std::mem::take(&mut *early);
        drop(early);
        for (key, offset, end) in reads {
            follow_read(replay, key, offset, end);
        }
    }
}

/// The replay will not be ready: the reads remembered are dropped.
fn give_up_early() {
    let mut early = EARLY.lock().unwrap_or_else(|e| e.into_inner());
    PENDING.store(false, Ordering::Release);
    *early = VecDeque::new();
}

/// Remembers a read made before the replay is ready; if it became ready
/// meanwhile, tells it at once.
fn remember(read: Read) {
    if PENDING.load(Ordering::Acquire) {
        let mut early = EARLY.lock().unwrap_or_else(|e| e.into_inner());
        if PENDING.load(Ordering::Acquire) {
            if early.len() == EARLY_READS {
                early.pop_front();
            }
            early.push_back(read);
            return;
        }
    }
    if let Some(replay) = replay() {
        let (key, offset, end) = read;
        follow_read(replay, key, offset, end);
    }
}

/// The follower of the pages the program faults in (`replay_mapped.rs`),
/// sharing the read interposers' count of pages read (`Touches`).
fn follower<'a>(replay: &'static Replay, runs: &'a Runs) -> Follower<'a> {
    let touches = || replay.touches.lock().unwrap_or_else(|e| e.into_inner());
    let identity = |fd: RawFd| replay.identities.get(&fd).copied();
    Follower::new(
        runs,
        |dev, ino| replay.files.get(&(dev, ino)).copied(),
        move |entries| {
            let touches = touches();
            let read = |&(fd, page): &Entry| {
                identity(fd).is_some_and(|key| touches.was_read(key, u64::from(page)))
            };
            entries.iter().any(read)
        },
        |entries| faulted_in(replay, entries),
    )
}

/// The program faulted in `entries` (one run of one file, told to the
/// planner by `replay_mapped.rs`): they count as read, the program's place
/// moves to their file, and the file is opened now if it is waiting or was
/// skipped ([`crate::replay_open::Opening::touch_mapped`]).
fn faulted_in(replay: &Replay, entries: &[Entry]) {
    let mut touches = replay.touches.lock().unwrap_or_else(|e| e.into_inner());
    for &(fd, page) in entries {
        if let Some(&key) = replay.identities.get(&fd) {
            touches.read(key, u64::from(page));
        }
    }
    drop(touches);
    if let Some(&(fd, _)) = entries.last() {
        replay.opening.touch_mapped(fd);
        if let Some((private, size)) = replay.opening.open_skipped(fd) {
            adopt(private, size);
            grow_list();
        }
    }
}

/// Entries the replay's index may hold: 1/`plan::LIST_MEMORY_SHARE` of the
/// memory `available`, at 8 bytes an entry, as the client's own list is
/// bounded (the pages past it are not replayed).
fn max_entries(available: u64) -> usize {
    let bytes = available / plan::LIST_MEMORY_SHARE;
    let entry = std::mem::size_of::<(RawFd, u32)>() as u64;
    usize::try_from(bytes / entry).unwrap_or(usize::MAX)
}

/// Fails unless `path` names a regular file (stat, without opening it: a
/// FIFO would block the open, a device could never end).
fn check_regular(path: &OsStr) -> Result<(), String> {
    let stat =
        rustix::fs::statat(CWD, path, rustix::fs::AtFlags::empty()).map_err(|e| e.to_string())?;
    match stat.st_mode & libc::S_IFMT == libc::S_IFREG {
        true => Ok(()),
        false => Err("not a regular file".into()),
    }
}

/// The replay's client, kept until the process exits.
static CLIENT: Mutex<Option<Client>> = Mutex::new(None);

/// At exit: unregisters the client, so that the process leaves the memory
/// budget's shared table (`share.rs`; the last one out removes it). In a
/// forked child the parent's client is inert and dropping it does nothing;
/// if a parent thread held the slot's lock at the fork, it is left alone.
extern "C" fn unregister_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        // The replay's thread holds the slot while it registers a file:
        // a few tries, never a wait that a lock held at a fork could block.
        let slot = (0..EXIT_TRIES).find_map(|_| {
            let slot = CLIENT.try_lock().ok();
            if slot.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            slot
        });
        if let Some(mut slot) = slot {
            if let Some(client) = slot.as_ref() {
                report(client);
            }
            drop(slot.take());
        }
    });
}

/// Tries at exit to take the client's slot, a millisecond apart.
const EXIT_TRIES: usize = 20;

/// Times the list was started again at a page of the recording (the
/// callback's `PF_SET`), the first start included.
static RESTARTS: AtomicUsize = AtomicUsize::new(0);

/// With `LIBPREFETCH_REPLAY_REPORT=1`, one line on stderr of what became
/// of the pages the replay had the device read: read by the program while
/// the plan held them, dropped by the plan unread, and the rest (evicted by
/// the kernel before their read, or left behind by a restart and never
/// read), with the list's restarts and the program's reads found missing.
fn report(client: &Client) {
    if crate::variables::REPLAY_REPORT
        .value()
        .is_none_or(|v| v != "1")
    {
        return;
    }
    let stats = client.stats();
    let unread = stats.pages_prefetched.saturating_sub(stats.prefetched_used);
    let line = format!(
        "libprefetch: replay: {} pages advised ({} not cached then), {} read by the program, \
         {} dropped unread by the plan, {} neither (held at exit, evicted, or left at a \
         restart); {} callbacks, {} restarts, {} divergences, {} reads missing, \
         {} premature evictions",
        stats.pages_prefetched,
        stats.pages_fetched,
        stats.prefetched_used,
        stats.prefetched_unused_dropped,
        unread.saturating_sub(stats.prefetched_unused_dropped),
        stats.callbacks,
        RESTARTS.load(Ordering::Relaxed),
        stats.divergences,
        stats.misses,
        stats.premature_evictions,
    );
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Shares of the memory available a replay keeps to where its list does
/// not fit in it ([`budget_cap`]).
const CROWDED_SHARE: u64 = 2;
const CROWDED_MAPPED_SHARE: u64 = 8;

/// The cap on the replay's memory budget, by the bytes of its list
/// (`list_bytes`, of which `mapped_bytes` in files the program maps) and
/// the memory `available` for caching: none while the list fits.
///
/// A list that does not fit means the program's pages come and go during
/// the run: the replay keeps to half the memory. Pages prefetched and not
/// yet read wait on the kernel's inactive list, which in a small memory
/// cgroup holds about half of its file pages; a window of 90% of the
/// memory evicts its own last pages before their read (`grep -rn` in a
/// 4 MiB cgroup read 722 requests against stock's 649; 655 at half).
///
/// Where the mapped pages do not fit, 1/8: a mapped page's touches after
/// its fault are invisible, so the list holds it once however often the
/// program comes back to it, and prefetching far ahead pushes out pages
/// it touches again before it reaches the prefetched ones (in a memory
/// cgroup of a quarter, the `mmap` random reader of docs/record.md read
/// 3,466 requests against stock's 2,716 with the paper's window, 3,098 at
/// 1/8). Rereads of pages read with `read` can be recorded instead
/// (`--rereads-after`).
fn budget_cap(list_bytes: u64, mapped_bytes: u64, available: u64) -> Option<u64> {
    let share = match () {
        () if mapped_bytes > available => CROWDED_MAPPED_SHARE,
        () if list_bytes > available => CROWDED_SHARE,
        () => return None,
    };
    Some((available / share).max(1))
}

/// Registers the client and its regions, its budget capped at `cap` unless
/// the user set one; the list is handed over by the callback at the
/// program's first touch of a listed page.
fn register(index: Arc<Mutex<ListIndex>>, cap: Option<u64>) -> Option<Client> {
    let from_env = Config::from_env();
    from_env.warn_once();
    let mut config = from_env.config;
    if std::env::var_os(START_WINDOW).is_none() {
        config.start_window_bytes = None;
    }
    config.max_budget_bytes = config.max_budget_bytes.or(cap);
    let callback = move |client: &Client, info: CallbackInfo| {
        let mut index = index.lock().unwrap_or_else(|e| e.into_inner());
        index.relist(client, info);
    };
    Client::register(config, callback).ok()
}

impl ListIndex {
    /// The list's entries `[at, to)` of files opened unchanged, as access
    /// entries (the client takes what its capacity allows).
    fn between(&self, at: usize, to: usize) -> impl Iterator<Item = AccessEntry> + '_ {
        let page_size = self.page_size;
        let tail = self.entries.get(at..to).unwrap_or_default();
        let open = tail.iter().filter(|&&(fd, _)| self.opening.is_open(fd));
        open.map(move |&(fd, page)| AccessEntry {
            offset: u64::from(page) * page_size,
            fd,
            mark: false,
        })
    }

    /// Appends the entries up to the frontier of files opened, once the
    /// program has started the list (`PF_APPEND`), and plans a round.
    fn grow(&mut self, client: &Client) {
        let Some(listed_to) = self.listed_to else {
            return;
        };
        let frontier = self.opening.frontier();
        if frontier > listed_to {
            self.listed_to = Some(frontier);
            let _ =
                client.request_from(self.between(listed_to, frontier), Mode::APPEND | Mode::DONE);
            // Planned now, not at the program's next read of a listed
            // file: its next reads may all be of files left out as cached.
            client.run_round_now();
        }
    }

    /// The callback: the list from the requested page's place in the
    /// recording (its first place at or after the previous start, else its
    /// first), or nothing if the recording does not hold it.
    ///
    /// A callback with no divergence since the last one comes from a list
    /// running short (its end is the frontier of files opened): the list
    /// grows instead. Started again at the read's place, the list would lose
    /// the entries behind it, and with several threads reading it (`git
    /// grep`'s), the pages a slower thread had not read yet would be dropped
    /// as no longer listed and read again.
    fn relist(&mut self, client: &Client, info: CallbackInfo) {
        let divergences = client.stats().divergences;
        let diverged = divergences > self.divergences;
        self.divergences = divergences;
        if !diverged && self.listed_to.is_some() {
            self.grow(client);
            return;
        }
        let (fd, offset) = info.requested;
        let Ok(page) = u32::try_from(offset / self.page_size) else {
            return;
        };
        let place = |range: std::ops::Range<usize>| {
            let entries = &self.entries[range.clone()];
            entries
                .iter()
                .position(|&e| e == (fd, page))
                .map(|at| range.start + at)
        };
        let start = self.start.min(self.entries.len());
        let Some(at) = place(start..self.entries.len()).or_else(|| place(0..start)) else {
            return;
        };
        self.list_from(client, at);
    }

    /// Starts the list at entry `at` unless the program has started it
    /// already; true if it did.
    fn start_at(&mut self, client: &Client, at: usize) -> bool {
        let first = self.listed_to.is_none();
        if first {
            self.list_from(client, at);
        }
        first
    }

    /// Hands the client the list from entry `at` to the frontier of files
    /// opened (`PF_SET`).
    fn list_from(&mut self, client: &Client, at: usize) {
        self.start = at;
        RESTARTS.fetch_add(1, Ordering::Relaxed);
        self.relisted.store(at, Ordering::Release);
        let to = self.opening.frontier().max(at);
        self.listed_to = Some(to);
        let _ = client.request_from(self.between(at, to), Mode::SET | Mode::DONE);
    }
}

fn replay() -> Option<&'static Replay> {
    let pointer = REPLAY.load(Ordering::Acquire);
    // SAFETY: non-null values are leaked Boxes that are never freed.
    (!pointer.is_null()).then(|| unsafe { &*pointer })
}

/// The program reads bytes `[offset, end)` of `file`: the part from its
/// first page read the list holds (`Touches`, as when recorded) goes to the
/// client, as a read of the private descriptor.
/// Before the replay is ready, the read is remembered ([`remember`]).
pub(crate) fn on_read(file: &FileStat, offset: u64, end: u64) {
    let key = (file.dev, file.ino);
    match replay() {
        Some(replay) => follow_read(replay, key, offset, end),
        None => remember((key, offset, end)),
    }
}

/// Tells the client the program's read of `[offset, end)` of the file
/// `key`, if the list holds its pages.
fn follow_read(replay: &Replay, key: (u64, u64), offset: u64, end: u64) {
    let Some(&private) = replay.files.get(&key) else {
        return;
    };
    if let Some(at) = replay.opening.cached_place(private) {
        replay.opening.touch(private);
        start_at(at);
        return;
    }
    let page_size = replay.page_size;
    let first_listed = {
        let mut touches = replay.touches.lock().unwrap_or_else(|e| e.into_inner());
        let pages = offset / page_size..=(end - 1) / page_size;
        pages.fold(None, |found, page| {
            let listed = touches.read(key, page);
            found.or(listed.then_some(page))
        })
    };
    let Some(first_listed) = first_listed else {
        return;
    };
    let from = offset.max(first_listed * page_size);
    replay.opening.touch(private);
    follow_regions(globals(), private, from, end - from);
}

/// The program reads a file left out of the list as wholly cached (no
/// region follows it): if the list has not started, it starts at the
/// file's place, as a read of a listed file would have started it, so a
/// program whose first read is of a cached file is followed from there.
fn start_at(at: usize) {
    let client = CLIENT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(client) = client.as_ref() else {
        return;
    };
    let index = INDEX.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let Some(index) = index else {
        return;
    };
    let started = index
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .start_at(client, at);
    if started {
        client.run_round_now();
    }
}

/// In a forked child: no replay (the parent's client is inert here).
/// The reads remembered stay unread: the lock may have been held at fork.
pub(crate) fn after_fork_in_child() {
    PENDING.store(false, Ordering::Release);
    REPLAY.store(std::ptr::null_mut(), Ordering::Release);
}

#[path = "replay_read.rs"]
mod read;
use read::{read_recording, Replay};

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
