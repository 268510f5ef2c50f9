//! The section 5.4 planner on a real database: the lists it hands libprefetch for a forward scan of the
//! zip index (leaves marked, then the table pages of their rowids in index order), the PF_APPEND
//! extension, and plain reads for out-of-order index access. Ground truth comes from a full walk of the
//! table b-tree, independent of the planner's descent through interior pages.

use std::collections::HashMap;
use std::path::Path;

use prefetch_sqlite::btree::{Database, IndexLeaf};
use prefetch_sqlite::gen::{generate, GenOptions, PAGE_SIZE};
use prefetch_sqlite::scan::{
    sweep_pays, Entry, Plan, RequestCosts, ScanPlanner, DEFAULT_CACHE_SIZE, FIRST_LOOKAHEAD,
    GROWTH, MIN_LEAVES, STRETCH_MEMORIES, SWEEP_MARGIN,
};
use prefetch_sqlite::statement::RowBound;

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    leaves: Vec<IndexLeaf>,
    /// The zip index's root page.
    root: u32,
    /// rowid -> table leaf page, from a full walk of the table.
    page_of: HashMap<i64, u32>,
    db: Database<std::fs::File>,
}

fn fixture(rows: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    generate(&path, &GenOptions { rows, seed: 5 }, |_| {}).unwrap();
    let db = Database::open(Box::new(std::fs::File::open(&path).unwrap())).unwrap();
    let schema = db.schema().unwrap();
    let root = |name: &str| schema.iter().find(|e| e.name == name).unwrap().root;
    let zip_root = root("customer_zip");
    let leaves = db.index_tree(zip_root).map(|t| t.leaves).unwrap();
    let page_of = db
        .table_rows(root("customer"))
        .unwrap()
        .into_iter()
        .map(|(page, rowid)| (rowid, page))
        .collect();
    Fixture {
        _dir: dir,
        path,
        leaves,
        root: zip_root,
        page_of,
        db,
    }
}

fn offset(page: u32) -> u64 {
    u64::from(page - 1) * u64::from(PAGE_SIZE)
}

/// A planner that lists every lookup, as the paper's callback does (SQLite's own cache taken as
/// empty; [`lookups_sqlites_own_cache_serves_are_left_off_the_list`] has the default one).
fn planner(path: &Path) -> ScanPlanner {
    let mut p = ScanPlanner::new(std::sync::Arc::new(std::fs::File::open(path).unwrap()));
    p.set_sqlite_cache_size(0);
    p
}

/// What SQLite reads to walk leaf `i` of the zip index: the leaf (the planner's answer is returned),
/// then the table leaf of each of its rows, which shows that the scan looks up its table.
fn walk_leaf(p: &mut ScanPlanner, f: &Fixture, i: usize) -> Plan {
    let plan = p.plan(None, offset(f.leaves[i].page));
    for rowid in f.db.index_leaf_rowids(f.leaves[i].page).unwrap() {
        assert_eq!(p.plan(None, offset(f.page_of[&rowid])), Plan::Keep);
    }
    plan
}

/// A scan of the zip index from leaf `from`, as SQLite starts one: the root, then the leaves; the
/// planner lists nothing until the scan is MIN_LEAVES long, then sets a list from that leaf.
fn start_scan(p: &mut ScanPlanner, f: &Fixture, from: usize) -> Vec<Entry> {
    assert_eq!(p.plan(None, offset(f.root)), Plan::Keep);
    for i in from..from + MIN_LEAVES - 1 {
        assert_eq!(
            walk_leaf(p, f, i),
            Plan::Keep,
            "leaf {i} of a scan from {from}"
        );
    }
    match walk_leaf(p, f, from + MIN_LEAVES - 1) {
        Plan::Set(list) => list,
        other => panic!("the scan's leaf {MIN_LEAVES} must set a list, not {other:?}"),
    }
}

/// The list the paper's callback should produce for `leaves`, with or without the first leaf's entry.
fn expected(f: &Fixture, leaves: &[IndexLeaf], include_first: bool) -> Vec<Entry> {
    let mut list: Vec<Entry> = Vec::new();
    for (i, leaf) in leaves.iter().enumerate() {
        if i > 0 || include_first {
            list.push(Entry {
                offset: offset(leaf.page),
                mark: true,
            });
        }
        for rowid in
            f.db.index_leaf_rowids(leaf.page)
                .unwrap()
                .iter()
                .chain(&leaf.then)
        {
            let entry = Entry {
                offset: offset(f.page_of[rowid]),
                mark: false,
            };
            if list.last() != Some(&entry) {
                list.push(entry);
            }
        }
    }
    list
}

