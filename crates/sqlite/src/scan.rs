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
//! * **a forward scan of a table much smaller than the memory on a seek-bound device, for a connection
//!   that asked for whole lists** (`prefetch_scan=whole`; left alone otherwise, [`SMALL_TABLE_SHARE`]):
//!   followed only if SQLite began it at the index's first leaf (or, its start unseen, the leaves
//!   before the first one seen are all cached: `scan/unseen_start.rs`) and the statement running has
//!   no `LIMIT` ([`crate::statement`]), and then, where sweeping the table pays, listed to the index's
//!   end in one `SetWhole` ([`ScanPlanner::set_seek_bound`]);
//! * **a forward scan of a table about the memory's size** ([`ABOUT_MEMORY`]): followed as any scan, but
//!   only if SQLite began it at the index's first leaf (as above) and the statement has no `LIMIT`;
//!   where the table fits in the memory beside what the scan needs and the device's costs are known,
//!   held instead: swept once, the index dropped behind the scan, no list (`scan/held_table.rs`);
//! * **a forward scan by a statement with `LIMIT n`, on a seek-bound device**, that SQLite began at its
//!   index's first leaf: at its [`MIN_LEAVES`]th leaf, the table pages of its first n rows listed in one
//!   `SetWhole` where looking them up would cost at least twice sweeping them (`scan/first_rows.rs`);
//! * **a forward leaf of a scan listed earlier in the same read transaction, past what was listed**
//!   (its list dropped because its pages were found cached, [`ScanPlanner::pause_scan`], or found
//!   cached when set): `Set` a list from that leaf at once, as long as the stretch the scan had
//!   reached (a scan resumed hundreds of times, listed anew from [`FIRST_LOOKAHEAD`] leaves each time,
//!   gave libprefetch rounds of a dozen pages, too few to sort). Rows near each other in key order often
//!   share table pages (a text key's neighbours), so SQLite's own cache serves whole leaves' lookups
//!   for a while; such a scan was otherwise recognised anew after every cached stretch, or, its
//!   lookups unseen, taken for a covering scan (the 12-copy `unicode` scan in a 6 MiB cgroup: 32-38
//!   covering verdicts, 0.89-1.16x stock; listed again, 0 and 2.10-2.23x, fewer pages than stock's);
//! * **anything else** (an index leaf out of sequence, as point lookups and descending scans do; interior
//!   pages; a page the reader cannot parse): `Keep`, plain reads. An out-of-sequence leaf of the index
//!   whose scan the list describes clears the list (`Clear`), since that scan has ended; leaves of other
//!   indexes (the inner side of a join) leave it alone.
//!
//! Deviations: the paper's callback starts listing at the first index page read and lists the whole
//! index; this one lists a growing stretch of it once a second, consecutive leaf confirms a forward scan, so that point lookups through an index (joins) do not each
//! prefetch a whole leaf's worth of table pages and a scan cut short does not prefetch the whole table.
//! Entries for consecutive rowids on the same table page are merged into one. The reader's caches are
//! dropped when the file's change counter, length or modification time changes, looked at once a read
//! transaction ([`ScanPlanner::may_have_changed`]).
//!
//! Over 800 lines: [`ScanPlanner`] is one state machine whose regimes (above) share its caches of the
//! file's structure and the scan's progress; its methods follow those regimes in order, and split over
//! files they would each need the whole state.

use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use crate::btree::{
    Database, IndexOrder, LeafOrder, PageSource, ReadError, ReadResult, SchemaEntry, TableMap,
};
use crate::format::PageKind;
use crate::statement::RowBound;

mod first_rows;
mod held_state;
mod held_table;
mod kept_leaves;
mod own_cache;
mod unseen_start;
pub use first_rows::{sweep_pays, RequestCosts, SWEEP_MARGIN};
use held_state::{AdviceTiming, HeldScan};
pub use held_state::{DeviceCosts, HeldCounts, DROP_EVERY_LEAVES};
use kept_leaves::KeptLeaves;
use own_cache::OwnCache;
pub use own_cache::{parse_cache_size, DEFAULT_CACHE_SIZE};
pub use unseen_start::{ResidencyProbe, MAX_UNSEEN_LEAVES};

/// Consecutive leaves of one index a scan must have read, each followed by table lookups, before the
/// planner reads the index's structure or lists anything: a `LIMIT 20` or `LIMIT 200` through an index
/// reads one to three leaves, and then costs no read and no advice at all (with 3, a `LIMIT 200` that
/// reached a third leaf read 205 pages against stock's 84: the index structure and a first stretch).
pub const MIN_LEAVES: usize = 4;
/// A table smaller than this share of the memory available for caching is left alone: it stays
/// cached once read, so following saves at most one request per table page, and costs a followed read
/// (1.5-2 us) per row, dozens a page; on this machine's disk (a far request 8 us) a 25 MiB table with
/// 20 GiB available, cold, took 1.3-1.7 s followed against stock's 1.0-1.1 s (a 1 GiB table, 1.5x
/// faster). On a seek-bound device following such a table pays on a full scan (the 25 MiB table on
/// the emulated disk, 2.04x) but not on a range that ends early: the extension cannot see where the
/// range ends, so the stretch it lists past that end costs a seek a page (an index range joined to
/// the table, 1.07x left alone, 0.50x followed). So small tables stay alone on every device but for
/// one scan: on a seek-bound device, a scan that SQLite started at its index's first leaf (a full
/// scan) whose connection asked for whole lists ([`ScanPlanner::set_seek_bound`]).
const SMALL_TABLE_SHARE: u64 = 64;
/// A table between half and twice the memory available: only its full scans are followed (begun at the
/// index's first leaf, no `LIMIT`), on every device, and held where it fits (`scan/held_table.rs`). An index scan's lookups and the index's own pages
/// share the memory there, and stock SQLite reads the table several times over: pci's 103 MiB
/// `subsystems` table (its index 73 MiB) in a 146 MiB cgroup, 775k pages, against 274k followed (1.87x
/// on this machine's disk); unicode's 25 MiB table in 24 MiB of the emulated disk 1.22-1.29x followed.
/// Ranges and joins through such a table are left alone: on the emulated disk the stretch listed past
/// where they end cost them 0.61-0.72x followed (as left alone 0.90-0.96x, stock's requests).
const ABOUT_MEMORY: (u64, u64) = (1, 2);

/// A scan that looks up fewer than one in this many of the table pages its leaves point to is left
/// alone: the inner side of `vendors CROSS JOIN devices ON d.vendor = v.vendor AND d.copy = v.copy`
/// looks up one entry in 25 of each `devices_id` leaf (the copy is filtered on the index), and listing
/// every entry read 17,240 pages against stock's 14,745.
const SPARSE_LOOKUPS: usize = 4;

