//! A full index scan of a table about the memory's size that fits in it (`scan/held_table.rs`): the
//! planner's advice, recorded by a page source that logs it, against ground truth from a full walk of
//! the table and the index. No list is handed to libprefetch; the planner's own advice is the point.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use prefetch_sqlite::btree::{Database, PageSource};
use prefetch_sqlite::format::PageKind;
use prefetch_sqlite::gen::{generate, GenOptions, PAGE_SIZE};
use prefetch_sqlite::scan::{DeviceCosts, Plan, ScanPlanner, DROP_EVERY_LEAVES, MIN_LEAVES};
use prefetch_sqlite::statement::RowBound;

/// The most pages one advice call loads on the logged device.
const ADVICE_PAGES: u64 = 16;

/// Advice a source was given, in pages.
#[derive(Debug, Clone, PartialEq)]
enum Advice {
    WillNeed(u32, u32),
    DontNeed(u32, u32),
    Random(bool),
}

/// The database file, with the advice given on it logged.
struct Logged {
    file: std::fs::File,
    log: Mutex<Vec<Advice>>,
}

fn page_range(offset: u64, len: u64) -> (u32, u32) {
    let page = u64::from(PAGE_SIZE);
    ((offset / page + 1) as u32, (len / page) as u32)
}

impl PageSource for Logged {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }
    fn byte_len(&self) -> std::io::Result<u64> {
        self.file.byte_len()
    }
    fn will_need(&self, offset: u64, len: u64) {
        let (page, count) = page_range(offset, len);
        self.log.lock().unwrap().push(Advice::WillNeed(page, count));
    }
    fn dont_need(&self, offset: u64, len: u64) {
        let (page, count) = page_range(offset, len);
        self.log.lock().unwrap().push(Advice::DontNeed(page, count));
    }
    fn random_access(&self, random: bool) {
        self.log.lock().unwrap().push(Advice::Random(random));
    }
}

impl Logged {
    /// Pages advised `WillNeed` (`will`) or `DontNeed` so far.
    fn pages(&self, will: bool) -> HashSet<u32> {
        let mut pages = HashSet::new();
        for advice in self.log.lock().unwrap().iter() {
            match (advice, will) {
                (Advice::WillNeed(first, count), true)
                | (Advice::DontNeed(first, count), false) => pages.extend(*first..first + count),
                _ => {}
            }
        }
        pages
    }
}

/// The generated database: its table's leaf pages, the `customer_last` index's leaves in key order and root.
struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    db: Database<std::fs::File>,
    table_pages: HashSet<u32>,
    leaves: Vec<u32>,
    root: u32,
    table_root: u32,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    generate(
        &path,
        &GenOptions {
            rows: 60_000,
            seed: 5,
        },
        |_| {},
    )
    .unwrap();
    let db = Database::open(Box::new(std::fs::File::open(&path).unwrap())).unwrap();
    let schema = db.schema().unwrap();
    let root_of = |name: &str| schema.iter().find(|e| e.name == name).unwrap().root;
    let root = root_of("customer_last");
    let table_root = root_of("customer");
    let table_pages = db
        .table_rows(table_root)
        .unwrap()
        .into_iter()
        .map(|(page, _)| page)
        .collect();
    let leaves = db.index_tree(root).unwrap().leaves;
    Fixture {
        _dir: dir,
        path,
        db,
        table_pages,
        leaves: leaves.iter().map(|leaf| leaf.page).collect(),
        root,
        table_root,
    }
}

fn offset(page: u32) -> u64 {
    u64::from(page - 1) * u64::from(PAGE_SIZE)
}

/// A planner over `f`'s file, logged, with memory for the table and what a held scan needs beside it
/// (SQLite's cache taken as empty; leaves advised ahead a window of [`DROP_EVERY_LEAVES`] at a time,
/// a device whose requests cost nothing) but not for the index too; the statement unbounded, and the
/// device's costs told if `costs`.
fn planner(f: &Fixture, costs: bool) -> (ScanPlanner, Arc<Logged>) {
    let logged = Arc::new(Logged {
        file: std::fs::File::open(&f.path).unwrap(),
        log: Mutex::new(Vec::new()),
    });
    let mut p = ScanPlanner::new(logged.clone());
    p.set_sqlite_cache_size(0);
    let page = u64::from(PAGE_SIZE);
    let beside = 3 * DROP_EVERY_LEAVES as u64 * page;
    let table = f.table_pages.len() as u64 * page;
    let memory = table + beside;
    let leaves = f.leaves.len() as u64;
    assert!(
        leaves > 2 * DROP_EVERY_LEAVES as u64,
        "the index ({leaves} leaves) must not fit beside the table"
    );
    p.set_memory(memory);
    p.set_advice_limit(ADVICE_PAGES * page);
    p.set_statement_probe(Box::new(|| RowBound::Unbounded));
    if costs {
        p.set_device_costs(DeviceCosts {
            request_seconds: 0.0,
            near_request_seconds: 0.0,
            bytes_per_second: 1e9,
        });
    }
    (p, logged)
}

/// SQLite's reads of the zip index's left edge, root first, down to its first leaf.
fn read_left_edge(p: &mut ScanPlanner, f: &Fixture) {
    let mut page = f.root;
    while let Some(child) = f.db.leftmost_child(page).unwrap() {
        assert_eq!(p.plan(None, offset(page)), Plan::Keep);
        page = child;
    }
}