#[test]
fn scan_from_the_first_leaf_lists_a_growing_stretch_of_the_index() {
    let f = fixture(30_000);
    let first = MIN_LEAVES - 1;
    assert!(
        f.leaves.len() > first + 3 * FIRST_LOOKAHEAD,
        "{}",
        f.leaves.len()
    );
    let mut p = planner(&f.path);
    // Fewer leaves than MIN_LEAVES list nothing and read no index structure: a LIMIT costs nothing.
    assert_eq!(p.plan(None, offset(f.root)), Plan::Keep);
    for i in 0..first {
        assert_eq!(walk_leaf(&mut p, &f, i), Plan::Keep);
    }
    assert_eq!(p.decisions().indexes_read, 0);
    let Plan::Set(list) = walk_leaf(&mut p, &f, first) else {
        panic!("the scan's MIN_LEAVES-th leaf must set a list");
    };
    assert_eq!(p.decisions().followed, 1);
    // Only FIRST_LOOKAHEAD leaves: a LIMIT or a cursor closed early leaves little listed behind.
    assert_eq!(
        list,
        expected(&f, &f.leaves[first..first + FIRST_LOOKAHEAD], true)
    );
    // Behind the next mark, the next stretch is appended, GROWTH times longer; nothing listed twice.
    let table_page = list.iter().find(|e| !e.mark).unwrap().offset;
    let Plan::Append(more) = p.plan(Some(offset(f.leaves[first + 1].page)), table_page) else {
        panic!("a table read behind a mark must extend the list");
    };
    let from = first + FIRST_LOOKAHEAD;
    let end = (from + FIRST_LOOKAHEAD * GROWTH).min(f.leaves.len());
    assert_eq!(more, expected(&f, &f.leaves[from..end], true));
}

#[test]
fn forward_scan_elsewhere_lists_table_pages_in_index_order_with_leaves_marked() {
    let f = fixture(30_000);
    let start = 10;
    assert!(f.leaves.len() > start + MIN_LEAVES + FIRST_LOOKAHEAD);
    let mut p = planner(&f.path);
    let list = start_scan(&mut p, &f, start);
    let at = start + MIN_LEAVES - 1;
    assert_eq!(
        list,
        expected(&f, &f.leaves[at..at + FIRST_LOOKAHEAD], true)
    );
}

#[test]
fn a_covering_index_scan_lists_nothing() {
    let f = fixture(30_000);
    let mut p = planner(&f.path);
    // SQLite reads the index's leaves one after another and no table page: a covering index.
    assert_eq!(p.plan(None, offset(f.root)), Plan::Keep);
    for i in 0..MIN_LEAVES + 5 {
        assert_eq!(
            p.plan(None, offset(f.leaves[i].page)),
            Plan::Keep,
            "leaf {i}"
        );
    }
    let d = p.decisions();
    assert_eq!((d.followed, d.covering), (0, 1), "{d:?}");
}

#[test]
fn a_covering_scan_joined_to_another_table_lists_nothing() {
    let f = fixture(30_000);
    let mut p = planner(&f.path);
    assert_eq!(p.plan(None, offset(f.root)), Plan::Keep);
    // Between the leaves, table reads of rows no entry of the leaf points to (another table's, in a
    // join): still not a lookup of the index's own table.
    let last_page = *f.page_of.values().max().unwrap();
    for i in 0..MIN_LEAVES + 5 {
        assert_eq!(
            p.plan(None, offset(f.leaves[i].page)),
            Plan::Keep,
            "leaf {i}"
        );
        let elsewhere = f.db.index_leaf_rowids(f.leaves[i + 20].page).unwrap()[0];
        let page = f.page_of[&elsewhere];
        if page != last_page {
            assert_eq!(p.plan(None, offset(page)), Plan::Keep);
        }
    }
    assert_eq!(p.decisions().followed, 0, "{:?}", p.decisions());
}

#[test]
fn out_of_order_index_reads_fall_back_to_plain_reads() {
    let f = fixture(30_000);
    let mut p = planner(&f.path);
    let _ = start_scan(&mut p, &f, 3);
    // Leaves of another index (the inner side of a join) leave the scan's list alone.
    let other_root =
        f.db.schema()
            .unwrap()
            .into_iter()
            .find(|e| e.name == "customer_last")
            .unwrap()
            .root;
    let other = f.db.index_tree(other_root).map(|t| t.leaves).unwrap();
    assert_eq!(p.plan(None, offset(other[5].page)), Plan::Keep);
    assert_eq!(p.plan(None, offset(other[2].page)), Plan::Keep);
    // A jump back in the scanned index ends the scan: the list is cleared once.
    assert_eq!(p.plan(None, offset(f.leaves[2].page)), Plan::Clear);
    // Point lookups and a descending walk never look like a forward scan.
    for pos in [12, 2, 9, 8, 7, 6] {
        assert_eq!(walk_leaf(&mut p, &f, pos), Plan::Keep, "leaf {pos}");
    }
    assert_eq!(p.decisions().descending, 1, "{:?}", p.decisions());
    // A table read with no scan under way, and interior pages, change nothing.
    assert_eq!(
        p.plan(Some(offset(f.leaves[6].page)), offset(f.page_of[&1])),
        Plan::Keep
    );
    assert_eq!(p.plan(None, 0), Plan::Keep);
}

