//! The state of a held table's scan (`scan/held_table.rs`, which holds the regime's text): what the
//! planner keeps of it, what the device's costs and the advice calls' time say, and the counts shown
//! in the statistics. Data only, so that the planner's fields name it without importing the regime.

use std::time::{Duration, Instant};

use plan::competitive::break_even_gap_bytes;
use plan::PageRange;

/// Leaves passed between two drops: each drop is one `POSIX_FADV_DONTNEED` call, so the calls are
/// one per this many leaf reads (a leaf holds dozens to hundreds of rows), and memory holds at most
/// this many leaves behind the scan.
pub const DROP_EVERY_LEAVES: usize = 64;

/// What the file's device takes for a request and for its transfer (its stored profile).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceCosts {
    /// Seconds a far request takes.
    pub request_seconds: f64,
    /// Seconds a near request takes (one a short way past the previous one).
    pub near_request_seconds: f64,
    /// Bytes a second it transfers.
    pub bytes_per_second: f64,
}

impl DeviceCosts {
    /// What the device transfers in the time of a far request (competitive prefetching's depth).
    pub fn far_depth_bytes(&self) -> u64 {
        break_even_gap_bytes(seconds(self.request_seconds), self.bytes_per_second)
    }

    /// How long the device takes to read `runs` runs of adjacent pages in position order, `bytes` in
    /// all: a far request to the first, a near one to each next.
    pub fn sweep(&self, runs: usize, bytes: u64) -> Duration {
        let seconds = self.request_seconds
            + runs as f64 * self.near_request_seconds
            + bytes as f64 / self.bytes_per_second;
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
    }
}

/// `seconds` as a duration (zero if negative or not a number).
fn seconds(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO)
}

/// A scan whose table is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldScan {
    /// The index scanned.
    pub root: u32,
    /// When the scan was recognised.
    pub began: Instant,
    /// How long the device takes to sweep the table.
    pub device_sweep: Duration,
    /// The pages the sweep advises.
    pub sweep_pages: u64,
    /// The table's leaf pages as runs of adjacent pages in file order, until swept.
    pub sweep: Vec<PageRange>,
    /// Whether the leaves behind the scan are dropped (the table and the index do not fit together).
    pub drops: bool,
    /// Leaves before this position were dropped (or are not the scan's: it began here).
    pub dropped_to: usize,
    /// Leaves before this position were advised.
    pub advised_to: usize,
}

/// The pages swept and dropped, for the statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeldCounts {
    /// Table pages advised by sweeps.
    pub swept: u64,
    /// Index leaves dropped behind scans.
    pub dropped: u64,
}

/// The time `POSIX_FADV_WILLNEED` calls took SQLite's thread, and the pages they advised.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdviceTiming {
    pages: u64,
    took: Duration,
}

impl AdviceTiming {
    /// Counts a call that advised `pages` in `took`.
    pub fn add(&mut self, pages: u64, took: Duration) {
        self.pages += pages;
        self.took += took;
    }

    /// The time a page took so far (zero before any).
    pub fn per_page(&self) -> Duration {
        match u32::try_from(self.pages) {
            Ok(0) => Duration::ZERO,
            Ok(pages) => self.took / pages,
            Err(_) => self.took / u32::MAX,
        }
    }
}
