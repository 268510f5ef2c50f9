//! What the simulator may allocate: the memory this machine (and this process's limits) can
//! still give, read once before a trace is read, and what each block and reference costs.
//! Trace input is checked against it before anything is allocated, so an absurd trace is an
//! error naming its line instead of an allocation that takes the machine.
//!
//! The per-item costs are estimates rounded up.

/// Bytes one distinct block costs a run: its interner entry (hash map slot with key, id and
/// control byte, at most half full after growth, and the old table beside the new one while
/// it grows), the id-to-number vector (doubling too), and the per-block arrays of the engine
/// and the policies.
pub const BYTES_PER_BLOCK: u64 = 128;

/// Bytes one reference costs a trace held in memory ([`RefString`], and the offline policies'
/// [`Future`]): its block id, its next-use link and its compute time.
///
/// [`RefString`]: crate::RefString
/// [`Future`]: crate::Future
pub const BYTES_PER_REFERENCE: u64 = 16;

/// Bytes this process can still allocate: the smaller of the machine's available memory
/// (`MemAvailable` of `/proc/meminfo`) and the room left under the address-space limit
/// (`RLIMIT_AS` minus `VmSize`). `u64::MAX` where neither can be read.
pub fn available() -> u64 {
    let machine = meminfo_kib("/proc/meminfo", "MemAvailable:").map_or(u64::MAX, kib);
    machine.min(address_space_left())
}

/// The room left under `RLIMIT_AS`, or `u64::MAX` when there is no limit.
fn address_space_left() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return u64::MAX;
    }
    let used = meminfo_kib("/proc/self/status", "VmSize:").map_or(0, kib);
    limit.rlim_cur.saturating_sub(used)
}

/// The number of KiB on the line of `file` starting with `key` (`KEY:   1234 kB`).
fn meminfo_kib(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|line| line.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

fn kib(count: u64) -> u64 {
    count.saturating_mul(1024)
}

/// `bytes` for people: `12.0 GiB`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (value, unit) = units::scale(bytes as f64, 1024.0, 1024.0, UNITS.len());
    format!("{value:.1} {}", UNITS[unit])
}

/// Most distinct blocks a run may meet now: what the memory available holds, and fewer than
/// the ids a [`crate::cache::Block`] can number.
pub(crate) fn most_blocks() -> usize {
    let room = available() / BYTES_PER_BLOCK;
    room.min(u64::from(crate::cache::Block::MAX - 1)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_some_memory_available() {
        let bytes = available();
        assert!(bytes > 1 << 20 && bytes < u64::MAX, "{bytes}");
    }

    #[test]
    fn sizes_print_in_binary_units() {
        assert_eq!(human(512), "512.0 B");
        assert_eq!(human(3 << 30), "3.0 GiB");
        assert_eq!(human(u64::MAX), "16777216.0 TiB");
    }
}
