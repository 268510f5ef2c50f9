//! The `libprefetch` mode: the workload read through the live library, used as the paper's programs use it.
//!
//! A client is registered with a callback in the shape of Figure 7 (section 4.3): it finds the
//! application's position in its access list from the read that triggered it, and hands the list
//! from there to the library in batches (`PF_SET` first, then `PF_APPEND`) until the library's list
//! is full, then signals `PF_DONE`. The whole data file is one region. Then the reads are plain
//! `pread`s, exactly as in `stock`: the read interposers linked into this binary (crate `preload`)
//! let the library see them, call back and run its prefetching rounds in-process.
//!
//! Position: the access list may repeat a page (random reads with repeats), so an offset alone does
//! not say where the application is; the reading loop publishes the list index of its next read
//! (an atomic store, as an application that knows its own progress), and the callback looks for
//! the requested page from there.
//!
//! Memory: the list is held once, as 4-byte page numbers, and the index of each read's first page
//! only when some read spans several pages. In a memory cgroup the harness's own memory is taken
//! from the cache; `stock` holds only the reads, so anything more here would be charged to the
//! library (byte offsets and a read index doubled the harness's memory on the reuse-heavy list,
//! 6.4 MB of a 64 MiB cgroup).
//! Deviations: the window (`--window`) caps the library's memory
//! budget (`Config::max_budget_bytes`) to sweep the reorder-buffer size as in Figure 2, with the
//! paper's `window` schedule, and
//! `--infill` sets `Config::infill_bytes` (section 3.3, Figure 3).

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use libprefetch::{AccessEntry, CallbackInfo, Client, Config, Schedule};

use crate::outcome::{read_in_order, Outcome};
use crate::workload::{Read, PAGE_SIZE};

/// Entries handed to the library per `request_prefetching` call (Figure 7's BATCH_SIZE).
const BATCH: usize = 8192;

/// How far past the published position the callback looks for the requested page.
const SEARCH_AHEAD: usize = 256;

/// Settings of the library for a pass; None keeps the library's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LibraryTuning {
    /// Cap on the memory budget (`Config::max_budget_bytes`): the reorder-buffer window.
    pub window_bytes: Option<u64>,
    /// Largest gap merged into one prefetch range (`Config::infill_bytes`; 0 disables infill).
    pub infill_bytes: Option<u64>,
    /// Every list given with `PF_WHOLE_LIST`: the application reads all of it.
    pub whole_list: bool,
}

/// The library's counters after a pass (serialisable through libprefetch's `serde` feature).
pub type LibraryStats = libprefetch::Stats;

/// The access list of a pass and where the application is in it.
struct Plan {
    fd: RawFd,
    /// Page numbers (offset / PAGE_SIZE) of every page of every read, in access order.
    pages: Vec<u32>,
    next_page: AtomicUsize,
    /// `PF_WHOLE_LIST` or nothing, added to every request.
    whole_list: libprefetch::Mode,
}

impl Plan {
    /// The list index of the requested page: searched from the published position, else that position.
    fn position_of(&self, requested_offset: u64) -> usize {
        let from = self.next_page.load(Ordering::Relaxed).min(self.pages.len());
        let page = requested_offset / PAGE_SIZE;
        let until = (from + SEARCH_AHEAD).min(self.pages.len());
        self.pages[from..until]
            .iter()
            .position(|&listed| u64::from(listed) == page)
            .map_or(from, |ahead| from + ahead)
    }

    /// Figure 7: hands the list from `start` to the library in batches until it is full, then PF_DONE.
    fn hand_out(&self, client: &Client, start: usize) {
        let mut mode = libprefetch::Mode::SET;
        for batch in self.pages[start.min(self.pages.len())..].chunks(BATCH) {
            let entries = self.entries(batch);
            let accepted = client
                .request_prefetching(&entries, mode | self.whole_list)
                .unwrap_or(0);
            mode = libprefetch::Mode::APPEND;
            if accepted < entries.len() {
                break;
            }
        }
        let _ = client.request_prefetching(&[], mode | libprefetch::Mode::DONE);
    }

    fn entries(&self, pages: &[u32]) -> Vec<AccessEntry> {
        pages
            .iter()
            .map(|&page| AccessEntry {
                offset: u64::from(page) * PAGE_SIZE,
                fd: self.fd,
                mark: false,
            })
            .collect()
    }
}

