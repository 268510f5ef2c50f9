//! The section 5.4 callback's planning, without the library calls: given the page SQLite is reading and
//! the last marked page, decide the access list to hand libprefetch.
//!
//! "The SQLite callback for libprefetch examines the offset for the current position and determines if it
//! belongs to an index. If so, the callback iterates the index and tells libprefetch about the table data
//! that the index points to. From then on, the callback marks the index pages and uses them to track its
//! progress." (paper s5.4). The list looks like this, index leaves marked (*):
//!
//! ```text
//!   leaf L*  T(L,1) T(L,2) ... T(L,n)   leaf L+1*  T(L+1,1) ...   (T(L,i): table leaf of the i-th rowid of L)
//! ```
//!
//! Regimes, by the page SQLite asks for when libprefetch calls back:
//! * **an index leaf right after the previous one in key order** (a forward scan, from the index's first
//!   leaf or from elsewhere, such as a range): `Set` a list from that leaf over [`FIRST_LOOKAHEAD`] leaves.
//!   A scan that ends within its first leaf (`LIMIT 10`) lists nothing and costs nothing: listing reads
//!   the table's interior pages (hundreds for a 1 GiB table), more than such a query reads at all;
//! * **a table leaf with a marked leaf of the listed scan behind it, or a later leaf of that scan** (the
//!   list runs short: libprefetch calls back when what is left of it is below its budget): `Append` the
//!   next stretch of leaves, [`GROWTH`] times longer than the last, or `Keep` once the list runs to the
//!   end of the index. Entries already listed are never handed over again, so libprefetch never advises
//!   a page twice for one scan, and a scan that stops (a `LIMIT`, a cursor closed early) leaves at most
//!   about [`GROWTH`] times what it read listed. When libprefetch's list is full and takes only part of
//!   a stretch ([`ScanPlanner::accepted`]), the scan counts as listed only up to the entry it took: the
//!   next stretch starts there, no longer than what fitted, so the list has no hole;
//! * **anything else** (an index leaf out of sequence, as point lookups and descending scans do; interior
//!   pages; a page the reader cannot parse): `Keep`, plain reads. An out-of-sequence leaf of the index
//!   whose scan the list describes clears the list (`Clear`), since that scan has ended; leaves of other
//!   indexes (the inner side of a join) leave it alone.
//!
//! Deviations: the paper's callback starts listing at the first index page read and lists the whole
//! index; this one lists a growing stretch of it once a second, consecutive leaf confirms a forward scan, so that point lookups through an index (joins) do not each
//! prefetch a whole leaf's worth of table pages and a scan cut short does not prefetch the whole table.
//! Entries for consecutive rowids on the same table page are merged into one. The reader's caches are
//! dropped when the file's change counter, length or modification time changes.

use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::btree::{Database, IndexLeaf, IndexTree, PageSource, ReadError, ReadResult, TableMap};
use crate::format::PageKind;

/// Leaves listed when a forward scan is recognised (its second leaf): a scan cut short soon after
/// (`LIMIT 200`) has a short list, and [`GROWTH`] makes the list of a long scan long within a few steps.
pub const FIRST_LOOKAHEAD: usize = 2;
/// Factor by which the lookahead grows at each further step of such a scan. With 4, a scan stopped
/// early read up to 2.2x stock's pages (1 GiB table, cold, `LIMIT 20000`: 181 MiB against 81 MiB);
/// with 2, 124 MiB, as fast (0.46-0.62 s against 0.65-0.67 s; stock 1.3-1.5 s), and the whole scan
/// and the scan in a quarter cgroup take the same time.
pub const GROWTH: usize = 2;

/// One access-list entry: a byte offset in the database file and whether it is marked (an index leaf).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Byte offset of the page.
    pub offset: u64,
    /// Marked entries are index leaves.
    pub mark: bool,
}