#[test]
fn planner_follows_the_file_after_a_write() {
    let f = fixture(20_000);
    let mut p = planner(&f.path);
    let _ = start_scan(&mut p, &f, 5);
    let conn = rusqlite::Connection::open(&f.path).unwrap();
    conn.execute_batch(
        "UPDATE customer SET c_zip = '0000' || substr(c_zip, 5) WHERE rowid % 2 = 0; VACUUM;",
    )
    .unwrap();
    drop(conn);
    // As the VFS tells it when its connection next takes a lock.
    p.may_have_changed();
    let db = Database::open(Box::new(std::fs::File::open(&f.path).unwrap())).unwrap();
    let root = db
        .schema()
        .unwrap()
        .into_iter()
        .find(|e| e.name == "customer_zip")
        .unwrap()
        .root;
    let leaves = db.index_tree(root).unwrap().leaves;
    let table_root = db
        .schema()
        .unwrap()
        .into_iter()
        .find(|e| e.name == "customer")
        .unwrap()
        .root;
    let page_of = db
        .table_rows(table_root)
        .unwrap()
        .into_iter()
        .map(|(page, rowid)| (rowid, page))
        .collect();
    let fresh = Fixture {
        leaves,
        root,
        page_of,
        db,
        ..f
    };
    let list = start_scan(&mut p, &fresh, 5);
    let at = 5 + MIN_LEAVES - 1;
    assert_eq!(
        list.first(),
        Some(&Entry {
            offset: offset(fresh.leaves[at].page),
            mark: true
        })
    );
    assert!(list
        .iter()
        .all(|e| e.offset < fresh.db.page_count() as u64 * u64::from(PAGE_SIZE)));
}

/// A planner whose scan of the index has started from its first leaf and set a list (at leaf
/// MIN_LEAVES - 1); returns it with that list.
fn scan_from_the_first_leaf(f: &Fixture) -> (ScanPlanner, Vec<Entry>) {
    let mut p = planner(&f.path);
    let list = start_scan(&mut p, f, 0);
    (p, list)
}

/// The leaf at which [`scan_from_the_first_leaf`] set its list.
const LISTED_AT: usize = MIN_LEAVES - 1;

#[test]
fn a_stretch_the_full_list_took_only_part_of_continues_where_it_stopped() {
    let f = fixture(30_000);
    let (mut p, list) = scan_from_the_first_leaf(&f);
    let table_page = list.iter().find(|e| !e.mark).unwrap().offset;
    let Plan::Append(more) = p.plan(Some(offset(f.leaves[LISTED_AT + 1].page)), table_page) else {
        panic!("a table read behind a mark must extend the list");
    };
    // libprefetch's list was full: it took the stretch's first leaf and three entries of the second.
    let second_leaf = more
        .iter()
        .enumerate()
        .filter(|(_, e)| e.mark)
        .nth(1)
        .unwrap()
        .0;
    let taken = second_leaf + 3;
    p.accepted(taken);
    let Plan::Append(rest) = p.plan(Some(offset(f.leaves[LISTED_AT + 1].page)), table_page) else {
        panic!("the scan must go on where the list stopped");
    };
    // No hole and nothing twice: the next stretch starts at the first entry not taken, and is as long
    // as what fitted (one whole leaf, so FIRST_LOOKAHEAD leaves).
    let from = LISTED_AT + FIRST_LOOKAHEAD + 1;
    let whole = expected(&f, &f.leaves[from..from + FIRST_LOOKAHEAD], true);
    assert_eq!(rest, whole[3..]);
    assert_eq!(rest[..], more[taken..taken + rest.len()]);
}

/// The application reads on from [`LISTED_AT`] to the index's end, one leaf at a time, `list` set; each
/// table read behind a new mark may extend the list. Checks that every stretch appended lists the
/// leaves after the last one listed, that the planner keeps table pages only of leaves listed ahead of
/// the application, and that the whole index ends up listed; returns the stretches.
fn read_to_the_end(p: &mut ScanPlanner, f: &Fixture, list: &[Entry]) -> Vec<Vec<Entry>> {
    let mut listed_end = LISTED_AT + list.iter().filter(|e| e.mark).count();
    let mut stretches = Vec::new();
    for at in LISTED_AT + 1..f.leaves.len() {
        let table_page =
            offset(f.page_of[&f.db.index_leaf_rowids(f.leaves[at - 1].page).unwrap()[0]]);
        if let Plan::Append(more) = p.plan(Some(offset(f.leaves[at].page)), table_page) {
            let from = listed_end;
            listed_end = from + more.iter().filter(|e| e.mark).count();
            assert_eq!(more, expected(f, &f.leaves[from..listed_end], true));
            stretches.push(more);
        }
        assert!(
            p.leaves_kept() <= listed_end.saturating_sub(at),
            "at leaf {at} of {}: {} leaves kept, {} listed ahead",
            f.leaves.len(),
            p.leaves_kept(),
            listed_end.saturating_sub(at)
        );
    }
    let listed = list.len() + stretches.iter().map(Vec::len).sum::<usize>();
    assert_eq!(
        listed_end,
        f.leaves.len(),
        "the whole index listed, {listed} entries"
    );
    stretches
}

