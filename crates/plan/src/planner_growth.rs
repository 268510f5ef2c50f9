//! How the planner's window grows from a small start: which first window
//! is fetched and which only followed, and how much larger each next window
//! is. Follows libprefetch (ATC 2009) section 4.6 (AIMD) for the growth
//! once memory is short, and PostgreSQL's `read_stream.c` for growing the
//! look-ahead from what the consumer is seen to read.
//!
//! # The problem
//!
//! The planner does not know how much of its list the application will
//! read. A `LIMIT 20` query lists a whole index scan and stops after 20
//! rows; Figure 7 lists 3,000 pages and reads them all. A window of 90% of
//! memory (the paper's start) reads the whole list for the first and is
//! right for the second; a small window is right for the first and, on a
//! disk, ruinous for the second: every round is one C-LOOK sweep across
//! the file, and a sweep of a few dozen scattered pages costs a seek and a
//! turn a page, as unsorted reads do.
//!
//! # The cost model
//!
//! Costs are in pages of transfer. A far request costs g pages
//! ([`crate::PlannerConfig::request_cost_pages`]). The application reading
//! w scattered pages by itself pays about w g. One sweep over the same w
//! pages, whose lowest and highest pages are s pages apart, costs about
//! min(w g, s): a seek and a turn a page while the pages are sparse, at
//! most the time to read through their span once they are dense. On a
//! seek-bound disk (a far request of [`SEEK_BOUND_GAP_BYTES`] or more)
//! the whole list's sweep costs about its span, and that is what the
//! paper's start pays once.
//!
//! This is ski rental: following the application's own reads is renting
//! (each read costs what it costs without the library, and nothing is read
//! that is not used), a sweep of the rest of the list is buying. A list
//! the application reads whole pays at most the rent on top of the
//! purchase; a list abandoned during the rent costs what it costs without
//! the library; one abandoned just after the purchase costs the sweep.
//!
//! # The regimes
//!
//! - **Sparse first window on a seek-bound disk: followed.** When the
//!   first window's sweep would cost at least half of what its reads cost
//!   one by one (s >= w g / 2), it is not fetched: its sweep saves little,
//!   and in offset order it delays the application's first pages (20 reads
//!   of a 32-page sweep wait for about 30 of its pages). Its reads are not
//!   misses that grow the window. When it is consumed, the next window is
//!   g times larger: the purchase. (`read_stream.c` also starts at a
//!   distance of one block, assuming no I/O until the consumer meets it.)
//! - **Keeps reading.** Once the application has read all but 1/g of the
//!   window, the next window is g times larger and is planned at once, so
//!   its sweep overlaps the rest of this window's reads.
//! - **Waits.** A read of a listed page that is missing (neither cached
//!   nor in flight: the application outran the plan) takes the next step
//!   at once, once a round, whatever the window's progress.
//! - **Abandons.** Nothing grows: the list cost the windows already
//!   planned: on a seek-bound disk the followed first window only, on
//!   flash two windows for 20 reads.
//! - **Memory short.** A premature eviction ends slow start (AIMD);
//!   [`crate::Mode::WHOLE_LIST`] skips it (the application says it reads
//!   everything), and so skips the rent.
//!
//! g, the growth factor ([`growth_factor`]), is at least 2: a window of w
//! scattered pages costs about w far requests, so the next window is sized
//! to take as long to transfer as this one took in requests. On flash g is
//! 2 (doubling, planned at half the window); on the emulated 7200 RPM disk
//! (13.5 ms a far request at 103 MB/s, 339 pages) the second window holds
//! 10,880 pages, and Figure 7's 3,000 reads take the followed window and
//! one sweep:
//!
//! ```text
//!   reads ->   0        16   32                                  3000
//!   flash      [32][--64--][---128---][----256----] ... (doubling at half)
//!   disk       (32: followed)[---- 10,880: the rest of the list ----]
//!                            ^ step: the first window read
//! ```
//!
//! # The figures that chose this
//!
//! Emulated 7200 RPM disk, time scale 0.1, 3,000 random pages of a
//! 128 MiB file (docs/repro.md): doubling from 128 KiB took 0.555 s, seven
//! sweeps of which the five below 1,024 pages cost about a turn a page;
//! the paper's start about 0.175 s; the whole list's sweep about 0.15 s
//! (`limit`), and a random read about 0.5-0.6 ms, so renting 32 reads
//! (about 18 ms, some 9 ms more than a 32-page sweep) keeps a whole-list
//! program within 1.15x of the paper's start (1.11x measured: 0.195
//! against 0.175 s). A list abandoned after 20 reads then reads 20 pages,
//! not 30. The sweep costs more than 200 of the program's own reads
//! (0.12-0.13 s):
//! after the purchase, a list abandoned before about 230 reads is slower
//! than without the library, under any growth that keeps Figure 7 within
//! 1.15x of the paper's start (that needs the purchase within the first
//! few dozen reads). A step is capped at [`MAX_GROWTH`] so that no
//! profile, however slow its device, turns the first step into more than
//! 1,024 windows.
//!
//! Deviations: `read_stream.c` issues each block in the consumer's order;
//! here a window is issued in C-LOOK order, and its first window is either
//! fetched whole or not at all.