/// What the callback should do with the access list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Replace the list (PF_SET).
    Set(Vec<Entry>),
    /// Add to the end of the list (PF_APPEND): the scan's next stretch of leaves.
    Append(Vec<Entry>),
    /// Drop the list: the scan it described has ended.
    Clear,
    /// Leave the list as it is.
    Keep,
}

/// An index whose leaves are known, and the rowid table it points into.
struct IndexInfo {
    table_root: u32,
    leaves: Vec<IndexLeaf>,
}

/// Everything read from the file, dropped when the file changes.
#[derive(Default)]
struct Cache {
    /// Index root -> index; built on the first callback on an index leaf.
    indexes: Option<HashMap<u32, IndexInfo>>,
    /// Index leaf page -> (index root, position in key order).
    leaf_at: HashMap<u32, (u32, usize)>,
    /// Table root -> rowid-to-page map.
    tables: HashMap<u32, TableMap>,
    /// Interior pages of the indexes, and page 1 (the schema table, whose header SQLite re-reads).
    index_interiors: HashSet<u32>,
    /// Index leaf -> the table pages its entries (and the interior entries after it) point to, in order;
    /// only for leaves of the scan being listed from the application's leaf on (the ones a `Set` from
    /// there, or the next stretch of a leaf listed in part, lists again). Kept for every leaf ever
    /// listed, this was the process's largest allocation: 24 MB on a 1 GiB table, taken from the
    /// memory cgroup's cache that the list plans.
    table_pages: FxHashMap<u32, Box<[u32]>>,
    /// The one index leaf read before the indexes were built (see [`ScanPlanner::on_index_leaf`]).
    lone_leaf: Option<u32>,
}

/// How far a scan of one index has got: the position of the leaf it was last seen on, the end of what
/// was listed for it (leaves up to `listed_end`), and how many leaves the next stretch covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scan {
    pos: usize,
    listed_end: usize,
    lookahead: usize,
    /// Entries of leaf `listed_end`'s stretch that libprefetch already holds (its list filled up
    /// within that leaf): the next stretch starts after them.
    listed_into_leaf: usize,
}

/// The last list handed out: which scan, from which leaf, and where each leaf's entries start in it.
#[derive(Debug, Clone, Default)]
struct HandedOut {
    root: u32,
    from: usize,
    leaf_starts: Vec<usize>,
    len: usize,
    /// Entries of the first leaf left out because libprefetch already held them.
    skipped: usize,
}

/// Where the planner reads the database file: shared, since the reader is re-opened over it.
pub type Source = Arc<dyn PageSource + Send + Sync>;

/// Plans access lists for index scans of one database file.
pub struct ScanPlanner {
    source: Source,
    /// The reader, opened on the first callback (a new database file has no header yet).
    db: Option<Database<Source>>,
    cache: Cache,
    /// Index root -> its scan's progress.
    scans: HashMap<u32, Scan>,
    /// The index whose scan the access list currently describes.
    active: Option<u32>,
    /// The last stretch planned, until libprefetch says how much of it it took.
    handed_out: Option<HandedOut>,
}

impl ScanPlanner {
    /// A planner reading the database through `source`.
    pub fn new(source: Source) -> ScanPlanner {
        ScanPlanner {
            source,
            db: None,
            cache: Cache::default(),
            scans: HashMap::new(),
            active: None,
            handed_out: None,
        }
    }

    /// libprefetch took only the first `accepted` entries of the last `Set` or `Append` (its list is
    /// full): the scan is listed up to there. The next stretch starts at the first entry not taken and
    /// covers as many leaves as fitted (at least [`FIRST_LOOKAHEAD`]), so the list never has a hole
    /// that every read in it would diverge at, and nothing is listed twice.
    pub fn accepted(&mut self, accepted: usize) {
        let Some(out) = self.handed_out.take() else {
            return;
        };
        if accepted >= out.len {
            return;
        }
        let Some(scan) = self.scans.get_mut(&out.root) else {
            return;
        };
        let whole_leaves = out
            .leaf_starts
            .iter()
            .skip(1)
            .filter(|&&start| start <= accepted)
            .count();
        let cut_leaf_start = out
            .leaf_starts
            .get(whole_leaves)
            .copied()
            .unwrap_or(out.len);
        scan.listed_end = out.from + whole_leaves;
        let before = if whole_leaves == 0 { out.skipped } else { 0 };
        scan.listed_into_leaf = before + accepted.saturating_sub(cut_leaf_start);
        scan.lookahead = whole_leaves.max(FIRST_LOOKAHEAD);
    }