/// A planner told of little memory and to cap its stretches (libprefetch's window schedule) lists no
/// stretch longer than [`STRETCH_MEMORIES`] times it, in pages, but for the rest of the leaf that
/// reaches that: the window is smaller still. Told the memory only, it does not cap them.
#[test]
fn a_long_scan_lists_stretches_of_at_most_a_few_memories() {
    let f = fixture(30_000);
    let memory_pages = 512;
    let cap = (memory_pages * STRETCH_MEMORIES) as usize;
    let mut p = planner(&f.path);
    p.set_memory(memory_pages * u64::from(PAGE_SIZE));
    p.cap_stretches();
    let list = start_scan(&mut p, &f, 0);
    assert_eq!(p.stretch_cap(), cap);
    let stretches = read_to_the_end(&mut p, &f, &list);
    for more in &stretches {
        let last_leaf = more.iter().rposition(|e| e.mark).unwrap();
        assert!(
            last_leaf < cap,
            "a leaf listed at entry {last_leaf}, past {cap}"
        );
    }
    let longest = stretches.iter().map(Vec::len).max().unwrap();
    assert!(longest >= cap, "the cap was reached: longest {longest}");
    assert!(stretches.len() > 4, "{} stretches", stretches.len());
    let mut uncapped = planner(&f.path);
    uncapped.set_memory(memory_pages * u64::from(PAGE_SIZE));
    assert_eq!(uncapped.stretch_cap(), usize::MAX);
    eprintln!(
        "DEBUG {} stretches, longest {longest}, cap {cap}",
        stretches.len()
    );
}

#[test]
fn a_long_scan_keeps_table_pages_only_from_the_applications_leaf_on() {
    let f = fixture(30_000);
    let (mut p, list) = scan_from_the_first_leaf(&f);
    let extended = read_to_the_end(&mut p, &f, &list).len();
    assert!(
        extended >= 2,
        "the scan must have been extended, {extended} times"
    );
}

/// A file whose reads are counted.
struct Counted {
    file: std::fs::File,
    reads: std::sync::atomic::AtomicUsize,
}

impl prefetch_sqlite::btree::PageSource for Counted {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
    }
    fn byte_len(&self) -> std::io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
}

#[test]
fn a_plan_reads_neither_the_page_the_vfs_saw_nor_the_header_within_a_transaction() {
    let f = fixture(20_000);
    let source = std::sync::Arc::new(Counted {
        file: std::fs::File::open(&f.path).unwrap(),
        reads: Default::default(),
    });
    let mut p = ScanPlanner::new(source.clone());
    let _ = start_scan(&mut p, &f, 5);
    let reads = || source.reads.load(std::sync::atomic::Ordering::Relaxed);
    let table_page = offset(f.page_of[&1]);
    let before = reads();
    p.note_page_kind(table_page, prefetch_sqlite::format::PageKind::TableLeaf);
    assert_eq!(p.plan(None, table_page), Plan::Keep);
    assert_eq!(reads(), before, "the kind the VFS saw is used");
    assert_eq!(p.plan(None, table_page), Plan::Keep);
    assert_eq!(reads(), before + 1, "without it the page is read");
    p.may_have_changed();
    assert_eq!(p.plan(None, table_page), Plan::Keep);
    assert_eq!(reads(), before + 3, "a new transaction: the header too");
}

/// The scan of a table much smaller than the memory, walked to its MIN_LEAVES-th leaf by a planner told
/// of ample memory, lists nothing there and is counted "table small"; told nothing of the memory, it
/// is followed with the expected stretch.
#[test]
fn a_small_table_is_left_alone() {
    let f = fixture(30_000);
    let decide = |memory: Option<u64>| {
        let mut p = planner(&f.path);
        if let Some(bytes) = memory {
            p.set_memory(bytes);
        }
        assert_eq!(p.plan(None, offset(f.root)), Plan::Keep);
        for i in 0..MIN_LEAVES - 1 {
            assert_eq!(walk_leaf(&mut p, &f, i), Plan::Keep);
        }
        (
            walk_leaf(&mut p, &f, MIN_LEAVES - 1),
            p.decisions().table_size,
        )
    };
    assert_eq!(decide(Some(1 << 40)), (Plan::Keep, 1));
    let at = MIN_LEAVES - 1;
    let expected_list = Plan::Set(expected(&f, &f.leaves[at..at + FIRST_LOOKAHEAD], true));
    assert_eq!(decide(None), (expected_list, 0));
}

/// SQLite's reads of the zip index's left edge, root first, down to (not including) its first leaf.
fn read_left_edge(p: &mut ScanPlanner, f: &Fixture) {
    let mut page = f.root;
    while let Some(child) = f.db.leftmost_child(page).unwrap() {
        assert_eq!(p.plan(None, offset(page)), Plan::Keep);
        page = child;
    }
    assert_eq!(page, f.leaves[0].page);
}

