//! A `LIMIT n` index scan on a seek-bound device: the table pages of its first n rows listed at once
//! (paper s5.4's callback, bounded by the statement; [`crate::statement`] reads the `LIMIT`).
//!
//! Stock SQLite looks each row up as it steps: on a seek-bound device (a 7200 RPM disk) every table page
//! it has not read yet costs a far request, and a `LIMIT 5000` through a text index reads about 450 of
//! them (3.4 s on the emulated disk). Listed whole (`PF_SET | PF_WHOLE_LIST`), libprefetch fetches the
//! same pages in one C-LOOK sweep with infill.
//!
//! **The cost rule.** Decided once, when a forward scan that SQLite began at its index's first leaf
//! reaches its [`super::MIN_LEAVES`]th leaf (a `LIMIT 20` or `LIMIT 200` never does, and so costs no read
//! and no advice), from what the leaves read so far say, before any page is read for it:
//! * `r`, the rows the statement still reads: n (limit plus offset) less the rows of the leaves read;
//! * `P`, the table pages their lookups need: `r` times the distinct table pages per row of the leaves
//!   read;
//! * the lookups cost `P` far requests: `P * far`, in pages of transfer (the device profile's far
//!   request, as for the whole lists of `super::ScanPlanner::set_seek_bound`);
//! * the sweep costs one far request, then per page its transfer and the gap to it: read through when
//!   shorter than a near request (infill), else a near request; the gap is taken as the table's pages
//!   over `P`: `far + P * (1 + min(near, table / P))`;
//! * listed only where the lookups cost at least [`SWEEP_MARGIN`] times the sweep, and the pages fit in
//!   half the memory available.
//!
//! Then the index leaves holding the first n rows are found from the left edge of the index (only the
//! interior pages above them are read: [`crate::btree::Database::index_first_leaves`]), the unread ones
//! read after one `WILLNEED` of them all, and the list runs from the leaf SQLite is on to the n-th row:
//! each leaf (marked) and the table pages of its rows. Nothing is appended later: the statement reads no
//! further rows (with a `WHERE` on other columns it may read more, which stock SQLite then looks up).
//!
//! Deviations: the paper lists the whole index; this lists exactly the rows the statement's `LIMIT`
//! allows, and only on a seek-bound device, where a sweep is many times cheaper than the lookups.

use std::collections::HashSet;

use super::{opened, Entry, ListBuilder, Plan, ScanPlanner, SPARSE_LOOKUPS};
use crate::btree::{Database, IndexLeaf, ReadResult};
use crate::statement::RowBound;

/// The lookups must cost at least this many times the sweep of their pages.
pub const SWEEP_MARGIN: u64 = 2;

/// What requests cost on the file's device, in pages of transfer (its stored profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestCosts {
    /// A far request (a seek and a rotation on a disk).
    pub far_pages: u64,
    /// A near request (the largest gap read through rather than skipped: the infill gap).
    pub near_pages: u64,
}

/// Whether looking up `pages` table pages one far request each costs at least [`SWEEP_MARGIN`] times
/// sweeping them, spread over a table of `table_pages` pages (see the module's text).
pub fn sweep_pays(costs: RequestCosts, pages: u64, table_pages: u64) -> bool {
    if pages == 0 {
        return false;
    }
    let gap = (table_pages / pages).min(costs.near_pages);
    let sweep = costs
        .far_pages
        .saturating_add(pages.saturating_mul(1 + gap));
    pages.saturating_mul(costs.far_pages) >= sweep.saturating_mul(SWEEP_MARGIN)
}

/// The leaves read so far of a scan that began at the index's first leaf, as the first-rows rule sees
/// them.
struct Begun {
    table_root: u32,
    /// The index's first leaves, from the left edge: those read, then as many as the rows left need.
    leaves: Vec<IndexLeaf>,
    /// How many of `leaves` SQLite read (the last is the one it is on).
    read: usize,
}

impl ScanPlanner {
    /// Tells the planner the file's device is seek-bound, with these request costs: a `LIMIT` scan's
    /// first rows are then listed at once where the cost rule says so (see the module's text).
    pub fn set_first_rows_costs(&mut self, costs: RequestCosts) {
        self.first_rows = Some(costs);
    }

