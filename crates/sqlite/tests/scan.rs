//! The section 5.4 planner on a real database: the lists it hands libprefetch for a forward scan of the
//! zip index (leaves marked, then the table pages of their rowids in index order), the PF_APPEND
//! extension, and plain reads for out-of-order index access. Ground truth comes from a full walk of the
//! table b-tree, independent of the planner's descent through interior pages.

use std::collections::HashMap;
use std::path::Path;

use prefetch_sqlite::btree::{Database, IndexLeaf};
use prefetch_sqlite::gen::{generate, GenOptions, PAGE_SIZE};
use prefetch_sqlite::scan::{Entry, Plan, ScanPlanner, FIRST_LOOKAHEAD, GROWTH};

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    leaves: Vec<IndexLeaf>,
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
    let leaves = db
        .index_tree(root("customer_zip"))
        .map(|t| t.leaves)
        .unwrap();
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
        page_of,
        db,
    }
}

fn offset(page: u32) -> u64 {
    u64::from(page - 1) * u64::from(PAGE_SIZE)
}

fn planner(path: &Path) -> ScanPlanner {
    ScanPlanner::new(std::sync::Arc::new(std::fs::File::open(path).unwrap()))
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
    assert!(f.leaves.len() > 1 + FIRST_LOOKAHEAD, "{}", f.leaves.len());
    let mut p = planner(&f.path);
    // The first leaf alone lists nothing: a scan that ends within it (LIMIT 10) costs nothing.
    assert_eq!(p.plan(None, offset(f.leaves[0].page)), Plan::Keep);
    let Plan::Set(list) = p.plan(Some(offset(f.leaves[0].page)), offset(f.leaves[1].page)) else {
        panic!("reading an index's second leaf must set a list");
    };
    // Only FIRST_LOOKAHEAD leaves: a LIMIT or a cursor closed early leaves little listed behind.
    assert_eq!(list, expected(&f, &f.leaves[1..1 + FIRST_LOOKAHEAD], true));
    // Behind the next mark, the next stretch is appended, GROWTH times longer; nothing listed twice.
    let table_page = list.iter().find(|e| !e.mark).unwrap().offset;
    let Plan::Append(more) = p.plan(Some(offset(f.leaves[2].page)), table_page) else {
        panic!("a table read behind a mark must extend the list");
    };
    let from = 1 + FIRST_LOOKAHEAD;
    let end = (from + FIRST_LOOKAHEAD * GROWTH).min(f.leaves.len());
    assert_eq!(more, expected(&f, &f.leaves[from..end], true));
}

#[test]
fn forward_scan_elsewhere_lists_table_pages_in_index_order_with_leaves_marked() {
    let f = fixture(30_000);
    let start = 10;
    assert!(
        f.leaves.len() > start + FIRST_LOOKAHEAD + 2,
        "need several leaves, got {}",
        f.leaves.len()
    );
    let mut p = planner(&f.path);
    // One leaf in the middle of the index does not show a scan yet: plain reads.
    assert_eq!(p.plan(None, offset(f.leaves[start].page)), Plan::Keep);
    // The next leaf in key order does: the list covers FIRST_LOOKAHEAD leaves from it.
    let Plan::Set(list) = p.plan(
        Some(offset(f.leaves[start].page)),
        offset(f.leaves[start + 1].page),
    ) else {
        panic!("a forward scan must set a list");
    };
    let first = start + 1;
    assert_eq!(
        list,
        expected(&f, &f.leaves[first..first + FIRST_LOOKAHEAD], true)
    );
    // Reading a table page past the mark of the next leaf: the next stretch, GROWTH times longer, is
    // appended (up to the end of the index).
    let table_page = list.iter().find(|e| !e.mark).unwrap().offset;
    let Plan::Append(more) = p.plan(Some(offset(f.leaves[first + 1].page)), table_page) else {
        panic!("a table read behind a mark must extend the list");
    };
    let from = first + FIRST_LOOKAHEAD;
    let end = (from + GROWTH * FIRST_LOOKAHEAD).min(f.leaves.len());
    assert_eq!(more, expected(&f, &f.leaves[from..end], true));
}