/// The longest a scan left alone goes without a look (see `Scan::recheck_at`), in leaves.
const MAX_RECHECK_LEAVES: usize = 64;
/// Table-leaf reads remembered, to tell a scan that looks up its own table from a covering-index scan
/// (whose table reads, if any, are another table's: the inner side of a join).
const RECENT_TABLE_READS: usize = 256;
/// Unknown index leaves read, with no index root read since the connection opened (SQLite's own cache
/// held every root), after which every index's structure is read to place them.
const FALLBACK_LEAVES: usize = 8;

/// Index pages noted before the schema is read ([`ScanPlanner::note_root`]) after which it is read:
/// a connection's point lookups and short `LIMIT` scans then pay for it once, as they did at their
/// first index page, and the noted pages take at most this many entries.
const UNRESOLVED_INDEX_PAGES: usize = 64;
/// Index interior pages read lately that are remembered: the pages SQLite descended through, which
/// tell, without a read that would reach the device, whether a scan began at its index's first leaf.
const RECENT_INDEX_INTERIORS: usize = 64;

/// Leaves listed when a forward scan is recognised (its [`MIN_LEAVES`]th leaf): a scan cut short soon after
/// (`LIMIT 200`) has a short list, and [`GROWTH`] makes the list of a long scan long within a few steps.
pub const FIRST_LOOKAHEAD: usize = 2;
/// Factor by which the lookahead grows at each further step of such a scan. With 4, a scan stopped
/// early read up to 2.2x stock's pages (1 GiB table, cold, `LIMIT 20000`: 181 MiB against 81 MiB);
/// with 2, 124 MiB, as fast (0.46-0.62 s against 0.65-0.67 s; stock 1.3-1.5 s), and the whole scan
/// and the scan in a quarter cgroup take the same time.
pub const GROWTH: usize = 2;
/// A stretch lists at most this many times the memory available for caching, in entries of a page
/// each ([`ScanPlanner::stretch_cap`]): libprefetch fetches at most its window (under that memory)
/// ahead of the reader and calls back for more when less than that is left listed, so entries beyond
/// wait in its list and the planner's, whose memory the cgroup's room (and so the window) loses.
/// Uncapped, the last stretches of a 25 MiB table's scan in a 6 MiB memory cgroup held ~11k entries.
pub const STRETCH_MEMORIES: u64 = 2;

/// Tells what the statement running on the file's connection says of the rows it reads
/// ([`ScanPlanner::set_statement_probe`]).
pub type StatementProbe = Box<dyn Fn() -> RowBound + Send>;

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
    /// Replace the list with the scan's whole remaining list, which it will read (PF_SET |
    /// PF_WHOLE_LIST: libprefetch's window starts at 90% of the memory, without its slow start).
    SetWhole(Vec<Entry>),
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
    leaves: LeafOrder,
    /// (leaf page, position in key order), sorted: where a leaf read is in the index (a sorted slice
    /// is a third of a hash map's memory, which the memory cgroup's cache would otherwise hold).
    by_page: Box<[(u32, u32)]>,
    /// Which of its scans are followed.
    followed: Followed,
}

/// A table's size against the memory available for caching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TableSize {
    /// Much larger than the memory: worth following.
    Large,
    /// Much smaller ([`SMALL_TABLE_SHARE`]).
    Small,
    /// About the memory's size ([`ABOUT_MEMORY`]).
    AboutMemory,
}

/// Which scans of an index are followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Followed {
    /// Every scan with table lookups (a table larger than the memory, or smaller than half of it).
    Every,
    /// Only full scans ([`ABOUT_MEMORY`]).
    FullScans,
    /// Only full scans, their table held: one about the memory's size that fits in it
    /// (`scan/held_table.rs`).
    Held,
    /// Only full scans, listed to the index's end at once where sweeping the table pays: a table much
    /// smaller than the memory on a seek-bound device ([`ScanPlanner::set_seek_bound`]).
    FullScansWhole,
}

/// Everything read from the file, dropped when the file changes.
#[derive(Default)]
struct Cache {
    /// The schema's b-trees, read on the first callback on an index page.
    schema: Option<Vec<SchemaEntry>>,
    /// Index root -> index, for the indexes whose structure was read (those a scan was seen in).
    indexes: HashMap<u32, IndexInfo>,
    /// Roots whose structure was looked at (read, or found to be no rowid table's index).
    tried: HashSet<u32>,
    /// Table root -> rowid-to-page map.
    tables: HashMap<u32, TableMap>,
    /// Interior pages of the indexes, and page 1 (the schema table, whose header SQLite re-reads).
    index_interiors: HashSet<u32>,
    /// Index leaf -> the table pages its entries (and the interior entries after it) point to, in order;
    /// only for leaves of the scan being listed from the application's leaf on (the ones a `Set` from
    /// there, or the next stretch of a leaf listed in part, lists again). Kept for every leaf ever
    /// listed, this was the process's largest allocation: 24 MB on a 1 GiB table, taken from the
    /// memory cgroup's cache that the list plans.
    table_pages: KeptLeaves,
    /// Index leaves read that belong to no index read so far (see [`ScanPlanner::on_index_leaf`]).
    unknown_leaves: Vec<u32>,
    /// Index roots read since the last unknown leaf was placed: the trees those leaves belong to.
    roots_read: Vec<u32>,
    /// Index pages read while the schema was not yet read, in order: which of them are roots is told
    /// once a scan needs it ([`ScanPlanner::resolve_roots`]), so a query that reads fewer than
    /// [`MIN_LEAVES`] leaves (a `LIMIT 20`, a point lookup) never reads the schema.
    index_pages_unresolved: Vec<u32>,
    /// Whether any index root was read since the file was opened or changed.
    any_root_read: bool,
    /// The planner's count of table reads when the first of `unknown_leaves` was read.
    table_reads_then: u64,
    /// The count of table reads when a covering scan was last counted.
    covering_counted: Option<u64>,
    /// The index interior pages read lately, newest last (at most [`RECENT_INDEX_INTERIORS`]).
    recent_index_interiors: VecDeque<u32>,
    /// Index leaves listed with a `LIMIT` scan's first rows (`scan/first_rows.rs`): their reads are
    /// that scan's, listed already.
    first_rows_leaves: HashSet<u32>,
}