/// A planner on a seek-bound device (a far request costing `far_cost_pages`), with plenty of memory,
/// whose statement running says `bound` of its rows (`None`: no statement probe).
fn seek_bound_planner(f: &Fixture, far_cost_pages: u64, bound: Option<RowBound>) -> ScanPlanner {
    let mut p = planner(&f.path);
    p.set_memory(1 << 40);
    p.set_seek_bound(far_cost_pages);
    if let Some(bound) = bound {
        p.set_statement_probe(Box::new(move || bound));
    }
    p
}

/// SQLite's reads of a scan from the index's first leaf that stops after `stop` leaves: the plans that
/// are not `Keep`, with the leaf each came at.
fn scan_from_first_leaf(p: &mut ScanPlanner, f: &Fixture, stop: usize) -> Vec<(usize, Plan)> {
    read_left_edge(p, f);
    (0..stop)
        .map(|i| (i, walk_leaf(p, f, i)))
        .filter(|(_, plan)| *plan != Plan::Keep)
        .collect()
}

/// On a seek-bound device a table much smaller than the memory is followed only by a scan that SQLite
/// began at the index's first leaf (told from the interior pages it read on the way down) for a
/// statement without `LIMIT`: at its MIN_LEAVES-th leaf, one `SetWhole` of every leaf from there to the
/// index's end with its table pages, then nothing more. A range that begins elsewhere lists nothing and
/// reads no index structure; nor does the full scan without the seek-bound device or without a
/// statement known to be unbounded.
#[test]
fn on_a_seek_bound_device_an_unbounded_full_scan_is_listed_whole_and_a_range_not_at_all() {
    let f = fixture(30_000);
    let n = f.leaves.len();
    let mut p = seek_bound_planner(&f, 300, Some(RowBound::Unbounded));
    let at = MIN_LEAVES - 1;
    let whole = Plan::SetWhole(expected(&f, &f.leaves[at..], true));
    assert_eq!(scan_from_first_leaf(&mut p, &f, n), vec![(at, whole)]);
    let d = p.decisions();
    assert_eq!((d.followed, d.table_size, d.indexes_read), (1, 0, 1));
    assert_eq!(d.listed_whole, 1);

    for bound in [None, Some(RowBound::Unknown)] {
        let mut p = seek_bound_planner(&f, 300, bound);
        assert_eq!(scan_from_first_leaf(&mut p, &f, n), vec![], "{bound:?}");
        let d = p.decisions();
        assert_eq!((d.followed, d.indexes_read), (0, 0), "{bound:?}");
    }
    let mut p = planner(&f.path);
    p.set_memory(1 << 40);
    p.set_statement_probe(Box::new(|| RowBound::Unbounded));
    assert_eq!(scan_from_first_leaf(&mut p, &f, n), vec![]);
    assert_eq!(p.decisions().table_size, 1);

    // A range from leaf 3: SQLite descends to it, not along the left edge.
    let mut p = seek_bound_planner(&f, 300, Some(RowBound::Unbounded));
    assert_eq!(p.plan(None, offset(f.root)), Plan::Keep);
    for i in 3..3 + 4 * MIN_LEAVES {
        assert_eq!(walk_leaf(&mut p, &f, i), Plan::Keep, "leaf {i}");
    }
    let d = p.decisions();
    assert_eq!((d.followed, d.table_size, d.indexes_read), (0, 1, 0));
}

/// A `LIMIT` scan from the first leaf, on a device whose request costs the planner was not told (the
/// whole-list rule alone, `set_seek_bound`), whatever its row count and however far it reads, issues no
/// advice and reads no index structure.
#[test]
fn a_limit_scan_from_the_first_leaf_lists_nothing_without_request_costs() {
    let f = fixture(30_000);
    let n = f.leaves.len();
    for (rows, stop) in [(20, 1), (200, 2), (1000, 8), (5000, 40), (1_000_000, n)] {
        let mut p = seek_bound_planner(&f, 300, Some(RowBound::Rows(rows)));
        assert_eq!(
            scan_from_first_leaf(&mut p, &f, stop),
            vec![],
            "LIMIT {rows}"
        );
        let d = p.decisions();
        assert_eq!((d.followed, d.indexes_read), (0, 0), "LIMIT {rows}");
    }
}

/// The list of a `LIMIT n` scan's first rows from leaf `at` on: each leaf (marked), then the table
/// pages of its rows (consecutive repeats merged) up to the n-th row of the index.
fn first_rows(f: &Fixture, at: usize, n: u64) -> Vec<Entry> {
    let mut list: Vec<Entry> = Vec::new();
    let mut rows = 0;
    for (i, leaf) in f.leaves.iter().enumerate() {
        if rows >= n {
            break;
        }
        if i >= at {
            list.push(Entry {
                offset: offset(leaf.page),
                mark: true,
            });
        }
        let rowids = f.db.index_leaf_rowids(leaf.page).unwrap();
        for rowid in rowids.iter().chain(&leaf.then) {
            if rows >= n {
                break;
            }
            rows += 1;
            let entry = Entry {
                offset: offset(f.page_of[rowid]),
                mark: false,
            };
            if i >= at && list.last() != Some(&entry) {
                list.push(entry);
            }
        }
    }
    list
}

