//! The restorer beside a program (`prefetch run --restore`) waits outside the program's memory
//! cgroup and joins it only to restore: the pages it advises are charged to the program's group,
//! as the user's limit says, and nothing it holds while it waits is.
//!
//! `prefetch run` runs in the group the user put it in (`cgexec`, `systemd-run`, a write to
//! `cgroup.procs`) and its restorer is born there. A restorer that only waited beside `import
//! numpy, pandas` in a 48 MiB group cost the import 30-40 more requests of the emulated disk
//! than stock's 766-779 (docs/record.md, "prefetch run --restore"). [`step_aside`] moves it into
//! the group's parent (within every limit above the program's: a v1 hierarchy charges a child's
//! pages to its ancestors too, and v2 always); what it touches afterwards is charged there. What
//! was charged before stays where it is (cgroup v1 moves no charge unless the group asks it to,
//! and v2 never does): moved out alone, the restorer cost as much, so `prefetch run` executes it
//! afresh once it is out, and its old image's charges go with that image. [`Aside::rejoin`]
//! moves it back into the program's group before it measures the room there and advises
//! anything; if that fails, nothing is restored (the restore must not escape the user's limit).
//!
//! Where the restorer may not write the parent's `cgroup.procs` (no privilege, a v2 parent whose
//! controllers forbid processes in it), it stays in the program's group, as before.
//!
//! Follows libprefetch (ATC 2009) section 4.6 (the memory budget is the program's: what the
//! prefetching reads counts against it).

use std::io::Write;
use std::path::{Path, PathBuf};

/// A restorer moved out of the memory cgroup it was born in.
#[derive(Debug)]
pub struct Aside {
    home: PathBuf,
}

/// Moves this process (all its threads) out of its memory cgroup into the group's parent;
/// `None` where it stays: in the hierarchy's root already, no memory cgroup, or the parent
/// refused it.
pub fn step_aside() -> Option<Aside> {
    let (root, home) = memory_cgroup_of("self")?;
    if home == root {
        return None;
    }
    join(home.parent()?).ok()?;
    Some(Aside { home })
}

impl Aside {
    /// A restorer that left the memory cgroup at `home` (passed on across an `exec`).
    pub fn from_home(home: PathBuf) -> Aside {
        Aside { home }
    }

    /// The memory cgroup this process left.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Moves this process back into the memory cgroup of process `pid` (the program's now, or
    /// the one it left if the program's cannot be read); false if that failed, and then nothing
    /// may be restored.
    pub fn rejoin(self, pid: u32) -> bool {
        let group = memory_cgroup_of(&pid.to_string()).map_or(self.home, |(_, dir)| dir);
        join(&group).is_ok()
    }
}

/// The memory cgroup of process `pid` (a number or "self"): its hierarchy's root and its
/// directory.
fn memory_cgroup_of(pid: &str) -> Option<(PathBuf, PathBuf)> {
    let membership = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    libprefetch::memory::memory_cgroup_dir(&membership)
}

/// Moves this process into the cgroup at `dir`.
fn join(dir: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))?
        .write_all(b"0")
}
