//! Which storage a result was measured on: this machine's disk or the emulated disk of `prefetch emulate`.
//!
//! The data file's mount is found in /proc/self/mountinfo (the longest mount point containing the file).
//! A FUSE mount whose type or source names "emulate" is the emulated disk (crates/emulate mounts with
//! type `fuse.prefetch-emulate` and source `emulate:MODEL`); anything else is reported
//! with its device and file system type. Every printed result carries this description (common rules).

use std::path::Path;

use serde::Serialize;

/// The storage under the data file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Storage {
    /// A real block device of this machine.
    Disk {
        /// The mount's source, e.g. /dev/vda.
        device: String,
        /// The file system type, e.g. ext4.
        fs_type: String,
    },
    /// A file system kept in memory (tmpfs, ramfs): nothing is read from a disk, so nothing to measure.
    Memory {
        /// The file system type.
        fs_type: String,
    },
    /// A `prefetch emulate` FUSE mount (reads take the disk model's time).
    Emulated {
        /// Where the emulated disk is mounted.
        mount_point: String,
        /// The disk model, from the mount's source `emulate:MODEL`.
        model: Option<String>,
    },
}

impl Storage {
    /// The storage under `path`, from /proc/self/mountinfo (a plain disk if it cannot be read).
    pub fn of(path: &Path) -> Storage {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        classify(&mountinfo, &canonical.to_string_lossy())
    }

    /// "this machine's disk (/dev/vda, ext4)" or "emulated disk (prefetch emulate at /mnt/e)".
    pub fn describe(&self) -> String {
        match self {
            Storage::Disk { device, fs_type } => {
                format!("this machine's disk ({device}, {fs_type})")
            }
            Storage::Memory { fs_type } => {
                format!("memory ({fs_type}: no disk behind it, so cold and warm are the same)")
            }
            Storage::Emulated { mount_point, model } => match model {
                Some(model) => {
                    format!("emulated disk (prefetch emulate, model {model}, at {mount_point})")
                }
                None => format!("emulated disk (prefetch emulate at {mount_point})"),
            },
        }
    }
}

/// File systems whose files live in memory only.
const MEMORY_FILE_SYSTEMS: [&str; 3] = ["tmpfs", "ramfs", "hugetlbfs"];

/// One line of mountinfo, the fields that matter here.
struct Mount {
    point: String,
    fs_type: String,
    source: String,
}

/// The storage of `path` given the text of a mountinfo file.
fn classify(mountinfo: &str, path: &str) -> Storage {
    let best = mountinfo
        .lines()
        .filter_map(parse_mount_line)
        .filter(|mount| contains(&mount.point, path))
        .max_by_key(|mount| mount.point.len());
    match best {
        Some(mount) if is_emulated(&mount) => Storage::Emulated {
            model: mount.source.strip_prefix("emulate:").map(str::to_string),
            mount_point: mount.point,
        },
        Some(mount) if MEMORY_FILE_SYSTEMS.contains(&mount.fs_type.as_str()) => Storage::Memory {
            fs_type: mount.fs_type,
        },
        Some(mount) => Storage::Disk {
            device: mount.source,
            fs_type: mount.fs_type,
        },
        None => Storage::Disk {
            device: "unknown device".into(),
            fs_type: "unknown file system".into(),
        },
    }
}

/// Parses "36 35 98:0 /root /mnt rw - ext4 /dev/vda rw" into its mount point, type and source.
fn parse_mount_line(line: &str) -> Option<Mount> {
    let (before, after) = line.split_once(" - ")?;
    let point = unescape(before.split_whitespace().nth(4)?);
    let mut tail = after.split_whitespace();
    let fs_type = tail.next()?.to_string();
    let source = unescape(tail.next().unwrap_or("none"));
    Some(Mount {
        point,
        fs_type,
        source,
    })
}

/// mountinfo escapes blanks and backslashes as octal (`\040`).
fn unescape(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// True if the mount point `point` contains `path` (whole path components).
fn contains(point: &str, path: &str) -> bool {
    point == "/"
        || path == point
        || path
            .strip_prefix(point)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn is_emulated(mount: &Mount) -> bool {
    mount.fs_type.starts_with("fuse")
        && (mount.fs_type.contains("emulate") || mount.source.contains("emulate"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 22 0:26 / /tmp/emu rw,nosuid - fuse.prefetch-emulate emulate:st3500320as rw,user_id=0
31 22 0:27 / /tmp/emulator\\040two rw - tmpfs tmpfs rw
";

    #[test]
    fn a_file_on_the_root_disk_is_the_machines_disk() {
        let storage = classify(MOUNTINFO, "/tmp/libprefetch-bench/data.bin");
        assert_eq!(storage.describe(), "this machine's disk (/dev/vda, ext4)");
    }

    #[test]
    fn a_file_on_an_emulate_mount_is_the_emulated_disk() {
        let storage = classify(MOUNTINFO, "/tmp/emu/data.bin");
        assert_eq!(
            storage.describe(),
            "emulated disk (prefetch emulate, model st3500320as, at /tmp/emu)"
        );
    }

    #[test]
    fn mount_points_match_whole_components_and_unescape() {
        assert!(matches!(
            classify(MOUNTINFO, "/tmp/emulated/x"),
            Storage::Disk { .. }
        ));
        let storage = classify(MOUNTINFO, "/tmp/emulator two/x");
        assert_eq!(
            storage,
            Storage::Memory {
                fs_type: "tmpfs".into()
            }
        );
        assert!(storage.describe().starts_with("memory (tmpfs: no disk"));
    }
}