    /// Whether the page at byte `offset` is an interior page of a b-tree the planner has read (or page 1).
    /// SQLite re-reads those whenever its own page cache drops them; they are not on the access list, so
    /// the VFS keeps such reads from libprefetch rather than have each one count as a divergence.
    pub fn is_interior(&self, offset: u64) -> bool {
        let page = self.page_at(offset);
        self.cache.index_interiors.contains(&page)
            || self
                .cache
                .tables
                .values()
                .any(|map| map.is_cached_interior(page))
    }

    /// Index leaves whose table pages the planner keeps (its memory grows with them).
    pub fn leaves_kept(&self) -> usize {
        self.cache.table_pages.len()
    }

    /// Forgets everything read from the file (after a write).
    pub fn invalidate(&mut self) {
        self.cache = Cache::default();
        self.scans.clear();
        self.active = None;
    }

    /// The scan the list described has ended (its list is being dropped).
    pub fn end_scan(&mut self) {
        self.active = None;
    }

    /// Decides the list for a callback: `requested` is the byte offset SQLite is reading, `last_marked`
    /// the offset of the last marked entry it passed. A file the reader cannot parse gives `Keep`.
    pub fn plan(&mut self, last_marked: Option<u64>, requested: u64) -> Plan {
        self.plan_checked(last_marked, requested)
            .unwrap_or(Plan::Keep)
    }

    fn plan_checked(&mut self, last_marked: Option<u64>, requested: u64) -> ReadResult<Plan> {
        match &mut self.db {
            Some(db) => {
                if db.refresh()? {
                    self.invalidate();
                }
            }
            None => self.db = Some(Database::open(Box::new(Arc::clone(&self.source)))?),
        }
        let page = self.page_at(requested);
        match opened(&self.db)?.page_kind(page)? {
            PageKind::IndexLeaf => self.on_index_leaf(page),
            PageKind::TableLeaf => match last_marked.map(|offset| self.page_at(offset)) {
                Some(leaf) => self.on_table_leaf(leaf),
                None => Ok(Plan::Keep),
            },
            _ => Ok(Plan::Keep),
        }
    }

    fn page_at(&self, offset: u64) -> u32 {
        let page_size = self.db.as_ref().map_or(4096, |db| db.header().page_size);
        u32::try_from(offset / u64::from(page_size) + 1).unwrap_or(u32::MAX)
    }

    /// An index leaf was read. The indexes are built (their interior pages read: hundreds of reads for a
    /// large database) only once a second, different leaf is read: a query that reads one leaf (a point
    /// lookup, `LIMIT 10`) then costs nothing. The first leaf is then accounted before this one.
    fn on_index_leaf(&mut self, page: u32) -> ReadResult<Plan> {
        if self.cache.indexes.is_none() {
            match self.cache.lone_leaf {
                Some(lone) if lone != page => {
                    self.load_indexes()?;
                    self.on_known_index_leaf(lone)?;
                }
                _ => {
                    self.cache.lone_leaf = Some(page);
                    return Ok(Plan::Keep);
                }
            }
        }
        self.on_known_index_leaf(page)
    }