    /// The list of the first rows of the `LIMIT` scan of one of the indexes whose root was read, if
    /// one began at its first leaf, looks up its own table, and the cost rule lists it.
    pub(super) fn first_rows_plan(&mut self) -> ReadResult<Option<Plan>> {
        let (Some(costs), Some(RowBound::Rows(n))) = (self.first_rows, self.statement_bound())
        else {
            return Ok(None);
        };
        for root in self.cache.roots_read.clone() {
            if !self.began_at_first_leaf(root)? {
                continue;
            }
            let Some(begun) = self.begun(root, n)? else {
                continue;
            };
            if let Some(entries) = self.first_rows_list(&begun, costs, n)? {
                self.decisions.followed += 1;
                self.decisions.first_rows += 1;
                self.first_rows_active = true;
                let listed: Vec<u32> = entries
                    .iter()
                    .filter(|e| e.mark)
                    .map(|e| self.page_at(e.offset))
                    .collect();
                self.cache.first_rows_leaves.extend(listed);
                self.cache.unknown_leaves.clear();
                self.cache.roots_read.clear();
                return Ok(Some(Plan::SetWhole(entries)));
            }
        }
        Ok(None)
    }

    /// The scan of index `root` (of a rowid table) as SQLite read it: its first leaves from the left
    /// edge, the ones waiting to be placed first and the one read last among them; enough leaves after
    /// them for `n` rows at the fewest rows a leaf read holds. `None` for any other scan.
    fn begun(&mut self, root: u32, n: u64) -> ReadResult<Option<Begun>> {
        let Some(table_root) = self.rowid_table_of(root)? else {
            return Ok(None);
        };
        let db = opened(&self.db)?;
        let waiting = &self.cache.unknown_leaves;
        let first = db.index_first_leaves(root, waiting.len())?;
        let read = first
            .iter()
            .take_while(|leaf| waiting.contains(&leaf.page))
            .count();
        if read == 0 || waiting.last() != Some(&first[read - 1].page) {
            return Ok(None);
        }
        let mut fewest = u64::MAX;
        for leaf in &first[..read] {
            fewest = fewest.min(db.index_leaf_rowids(leaf.page)?.len() as u64 + 1);
        }
        let more = usize::try_from(n / fewest.max(1) + 1).unwrap_or(usize::MAX);
        let leaves = db.index_first_leaves(root, read.saturating_add(more))?;
        Ok(Some(Begun {
            table_root,
            leaves,
            read,
        }))
    }

    /// The list from the leaf SQLite is on to the `n`-th row, if the scan looks up its own table and
    /// the cost rule, estimated from the leaves read before that one, lists it.
    fn first_rows_list(
        &mut self,
        begun: &Begun,
        costs: RequestCosts,
        n: u64,
    ) -> ReadResult<Option<Vec<Entry>>> {
        let db = opened(&self.db)?;
        let map = super::table_map(&mut self.cache.tables, db, begun.table_root)?;
        let mut rows_read = 0u64;
        let mut pages_read = HashSet::new();
        for leaf in &begun.leaves[..begun.read - 1] {
            for rowid in leaf_rows(db, leaf)? {
                rows_read += 1;
                pages_read.insert(map.leaf_for(db, rowid)?);
            }
        }
        let looked_up = pages_read
            .iter()
            .filter(|page| self.recent_table_reads.contains(page))
            .count();
        if looked_up == 0 || looked_up * SPARSE_LOOKUPS < pages_read.len() {
            return Ok(None);
        }
        let rows_left = n.saturating_sub(rows_read);
        let pages = (rows_left * pages_read.len() as u64).div_ceil(rows_read.max(1));
        let page_size = u64::from(db.header().page_size);
        let fits = self
            .memory
            .is_none_or(|memory| pages.saturating_mul(page_size) <= memory / 2);
        if !fits || !sweep_pays(costs, pages, map.estimated_leaves()) {
            return Ok(None);
        }
        let unread: Vec<u32> = begun.leaves[begun.read..].iter().map(|l| l.page).collect();
        db.will_need(&unread);
        let mut list = ListBuilder::default();
        let mut rows = rows_read;
        for leaf in &begun.leaves[begun.read - 1..] {
            list.push(Entry {
                offset: db.page_offset(leaf.page),
                mark: true,
            });
            for rowid in leaf_rows(db, leaf)? {
                if rows >= n {
                    break;
                }
                rows += 1;
                list.push(Entry {
                    offset: db.page_offset(map.leaf_for(db, rowid)?),
                    mark: false,
                });
            }
            if rows >= n {
                break;
            }
        }
        Ok(Some(list.entries))
    }
}

/// The rowids of `leaf`'s entries, then of the interior entries after it, in key order.
fn leaf_rows(db: &Database<super::Source>, leaf: &IndexLeaf) -> ReadResult<Vec<i64>> {
    let mut rows = db.index_leaf_rowids(leaf.page)?;
    rows.extend(&leaf.then);
    Ok(rows)
}