#[test]
fn out_of_order_index_reads_fall_back_to_plain_reads() {
    let f = fixture(30_000);
    let mut p = planner(&f.path);
    assert_eq!(p.plan(None, offset(f.leaves[3].page)), Plan::Keep);
    assert!(matches!(
        p.plan(None, offset(f.leaves[4].page)),
        Plan::Set(_)
    ));
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
    for pos in [7, 2, 9, 8, 7, 6] {
        assert_eq!(
            p.plan(None, offset(f.leaves[pos].page)),
            Plan::Keep,
            "leaf {pos}"
        );
    }
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
    assert_eq!(p.plan(None, offset(f.leaves[5].page)), Plan::Keep);
    let conn = rusqlite::Connection::open(&f.path).unwrap();
    conn.execute_batch(
        "UPDATE customer SET c_zip = '0000' || substr(c_zip, 5) WHERE rowid % 2 = 0; VACUUM;",
    )
    .unwrap();
    drop(conn);
    let db = Database::open(Box::new(std::fs::File::open(&f.path).unwrap())).unwrap();
    let root = db
        .schema()
        .unwrap()
        .into_iter()
        .find(|e| e.name == "customer_zip")
        .unwrap()
        .root;
    let leaves = db.index_tree(root).unwrap().leaves;
    let fresh = Fixture { leaves, db, ..f };
    assert_eq!(p.plan(None, offset(fresh.leaves[5].page)), Plan::Keep);
    let Plan::Set(list) = p.plan(None, offset(fresh.leaves[6].page)) else {
        panic!("a forward scan of the rewritten file must set a list");
    };
    assert_eq!(
        list.first(),
        Some(&Entry {
            offset: offset(fresh.leaves[6].page),
            mark: true
        })
    );
    assert!(list
        .iter()
        .all(|e| e.offset < fresh.db.page_count() as u64 * u64::from(PAGE_SIZE)));
}

/// A planner whose scan of the index has started: the first leaf read (nothing listed), then the
/// second (the list set); returns it with that list.
fn scan_from_the_first_leaf(f: &Fixture) -> (ScanPlanner, Vec<Entry>) {
    let mut p = planner(&f.path);
    assert_eq!(p.plan(None, offset(f.leaves[0].page)), Plan::Keep);
    let Plan::Set(list) = p.plan(Some(offset(f.leaves[0].page)), offset(f.leaves[1].page)) else {
        panic!("reading an index's second leaf must set a list");
    };
    (p, list)
}

#[test]
fn a_stretch_the_full_list_took_only_part_of_continues_where_it_stopped() {
    let f = fixture(30_000);
    let (mut p, list) = scan_from_the_first_leaf(&f);
    let table_page = list.iter().find(|e| !e.mark).unwrap().offset;
    let Plan::Append(more) = p.plan(Some(offset(f.leaves[2].page)), table_page) else {
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
    let Plan::Append(rest) = p.plan(Some(offset(f.leaves[2].page)), table_page) else {
        panic!("the scan must go on where the list stopped");
    };
    // No hole and nothing twice: the next stretch starts at the first entry not taken, and is as long
    // as what fitted (one whole leaf, so FIRST_LOOKAHEAD leaves).
    let from = 1 + FIRST_LOOKAHEAD + 1;
    let whole = expected(&f, &f.leaves[from..from + FIRST_LOOKAHEAD], true);
    assert_eq!(rest, whole[3..]);
    assert_eq!(rest[..], more[taken..taken + rest.len()]);
}

#[test]
fn a_long_scan_keeps_table_pages_only_from_the_applications_leaf_on() {
    let f = fixture(30_000);
    let (mut p, list) = scan_from_the_first_leaf(&f);
    let mut listed_end = 1 + FIRST_LOOKAHEAD;
    let mut listed = list.len();
    let mut extended = 0;
    // The application reads on, one leaf at a time; each table read behind a new mark may extend the list.
    for at in 2..f.leaves.len() {
        let table_page =
            offset(f.page_of[&f.db.index_leaf_rowids(f.leaves[at - 1].page).unwrap()[0]]);
        if let Plan::Append(more) = p.plan(Some(offset(f.leaves[at].page)), table_page) {
            let from = listed_end;
            listed_end = from + more.iter().filter(|e| e.mark).count();
            assert_eq!(more, expected(&f, &f.leaves[from..listed_end], true));
            listed += more.len();
            extended += 1;
        }
        assert!(
            p.leaves_kept() <= listed_end.saturating_sub(at),
            "at leaf {at} of {}: {} leaves kept, {} listed ahead",
            f.leaves.len(),
            p.leaves_kept(),
            listed_end.saturating_sub(at)
        );
    }
    assert!(
        extended >= 2,
        "the scan must have been extended, {extended} times"
    );
    assert_eq!(
        listed_end,
        f.leaves.len(),
        "the whole index listed, {listed} entries"
    );
}