    /// [`ScanPlanner::on_index_leaf`] once the indexes are built.
    fn on_known_index_leaf(&mut self, page: u32) -> ReadResult<Plan> {
        self.load_indexes()?;
        let Some(&(root, pos)) = self.cache.leaf_at.get(&page) else {
            return Ok(Plan::Keep);
        };
        match self.scans.get(&root) {
            Some(scan) if scan.pos == pos => Ok(Plan::Keep),
            Some(scan) if self.active == Some(root) && scan.pos < pos && pos < scan.listed_end => {
                self.extend(root, pos)
            }
            Some(scan) if scan.pos < pos && pos <= scan.listed_end => {
                Ok(Plan::Set(self.list_from(root, pos)?))
            }
            _ => {
                self.scans.insert(
                    root,
                    Scan {
                        pos,
                        listed_end: pos + 1,
                        lookahead: FIRST_LOOKAHEAD,
                        listed_into_leaf: 0,
                    },
                );
                if self.active == Some(root) {
                    self.active = None;
                    Ok(Plan::Clear)
                } else {
                    Ok(Plan::Keep)
                }
            }
        }
    }

    fn on_table_leaf(&mut self, marked_leaf: u32) -> ReadResult<Plan> {
        self.load_indexes()?;
        match self.cache.leaf_at.get(&marked_leaf) {
            Some(&(root, pos)) if self.active == Some(root) => self.extend(root, pos),
            _ => Ok(Plan::Keep),
        }
    }

    /// The scan of index `root` is at leaf `pos` and libprefetch asks for more: append the next stretch
    /// of leaves, [`GROWTH`] times longer than the last, unless the list already runs to the end.
    fn extend(&mut self, root: u32, pos: usize) -> ReadResult<Plan> {
        let Some(&scan) = self.scans.get(&root) else {
            return Ok(Plan::Keep);
        };
        let (mut entries, end) = self.list_leaves(root, pos, scan.listed_end, scan.lookahead)?;
        let skip = scan.listed_into_leaf.min(entries.len());
        entries.drain(..skip);
        if let Some(out) = &mut self.handed_out {
            out.len = entries.len();
            out.skipped = skip;
            for start in &mut out.leaf_starts {
                *start = start.saturating_sub(skip);
            }
        }
        let grown = if entries.is_empty() {
            scan.lookahead
        } else {
            scan.lookahead.saturating_mul(GROWTH)
        };
        self.scans.insert(
            root,
            Scan {
                pos,
                listed_end: end.max(scan.listed_end),
                lookahead: grown,
                listed_into_leaf: if entries.is_empty() { skip } else { 0 },
            },
        );
        Ok(if entries.is_empty() {
            Plan::Keep
        } else {
            Plan::Append(entries)
        })
    }

    /// A new list for the scan of index `root` from leaf `pos`: [`FIRST_LOOKAHEAD`] leaves.
    fn list_from(&mut self, root: u32, pos: usize) -> ReadResult<Vec<Entry>> {
        let (entries, end) = self.list_leaves(root, pos, pos, FIRST_LOOKAHEAD)?;
        let next = Scan {
            pos,
            listed_end: end.max(pos + 1),
            lookahead: FIRST_LOOKAHEAD.saturating_mul(GROWTH),
            listed_into_leaf: 0,
        };
        self.scans.insert(root, next);
        self.active = Some(root);
        Ok(entries)
    }