/// On a seek-bound device whose request costs the planner knows (a far request 300 pages of transfer,
/// a near one 5, as the emulated 7200 RPM disk's), a `LIMIT` scan from the first leaf that reaches its
/// MIN_LEAVES-th leaf gets one `SetWhole` of its first rows' table pages there, and nothing after;
/// `LIMIT 20` and `LIMIT 200` end before (nothing listed, nothing read); no index structure is read.
/// With a far request as cheap as a page (no seek cost), the lookups never cost twice the sweep:
/// nothing is listed.
#[test]
fn a_limit_scan_from_the_first_leaf_lists_its_first_rows_where_the_sweep_pays() {
    let f = fixture(30_000);
    let costs = |far_pages| RequestCosts {
        far_pages,
        near_pages: 5,
    };
    for (rows, stop) in [(20, 1), (200, 2), (5000, 40), (8000, 60)] {
        let mut p = seek_bound_planner(&f, 300, Some(RowBound::Rows(rows)));
        p.set_first_rows_costs(costs(300));
        let plans = scan_from_first_leaf(&mut p, &f, stop);
        let d = p.decisions();
        assert_eq!(d.indexes_read, 0, "LIMIT {rows}");
        if rows <= 200 {
            assert_eq!(plans, vec![], "LIMIT {rows}");
            continue;
        }
        let at = MIN_LEAVES - 1;
        let list = Plan::SetWhole(first_rows(&f, at, rows));
        assert_eq!(plans, vec![(at, list)], "LIMIT {rows}");
        assert_eq!((d.followed, d.first_rows), (1, 1), "LIMIT {rows}");

        let mut p = seek_bound_planner(&f, 300, Some(RowBound::Rows(rows)));
        p.set_first_rows_costs(costs(1));
        assert_eq!(
            scan_from_first_leaf(&mut p, &f, stop),
            vec![],
            "LIMIT {rows}"
        );
    }
}

/// The rule: lookups of P pages at a far request each against one far request and, per page, its
/// transfer and the gap to it (the table over P, at most a near request), times two.
#[test]
fn the_first_rows_sweep_pays_where_lookups_cost_twice_as_much() {
    let disk = RequestCosts {
        far_pages: 300,
        near_pages: 5,
    };
    assert!(!sweep_pays(disk, 0, 6_000));
    assert!(!sweep_pays(disk, 1, 6_000));
    assert!(sweep_pays(disk, 3, 6_000));
    assert!(sweep_pays(disk, 450, 6_000));
    let flash = RequestCosts {
        far_pages: 2,
        near_pages: 2,
    };
    assert!(!sweep_pays(flash, 450, 6_000));
    assert_eq!(SWEEP_MARGIN, 2);
}

/// Where the table's pages cost more to fetch whole than the lookups of the leaves read so far (a far
/// request of 1 page's transfer), a full scan on a seek-bound device is listed a stretch at a time.
#[test]
fn a_full_scan_on_a_barely_seek_bound_device_is_listed_a_stretch_at_a_time() {
    let f = fixture(30_000);
    let mut p = seek_bound_planner(&f, 1, Some(RowBound::Unbounded));
    read_left_edge(&mut p, &f);
    for i in 0..MIN_LEAVES - 1 {
        assert_eq!(walk_leaf(&mut p, &f, i), Plan::Keep);
    }
    let at = MIN_LEAVES - 1;
    let stretch = Plan::Set(expected(&f, &f.leaves[at..at + FIRST_LOOKAHEAD], true));
    assert_eq!(walk_leaf(&mut p, &f, at), stretch);
    assert_eq!(p.decisions().listed_whole, 0);
}

/// A seek-bound planner (as [`seek_bound_planner`], its statement unbounded) whose residency probe
/// says every page is cached (`cached`) or none is.
fn seek_bound_planner_seeing_the_cache(f: &Fixture, cached: bool) -> ScanPlanner {
    let mut p = seek_bound_planner(f, 300, Some(RowBound::Unbounded));
    p.set_residency_probe(Box::new(move |_, _| cached));
    p
}

