//! A full index scan of a table about the memory's size that fits in it: the table read once in one
//! sweep and held, the index's leaves dropped behind the scan (Cao et al. 1995, section 2: the
//! optimal replacement keeps the page referenced again soonest; libprefetch ATC'09 s5.4's callback
//! knows the scan's future from the index).
//!
//! An index scan in key order looks up table pages all over the table, each many times (pci's
//! 103 MiB `subsystems` table, 2.3 million rows on 26.6 thousand pages, looked up by its `name`
//! index); its index leaves are each read once. With the table and the index larger than the
//! memory together, stock SQLite reads the table several times over (657-775 thousand pages for
//! 45 thousand distinct in a 146 MiB cgroup): the kernel's LRU evicts table pages among the
//! index's, and each miss of a table page whose neighbours are cached is read with a context
//! read-ahead of up to `read_ahead_kb`. Following the scan a window at a time read the table about
//! 2.6 times (270 thousand pages). What the optimum does here is simple: the table is read once
//! and kept, the leaves leave memory once read. So, for such a scan:
//!
//! * **the sweep**: once the scan has run, held, as long as the sweep takes (the longer of the
//!   device's time, a far request then a near one per run of adjacent pages and their transfer from
//!   its stored profile, [`ScanPlanner::set_device_costs`], and the advice calls' time on SQLite's
//!   thread, where the kernel allocates and submits each page: timed a page on the held scan's own
//!   advice of the index's leaves), the table's leaf pages are advised in file order, a run at a
//!   time (cut at what one call loads, [`ScanPlanner::set_advice_limit`]): a scan closed early pays
//!   for at most as much sweep as it had run (ski rental). The scan's own time is the measure, not
//!   its lookups: stock's cost per lookup here is the kernel's read-ahead around each miss, not one
//!   request. Without a profile the table is not held (the scan is followed as any full scan of
//!   such a table);
//! * **dropping behind**: once the table and the index do not fit in the memory together, the
//!   leaves the scan has passed are dropped ([`DROP_EVERY_LEAVES`] at a time, the leaf it is on
//!   and the one before kept), so that the kernel never has to reclaim the file's pages: while it
//!   does not, the table stays;
//! * **no read-ahead of the kernel's**: while the scan is held, SQLite's descriptor is advised
//!   `POSIX_FADV_RANDOM` (`POSIX_FADV_NORMAL` again once it ends). A held page's hit can carry the
//!   kernel's read-ahead mark, set when it came in with a read-ahead window; the hit then reads the
//!   window after it, which in a table interleaved with other b-trees is mostly their pages, and
//!   each window read marks the next: on pci's table these chains read 7-37 thousand pages of the
//!   `devices` table it shares its extent with and evicted the held table (0.46-3.3 GB read where
//!   the table and the index are 180 MiB; with the descriptor random from the sweep on, a sweep
//!   after 75 ms read 49 thousand pages and one after 160 ms 69-105 thousand, marks set before it
//!   going on). With the descriptor random from the start none is read (49 thousand pages, 45
//!   thousand distinct); the lookups before the sweep are then single pages, as a cold table's
//!   first lookups are with the kernel's read-ahead too, and the index's leaves are advised here;
//! * **the index ahead**: the leaves the scan will read next, in key order, are advised a window at
//!   a time, once the scan is half-way through the last window advised: as many pages as the
//!   device transfers in the time of a request (competitive prefetching's depth, TR840 section 3),
//!   at least [`DROP_EVERY_LEAVES`].
//!
//! No list is handed to libprefetch: the lookups are served by the held table and the leaves are
//! advised here. The scan's reads reach the planner while it is held (the VFS's gate is open for it,
//! [`ScanPlanner::holding`]).
//!
//! Deviations: Cao's aggressive and conservative schedules fetch the table a page at a time at
//! its first reference; here it is fetched at once, in position order, as the window schedule's
//! rounds are.

use std::time::Instant;

use plan::ranges::{merge_with_infill, split_long};
use plan::{PageKey, PageRange};

use super::held_state::{HeldCounts, HeldScan, DROP_EVERY_LEAVES};
use super::{opened, table_map, ScanPlanner};
use crate::btree::ReadResult;

impl ScanPlanner {
    /// Whether a table of `table_bytes`, looked up by an index of `index_leaves` leaves, fits in the
    /// memory with what the scan needs beside it: SQLite's own cache, the leaves advised ahead (at
    /// most a window and a half) and those not yet dropped behind. `None` if the memory or the
    /// device's costs are not known.
    pub(super) fn held_fits(&self, table_bytes: u64, index_leaves: usize) -> Option<bool> {
        let memory = self.memory?;
        let page_size = self.page_size();
        let leaves = (2 * self.index_window()?).min(index_leaves) + DROP_EVERY_LEAVES;
        let beside = self.own_cache.bytes(page_size) + leaves as u64 * u64::from(page_size);
        Some(table_bytes.saturating_add(beside) <= memory)
    }

    /// Starts holding the table of the scan of index `root`, recognised at leaf `pos`.
    pub(super) fn hold(&mut self, root: u32, pos: usize) -> ReadResult<()> {
        let (Some(index), Some(costs)) = (self.cache.indexes.get(&root), self.device_costs) else {
            return Ok(());
        };
        let page_size = u64::from(self.page_size());
        let index_bytes = index.leaves.len() as u64 * page_size;
        let db = opened(&self.db)?;
        let map = table_map(&mut self.cache.tables, db, index.table_root)?;
        let pages = map.leaf_pages(db)?;
        let table_bytes = pages.len() as u64 * page_size;
        let sweep = self.advice_ranges(pages);
        let together = self.held_fits(table_bytes.saturating_add(index_bytes), 0);
        self.decisions.held += 1;
        self.source.random_access(true);
        self.held = Some(HeldScan {
            root,
            began: Instant::now(),
            device_sweep: costs.sweep(sweep.len(), table_bytes),
            sweep_pages: table_bytes / page_size,
            sweep,
            drops: together == Some(false),
            dropped_to: 0,
            advised_to: pos + 1,
        });
        self.held_step(pos);
        Ok(())
    }