use crate::access_list::PageKey;
use crate::schedule::SEEK_BOUND_GAP_BYTES;

/// Slow start multiplies the buffer by at most this a step: from the
/// library's first window of 128 KiB, 128 MiB after one step.
pub const MAX_GROWTH: u64 = 1024;

/// What a slow-start step multiplies the buffer by on a device whose far
/// request costs `request_cost_pages` pages of transfer: that cost itself,
/// between 2 (doubling, a device with no seek cost or an unknown one) and
/// [`MAX_GROWTH`]. The next window then takes as long to transfer as the
/// current one took in requests.
pub fn growth_factor(request_cost_pages: u64) -> u64 {
    request_cost_pages.clamp(2, MAX_GROWTH)
}

/// Whether a list's first window, `pages` (sorted here), is followed
/// rather than fetched: on a seek-bound device whose far request costs
/// `request_cost_pages` pages of `page_size` bytes, when the pages are so
/// sparse that their sweep would cost at least half of what reading them
/// one by one costs (span >= pages x cost / 2, the header's cost model).
pub fn follows_first_window(
    pages: &mut [PageKey],
    request_cost_pages: u64,
    page_size: u64,
) -> bool {
    let seek_bound = request_cost_pages.saturating_mul(page_size) >= SEEK_BOUND_GAP_BYTES;
    if !seek_bound || pages.is_empty() {
        return false;
    }
    pages.sort_unstable();
    let one_by_one = (pages.len() as u64).saturating_mul(request_cost_pages);
    span_pages(pages).saturating_mul(2) >= one_by_one
}

/// The pages from the lowest to the highest of sorted `pages`, summed over
/// their files.
fn span_pages(pages: &[PageKey]) -> u64 {
    pages
        .chunk_by(|a, b| a.fd == b.fd)
        .map(|file| file[file.len() - 1].page - file[0].page + 1)
        .fold(0, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;
    const DISK: u64 = 339;

    fn pages(fd: i32, list: &[u64]) -> Vec<PageKey> {
        list.iter().map(|&page| PageKey { fd, page }).collect()
    }

    #[test]
    fn sparse_pages_on_a_disk_are_followed() {
        let mut scattered: Vec<PageKey> = pages(1, &(0..32).map(|i| i * 1000).collect::<Vec<_>>());
        assert!(follows_first_window(&mut scattered, DISK, PAGE));
    }

    #[test]
    fn dense_pages_on_a_disk_are_fetched() {
        // 32 pages within 5,000: half of 32 x 339 is 5,424.
        let mut near: Vec<PageKey> = pages(1, &(0..32).map(|i| i * 150).collect::<Vec<_>>());
        assert!(!follows_first_window(&mut near, DISK, PAGE));
        let mut far = pages(1, &(0..32).map(|i| i * 175).collect::<Vec<_>>());
        assert!(follows_first_window(&mut far, DISK, PAGE));
    }

    #[test]
    fn flash_fetches_whatever_the_spread() {
        let mut scattered = pages(1, &(0..32).map(|i| i * 1000).collect::<Vec<_>>());
        assert!(!follows_first_window(&mut scattered, 2, PAGE));
        assert!(!follows_first_window(&mut scattered, 0, PAGE));
    }

    #[test]
    fn spans_add_up_over_files() {
        let mut two = pages(1, &[0, 99]);
        two.extend(pages(2, &[10, 109]));
        two.reverse();
        two.sort_unstable();
        assert_eq!(span_pages(&two), 200);
    }
}
