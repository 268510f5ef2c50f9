//! An emulated disk that real programs can run on: a FUSE file system showing
//! the files of a backing directory, whose reads take the time a disk model
//! says.
//!
//! How it works, in reading order:
//!
//! 1. *What.* This machine's disk has no seek cost; the papers' results come
//!    from seek-bound disks. Mounting a backing directory through the emulator
//!    gives every program (the live library, its benchmarks, `sqlite3`) a file
//!    system whose uncached reads cost what the chosen model (`st3500320as`,
//!    `ibm-36z15`, `fixed:MS`, ...) says, scaled by a time scale so that
//!    experiments fit in minutes.
//! 2. *Page cache.* The kernel page cache stays on above the mount, so cached
//!    reads cost nothing, and `posix_fadvise`, `readahead(2)` and `mincore`
//!    behave as on a disk-backed file system ([`fs`]).
//! 3. *Addresses.* Each file byte has a disk address: the backing files'
//!    physical extents from FIEMAP, or a contiguous layout ([`layout`]).
//! 4. *One actuator.* Every read the kernel sends becomes a request in one
//!    queue ordered by the chosen scheduler (`fifo`, `clook`, `sstf`,
//!    `deadline`); one thread serves it, asking the model how long each
//!    request takes and replying when that time has passed ([`actuator`]).
//!    The kernel may keep up to 256 readahead requests in flight, so a
//!    prefetcher can fill the queue.
//! 5. *Counters* ([`Stats`]): requests, bytes, seeks, average seek distance,
//!    busy time; readable while mounted in `.emulate-stats` at the mount root.
//!    Optionally a log of every request served: arrival, start, completion,
//!    address and length ([`request_log`]).
//! 6. *Unmounting.* [`Mounted::unmount`], an [`Unmounter`] (for signal
//!    handlers) or `fusermount3 -u MOUNTPOINT` end the mount cleanly. When the
//!    process is killed, the `fusermount3` helper that mounted it (auto_unmount)
//!    unmounts it; see docs/emulate.md for recovering by hand. A panic on
//!    the actuator or FUSE thread (a bug) fails the reads in flight with `EIO`
//!    and unmounts, so no reader is left waiting; a mount point inside the
//!    backing tree (or holding it) and an unrepresentable time scale are
//!    refused before mounting.
//! 7. *Time* ([`clock`]). Model time runs `1 / time_scale` times as fast as
//!    the wall clock. The actuator and FUSE threads ask for real-time
//!    scheduling so that deadlines hold on a busy machine; the FUSE path still
//!    adds some 30-80 us per read, which bounds how small the time scale can
//!    usefully be (docs/emulate.md, "Choosing the time scale").
//!
//! Papers: libprefetch (ATC'09) s3.1-3.5, whose Figure 1 and 2 disk behaviour
//! the models reproduce; the emulator itself follows no paper.
//! Deviations: see each module's comment (reads crossing extents are one
//! request; the mount is a read-only snapshot taken at mount time).

pub mod actuator;
pub mod clock;
mod error;
pub mod fiemap;
pub mod fs;
pub mod layout;
pub mod measure;
pub mod request_cost;
pub mod request_log;
pub mod stats;
pub mod tree;

pub use error::Error;
pub use layout::Placement;
pub use stats::Stats;

use actuator::{Actuator, DiskHandle};
use fuser::{MountOption, Session, SessionACL, SessionUnmounter};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// Threads reading FUSE requests from the kernel. One: it never waits for the
/// disk (replies come from the actuator), and a single reader keeps requests
/// in the order the kernel sent them; with several, two readahead requests
/// sent back to back could reach the queue swapped and cost a backward seek.
const FUSE_THREADS: usize = 1;

/// The time scales accepted: far wider than any useful experiment, and narrow
/// enough that converting the spans a disk model produces between model and
/// wall time never overflows a `Duration` (about 5.8e11 years) or rounds to 0.
pub const TIME_SCALES: std::ops::RangeInclusive<f64> = 1e-6..=1e6;