/// A second full scan on the same connection finds the root, the left edge and the first two leaves
/// in SQLite's own cache: the planner sees it from leaf 2. With those leaves in the page cache it is
/// listed whole as the first scan was, from its MIN_LEAVES-th leaf seen to the index's end; with
/// nothing cached (a range beginning at leaf 2 after the file was evicted) it is left alone.
#[test]
fn a_later_full_scan_seen_from_mid_index_is_listed_whole_when_the_leaves_before_are_cached() {
    let f = fixture(30_000);
    let n = f.leaves.len();
    let first = MIN_LEAVES - 1;
    for cached in [true, false] {
        let mut p = seek_bound_planner_seeing_the_cache(&f, cached);
        let whole = Plan::SetWhole(expected(&f, &f.leaves[first..], true));
        assert_eq!(scan_from_first_leaf(&mut p, &f, n), vec![(first, whole)]);
        p.end_scan();
        let plans: Vec<(usize, Plan)> = (2..n)
            .map(|i| (i, walk_leaf(&mut p, &f, i)))
            .filter(|(_, plan)| *plan != Plan::Keep)
            .collect();
        let d = p.decisions();
        if cached {
            let at = 2 + MIN_LEAVES - 1;
            let whole = Plan::SetWhole(expected(&f, &f.leaves[at..], true));
            assert_eq!(plans, vec![(at, whole)]);
            assert_eq!((d.followed, d.listed_whole, d.table_size), (2, 2, 0));
        } else {
            assert_eq!(plans, vec![]);
            assert_eq!((d.followed, d.table_size), (1, 1));
        }
    }
}

/// A full scan of a file that was cached when opened, evicted since: the VFS lets reads through only
/// once its probes find pages missing, so the planner sees no root and the scan from leaf 1. The
/// leaves wait until every index's structure is read; with leaf 0 cached, the scan is listed whole,
/// once, from the leaf SQLite is on (the last one replayed) to the index's end; with nothing cached,
/// not at all.
#[test]
fn a_full_scan_first_seen_at_its_second_leaf_is_listed_whole_from_the_leaf_sqlite_is_on() {
    let f = fixture(30_000);
    let n = f.leaves.len();
    for cached in [true, false] {
        let mut p = seek_bound_planner_seeing_the_cache(&f, cached);
        let plans: Vec<(usize, Plan)> = (1..n)
            .map(|i| (i, walk_leaf(&mut p, &f, i)))
            .filter(|(_, plan)| *plan != Plan::Keep)
            .collect();
        let d = p.decisions();
        if !cached {
            assert_eq!(plans, vec![]);
            assert_eq!(d.followed, 0);
            continue;
        }
        assert_eq!(plans.len(), 1, "one list");
        let at = plans[0].0;
        assert!(at > MIN_LEAVES, "decided at leaf {at}, after the replay");
        let whole = Plan::SetWhole(expected(&f, &f.leaves[at..], true));
        assert_eq!(plans[0].1, whole);
        assert_eq!((d.followed, d.listed_whole), (1, 1));
    }
}

/// A scan whose list was dropped because its pages were found cached goes on; SQLite's own cache serves
/// the lookups of its next leaves (no table read between them, as when a text key's neighbours share
/// table pages) and the VFS sees a later leaf after a gap (its gate closed meanwhile). The scan is
/// listed again there at once, as long as the stretch it had reached (not from FIRST_LOOKAHEAD leaves
/// again, whose rounds are too short to sort), at each such leaf until its read transaction ends, no
/// longer each time, and never taken for a covering scan.
#[test]
fn a_scan_dropped_as_cached_is_listed_again_at_the_next_leaf_seen() {
    let f = fixture(30_000);
    let start = 10;
    let first = start + MIN_LEAVES - 1;
    let mut p = planner(&f.path);
    let list = start_scan(&mut p, &f, start);
    // libprefetch asked for more once: the stretch grew to FIRST_LOOKAHEAD * GROWTH leaves, and the
    // next one would be GROWTH times that.
    let table_page = list.iter().find(|e| !e.mark).unwrap().offset;
    assert!(matches!(
        p.plan(Some(offset(f.leaves[first + 1].page)), table_page),
        Plan::Append(_)
    ));
    let reached = FIRST_LOOKAHEAD * GROWTH * GROWTH;
    let at = first + FIRST_LOOKAHEAD + FIRST_LOOKAHEAD * GROWTH + 3;
    assert!(f.leaves.len() > at + MIN_LEAVES + reached);
    p.pause_scan();
    let Plan::Set(list) = p.plan(None, offset(f.leaves[at].page)) else {
        panic!("the scan's next leaf seen must list it again");
    };
    assert_eq!(list, expected(&f, &f.leaves[at..at + reached], true));
    // That list found cached too: the next leaves, read with no table read between them, list again,
    // each the same stretch.
    for i in at + 1..at + 1 + MIN_LEAVES {
        p.left_alone_cached();
        let Plan::Set(list) = p.plan(None, offset(f.leaves[i].page)) else {
            panic!("leaf {i} must list the scan again");
        };
        assert_eq!(
            list,
            expected(&f, &f.leaves[i..i + reached], true),
            "leaf {i}"
        );
    }
    let d = p.decisions();
    assert_eq!((d.followed, d.cached, d.covering), (2, 1, 0), "{d:?}");
    // The read transaction ended: a later leaf starts a scan of its own, listed at its MIN_LEAVES-th.
    p.end_scan();
    let after = at + 2 * MIN_LEAVES;
    assert_eq!(p.plan(None, offset(f.leaves[after].page)), Plan::Keep);
}