impl Cache {
    /// The index root and position in key order of index leaf `page`, if its index was read.
    fn leaf_at(&self, page: u32) -> Option<(u32, usize)> {
        self.indexes.iter().find_map(|(&root, index)| {
            let after = index.by_page.partition_point(|&(leaf, _)| leaf <= page);
            match after.checked_sub(1).map(|i| index.by_page[i]) {
                Some((leaf, pos)) if leaf == page => Some((root, pos as usize)),
                _ => None,
            }
        })
    }
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
    /// Consecutive leaves in key order read so far.
    run: usize,
    /// The planner's count of table reads when the scan's last leaf was read.
    table_reads_then: u64,
    /// The scan was listed (not whole) in this read transaction: each later forward leaf of it past
    /// what is listed, seen while no list of it is set, lists it again at once ([`ScanPlanner::pause_scan`]).
    /// Cleared when the transaction ends ([`ScanPlanner::end_scan`]).
    resume: bool,
    /// The scan was left alone (covering, or its pages cached): counted once.
    left_alone: bool,
    /// Leaf position before which a scan left alone is not looked at again; the distance doubles at
    /// each verdict (up to [`MAX_RECHECK_LEAVES`]), so a cached or covering scan costs a look every few
    /// leaves, not one a leaf, and one whose pages go missing is listed again soon.
    recheck_at: usize,
    recheck_every: usize,
    /// The scan runs backwards (`ORDER BY ... DESC`).
    descending: bool,
    /// The leaf the scan began at.
    start: usize,
    /// Listed to the index's end at once (a `SetWhole`), not in appended stretches.
    whole: bool,
}

impl Scan {
    /// Leaves the scan alone for the next `recheck_every` leaves, and doubles that.
    fn leave_alone(&mut self) {
        self.left_alone = true;
        self.recheck_at = self.pos + self.recheck_every;
        self.recheck_every = (self.recheck_every * 2).min(MAX_RECHECK_LEAVES);
    }

    /// A scan at leaf `pos`, read when the planner had counted `table_reads` table reads.
    fn at(pos: usize, table_reads: u64) -> Scan {
        Scan {
            pos,
            listed_end: pos + 1,
            lookahead: FIRST_LOOKAHEAD,
            listed_into_leaf: 0,
            run: 1,
            left_alone: false,
            table_reads_then: table_reads,
            resume: false,
            recheck_at: 0,
            recheck_every: 1,
            descending: false,
            start: pos,
            whole: false,
        }
    }
}