/// Reads `reads` from `file` with the library following along, the library given `listed` (of
/// which `reads` is the start: a list the application abandons); returns the checksum and its
/// counters. Without a window the library sizes its budget from /proc/meminfo and the cgroup limit.
pub fn read_with_library(
    file: &File,
    reads: &[Read],
    listed: &[Read],
    tuning: &LibraryTuning,
) -> Result<(Outcome, LibraryStats)> {
    anyhow::ensure!(
        listed.starts_with(reads),
        "the reads performed must be the start of the list"
    );
    let pages = page_numbers(listed)?;
    anyhow::ensure!(
        u32::try_from(pages.len()).is_ok(),
        "a list of {} pages: the benchmark lists at most 2^32 pages; use fewer --pages",
        pages.len()
    );
    let first_page_of_read = (pages.len() != listed.len()).then(|| first_pages(listed));
    let plan = Arc::new(Plan {
        fd: file.as_raw_fd(),
        pages,
        next_page: AtomicUsize::new(0),
        whole_list: if tuning.whole_list {
            libprefetch::Mode::WHOLE_LIST
        } else {
            libprefetch::Mode::default()
        },
    });
    // The LIBPREFETCH_* variables a C program would honour apply here too (e.g. LIBPREFETCH_SCHEDULE);
    // the benchmark's own options override them.
    let from_env = Config::from_env();
    for refused in &from_env.refused {
        eprintln!("{refused}");
    }
    let defaults = from_env.config;
    // A `--window` sweep sizes the paper's reorder window (Figure 2), so it runs that schedule.
    let schedule = match tuning.window_bytes {
        Some(_) => Schedule::Window,
        None => defaults.schedule,
    };
    let config = Config {
        max_budget_bytes: tuning.window_bytes.or(defaults.max_budget_bytes),
        infill_bytes: tuning.infill_bytes.or(defaults.infill_bytes),
        schedule,
        ..defaults
    };
    let in_callback = Arc::clone(&plan);
    let client = Client::register(config, move |client: &Client, info: CallbackInfo| {
        let start = in_callback.position_of(info.requested.1);
        in_callback.hand_out(client, start);
    })
    .context("libprefetch: registering the client")?;
    let file_end = file.metadata().context("data file size")?.len();
    let region = client
        .register_region(plan.fd, 0, file_end)
        .context("libprefetch: registering the data file as a region")?;
    let outcome = read_in_order(file, reads, |index| {
        let first = first_page_of_read
            .as_ref()
            .map_or(index, |firsts| firsts[index] as usize);
        plan.next_page.store(first, Ordering::Relaxed)
    })?;
    let stats = client.stats();
    client
        .unregister_region(region)
        .context("libprefetch: unregistering the region")?;
    Ok((outcome, stats))
}

/// The page number of every page of every read, in access order.
fn page_numbers(reads: &[Read]) -> Result<Vec<u32>> {
    let mut pages = Vec::with_capacity(reads.len());
    for read in reads {
        let first = read.offset / PAGE_SIZE;
        let end = (read.offset + read.len).div_ceil(PAGE_SIZE);
        for page in first..end {
            let page = u32::try_from(page).with_context(|| {
                format!(
                    "a read at byte {}: files above 16 TiB are not supported",
                    read.offset
                )
            })?;
            pages.push(page);
        }
    }
    Ok(pages)
}

/// The access-list index of the first page of each read, for a list of fewer than 2^32 pages.
fn first_pages(reads: &[Read]) -> Vec<u32> {
    let mut next = 0u64;
    reads
        .iter()
        .map(|read| {
            let first = next as u32;
            next += (read.offset + read.len).div_ceil(PAGE_SIZE) - read.offset / PAGE_SIZE;
            first
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn plan_of(pages: Vec<u32>, next_page: usize) -> Plan {
        Plan {
            fd: 3,
            pages,
            next_page: AtomicUsize::new(next_page),
            whole_list: libprefetch::Mode::default(),
        }
    }

    #[test]
    fn the_position_of_a_repeated_page_is_its_next_use() {
        // Page 2 (byte 8192) is read at list indexes 1 and 4; the application is at index 3.
        let plan = plan_of(vec![0, 2, 1, 3, 2, 0], 3);
        assert_eq!(plan.position_of(8192), 4);
        assert_eq!(
            plan.position_of(8192 + 100),
            4,
            "offsets round down to their page"
        );
        assert_eq!(plan.position_of(12288), 3);
        assert_eq!(
            plan.position_of(1 << 30),
            3,
            "an unknown page: the published position"
        );
    }

    #[test]
    fn the_position_never_passes_the_end() {
        let plan = plan_of(vec![0, 1], 7);
        assert_eq!(plan.position_of(0), 2);
    }

    #[test]
    fn hand_out_fills_the_list_until_it_is_full_and_replaces_it_next_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        std::fs::write(&path, vec![1u8; 64 * PAGE_SIZE as usize]).unwrap();
        let file = File::open(&path).unwrap();
        let plan = Plan {
            fd: file.as_raw_fd(),
            pages: (0..25).collect(),
            next_page: AtomicUsize::new(0),
            whole_list: libprefetch::Mode::default(),
        };
        let config = Config {
            capacity: 10,
            ..Config::default()
        };
        let client = Client::register(config, |_: &Client, _: CallbackInfo| {}).unwrap();
        plan.hand_out(&client, 0);
        assert_eq!(
            client.stats().list_length,
            10,
            "a full list gives a short count"
        );
        assert_eq!(client.stats().rounds, 1, "PF_DONE starts a round");
        plan.hand_out(&client, 20);
        assert_eq!(client.stats().list_length, 5, "PF_SET replaces the list");
    }

    proptest! {
        #[test]
        fn first_pages_index_each_reads_first_page(
            reads in prop::collection::vec((0u64..1000, 1u64..20_000), 0..50)
        ) {
            let reads: Vec<Read> = reads.into_iter().map(|(offset, len)| Read { offset: offset * 1000, len }).collect();
            let pages = page_numbers(&reads).unwrap();
            let offsets = crate::workload::access_pages(&reads);
            prop_assert_eq!(pages.iter().map(|&page| u64::from(page) * PAGE_SIZE).collect::<Vec<_>>(), offsets);
            let firsts = first_pages(&reads);
            prop_assert_eq!(firsts.len(), reads.len());
            for (read, &first) in reads.iter().zip(&firsts) {
                prop_assert_eq!(u64::from(pages[first as usize]), read.offset / PAGE_SIZE);
            }
        }
    }
}