/// SQLite's reads of leaf `i` of the zip index and of its rows' table pages; the plans must all be
/// `Keep` (a held scan hands libprefetch no list).
fn walk_leaf(p: &mut ScanPlanner, f: &Fixture, i: usize, table_page_of: &dyn Fn(i64) -> u32) {
    assert_eq!(p.plan(None, offset(f.leaves[i])), Plan::Keep, "leaf {i}");
    for rowid in f.db.index_leaf_rowids(f.leaves[i]).unwrap() {
        assert_eq!(p.plan(None, offset(table_page_of(rowid))), Plan::Keep);
    }
}

fn rowid_pages(f: &Fixture) -> std::collections::HashMap<i64, u32> {
    f.db.table_rows(f.table_root)
        .unwrap()
        .into_iter()
        .map(|(page, rowid)| (rowid, page))
        .collect()
}

/// The full scan is held at its MIN_LEAVES-th leaf (a device whose requests cost nothing: swept at
/// once): SQLite's descriptor advised random, then every leaf page of the table advised, and besides
/// the index's leaves nothing but interior pages; no call longer than one call loads; each later leaf
/// advised before SQLite reads it; the leaves behind the scan dropped, never the one it is on nor the
/// one before; and the descriptor back to normal once the scan ends.
#[test]
fn a_full_scan_of_a_table_about_the_memory_s_size_is_held_and_its_index_dropped_behind() {
    let f = fixture();
    let page_of = rowid_pages(&f);
    let (mut p, logged) = planner(&f, true);
    read_left_edge(&mut p, &f);
    for i in 0..f.leaves.len() {
        if i >= MIN_LEAVES {
            assert!(
                logged.pages(true).contains(&f.leaves[i]),
                "leaf {i} not advised before its read"
            );
        }
        walk_leaf(&mut p, &f, i, &|rowid| page_of[&rowid]);
        let dropped = logged.pages(false);
        let behind: HashSet<u32> = f.leaves[..i.saturating_sub(1)].iter().copied().collect();
        assert!(
            dropped.is_subset(&behind),
            "leaf {i}: a leaf not behind the scan dropped"
        );
        assert_eq!(p.holding(), i + 1 >= MIN_LEAVES, "leaf {i}");
    }
    assert_eq!(p.decisions().held, 1);
    assert_eq!(p.decisions().followed, 0);
    // Besides the leaves, the table's leaf pages and the interior pages the planner read its
    // structure through (advised a level at a time before reading them), and nothing else.
    let advised = logged.pages(true);
    let leaves: HashSet<u32> = f.leaves.iter().copied().collect();
    assert!(
        f.table_pages.is_subset(&advised),
        "a table leaf page not swept"
    );
    let others = advised
        .iter()
        .filter(|page| !leaves.contains(page) && !f.table_pages.contains(page));
    for &page in others {
        let kind = f.db.page_kind(page).unwrap();
        assert!(
            matches!(kind, PageKind::TableInterior | PageKind::IndexInterior),
            "page {page}: {kind:?} advised"
        );
    }
    assert_eq!(p.held_counts().swept, f.table_pages.len() as u64);
    let dropped = logged.pages(false).len();
    assert!(
        dropped + 2 * DROP_EVERY_LEAVES >= f.leaves.len(),
        "{dropped} of {} leaves dropped",
        f.leaves.len()
    );
    let log = logged.log.lock().unwrap().clone();
    let longest = log.iter().filter_map(|a| match a {
        Advice::WillNeed(_, count) | Advice::DontNeed(_, count) => Some(u64::from(*count)),
        Advice::Random(_) => None,
    });
    assert!(
        longest.max() <= Some(ADVICE_PAGES),
        "a call longer than one call loads"
    );
    let random = log.iter().position(|a| *a == Advice::Random(true));
    let sweep = log
        .iter()
        .position(|a| matches!(a, Advice::WillNeed(page, _) if f.table_pages.contains(page)));
    assert!(
        random.is_some() && random < sweep,
        "the descriptor random before the sweep"
    );
    assert!(!log.contains(&Advice::Random(false)));
    p.end_scan();
    assert!(!p.holding());
    assert_eq!(
        logged.log.lock().unwrap().last(),
        Some(&Advice::Random(false))
    );
}

/// Without the device's costs (no stored profile) the same scan is not held: it is followed as any
/// full scan of such a table, and the planner advises nothing itself.
#[test]
fn without_the_device_s_costs_the_full_scan_is_followed_not_held() {
    let f = fixture();
    let page_of = rowid_pages(&f);
    let (mut p, logged) = planner(&f, false);
    read_left_edge(&mut p, &f);
    let mut set = false;
    for i in 0..MIN_LEAVES {
        assert_eq!(
            p.plan(None, offset(f.leaves[i])) == Plan::Keep,
            i + 1 < MIN_LEAVES
        );
        set |= i + 1 == MIN_LEAVES;
        for rowid in f.db.index_leaf_rowids(f.leaves[i]).unwrap() {
            p.plan(None, offset(page_of[&rowid]));
        }
    }
    assert!(set);
    assert_eq!((p.decisions().held, p.decisions().followed), (0, 1));
    assert!(!p.holding());
    assert!(logged
        .log
        .lock()
        .unwrap()
        .iter()
        .all(|a| !matches!(a, Advice::Random(_) | Advice::DontNeed(..))));
}