/// What the planner decided about the scans it saw, for the statistics (`PREFETCH_SQLITE_STATS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Decisions {
    /// Scans whose table lookups were listed.
    pub followed: u64,
    /// Of those, scans listed to the index's end at once, as their connection asked
    /// ([`ScanPlanner::set_seek_bound`]).
    pub listed_whole: u64,
    /// Scans left alone: a covering index (no lookups of the index's own table).
    pub covering: u64,
    /// Scans left alone: the pages they would list were already cached.
    pub cached: u64,
    /// Scans left alone: a `WITHOUT ROWID` b-tree (the row is in the index).
    pub without_rowid: u64,
    /// Scans left alone: descending (`ORDER BY ... DESC`).
    pub descending: u64,
    /// Indexes left alone, their structure never read: their table is much smaller than the memory
    /// available, or about its size; and scans of those other than full scans.
    pub table_size: u64,
    /// Index structures read (the interior pages of one index; its table's are read once a scan of it
    /// is followed).
    pub indexes_read: u64,
    /// Of the scans followed, `LIMIT` scans whose first rows were listed at once (`scan/first_rows.rs`).
    pub first_rows: u64,
    /// Full scans whose table was held (`scan/held_table.rs`); not counted as followed.
    pub held: u64,
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
    /// Table leaves read so far.
    table_reads: u64,
    /// Bytes of memory available for caching (`None`: not known, every table is followed).
    memory: Option<u64>,
    /// Whether a stretch is capped ([`ScanPlanner::cap_stretches`]).
    capped: bool,
    /// On a seek-bound device, what a far request costs in pages of transfer.
    far_cost_pages: Option<u64>,
    /// What the statement the connection is running says of the rows it reads (`None`: not known).
    statement: Option<StatementProbe>,
    /// On a seek-bound device, its request costs: a `LIMIT` scan's first rows may be listed.
    first_rows: Option<RequestCosts>,
    /// The list describes a `LIMIT` scan's first rows.
    first_rows_active: bool,
    /// The last table leaves read, newest last (at most [`RECENT_TABLE_READS`]).
    recent_table_reads: VecDeque<u32>,
    /// The lookups of the scan being listed that SQLite's own cache will serve: left off the list.
    own_cache: OwnCache,
    decisions: Decisions,
    /// The file may have changed since the reader last looked (a read transaction began): the next plan
    /// re-reads its header, length and modification time, not every plan (two fstat and a read each).
    stale: bool,
    /// The kind of the page SQLite just read, as the VFS saw it ([`ScanPlanner::note_page_kind`]).
    seen_kind: Option<(u32, PageKind)>,
    /// Tells whether a range of the file is in the page cache (`scan/unseen_start.rs`).
    residency: Option<ResidencyProbe>,
    /// Leaves read before their index's structure are being replayed: scans move, nothing is
    /// decided ([`ScanPlanner::replay`]).
    replaying: bool,
    /// The scan whose table is held (`scan/held_table.rs`).
    held: Option<HeldScan>,
    held_counts: HeldCounts,
    /// What the file's device takes for a request and its transfer, if its profile says.
    device_costs: Option<DeviceCosts>,
    /// The most bytes one `POSIX_FADV_WILLNEED` call loads on the file's device.
    advice_bytes: u64,
    /// What the held scans' advice took.
    advice_timing: AdviceTiming,
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
            memory: None,
            capped: false,
            far_cost_pages: None,
            statement: None,
            first_rows: None,
            first_rows_active: false,
            table_reads: 0,
            recent_table_reads: VecDeque::new(),
            own_cache: OwnCache::default(),
            decisions: Decisions::default(),
            stale: false,
            seen_kind: None,
            residency: None,
            replaying: false,
            held: None,
            held_counts: HeldCounts::default(),
            device_costs: None,
            advice_bytes: u64::MAX,
            advice_timing: AdviceTiming::default(),
        }
    }

    /// The file may have changed (the connection began a read transaction, or wrote): the next plan
    /// re-reads the file's state and drops the caches if it did. Between two such calls, plans trust
    /// what they read: a read transaction sees one version of the file.
    pub fn may_have_changed(&mut self) {
        self.stale = true;
    }

    /// SQLite read the page at byte `offset`, of kind `kind` (its type byte, seen by the VFS): a plan for
    /// that very page takes the kind from here instead of reading the page again. A read of its own
    /// would cost a system call and, worse, come between SQLite's reads on SQLite's own descriptor,
    /// whose shared readahead state would then take a sequential scan for a random one.
    pub fn note_page_kind(&mut self, offset: u64, kind: PageKind) {
        self.seen_kind = Some((self.page_at(offset), kind));
    }

    /// Caps each stretch at [`ScanPlanner::stretch_cap`] entries: for libprefetch's window schedule,
    /// which fetches at most its window ahead (the conservative schedule looks further down the list
    /// for pages read again).
    pub fn cap_stretches(&mut self) {
        self.capped = true;
    }

    /// The most entries a stretch lists once capped ([`STRETCH_MEMORIES`] times the memory told, in
    /// pages; no limit if the memory is not known or stretches are not capped). A stretch lists at
    /// least one leaf.
    pub fn stretch_cap(&self) -> usize {
        let page_size = self.page_size();
        let memory = self.memory.filter(|_| self.capped);
        memory.map_or(usize::MAX, |bytes| {
            let pages = bytes / u64::from(page_size.max(1));
            usize::try_from(pages.saturating_mul(STRETCH_MEMORIES)).unwrap_or(usize::MAX)
        })
    }

    /// Tells the planner the size of SQLite's own page cache as `PRAGMA cache_size` sets it (pages, or
    /// KiB if negative; by default [`DEFAULT_CACHE_SIZE`]): once stretches are capped
    /// ([`ScanPlanner::cap_stretches`], libprefetch's window schedule), the lookups it will serve are
    /// left off the list (`scan/own_cache.rs`); 0 lists every lookup, as the paper's callback does.
    pub fn set_sqlite_cache_size(&mut self, cache_size: i64) {
        self.own_cache = OwnCache::new(cache_size);
    }

    /// Tells the planner how much memory is available for caching, in bytes (see [`SMALL_TABLE_SHARE`]
    /// and [`ABOUT_MEMORY`]).
    pub fn set_memory(&mut self, bytes: u64) {
        self.memory = Some(bytes);
    }

    /// Tells the planner what the file's device takes for a request and its transfer (its stored
    /// profile): when a held table's sweep pays (`scan/held_table.rs`). Without them no table is held.
    pub fn set_device_costs(&mut self, costs: DeviceCosts) {
        self.device_costs = Some(costs);
    }

    /// Tells the planner the most bytes one `POSIX_FADV_WILLNEED` call loads on the file's device (the
    /// kernel cuts a longer call there: `libprefetch::device::willneed_limit`): a held table's sweep
    /// is advised in pieces no longer.
    pub fn set_advice_limit(&mut self, bytes: u64) {
        self.advice_bytes = bytes;
    }

    /// The database's page size (4096 before the file was read).
    fn page_size(&self) -> u32 {
        self.db.as_ref().map_or(4096, |db| db.header().page_size)
    }

    /// Tells the planner the file's device is seek-bound, a far request costing `far_cost_pages` pages
    /// of transfer (`libprefetch::profile`). Then a scan of a table much smaller than the memory that
    /// SQLite began at its index's first leaf (told from the index pages SQLite read, without a read of
    /// its own that reaches the device), for a statement without `LIMIT` ([`Self::set_statement_probe`]),
    /// is followed when fetching the whole table costs less than the lookups of the leaves read so far:
    /// the table's pages times one page's transfer against those leaves' pages times a far request.
    /// It is listed to the index's end in one sorted list sent whole, which libprefetch fetches in a
    /// C-LOOK pass with infill (in short appended stretches, each its own small sweep of scattered
    /// pages, the scan gained 1.15x). A statement with a `LIMIT`, or one whose bound is not known, is
    /// left alone: listed to the end, a `LIMIT 1000` paid for sweeping the whole table (0.35x stock on
    /// the emulated disk), and sweeps growing with what it read still cost it 0.75x. A scan that began
    /// elsewhere (a range; a join's lookups) is left alone too: it may end anywhere, and what is listed
    /// past its end costs a seek a page. A statement without `LIMIT` that the application stops
    /// stepping early (a cursor closed after 1,000 rows) cannot be told from one read to the end, and
    /// listed whole it costs most of the table's sweep: so the extension calls this only for a
    /// connection that asked for it (`prefetch_scan=whole`, [`crate::vfs::SCAN_PARAMETER`]), and by
    /// default such a scan is left alone.
    pub fn set_seek_bound(&mut self, far_cost_pages: u64) {
        self.far_cost_pages = Some(far_cost_pages);
    }

    /// Gives the planner what tells the rows the statement running on the file's connection reads
    /// ([`crate::statement::row_bound`]); asked only when a small table's scan from its index's first
    /// leaf is to be followed on a seek-bound device. Without it such a scan is left alone.
    pub fn set_statement_probe(&mut self, probe: StatementProbe) {
        self.statement = Some(probe);
    }

    /// Whether the statement running reads to the end unless stopped (no `LIMIT` in it).
    fn statement_unbounded(&self) -> bool {
        self.statement_bound() == Some(RowBound::Unbounded)
    }

    /// What the statement running says of the rows it reads, if a probe was given.
    fn statement_bound(&self) -> Option<RowBound> {
        self.statement.as_ref().map(|probe| probe())
    }

    /// What the planner decided so far.
    pub fn decisions(&self) -> Decisions {
        self.decisions
    }

    /// The scan just listed was left alone after all: the pages it would list are cached.
    pub fn left_alone_cached(&mut self) {
        self.decisions.followed = self.decisions.followed.saturating_sub(1);
        if std::mem::take(&mut self.first_rows_active) {
            self.decisions.first_rows = self.decisions.first_rows.saturating_sub(1);
            self.decisions.cached += 1;
        }
        if let Some(scan) = self.active.and_then(|root| self.scans.get_mut(&root)) {
            if scan.whole {
                self.decisions.listed_whole = self.decisions.listed_whole.saturating_sub(1);
            }
            if !scan.left_alone {
                self.decisions.cached += 1;
            }
            scan.leave_alone();
        }
        self.active = None;
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
        self.first_rows_active = false;
        self.end_hold();
    }

    /// The scan the list described has ended (its list is being dropped), and so has any scan paused
    /// ([`ScanPlanner::pause_scan`]): the read transaction ended, or the list is being cleared.
    pub fn end_scan(&mut self) {
        self.active = None;
        self.first_rows_active = false;
        self.end_hold();
        for scan in self.scans.values_mut() {
            scan.resume = false;
        }
    }

    /// The list is being dropped because its pages were found cached, while its scan goes on: the
    /// scan is listed again from the next forward leaf of it that the VFS sees (the gate reopens once
    /// reads miss), without waiting for [`MIN_LEAVES`] consecutive leaves nor judging it covering
    /// again. A scan whose table pages come in phases (a text key whose neighbours share table pages
    /// for thousands of rows, then move on) was otherwise recognised anew after each cached phase, or
    /// taken for a covering scan.
    pub fn pause_scan(&mut self) {
        let active = self.active.take();
        self.first_rows_active = false;
        if let Some(scan) = active.and_then(|root| self.scans.get_mut(&root)) {
            scan.resume = !scan.whole;
        }
    }

    /// Decides the list for a callback: `requested` is the byte offset SQLite is reading, `last_marked`
    /// the offset of the last marked entry it passed. A file the reader cannot parse gives `Keep`.
    pub fn plan(&mut self, last_marked: Option<u64>, requested: u64) -> Plan {
        self.plan_checked(last_marked, requested)
            .unwrap_or(Plan::Keep)
    }

    fn plan_checked(&mut self, last_marked: Option<u64>, requested: u64) -> ReadResult<Plan> {
        match &mut self.db {
            Some(db) if self.stale => {
                self.stale = false;
                if db.refresh()? {
                    self.invalidate();
                }
            }
            Some(_) => {}
            None => {
                self.db = Some(Database::open(Box::new(Arc::clone(&self.source)))?);
                self.stale = false;
            }
        }
        let page = self.page_at(requested);
        let kind = match self.seen_kind.take() {
            Some((seen, kind)) if seen == page => kind,
            _ => opened(&self.db)?.page_kind(page)?,
        };
        if matches!(kind, PageKind::IndexLeaf | PageKind::IndexInterior) {
            self.note_root(page)?;
        }
        if kind == PageKind::IndexInterior {
            let recent = &mut self.cache.recent_index_interiors;
            if recent.len() == RECENT_INDEX_INTERIORS {
                recent.pop_front();
            }
            recent.push_back(page);
        }
        match kind {
            PageKind::IndexLeaf => self.on_index_leaf(page),
            PageKind::TableLeaf => {
                self.remember_table_read(page);
                match last_marked.map(|offset| self.page_at(offset)) {
                    Some(leaf) => self.on_table_leaf(leaf),
                    None => Ok(Plan::Keep),
                }
            }
            _ => Ok(Plan::Keep),
        }
    }

    /// SQLite read the table leaf at byte `offset` (seen by the VFS, not through a callback).
    pub fn note_table_read(&mut self, offset: u64) {
        let page = self.page_at(offset);
        self.remember_table_read(page);
    }

    fn remember_table_read(&mut self, page: u32) {
        self.table_reads += 1;
        if self.recent_table_reads.len() == RECENT_TABLE_READS {
            self.recent_table_reads.pop_front();
        }
        self.recent_table_reads.push_back(page);
    }

    /// Remembers `page` if it is the root of an index b-tree: SQLite reads a root (when its own cache
    /// does not hold it) before the leaves below, so the roots read tell which index a leaf is in
    /// without reading every index's structure. Until the schema is read, the page is only noted
    /// ([`ScanPlanner::resolve_roots`]); after [`UNRESOLVED_INDEX_PAGES`] such pages, the schema is read.
    fn note_root(&mut self, page: u32) -> ReadResult<()> {
        let pending = &mut self.cache.index_pages_unresolved;
        if !pending.contains(&page) {
            pending.push(page);
        }
        if self.cache.schema.is_some() || pending.len() >= UNRESOLVED_INDEX_PAGES {
            self.resolve_roots()?;
        }
        Ok(())
    }

    /// Reads the schema if not yet read and remembers, in the order they were read, the roots among
    /// the index pages noted before it ([`ScanPlanner::note_root`]).
    fn resolve_roots(&mut self) -> ReadResult<()> {
        if self.cache.schema.is_none() {
            self.cache.schema = Some(opened(&self.db)?.schema()?);
        }
        for page in std::mem::take(&mut self.cache.index_pages_unresolved) {
            self.remember_if_root(page);
        }
        Ok(())
    }

    fn remember_if_root(&mut self, page: u32) {
        let is_root = self
            .cache
            .schema
            .as_ref()
            .is_some_and(|schema| schema.iter().any(|e| e.root == page));
        if is_root && !self.cache.roots_read.contains(&page) {
            self.cache.roots_read.push(page);
            self.cache.any_root_read = true;
        }
    }

    fn page_at(&self, offset: u64) -> u32 {
        let page_size = self.db.as_ref().map_or(4096, |db| db.header().page_size);
        u32::try_from(offset / u64::from(page_size) + 1).unwrap_or(u32::MAX)
    }

    /// An index leaf was read. A leaf of an index whose structure is known moves its scan along
    /// ([`ScanPlanner::on_known_index_leaf`]). Other leaves wait until [`MIN_LEAVES`] of them were read:
    /// then the structure of each index whose root was read meanwhile is read (its interior pages: a
    /// few dozen for a 100 MiB index), or, if no root was ever read (SQLite's cache held them all), every
    /// index's once [`FALLBACK_LEAVES`] leaves wait. A query that reads fewer leaves (a point lookup, a
    /// `LIMIT 20`) so costs nothing, and the leaves of `WITHOUT ROWID` b-trees are never placed.
    fn on_index_leaf(&mut self, page: u32) -> ReadResult<Plan> {
        if let Some((root, pos)) = self.cache.leaf_at(page) {
            return self.on_known_index_leaf(root, pos);
        }
        if self.cache.first_rows_leaves.contains(&page) {
            return Ok(Plan::Keep);
        }
        if self.cache.unknown_leaves.is_empty() {
            self.cache.table_reads_then = self.table_reads;
        }
        if !self.cache.unknown_leaves.contains(&page) {
            self.cache.unknown_leaves.push(page);
        }
        let waiting = self.cache.unknown_leaves.len();
        if waiting < MIN_LEAVES {
            return Ok(Plan::Keep);
        }
        self.resolve_roots()?;
        if self.table_reads == self.cache.table_reads_then {
            // No table read while these leaves were read: a covering scan, told without reading the
            // index's structure (counted once until a table read comes).
            if self.cache.covering_counted != Some(self.table_reads) {
                let roots = std::mem::take(&mut self.cache.roots_read);
                let mut without_rowid = false;
                for root in roots {
                    without_rowid |= self.is_without_rowid(root);
                }
                match without_rowid {
                    true => self.decisions.without_rowid += 1,
                    false => self.decisions.covering += 1,
                }
                self.cache.covering_counted = Some(self.table_reads);
            }
            self.cache.unknown_leaves.clear();
            self.cache.roots_read.clear();
            return Ok(Plan::Keep);
        }
        if let Some(plan) = self.first_rows_plan()? {
            return Ok(plan);
        }
        for root in std::mem::take(&mut self.cache.roots_read) {
            self.load_index(root)?;
        }
        if !self.cache.any_root_read && waiting >= FALLBACK_LEAVES {
            self.load_all_indexes()?;
        }
        let leaves = std::mem::take(&mut self.cache.unknown_leaves);
        let (placed, unknown): (Vec<u32>, Vec<u32>) = leaves
            .into_iter()
            .partition(|&leaf| self.cache.leaf_at(leaf).is_some());
        let keep_from = unknown.len().saturating_sub(FALLBACK_LEAVES);
        self.cache.unknown_leaves = unknown[keep_from..].to_vec();
        self.replay(&placed)
    }

    /// Moves the scans along the leaves `placed`, read before their index's structure was, and plans
    /// at the last of them only: SQLite is there now, and a list set at an earlier one would start
    /// behind it (and be replaced at the next leaf, unsent).
    fn replay(&mut self, placed: &[u32]) -> ReadResult<Plan> {
        let Some((&last, before)) = placed.split_last() else {
            return Ok(Plan::Keep);
        };
        self.replaying = true;
        for leaf in before {
            let Some((root, pos)) = self.cache.leaf_at(*leaf) else {
                continue;
            };
            // Replayed leaves were read with table reads between them (checked by the caller): each
            // counts as looked up to, as no read comes between them now.
            self.table_reads += 1;
            if let Err(err) = self.on_known_index_leaf(root, pos) {
                self.replaying = false;
                return Err(err);
            }
        }
        self.replaying = false;
        let Some((root, pos)) = self.cache.leaf_at(last) else {
            return Ok(Plan::Keep);
        };
        self.table_reads += 1;
        self.on_known_index_leaf(root, pos)
    }

    /// A leaf at position `pos` of index `root` was read: a scan going on in key order is listed from
    /// its [`MIN_LEAVES`]th leaf if it looks up its own table (not a covering index); any other leaf
    /// starts a new scan there (clearing the list if it was this index's).
    fn on_known_index_leaf(&mut self, root: u32, pos: usize) -> ReadResult<Plan> {
        let Some(&scan) = self.scans.get(&root) else {
            self.scans.insert(root, Scan::at(pos, self.table_reads));
            return Ok(Plan::Keep);
        };
        if scan.pos == pos {
            return Ok(Plan::Keep);
        }
        if self.active == Some(root) && scan.pos < pos && pos < scan.listed_end {
            return self.extend(root, pos);
        }
        if scan.resume && scan.pos < pos && !self.replaying {
            return self.resume_scan(root, pos, scan);
        }
        if scan.pos < pos && pos <= scan.listed_end {
            return self.continue_scan(root, pos, scan);
        }
        if self.held.as_ref().is_some_and(|held| held.root == root) {
            self.end_hold();
        }
        let mut next = Scan::at(pos, self.table_reads);
        // A descending scan goes on down over gaps (leaves it read while the gate was closed) and is
        // counted once.
        let goes_on_down = scan.descending && pos < scan.pos;
        next.descending = goes_on_down || (pos + 1 == scan.pos && scan.run == 1);
        next.left_alone = scan.left_alone && goes_on_down;
        if next.descending {
            next.run = scan.run + 1;
            if next.run >= MIN_LEAVES && !next.left_alone {
                self.decisions.descending += 1;
                next.left_alone = true;
            }
        }
        self.scans.insert(root, next);
        if self.active == Some(root) {
            self.active = None;
            return Ok(Plan::Clear);
        }
        Ok(Plan::Keep)
    }

    /// The scan of `root` read its next leaf `pos` in key order: list it once it is [`MIN_LEAVES`] long,
    /// unless it is a covering-index scan.
    fn continue_scan(&mut self, root: u32, pos: usize, scan: Scan) -> ReadResult<Plan> {
        let run = scan.run + 1;
        let next = Scan {
            pos,
            listed_end: scan.listed_end.max(pos + 1),
            run,
            table_reads_then: self.table_reads,
            ..scan
        };
        self.scans.insert(root, next);
        if self.held.as_ref().is_some_and(|held| held.root == root) {
            self.held_step(pos);
            return Ok(Plan::Keep);
        }
        if scan.whole {
            return Ok(Plan::Keep);
        }
        if run < MIN_LEAVES || pos < scan.recheck_at || self.replaying {
            return Ok(Plan::Keep);
        }
        let followed = self.cache.indexes.get(&root).map(|index| index.followed);
        let full_scans_only = followed.is_some_and(|followed| followed != Followed::Every);
        if full_scans_only
            && (!self.began_at_index_start(root, scan.start)? || !self.statement_unbounded())
        {
            if !scan.left_alone {
                self.decisions.table_size += 1;
            }
            if let Some(scan) = self.scans.get_mut(&root) {
                scan.leave_alone();
            }
            return Ok(Plan::Keep);
        }
        // Checked again now and then, as SQLite's reads may not all have been seen (the gate was closed).
        // No table read at all since the last leaf: covering, told without reading the table's map.
        let no_lookup = self.table_reads == scan.table_reads_then;
        if no_lookup || !self.looks_up_own_table(root, pos - 1)? {
            if !scan.left_alone {
                self.decisions.covering += 1;
            }
            if let Some(scan) = self.scans.get_mut(&root) {
                scan.leave_alone();
            }
            return Ok(Plan::Keep);
        }
        if followed == Some(Followed::Held) {
            self.hold(root, pos)?;
            return Ok(Plan::Keep);
        }
        self.decisions.followed += 1;
        let (entries, whole) =
            self.list_from(root, pos, FIRST_LOOKAHEAD, FIRST_LOOKAHEAD * GROWTH)?;
        self.decisions.listed_whole += u64::from(whole);
        Ok(match whole {
            true => Plan::SetWhole(entries),
            false => Plan::Set(entries),
        })
    }

    /// The scan of `root`, paused at leaf `scan.pos` ([`ScanPlanner::pause_scan`]), read leaf `pos`
    /// further on: it is listed from there again.
    fn resume_scan(&mut self, root: u32, pos: usize, scan: Scan) -> ReadResult<Plan> {
        self.scans.insert(
            root,
            Scan {
                pos,
                run: scan.run + 1,
                table_reads_then: self.table_reads,
                ..scan
            },
        );
        self.decisions.followed += 1;
        let stretch = scan.lookahead;
        Ok(Plan::Set(self.list_from(root, pos, stretch, stretch)?.0))
    }

    /// The size of the rowid table rooted at `table_root` against the memory available. Told from the
    /// file's size when the whole file is small, else from the table's left-most path
    /// ([`TableMap::estimated_leaves`]); the rest of its map is read only for a scan that is followed.
    fn table_size(&mut self, table_root: u32) -> ReadResult<TableSize> {
        let Some(memory) = self.memory else {
            return Ok(TableSize::Large);
        };
        let page_size = u64::from(opened(&self.db)?.header().page_size);
        let file_bytes = u64::from(opened(&self.db)?.page_count()) * page_size;
        let small = |bytes: u64| bytes.saturating_mul(SMALL_TABLE_SHARE) < memory;
        if small(file_bytes) {
            return Ok(TableSize::Small);
        }
        let map = table_map(&mut self.cache.tables, opened(&self.db)?, table_root)?;
        let bytes = map.estimated_leaves() * page_size;
        let (low, high) = ABOUT_MEMORY;
        Ok(if small(bytes) {
            TableSize::Small
        } else if bytes.saturating_mul(2) >= memory * low && bytes < memory * high {
            TableSize::AboutMemory
        } else {
            TableSize::Large
        })
    }

    /// Whether a leaf waiting to be placed is the first leaf of the index rooted at `root`, told by
    /// walking the index's left edge through the interior pages SQLite read lately only (they are in
    /// the page cache, so the walk's reads never reach the device): a scan that SQLite began there
    /// descended that edge.
    fn began_at_first_leaf(&self, root: u32) -> ReadResult<bool> {
        self.began_near_first_leaf(root, 0)
    }

    /// Whether the table leaves read lately hold at least one in [`SPARSE_LOOKUPS`] of the pages that
    /// leaf `pos` of index `root` points to: false for a covering index, whose scan reads no table page
    /// or only another table's (a join's inner side), and for a scan that looks up only a few of its
    /// entries (a join filtering on index columns), whose list would be mostly waste.
    fn looks_up_own_table(&mut self, root: u32, pos: usize) -> ReadResult<bool> {
        let Some(index) = self.cache.indexes.get(&root) else {
            return Ok(false);
        };
        let Some(&page) = index.leaves.pages().get(pos) else {
            return Ok(false);
        };
        let db = opened(&self.db)?;
        let map = table_map(&mut self.cache.tables, db, index.table_root)?;
        let pages = table_pages_of(db, map, page, index.leaves.then(pos))?;
        let looked_up = pages
            .iter()
            .filter(|page| self.recent_table_reads.contains(page))
            .count();
        Ok(looked_up * SPARSE_LOOKUPS >= pages.len() && looked_up > 0)
    }

    fn on_table_leaf(&mut self, marked_leaf: u32) -> ReadResult<Plan> {
        match self.cache.leaf_at(marked_leaf) {
            Some((root, pos)) if self.active == Some(root) => self.extend(root, pos),
            _ => Ok(Plan::Keep),
        }
    }

    /// The scan of index `root` is at leaf `pos` and libprefetch asks for more: append the next stretch
    /// of leaves, [`GROWTH`] times longer than the last, unless the list already runs to the end.
    fn extend(&mut self, root: u32, pos: usize) -> ReadResult<Plan> {
        let Some(&scan) = self.scans.get(&root) else {
            return Ok(Plan::Keep);
        };
        if scan.whole {
            return Ok(Plan::Keep);
        }
        let cap = self.stretch_cap();
        let (mut entries, end) =
            self.list_leaves(root, pos, scan.listed_end, scan.lookahead, cap)?;
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
                ..scan
            },
        );
        Ok(if entries.is_empty() {
            Plan::Keep
        } else {
            Plan::Append(entries)
        })
    }

    /// A new list for the scan of index `root` from leaf `pos`: `leaves` leaves, the next stretch
    /// `next_stretch` long, or all of them to the index's end where fetching the whole table pays
    /// ([`ScanPlanner::whole_table_pays`]; then true). A scan just recognised lists [`FIRST_LOOKAHEAD`]
    /// leaves; a resumed one, long already, the stretch it had reached, which grows again only as
    /// libprefetch asks for more (a scan paused and resumed many times lists no more each time).
    fn list_from(
        &mut self,
        root: u32,
        pos: usize,
        leaves: usize,
        next_stretch: usize,
    ) -> ReadResult<(Vec<Entry>, bool)> {
        let whole = self.whole_table_pays(root, pos)?;
        let before = self
            .scans
            .get(&root)
            .copied()
            .unwrap_or(Scan::at(pos, self.table_reads));
        let (count, cap) = match whole {
            true => (usize::MAX, usize::MAX),
            false => (leaves, self.stretch_cap()),
        };
        let (entries, end) = self.list_leaves(root, pos, pos, count, cap)?;
        let next = Scan {
            pos,
            listed_end: end.max(pos + 1),
            lookahead: next_stretch,
            listed_into_leaf: 0,
            whole,
            resume: !whole,
            ..before
        };
        self.scans.insert(root, next);
        self.active = Some(root);
        Ok((entries, whole))
    }

    /// Whether the scan of index `root`, at leaf `pos`, is one of a small table on a seek-bound device
    /// ([`ScanPlanner::set_seek_bound`]) whose table's pages, each one page's transfer, cost less than
    /// the table pages its leaves up to `pos` looked up, each a far request.
    fn whole_table_pays(&mut self, root: u32, pos: usize) -> ReadResult<bool> {
        let (Some(far_cost), Some(index)) = (self.far_cost_pages, self.cache.indexes.get(&root))
        else {
            return Ok(false);
        };
        if index.followed != Followed::FullScansWhole {
            return Ok(false);
        }
        let db = opened(&self.db)?;
        let map = table_map(&mut self.cache.tables, db, index.table_root)?;
        let mut looked_up = 0u64;
        for i in 0..=pos.min(index.leaves.len() - 1) {
            let page = index.leaves.pages()[i];
            looked_up += table_pages_of(db, map, page, index.leaves.then(i))?.len() as u64;
        }
        Ok(map.estimated_leaves() <= looked_up.saturating_mul(far_cost))
    }

    /// Lists up to `count` leaves of index `root` from leaf `from`, each (marked) followed by the table
    /// pages its entries point to, and no leaf past the one that brings the entries to `cap`; returns
    /// the entries and the position after the last leaf listed. The application is at leaf `at`: the
    /// table pages of leaves before it are forgotten.
    fn list_leaves(
        &mut self,
        root: u32,
        at: usize,
        from: usize,
        count: usize,
        cap: usize,
    ) -> ReadResult<(Vec<Entry>, usize)> {
        self.forget_table_pages_before(root, at);
        let stretch_cap = self.stretch_cap();
        let Some(index) = self.cache.indexes.get(&root) else {
            return Ok((Vec::new(), from));
        };
        let db = opened(&self.db)?;
        let from = from.min(index.leaves.len());
        let end = from.saturating_add(count).min(index.leaves.len());
        let map = table_map(&mut self.cache.tables, db, index.table_root)?;
        map.read_interiors(db)?;
        let page_size = db.header().page_size;
        self.own_cache.begin(root, from, page_size, stretch_cap);
        // Under the window schedule only (capped stretches): its window is what the list's capacity
        // limits; the conservative schedule keeps a page looked up again soon in memory anyway.
        let leave_served_off = self.capped;
        let mut list = ListBuilder::default();
        let mut leaf_starts = Vec::new();
        let mut end_at = end;
        for (i, &leaf) in (from..).zip(&index.leaves.pages()[from..end]) {
            let pages = self
                .cache
                .table_pages
                .get_or_read(i, || table_pages_of(db, map, leaf, index.leaves.then(i)))?;
            leaf_starts.push(list.entries.len());
            list.push(Entry {
                offset: db.page_offset(leaf),
                mark: true,
            });
            for &page in pages.iter() {
                if !(leave_served_off && self.own_cache.serves(page)) {
                    list.push(Entry {
                        offset: db.page_offset(page),
                        mark: false,
                    });
                }
            }
            if list.entries.len() >= cap {
                end_at = i + 1;
                break;
            }
        }
        self.own_cache.end(root, end_at);
        let end = end_at;
        // A stretch's list is the planner's largest allocation: the spare part of a doubled one
        // would stay resident in the heap.
        list.entries.shrink_to_fit();
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
        match self.cache.indexes.contains_key(&root) {
            true => self.cache.table_pages.forget_before(root, at),
            false => self.cache.table_pages.clear(),
        }
    }

    /// Reads the leaf order of the index rooted at `root` if it is an index of a rowid table, once per
    /// file version; a `WITHOUT ROWID` b-tree (its table, or an index of it, which holds primary keys,
    /// not rowids) is counted as left alone.
    fn load_index(&mut self, root: u32) -> ReadResult<()> {
        if !self.cache.tried.insert(root) {
            return Ok(());
        }
        let Some(table_root) = self.rowid_table_of(root)? else {
            let in_schema = self.cache.schema.iter().flatten().any(|e| e.root == root);
            self.decisions.without_rowid += u64::from(in_schema);
            return Ok(());
        };
        let size = self.table_size(table_root)?;
        let full_scan = || -> ReadResult<bool> {
            Ok(self.began_near_first_leaf(root, MAX_UNSEEN_LEAVES)? && self.statement_unbounded())
        };
        let followed = match size {
            TableSize::Large => Followed::Every,
            TableSize::Small if self.far_cost_pages.is_some() && full_scan()? => {
                Followed::FullScansWhole
            }
            TableSize::AboutMemory if full_scan()? => Followed::FullScans,
            _ => {
                // Its leaves stay unplaced: no scan of this index is tracked or listed.
                self.decisions.table_size += 1;
                return Ok(());
            }
        };
        let IndexOrder { leaves, interiors } = opened(&self.db)?.index_order(root)?;
        self.decisions.indexes_read += 1;
        let followed = match followed {
            Followed::FullScans if self.table_fits(table_root, leaves.len())? => Followed::Held,
            other => other,
        };
        self.cache.index_interiors.extend(interiors);
        self.cache.index_interiors.insert(1);
        let mut by_page: Box<[(u32, u32)]> = leaves.pages().iter().copied().zip(0u32..).collect();
        by_page.sort_unstable();
        self.cache.indexes.insert(
            root,
            IndexInfo {
                table_root,
                leaves,
                by_page,
                followed,
            },
        );
        Ok(())
    }

    /// Whether the table rooted at `table_root`, its index `index_leaves` leaves long, fits in the
    /// memory to be held (`scan/held_table.rs`): its interior pages are read to count its leaves (a
    /// full scan of it, held or followed, reads them anyway).
    fn table_fits(&mut self, table_root: u32, index_leaves: usize) -> ReadResult<bool> {
        let page_size = u64::from(self.page_size());
        let db = opened(&self.db)?;
        let map = table_map(&mut self.cache.tables, db, table_root)?;
        let table_bytes = map.leaf_pages(db)?.len() as u64 * page_size;
        Ok(self.held_fits(table_bytes, index_leaves) == Some(true))
    }

    /// The root of the rowid table that the index rooted at `root` points into; `None` for a b-tree
    /// not in the schema, a table, or an index of a `WITHOUT ROWID` table (which holds primary keys).
    fn rowid_table_of(&mut self, root: u32) -> ReadResult<Option<u32>> {
        let db = opened(&self.db)?;
        if self.cache.schema.is_none() {
            self.cache.schema = Some(db.schema()?);
        }
        let schema = self.cache.schema.as_deref().unwrap_or_default();
        let Some(entry) = schema.iter().find(|e| e.root == root) else {
            return Ok(None);
        };
        let table = schema
            .iter()
            .find(|e| e.kind == "table" && e.name == entry.table);
        Ok(match table {
            Some(table) if entry.kind == "index" => matches!(
                db.page_kind(table.root)?,
                PageKind::TableLeaf | PageKind::TableInterior
            )
            .then_some(table.root),
            _ => None,
        })
    }

    /// Whether the b-tree rooted at `root` is a `WITHOUT ROWID` table or one of its indexes, told from
    /// the schema: a covering scan reads nothing of its table, so reading the table's root page here
    /// would be a request of the device that stock SQLite does not make.
    fn is_without_rowid(&self, root: u32) -> bool {
        let schema = self.cache.schema.as_deref().unwrap_or_default();
        let Some(entry) = schema.iter().find(|e| e.root == root) else {
            return false;
        };
        entry.kind == "table"
            || schema
                .iter()
                .any(|e| e.kind == "table" && e.name == entry.table && e.without_rowid)
    }

    /// Reads the leaf order of every index of a rowid table (see [`ScanPlanner::load_index`]).
    fn load_all_indexes(&mut self) -> ReadResult<()> {
        if self.cache.schema.is_none() {
            self.cache.schema = Some(opened(&self.db)?.schema()?);
        }
        let schema = self.cache.schema.as_deref().unwrap_or_default();
        let roots: Vec<u32> = schema
            .iter()
            .filter(|e| e.kind == "index")
            .map(|e| e.root)
            .collect();
        // Not counted as scans left alone: no scan of these was seen.
        let before = self.decisions;
        for root in roots {
            self.load_index(root)?;
        }
        self.decisions.without_rowid = before.without_rowid;
        self.decisions.table_size = before.table_size;
        Ok(())
    }
}

/// The table pages that the entries of index leaf `leaf` (then the interior entries after it, `then`)
/// point to, consecutive repeats merged.
fn table_pages_of(
    db: &Database<Source>,
    map: &mut TableMap,
    leaf: u32,
    then: &[i64],
) -> ReadResult<Box<[u32]>> {
    let mut pages: Vec<u32> = Vec::new();
    for rowid in db.index_leaf_rowids(leaf)?.iter().chain(then) {
        let page = map.leaf_for(db, *rowid)?;
        if pages.last() != Some(&page) {
            pages.push(page);
        }
    }
    Ok(pages.into_boxed_slice())
}

/// The map of the table rooted at `root` in `tables`, its left-most path read the first time.
fn table_map<'a>(
    tables: &'a mut HashMap<u32, TableMap>,
    db: &Database<Source>,
    root: u32,
) -> ReadResult<&'a mut TableMap> {
    Ok(match tables.entry(root) {
        Slot::Occupied(e) => e.into_mut(),
        Slot::Vacant(e) => e.insert(TableMap::new(db, root)?),
    })
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