/// What to mount and how.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Disk model name (see `disk::MODEL_NAMES`).
    pub model: String,
    /// Scheduler name (see `disk::SCHEDULER_NAMES`).
    pub scheduler: String,
    /// Directory whose files the mount shows.
    pub backing: PathBuf,
    /// Empty directory to mount on.
    pub mountpoint: PathBuf,
    /// Wall seconds per model second (0.1 runs the disk ten times faster).
    pub time_scale: f64,
    /// How files are placed on the disk.
    pub placement: Placement,
    /// Where to write a line per request served (`request_log`); none by default.
    pub request_log: Option<PathBuf>,
}

impl Config {
    /// A configuration with the defaults: `deadline` scheduler (as Linux's
    /// mq-deadline for rotational disks), time scale 1, physical placement.
    pub fn new(model: &str, backing: &Path, mountpoint: &Path) -> Self {
        Config {
            model: model.to_string(),
            scheduler: "deadline".to_string(),
            backing: backing.to_path_buf(),
            mountpoint: mountpoint.to_path_buf(),
            time_scale: 1.0,
            placement: Placement::Physical,
            request_log: None,
        }
    }
}

/// Checks that this machine can mount FUSE file systems: `/dev/fuse` opens
/// and `fusermount3` runs. The error says what is missing.
pub fn fuse_available() -> Result<(), Error> {
    if let Some(reason) = fuse_kernel_missing() {
        return Err(Error::NoFuse(reason));
    }
    match std::process::Command::new("fusermount3").arg("-V").output() {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(Error::NoFuse(format!(
            "fusermount3 -V failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))),
        Err(e) => Err(Error::NoFuse(format!(
            "fusermount3 not found ({e}); install Debian's fuse3 package"
        ))),
    }
}

/// Why the kernel side of FUSE is missing here (`/dev/fuse` does not open),
/// or `None`: what tests may skip on. A missing `fusermount3` is a package to
/// install (Debian's `fuse3`), which [`fuse_available`] reports as an error.
pub fn fuse_kernel_missing() -> Option<String> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .err()
        .map(|e| format!("cannot open /dev/fuse: {e}"))
}

/// Unmounts a mounted emulated disk from any thread (for signal handlers).
#[derive(Clone)]
pub struct Unmounter {
    mountpoint: PathBuf,
    session: Arc<Mutex<SessionUnmounter>>,
    done: Arc<AtomicBool>,
}

impl Unmounter {
    /// Unmounts the file system with `fusermount3 -u` (lazily with `-z` when
    /// files on it are still open); the FUSE session then ends. Calls after
    /// the first do nothing.
    ///
    /// (fuser's own unmount is not enough under auto_unmount: it only closes
    /// the socket to the `fusermount3` helper, which unmounts only file
    /// systems whose daemon has died.)
    pub fn unmount(&self) -> io::Result<()> {
        if self.done.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        if !fusermount_unmount(&self.mountpoint, false)? {
            fusermount_unmount(&self.mountpoint, true)?;
        }
        self.session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unmount()
    }
}

/// Runs `fusermount3 -u [-z] MOUNTPOINT`; true when it succeeded.
fn fusermount_unmount(mountpoint: &Path, lazy: bool) -> io::Result<bool> {
    let mut command = std::process::Command::new("fusermount3");
    command.arg("-u").arg("-q");
    if lazy {
        command.arg("-z");
    }
    let output = command.arg("--").arg(mountpoint).output()?;
    if lazy && !output.status.success() {
        return Err(io::Error::other(format!(
            "fusermount3 -u -z failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(output.status.success())
}

/// A mounted emulated disk. Dropping it unmounts.
pub struct Mounted {
    config: Config,
    disk: DiskHandle,
    actuator: Option<Actuator>,
    unmounter: Unmounter,
    session: Option<JoinHandle<io::Result<()>>>,
    auto_unmount: bool,
}

/// Mounts the emulated disk described by `config` and serves it on background
/// threads until unmounted. Returns once the mount is in place.
pub fn mount(config: &Config) -> Result<Mounted, Error> {
    let model = disk::model_from_name(&config.model)?;
    mount_model(config, model)
}

/// As [`mount`], with a disk model of the caller's instead of the one
/// `config.model` names (which then only labels the counters).
pub fn mount_model(config: &Config, model: Box<dyn disk::DiskModel>) -> Result<Mounted, Error> {
    if !TIME_SCALES.contains(&config.time_scale) {
        return Err(Error::BadTimeScale(config.time_scale));
    }
    let scheduler = disk::scheduler_from_name(&config.scheduler)?;
    check_mountpoint(&config.mountpoint)?;
    check_no_overlap(&config.backing, &config.mountpoint)?;
    fuse_available()?;
    let tree = tree::Tree::scan(&config.backing, config.placement, model.capacity())?;
    let stats = Stats {
        model: config.model.clone(),
        scheduler: config.scheduler.clone(),
        time_scale: config.time_scale,
        ..Stats::default()
    };
    let mount_error = |source| Error::Mount {
        mountpoint: config.mountpoint.clone(),
        source,
    };
    let log = config
        .request_log
        .as_deref()
        .map(request_log::RequestLog::create)
        .transpose()
        .map_err(|source| Error::RequestLog {
            path: config.request_log.clone().unwrap_or_default(),
            source,
        })?;
    let actuator =
        Actuator::start(model, scheduler, config.time_scale, stats, log).map_err(mount_error)?;
    let disk = actuator.handle();
    let (mut session, auto_unmount) =
        open_session(Arc::new(tree), &disk, config).map_err(mount_error)?;
    let unmounter = Unmounter {
        mountpoint: config.mountpoint.clone(),
        session: Arc::new(Mutex::new(session.unmount_callable())),
        done: Arc::new(AtomicBool::new(false)),
    };
    let on_failure = unmounter.clone();
    disk.on_failure(Box::new(move || unmount_after_failure(&on_failure)));
    let on_session_end = unmounter.clone();
    let session = std::thread::Builder::new()
        .name("emulate-fuse".into())
        .spawn(move || {
            // Inherited by the FUSE thread fuser starts: requests arrive on time.
            clock::prefer_realtime();
            // `run` consumes (closes) the session. One that ended in error (a
            // panicked FUSE thread) has stopped answering: unmount, so the
            // mount point does not stay a dead mount.
            let result = session.run();
            if result.is_err() {
                unmount_after_failure(&on_session_end);
            }
            result
        })
        .map_err(mount_error)?;
    Ok(Mounted {
        config: config.clone(),
        disk,
        actuator: Some(actuator),
        unmounter,
        session: Some(session),
        auto_unmount,
    })
}

/// Unmounts after a failure, saying so on stderr if even that fails.
fn unmount_after_failure(unmounter: &Unmounter) {
    if let Err(e) = unmounter.unmount() {
        eprintln!("emulate: unmount after a failure failed: {e}");
    }
}

/// Refuses a mount point that is the backing directory, lies inside it, or
/// contains it: the FUSE thread's reads of the backing files would go through
/// its own mount and wait for themselves.
fn check_no_overlap(backing: &Path, mountpoint: &Path) -> Result<(), Error> {
    let backing_error = |source| Error::Backing {
        path: backing.to_path_buf(),
        source,
    };
    let backing_real = backing.canonicalize().map_err(backing_error)?;
    let mountpoint_real = mountpoint
        .canonicalize()
        .map_err(|source| Error::MountPoint {
            path: mountpoint.to_path_buf(),
            source,
        })?;
    if mountpoint_real.starts_with(&backing_real) || backing_real.starts_with(&mountpoint_real) {
        return Err(Error::Overlap {
            mountpoint: mountpoint.to_path_buf(),
            backing: backing.to_path_buf(),
        });
    }
    Ok(())
}

/// Checks that `path` is a directory, naming a dead mount left by a killed
/// daemon as such.
fn check_mountpoint(path: &Path) -> Result<(), Error> {
    // Opening the directory, unlike stat, always reaches a FUSE daemon: the
    // kernel may answer stat from attributes it cached before the daemon died.
    match std::fs::metadata(path).and_then(|meta| std::fs::read_dir(path).map(|_| meta)) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::MountPoint {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
        }),
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
            Err(Error::StaleMount(path.to_path_buf()))
        }
        Err(source) => Err(Error::MountPoint {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Mounts with `auto_unmount` (the `fusermount3` helper stays behind and
/// unmounts if this process dies) where allowed, else without it. Returns the
/// session and whether auto_unmount is on.
fn open_session(
    tree: Arc<tree::Tree>,
    disk: &DiskHandle,
    config: &Config,
) -> io::Result<(Session<fs::EmulatedFs>, bool)> {
    let options = |auto_unmount: bool| {
        let mut fuse = fuser::Config::default();
        fuse.mount_options = vec![
            MountOption::RO,
            MountOption::NoAtime,
            MountOption::DefaultPermissions,
            MountOption::FSName(format!("emulate:{}", config.model)),
            MountOption::Subtype("prefetch-emulate".into()),
        ];
        if auto_unmount {
            fuse.mount_options.push(MountOption::AutoUnmount);
            fuse.acl = SessionACL::All;
        }
        fuse.n_threads = Some(FUSE_THREADS);
        fuse
    };
    let filesystem = || fs::EmulatedFs::new(Arc::clone(&tree), disk.clone());
    match Session::new(filesystem(), &config.mountpoint, &options(true)) {
        // `allow_other`, which auto_unmount needs, is refused to users other
        // than root unless /etc/fuse.conf has user_allow_other.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            let session = Session::new(filesystem(), &config.mountpoint, &options(false))?;
            Ok((session, false))
        }
        result => result.map(|session| (session, true)),
    }
}

impl Mounted {
    /// The configuration it was mounted with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// True when the `fusermount3` helper will unmount if this process dies.
    pub fn auto_unmount(&self) -> bool {
        self.auto_unmount
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.disk.stats()
    }

    /// A handle that unmounts from any thread.
    pub fn unmounter(&self) -> Unmounter {
        self.unmounter.clone()
    }

    /// Unmounts when the process gets SIGINT, SIGTERM or SIGHUP (Ctrl-C, `kill`,
    /// a closed terminal). Fails if another handler for them is already set.
    pub fn unmount_on_signals(&self) -> Result<(), Error> {
        let unmounter = self.unmounter();
        ctrlc::set_handler(move || {
            if let Err(e) = unmounter.unmount() {
                eprintln!("emulate: unmount failed: {e}");
            }
        })
        .map_err(|e| self.error(io::Error::other(e)))
    }

    /// Unmounts now and returns the final counters.
    pub fn unmount(mut self) -> Result<Stats, Error> {
        self.unmounter.unmount().map_err(|e| self.error(e))?;
        self.finish()
    }

    /// Blocks until the file system is unmounted (by an [`Unmounter`] or by
    /// `fusermount3 -u`), then returns the final counters.
    pub fn wait(mut self) -> Result<Stats, Error> {
        self.finish()
    }

    fn finish(&mut self) -> Result<Stats, Error> {
        let session = self.session.take().map(|thread| {
            thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("FUSE session thread panicked")))
        });
        let stats = self
            .actuator
            .take()
            .map_or_else(|| self.stats(), Actuator::stop);
        if let Some(panic) = self.disk.failure() {
            return Err(Error::ActuatorFailed(panic));
        }
        match session {
            Some(Err(e)) => Err(self.error(e)),
            _ => Ok(stats),
        }
    }

    fn error(&self, source: io::Error) -> Error {
        Error::Mount {
            mountpoint: self.config.mountpoint.clone(),
            source,
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if self.session.is_some() {
            // Errors here have no one to go to; the mount is gone either way.
            let _ = self.unmounter.unmount();
            let _ = self.finish();
        }
    }
}
