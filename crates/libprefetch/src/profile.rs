//! A device's cost of one request, far and near, and its transfer rate,
//! measured once per device and kept in the user's cache directory.
//!
//! - The **near** request (a page one page after the previous one, beyond
//!   its own transfer: the turn past the gap and the command on a disk, the
//!   per-command cost on flash) is what infill saves, so the break-even
//!   infill gap is `near * rate`: filling a gap between two pages to fetch
//!   costs `gap / rate`, a separate request `near` (competitive
//!   prefetching, TR840 section 3, formula (5), applied to one request;
//!   libprefetch, ATC 2009, section 3.3's infill).
//! - The **far** request (a scattered page: a seek and half a turn on a
//!   disk) is what an unsorted round pays for each page, and times the
//!   rate it is competitive prefetching's depth; in pages of
//!   transfer (`far * rate / page`) it sets how fast the window grows (the
//!   planner's header, "Window growth") and tells a seek-bound device.
//!
//! A profile lives in `$XDG_CACHE_HOME/libprefetch/devices/MAJOR:MINOR`
//! (`~/.cache/...` without the variable) as lines of `key value`:
//!
//! ```text
//! request_seconds 0.0000123
//! near_request_seconds 0.0000081
//! bytes_per_second 1500000000
//! mount_id 38
//! ```
//!
//! `request_seconds` is the far cost. A profile without
//! `near_request_seconds` (written before near costs were measured) gives
//! no infill. `mount_id` is the mount the profile was measured on
//! (`statx`'s unique mount ID where the kernel has one): a device number
//! reused by another mount (a
//! FUSE mount replaced, another disk attached) makes the profile stale, and
//! a stale profile is not used.
//!
//! `prefetch device measure FILE` writes it for a block device (reads at
//! queue depth with `O_DIRECT`); `prefetch emulate` writes its model's for
//! the mount while it is mounted and removes it at unmount.
//!
//! Deviations: the library never measures inside the application's
//! process: that would need a private `O_DIRECT` descriptor of the
//! application's file, and closing any descriptor of a file drops the
//! process's POSIX locks on it (see `descriptors.rs`). A device without a
//! profile gets no infill: on today's flash devices the gap that pays is a
//! page or two, and sysfs cannot tell (a virtual disk reports itself as
//! rotational).

use std::path::PathBuf;
use std::time::Duration;

/// What one device costs per request and per byte.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceProfile {
    /// Cost of a far request (a scattered page) beyond its transfer: seek,
    /// rotation, command overhead; seconds.
    pub request_seconds: f64,
    /// Cost of a near request (a page one page after the previous one)
    /// beyond its own transfer; seconds. `None`: not measured.
    pub near_request_seconds: Option<f64>,
    /// Sequential transfer rate, bytes per second.
    pub bytes_per_second: f64,
    /// The mount the profile was measured on (`stx_mnt_id`), if known.
    pub mount_id: Option<u64>,
}

impl DeviceProfile {
    /// The largest gap worth reading to save a near request: the infill
    /// gap (0 when the near cost is not measured).
    pub fn infill_gap_bytes(&self) -> u64 {
        self.near_request_seconds
            .map_or(0, |near| gap_bytes(near, self.bytes_per_second))
    }

    /// The far request's cost as bytes of transfer: competitive
    /// prefetching's depth (TR840 section 3, S_p = C_switch x R_tr).
    pub fn break_even_gap_bytes(&self) -> u64 {
        gap_bytes(self.request_seconds, self.bytes_per_second)
    }

    /// The far request's cost in pages of `page_size` bytes of transfer
    /// (`plan::PlannerConfig::request_cost_pages`).
    pub fn request_cost_pages(&self, page_size: u64) -> u64 {
        self.break_even_gap_bytes() / page_size.max(1)
    }

    /// Why this profile should not be used for a file on mount
    /// `mount_id` (`None` if unknown), if it should not.
    pub fn stale_for(&self, mount_id: Option<u64>) -> Option<String> {
        match (self.mount_id, mount_id) {
            (Some(measured), Some(now)) if measured != now => Some(format!(
                "measured on mount {measured}, the device is now mount {now} \
                 (the mount was replaced or the device number reused)"
            )),
            _ if self.near_request_seconds.is_none() => {
                Some("written before near-request costs were measured".to_string())
            }
            _ => None,
        }
    }