    /// The held scan is at leaf `pos`: sweeps the table once the scan has run as long as the sweep
    /// takes, and drops the leaves behind.
    pub(super) fn held_step(&mut self, pos: usize) {
        let Some(held) = &self.held else {
            return;
        };
        let (root, advised_to) = (held.root, held.advised_to);
        if held.drops && pos > held.dropped_to + DROP_EVERY_LEAVES {
            self.drop_leaves(root, held.dropped_to, pos - 1);
        }
        let window = self.index_window().unwrap_or(DROP_EVERY_LEAVES);
        if pos + window / 2 >= advised_to {
            self.advise_leaves(root, advised_to.max(pos + 1), pos + 1 + window);
        }
        let per_page = self.advice_timing.per_page();
        let Some(held) = &mut self.held else {
            return;
        };
        let advising = per_page * u32::try_from(held.sweep_pages).unwrap_or(u32::MAX);
        if !held.sweep.is_empty() && held.began.elapsed() >= held.device_sweep.max(advising) {
            let sweep = std::mem::take(&mut held.sweep);
            self.sweep(&sweep);
        }
    }

    /// Leaves advised at a time ahead of a held scan: what the device transfers in the time of a
    /// request, at least [`DROP_EVERY_LEAVES`]; `None` without the device's costs.
    fn index_window(&self) -> Option<usize> {
        let costs = self.device_costs?;
        let pages = (costs.far_depth_bytes() / u64::from(self.page_size())) as usize;
        Some(pages.max(DROP_EVERY_LEAVES))
    }

    /// Advises the leaves of index `root` from position `from` to `to` (not included).
    fn advise_leaves(&mut self, root: u32, from: usize, to: usize) {
        let Some(pages) = self.leaf_pages(root, from, to) else {
            return;
        };
        self.advise(&self.advice_ranges(pages), Advice::WillNeed);
        if let Some(held) = &mut self.held {
            held.advised_to = to;
        }
    }

    /// The pages of the leaves of index `root` from position `from` to `to` (not included).
    fn leaf_pages(&self, root: u32, from: usize, to: usize) -> Option<Vec<u32>> {
        let leaves = self.cache.indexes.get(&root)?.leaves.pages();
        let end = to.min(leaves.len());
        Some(leaves[from.min(end)..end].to_vec())
    }

    /// Ends the held scan, if any: SQLite's descriptor goes back to the kernel's read-ahead.
    pub(super) fn end_hold(&mut self) {
        if self.held.take().is_some() {
            self.source.random_access(false);
        }
    }

    /// Advises the ranges `sweep` in order.
    fn sweep(&mut self, sweep: &[PageRange]) {
        self.advise(sweep, Advice::WillNeed);
        self.held_counts.swept += sweep.iter().map(|range| range.len).sum::<u64>();
    }

    /// `pages` (of the database, in any order) as ranges of adjacent pages in file order, none
    /// longer than one advice call loads.
    fn advice_ranges(&self, mut pages: Vec<u32>) -> Vec<PageRange> {
        pages.sort_unstable();
        pages.dedup();
        let keys: Vec<PageKey> = pages
            .into_iter()
            .map(|page| PageKey {
                fd: 0,
                page: u64::from(page),
            })
            .collect();
        let most = self.advice_bytes / u64::from(self.page_size());
        split_long(merge_with_infill(&keys, 0), most.max(1))
    }

    /// Gives `advice` on each of `ranges` (database page numbers); the time `WillNeed` takes is
    /// counted in the planner's [`AdviceTiming`].
    fn advise(&mut self, ranges: &[PageRange], advice: Advice) {
        let Ok(db) = opened(&self.db) else {
            return;
        };
        let page_size = u64::from(db.header().page_size);
        let began = Instant::now();
        for range in ranges {
            let first = u32::try_from(range.start).unwrap_or(u32::MAX);
            let (offset, len) = (db.page_offset(first), range.len * page_size);
            match advice {
                Advice::WillNeed => self.source.will_need(offset, len),
                Advice::DontNeed => self.source.dont_need(offset, len),
            }
        }
        if let Advice::WillNeed = advice {
            let pages = ranges.iter().map(|range| range.len).sum();
            self.advice_timing.add(pages, began.elapsed());
        }
    }

    /// Drops the leaves of index `root` from position `from` to `to` (not included).
    fn drop_leaves(&mut self, root: u32, from: usize, to: usize) {
        let Some(pages) = self.leaf_pages(root, from, to) else {
            return;
        };
        self.held_counts.dropped += pages.len() as u64;
        self.advise(&self.advice_ranges(pages), Advice::DontNeed);
        if let Some(held) = &mut self.held {
            held.dropped_to = to;
        }
    }

    /// Whether a scan's table is being held: its reads are to reach the planner.
    pub fn holding(&self) -> bool {
        self.held.is_some()
    }

    /// Table pages swept and index leaves dropped so far.
    pub fn held_counts(&self) -> HeldCounts {
        self.held_counts
    }
}

/// What [`ScanPlanner::advise`] tells the kernel.
#[derive(Clone, Copy)]
enum Advice {
    WillNeed,
    DontNeed,
}
