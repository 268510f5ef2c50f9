//! A device's cost of one request and its transfer rate, measured once per
//! device and kept in the user's cache directory, from which the break-even
//! infill gap follows: filling a gap between two pages to fetch costs
//! `gap / rate`, a separate request costs `request`, so a gap pays when it is
//! at most `request * rate` (competitive prefetching, TR840 section 3,
//! formula (5), applied to one request; libprefetch, ATC 2009, section 3.3's
//! infill).
//!
//! A profile lives in `$XDG_CACHE_HOME/libprefetch/devices/MAJOR:MINOR`
//! (`~/.cache/...` without the variable) as two lines:
//!
//! ```text
//! request_seconds 0.0000123
//! bytes_per_second 1500000000
//! ```
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
    /// Cost of one request beyond its transfer (seek, rotation, command overhead), seconds.
    pub request_seconds: f64,
    /// Sequential transfer rate, bytes per second.
    pub bytes_per_second: f64,
}

impl DeviceProfile {
    /// The largest gap worth reading to save a request.
    pub fn break_even_gap_bytes(&self) -> u64 {
        plan::competitive::break_even_gap_bytes(
            Duration::from_secs_f64(self.request_seconds.clamp(0.0, 3600.0)),
            self.bytes_per_second,
        )
    }

    /// The profile as its file's text.
    pub fn to_text(&self) -> String {
        format!(
            "request_seconds {}\nbytes_per_second {}\n",
            self.request_seconds, self.bytes_per_second
        )
    }

    /// Parses a profile file's text; `None` if a line is missing or not a
    /// finite non-negative number.
    pub fn from_text(text: &str) -> Option<DeviceProfile> {
        let value = |key: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix(' '))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
        };
        Some(DeviceProfile {
            request_seconds: value("request_seconds")?,
            bytes_per_second: value("bytes_per_second")?,
        })
    }
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

/// The break-even infill gap for files on device `major:minor`: its
/// profile's, or none (0) without one.
pub fn infill_gap_bytes(major: u32, minor: u32) -> u64 {
    load(major, minor).map_or(0, |profile| profile.break_even_gap_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_gives_the_break_even_gap() {
        let ssd = DeviceProfile {
            request_seconds: 80e-6,
            bytes_per_second: 400e6,
        };
        assert_eq!(DeviceProfile::from_text(&ssd.to_text()), Some(ssd));
        assert_eq!(ssd.break_even_gap_bytes(), 32_000);
    }

    #[test]
    fn a_damaged_profile_is_no_profile() {
        for text in [
            "",
            "request_seconds 0.001\n",
            "request_seconds -1\nbytes_per_second 5\n",
            "request_seconds NaN\nbytes_per_second 5\n",
            "request_seconds x\nbytes_per_second 5\n",
        ] {
            assert_eq!(DeviceProfile::from_text(text), None, "{text:?}");
        }
    }
}