    /// The profile as its file's text.
    pub fn to_text(&self) -> String {
        let mut text = format!("request_seconds {}\n", self.request_seconds);
        if let Some(near) = self.near_request_seconds {
            text += &format!("near_request_seconds {near}\n");
        }
        text += &format!("bytes_per_second {}\n", self.bytes_per_second);
        if let Some(mount) = self.mount_id {
            text += &format!("mount_id {mount}\n");
        }
        text
    }

    /// Parses a profile file's text; `None` if a required line is missing
    /// or a line is not a finite non-negative number.
    pub fn from_text(text: &str) -> Option<DeviceProfile> {
        let line = |key: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix(' '))
                .map(str::trim)
        };
        let value = |key: &str| -> Option<Option<f64>> {
            line(key).map_or(Some(None), |v| {
                v.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .map(Some)
            })
        };
        let mount_id = match line("mount_id") {
            None => None,
            Some(v) => Some(v.parse::<u64>().ok()?),
        };
        Some(DeviceProfile {
            request_seconds: value("request_seconds")??,
            near_request_seconds: value("near_request_seconds")?,
            bytes_per_second: value("bytes_per_second")??,
            mount_id,
        })
    }
}

/// `seconds` of request cost as bytes of transfer at `rate`.
fn gap_bytes(seconds: f64, rate: f64) -> u64 {
    plan::competitive::break_even_gap_bytes(
        Duration::from_secs_f64(seconds.clamp(0.0, 3600.0)),
        rate,
    )
}

/// The mount of `fd`'s file, if the kernel says: `statx`'s unique mount
/// ID (Linux 6.8: never reused while the system runs), else its plain
/// mount ID (Linux 5.8: a number a later mount may reuse).
pub fn mount_id_of(fd: std::os::fd::RawFd) -> Option<u64> {
    const STATX_MNT_ID: u32 = 0x1000;
    const STATX_MNT_ID_UNIQUE: u32 = 0x4000;
    [STATX_MNT_ID_UNIQUE, STATX_MNT_ID]
        .into_iter()
        .find_map(|mask| statx_mount_id(fd, mask))
}

/// `stx_mnt_id` of `fd` asked with `mask`, if the kernel filled it.
fn statx_mount_id(fd: std::os::fd::RawFd, mask: u32) -> Option<u64> {
    let mut statx = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: an empty path with AT_EMPTY_PATH names `fd` itself; statx
    // writes a struct statx into the buffer on success.
    let status = unsafe {
        libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            mask,
            statx.as_mut_ptr(),
        )
    };
    // SAFETY: zeroed, and filled by statx when it succeeded.
    let statx = unsafe { statx.assume_init() };
    (status == 0 && statx.stx_mask & mask != 0).then_some(statx.stx_mnt_id)
}

/// Where the profile of device `major:minor` is kept (`None` without a
/// cache directory or home).
pub fn profile_path(major: u32, minor: u32) -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(
        cache
            .join("libprefetch")
            .join("devices")
            .join(format!("{major}:{minor}")),
    )
}

/// The stored profile of device `major:minor`, read with raw system calls
/// (the library's own read, never seen by its interposers).
pub fn load(major: u32, minor: u32) -> Option<DeviceProfile> {
    let path = profile_path(major, minor)?;
    DeviceProfile::from_text(&crate::rawio::read_to_string(path.as_path())?)
}

/// Stores the profile of device `major:minor` (for the command line tools;
/// the library only reads profiles).
pub fn save(major: u32, minor: u32, profile: &DeviceProfile) -> std::io::Result<PathBuf> {
    let path = profile_path(major, minor).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "neither XDG_CACHE_HOME nor HOME is set",
        )
    })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Written whole under another name and renamed: a reader never sees half a profile.
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&partial, profile.to_text())?;
    std::fs::rename(&partial, &path)?;
    Ok(path)
}

/// Removes the stored profile of device `major:minor`, if any.
pub fn remove(major: u32, minor: u32) {
    if let Some(path) = profile_path(major, minor) {
        let _ = std::fs::remove_file(path);
    }
}

