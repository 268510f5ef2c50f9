//! A full scan whose first leaves the planner did not see (paper s5.4's callback, under the whole-list
//! rule of [`super::ScanPlanner::set_seek_bound`], which follows a small table's scan only from its
//! index's first leaf).
//!
//! Two things hide a scan's start. A later scan on the same connection finds the index's root, its left
//! edge and perhaps its first leaves in SQLite's own page cache, so the VFS sees it begin mid-index. And
//! on a file that was cached when the connection opened it, the VFS's gate lets no read through until
//! its sampled probes find pages missing (two in 32 probes, one read in 32 probed): a scan evicted since
//! is seen from its first leaf or two on.
//!
//! Such a scan is told from a range by the leaf order: its first leaf seen lies within
//! [`MAX_UNSEEN_LEAVES`] of the index's first leaf, and every leaf before it is in the page cache, as
//! the scan's own reads (or an earlier scan whose pages SQLite still holds) left them. A range begins
//! at its key's leaf; once the table has been evicted, the leaves before that are not cached. Nothing
//! here reads a page that is not cached: the left edge is walked through pages SQLite read lately or
//! the page cache holds.

use super::{opened, ScanPlanner};
use crate::btree::{ReadResult, MAX_DEPTH};

/// The most leaves a scan may have read before the planner saw it: SQLite's default cache holds 2 MiB
/// (500 pages of 4 KiB, most of them table pages), and a gate that opens on sampled probes sees a cold
/// scan's second or third leaf.
pub const MAX_UNSEEN_LEAVES: usize = 64;

/// Whether `len` bytes of the file at byte `offset` are all in the page cache.
pub type ResidencyProbe = Box<dyn Fn(u64, u64) -> bool + Send>;

impl ScanPlanner {
    /// Gives the planner what tells whether a range of the file is in the page cache; without it, a
    /// scan whose start the planner did not see is never taken for a full scan.
    pub fn set_residency_probe(&mut self, probe: ResidencyProbe) {
        self.residency = Some(probe);
    }

    /// Whether page `page` is in the page cache (false without a probe).
    fn cached(&self, page: u32) -> ReadResult<bool> {
        let Some(probe) = &self.residency else {
            return Ok(false);
        };
        let db = opened(&self.db)?;
        Ok(probe(
            db.page_offset(page),
            u64::from(db.header().page_size),
        ))
    }

    /// Whether the scan of index `root` (its structure read) whose first leaf seen is at position
    /// `start` began at the index's first leaf: `start` is 0, or at most [`MAX_UNSEEN_LEAVES`] with
    /// every leaf before it cached.
    pub(super) fn began_at_index_start(&self, root: u32, start: usize) -> ReadResult<bool> {
        if start == 0 {
            return Ok(true);
        }
        let Some(index) = self.cache.indexes.get(&root) else {
            return Ok(false);
        };
        if start > MAX_UNSEEN_LEAVES || start > index.leaves.len() {
            return Ok(false);
        }
        for &leaf in &index.leaves.pages()[..start] {
            if !self.cached(leaf)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether a leaf waiting to be placed (the structure of index `root` not read) is one of the
    /// index's first `unseen + 1` leaves with every leaf before it cached. Walks the left edge through
    /// pages SQLite read lately (or, when `unseen` is above 0, that are cached), then looks among the
    /// children of its lowest interior page. With `unseen` 0: the first leaf itself was read, after
    /// SQLite descended the left edge.
    pub(super) fn began_near_first_leaf(&self, root: u32, unseen: usize) -> ReadResult<bool> {
        let db = opened(&self.db)?;
        let mut page = root;
        for _ in 0..MAX_DEPTH {
            let seen = self.cache.recent_index_interiors.contains(&page);
            if !seen && (unseen == 0 || !self.cached(page)?) {
                return Ok(false);
            }
            let children = db.children(page)?;
            let waiting = |child: &u32| self.cache.unknown_leaves.contains(child);
            if let Some(at) = children.iter().take(unseen + 1).position(waiting) {
                for &before in &children[..at] {
                    if !self.cached(before)? {
                        return Ok(false);
                    }
                }
                return Ok(true);
            }
            match children.first() {
                Some(&first) => page = first,
                None => return Ok(false),
            }
        }
        Ok(false)
    }
}