    /// Lists up to `count` leaves of index `root` from leaf `from`, each (marked) followed by the table
    /// pages its entries point to; returns the entries and the position after the last leaf listed. The
    /// application is at leaf `at`: the table pages of leaves before it are forgotten.
    fn list_leaves(
        &mut self,
        root: u32,
        at: usize,
        from: usize,
        count: usize,
    ) -> ReadResult<(Vec<Entry>, usize)> {
        self.forget_table_pages_before(root, at);
        let Some(index) = self
            .cache
            .indexes
            .as_ref()
            .and_then(|indexes| indexes.get(&root))
        else {
            return Ok((Vec::new(), from));
        };
        let db = opened(&self.db)?;
        let from = from.min(index.leaves.len());
        let end = from.saturating_add(count).min(index.leaves.len());
        let map = match self.cache.tables.entry(index.table_root) {
            Slot::Occupied(e) => e.into_mut(),
            Slot::Vacant(e) => e.insert(TableMap::new(db, index.table_root)?),
        };
        let mut list = ListBuilder::default();
        let mut leaf_starts = Vec::with_capacity(end - from);
        for leaf in &index.leaves[from..end] {
            leaf_starts.push(list.entries.len());
            list.push(Entry {
                offset: db.page_offset(leaf.page),
                mark: true,
            });
            let pages = match self.cache.table_pages.entry(leaf.page) {
                Slot::Occupied(e) => e.into_mut(),
                Slot::Vacant(e) => e.insert(table_pages_of(db, map, leaf)?),
            };
            for &page in pages.iter() {
                list.push(Entry {
                    offset: db.page_offset(page),
                    mark: false,
                });
            }
        }
        self.handed_out = Some(HandedOut {
            root,
            from,
            leaf_starts,
            len: list.entries.len(),
            skipped: 0,
        });
        Ok((list.entries, end))
    }

    /// Forgets the table pages of every leaf except those of index `root` at position `at` or later.
    fn forget_table_pages_before(&mut self, root: u32, at: usize) {
        let leaf_at = &self.cache.leaf_at;
        self.cache.table_pages.retain(|leaf, _| {
            leaf_at
                .get(leaf)
                .is_some_and(|&(index, pos)| index == root && pos >= at)
        });
    }

    /// Reads the schema and the leaf order of every index of a rowid table, once per file version.
    fn load_indexes(&mut self) -> ReadResult<()> {
        if self.cache.indexes.is_some() {
            return Ok(());
        }
        let db = opened(&self.db)?;
        let schema = db.schema()?;
        let mut indexes = HashMap::new();
        for index in schema.iter().filter(|e| e.kind == "index") {
            let table = schema
                .iter()
                .find(|e| e.kind == "table" && e.name == index.table);
            let Some(table) = table else { continue };
            if !matches!(
                db.page_kind(table.root)?,
                PageKind::TableLeaf | PageKind::TableInterior
            ) {
                continue; // a WITHOUT ROWID table: its indexes hold primary keys, not rowids
            }
            let IndexTree { leaves, interiors } = db.index_tree(index.root)?;
            self.cache.index_interiors.extend(interiors);
            for (pos, leaf) in leaves.iter().enumerate() {
                self.cache.leaf_at.insert(leaf.page, (index.root, pos));
            }
            indexes.insert(
                index.root,
                IndexInfo {
                    table_root: table.root,
                    leaves,
                },
            );
        }
        self.cache.index_interiors.insert(1);
        self.cache.indexes = Some(indexes);
        Ok(())
    }
}

/// The table pages that the entries of index leaf `leaf` (then the interior entries after it) point to,
/// consecutive repeats merged.
fn table_pages_of(
    db: &Database<Source>,
    map: &mut TableMap,
    leaf: &IndexLeaf,
) -> ReadResult<Box<[u32]>> {
    let mut pages: Vec<u32> = Vec::new();
    for rowid in db.index_leaf_rowids(leaf.page)?.iter().chain(&leaf.then) {
        let page = map.leaf_for(db, *rowid)?;
        if pages.last() != Some(&page) {
            pages.push(page);
        }
    }
    Ok(pages.into_boxed_slice())
}

/// The reader once opened.
fn opened(db: &Option<Database<Source>>) -> ReadResult<&Database<Source>> {
    db.as_ref()
        .ok_or_else(|| ReadError::Corrupt("database not opened".into()))
}

/// Accumulates entries, merging an unmarked entry into the one before it when both are the same page.
#[derive(Default)]
struct ListBuilder {
    entries: Vec<Entry>,
}

impl ListBuilder {
    fn push(&mut self, entry: Entry) {
        if !entry.mark && self.entries.last() == Some(&entry) {
            return;
        }
        self.entries.push(entry);
    }
}