/// The profile of device `major:minor` for a file on mount `mount_id`, if
/// one is stored and not stale ([`DeviceProfile::stale_for`]).
pub fn usable(major: u32, minor: u32, mount_id: Option<u64>) -> Option<DeviceProfile> {
    load(major, minor).filter(|profile| profile.stale_for(mount_id).is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_gives_the_break_even_gap() {
        let ssd = DeviceProfile {
            request_seconds: 200e-6,
            near_request_seconds: Some(80e-6),
            bytes_per_second: 400e6,
            mount_id: Some(38),
        };
        assert_eq!(DeviceProfile::from_text(&ssd.to_text()), Some(ssd));
        assert_eq!(ssd.infill_gap_bytes(), 32_000);
        assert_eq!(ssd.break_even_gap_bytes(), 80_000);
        assert_eq!(ssd.request_cost_pages(4000), 20);
    }

    #[test]
    fn a_profile_of_another_mount_or_without_near_cost_is_stale() {
        let old = DeviceProfile::from_text("request_seconds 0.01\nbytes_per_second 5\n").unwrap();
        assert_eq!(old.infill_gap_bytes(), 0, "no near cost, no infill");
        assert!(old.stale_for(None).is_some());
        let measured = DeviceProfile {
            near_request_seconds: Some(0.001),
            mount_id: Some(38),
            ..old
        };
        assert_eq!(measured.stale_for(Some(38)), None);
        assert_eq!(measured.stale_for(None), None);
        assert!(measured.stale_for(Some(39)).unwrap().contains("mount 38"));
    }

    #[test]
    fn the_mount_of_a_real_file_is_known() {
        use std::os::fd::AsRawFd;
        let file = tempfile::tempfile().unwrap();
        let Some(mount) = mount_id_of(file.as_raw_fd()) else {
            eprintln!("skipped: this kernel's statx has no STATX_MNT_ID (before Linux 5.8)");
            return;
        };
        assert_eq!(mount_id_of(file.as_raw_fd()), Some(mount));
        assert_eq!(mount_id_of(-1), None);
    }

    #[test]
    fn a_damaged_profile_is_no_profile() {
        for text in [
            "",
            "request_seconds 0.001\n",
            "request_seconds -1\nbytes_per_second 5\n",
            "request_seconds 1\nbytes_per_second 5\nnear_request_seconds x\n",
            "request_seconds 1\nbytes_per_second 5\nmount_id -3\n",
            "request_seconds NaN\nbytes_per_second 5\n",
            "request_seconds x\nbytes_per_second 5\n",
        ] {
            assert_eq!(DeviceProfile::from_text(text), None, "{text:?}");
        }
    }

    proptest::proptest! {
        /// A device whose near request costs nothing gets no infill, however
        /// slow its far requests and whatever the list: the planner, given
        /// the profile's gap, fetches listed pages only.
        #[test]
        fn a_free_near_request_fills_no_gap(
            request_seconds in 0.0f64..0.05,
            bytes_per_second in 1e6f64..1e10,
            pages in proptest::collection::vec(0u64..2048, 1..400),
        ) {
            use plan::{Entry, Mode, PageKey, Planner, PlannerConfig};
            let device = DeviceProfile {
                request_seconds,
                near_request_seconds: Some(0.0),
                bytes_per_second,
                mount_id: None,
            };
            proptest::prop_assert_eq!(device.infill_gap_bytes(), 0);
            let mut planner = Planner::new(PlannerConfig {
                infill_bytes: device.infill_gap_bytes(),
                request_cost_pages: device.request_cost_pages(4096),
                ..PlannerConfig::default()
            });
            let key = |page| PageKey { fd: 3, page };
            let entries: Vec<Entry> = pages.iter().map(|&p| Entry { key: key(p), mark: false }).collect();
            planner.request(&entries, Mode::SET);
            let listed: std::collections::HashSet<u64> = pages.iter().copied().collect();
            for &page in &pages {
                for range in planner.plan_round().fetch {
                    for fetched in range.start..range.start + range.len {
                        proptest::prop_assert!(listed.contains(&fetched), "page {fetched} is a gap");
                    }
                }
                planner.on_read(key(page), true);
            }
            proptest::prop_assert_eq!(planner.stats().infill_pages, 0);
        }
    }
}