/// A scan shorter than MIN_LEAVES (a `LIMIT 20` through an index, whose pages may all be cached) reads
/// nothing but what opening the file reads: not the schema, whose parse was most of the extension's
/// cost in such a query once the gate let its reads through.
#[test]
fn a_scan_shorter_than_min_leaves_reads_no_schema() {
    use prefetch_sqlite::format::PageKind;
    let f = fixture(20_000);
    let counted = || {
        let source = std::sync::Arc::new(Counted {
            file: std::fs::File::open(&f.path).unwrap(),
            reads: Default::default(),
        });
        (ScanPlanner::new(source.clone()), source)
    };
    let seen = |p: &mut ScanPlanner, page: u32, kind: PageKind| {
        p.note_page_kind(offset(page), kind);
        assert_eq!(p.plan(None, offset(page)), Plan::Keep);
    };
    let reads = |source: &Counted| source.reads.load(std::sync::atomic::Ordering::Relaxed);
    let (mut opened_only, source) = counted();
    seen(&mut opened_only, f.page_of[&1], PageKind::TableLeaf);
    let opening = reads(&source);
    let (mut p, source) = counted();
    seen(&mut p, f.root, PageKind::IndexInterior);
    for leaf in &f.leaves[..MIN_LEAVES - 1] {
        seen(&mut p, leaf.page, PageKind::IndexLeaf);
        for rowid in f.db.index_leaf_rowids(leaf.page).unwrap() {
            seen(&mut p, f.page_of[&rowid], PageKind::TableLeaf);
        }
    }
    assert_eq!(reads(&source), opening, "no read past the file's opening");
    assert_eq!(p.decisions().indexes_read, 0);
}

/// Under the window schedule (stretches capped; no memory told, so no cap in effect) and with
/// SQLite's default cache, a lookup of a page looked up a few lookups before is left off the
/// list (SQLite's cache serves it, the read never reaches the file), and no lookup that an LRU cache
/// of that size would miss is: those are the list's table entries, in order.
#[test]
fn lookups_sqlites_own_cache_serves_are_left_off_the_list() {
    let f = fixture(30_000);
    let mut p = ScanPlanner::new(std::sync::Arc::new(std::fs::File::open(&f.path).unwrap()));
    p.cap_stretches();
    let listed = listed_to_the_end(&mut p, &f);
    let every = expected(&f, &f.leaves[LISTED_AT..], true);
    assert_eq!(
        listed.iter().filter(|e| e.mark).count(),
        every.iter().filter(|e| e.mark).count(),
        "every leaf listed"
    );
    let table = |list: &[Entry]| list.iter().filter(|e| !e.mark).count();
    assert!(
        table(&listed) < table(&every),
        "{} of {} lookups listed",
        table(&listed),
        table(&every)
    );
    // SQLite's cache as an LRU of its pages, over the leaves and lookups in order.
    let capacity = (DEFAULT_CACHE_SIZE.unsigned_abs() * 1024 / u64::from(PAGE_SIZE)) as usize;
    let mut lru: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
    let mut misses = Vec::new();
    for e in &every {
        match lru.iter().position(|&o| o == e.offset) {
            Some(i) => {
                lru.remove(i);
            }
            None if !e.mark => misses.push(e.offset),
            None => {}
        }
        lru.push_back(e.offset);
        if lru.len() > capacity {
            lru.pop_front();
        }
    }
    let mut table_entries = listed.iter().filter(|e| !e.mark).map(|e| e.offset);
    for (n, miss) in misses.iter().enumerate() {
        assert!(
            table_entries.any(|o| o == *miss),
            "lookup {n} of {} (page at {miss}), which SQLite reads, is not listed",
            misses.len()
        );
    }
}

/// Stretches not capped (the conservative schedule): every lookup is listed, SQLite's cache or not.
#[test]
fn without_capped_stretches_every_lookup_is_listed() {
    let f = fixture(30_000);
    let mut p = ScanPlanner::new(std::sync::Arc::new(std::fs::File::open(&f.path).unwrap()));
    assert_eq!(
        listed_to_the_end(&mut p, &f),
        expected(&f, &f.leaves[LISTED_AT..], true)
    );
}

/// Everything `p` lists for a scan of the zip index from its first leaf to its end.
fn listed_to_the_end(p: &mut ScanPlanner, f: &Fixture) -> Vec<Entry> {
    let mut listed = start_scan(p, f, 0);
    for at in LISTED_AT + 1..f.leaves.len() {
        let table_page =
            offset(f.page_of[&f.db.index_leaf_rowids(f.leaves[at - 1].page).unwrap()[0]]);
        if let Plan::Append(more) = p.plan(Some(offset(f.leaves[at].page)), table_page) {
            listed.extend(more);
        }
    }
    listed
}
