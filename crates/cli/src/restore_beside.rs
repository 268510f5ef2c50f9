//! The hidden `prefetch restore-beside`: the restorer of `prefetch run
//! --restore` executed afresh outside the program's memory cgroup (crate
//! `launch`: `restorer.rs` says when and why), passed the program's pidfd,
//! the snapshot's open file and the group it left; it goes on as the forked
//! restorer would (`launch::beside`).
//!
//! Follows libprefetch (ATC 2009) sections 3.3 and 4.6 through crate
//! `residency`.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use launch::quiet::detach;
use residency::aside::Aside;

/// Arguments of the hidden `prefetch restore-beside`: the restorer executed afresh outside the
/// program's memory cgroup by `prefetch run --restore` (module comment).
#[derive(clap::Args)]
pub struct BesideArgs {
    /// The program's process id
    #[arg(long)]
    pid: u32,
    /// A pidfd of the program, inherited
    #[arg(long)]
    pidfd: i32,
    /// The memory cgroup the restorer left (the program's, if its own cannot be read later)
    #[arg(long)]
    home: PathBuf,
    /// The snapshot's file, open, inherited
    #[arg(long)]
    snapshot_fd: i32,
}

/// `prefetch restore-beside`: the restorer executed afresh outside the program's memory cgroup
/// goes on; arguments that are not what `prefetch run --restore` passes end it with an error.
pub fn resume(args: BesideArgs) -> ! {
    let (program, file) = match inherited(&args) {
        Ok(both) => both,
        Err(error) => {
            eprintln!(
                "prefetch restore-beside (started by `prefetch run --restore` only): {error:#}"
            );
            // SAFETY: leaving without running the exit handlers of `prefetch`.
            unsafe { libc::_exit(2) }
        }
    };
    detach(&[program.as_raw_fd(), file.as_raw_fd()]);
    let fd_path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    let path = std::fs::read_link(&fd_path).unwrap_or(fd_path);
    let aside = Aside::from_home(args.home);
    launch::beside::restore(File::from(file), &path, &program, args.pid, Some(aside));
}

/// The program's pidfd and the snapshot's file `prefetch run --restore` passed on (the
/// descriptors close-on-exec again).
fn inherited(args: &BesideArgs) -> Result<(OwnedFd, OwnedFd)> {
    if args.pidfd == args.snapshot_fd {
        bail!("--pidfd and --snapshot-fd are the same descriptor");
    }
    let program = inherited_fd(args.pidfd).context("--pidfd")?;
    let file = inherited_fd(args.snapshot_fd).context("--snapshot-fd")?;
    Ok((program, file))
}

/// Descriptor `fd`, inherited, owned from now on and close-on-exec again.
fn inherited_fd(fd: i32) -> Result<OwnedFd> {
    // SAFETY: fcntl sets the flags of a descriptor, failing if it is not open.
    if fd <= 2 || unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
        bail!("descriptor {fd} was not inherited");
    }
    // SAFETY: a descriptor `prefetch run --restore` passed on for this process alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
