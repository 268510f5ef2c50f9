//! Hostile input for the b-tree reader and the scan planner: random pages, and real databases with random
//! bytes overwritten. Every call must return (an error is fine); none may panic or loop forever.

use std::io::Write;
use std::sync::OnceLock;

use prefetch_sqlite::btree::{Database, TableMap};
use prefetch_sqlite::format::{record_values, BtreePage};
use prefetch_sqlite::gen::{generate, GenOptions};
use prefetch_sqlite::scan::ScanPlanner;
use proptest::prelude::*;

/// Bytes of a small generated database, made once.
fn pristine() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.db");
        generate(
            &path,
            &GenOptions {
                rows: 1_500,
                seed: 11,
            },
            |_| {},
        )
        .unwrap();
        std::fs::read(path).unwrap()
    })
}

/// Exercises every accessor of one parsed page.
fn poke_page(number: u32, bytes: &[u8], usable: u32) {
    let Ok(page) = BtreePage::parse(number, bytes, usable) else {
        return;
    };
    for cell in 0..page.cell_count() {
        let _ = page.left_child(cell);
        let _ = page.int_key(cell);
        if let Ok(payload) = page.payload(cell) {
            let _ = record_values(payload.local);
        }
    }
}

/// Exercises the whole-file reader on `bytes`.
fn poke_database(bytes: Vec<u8>) {
    let Ok(db) = Database::open(bytes.into_boxed_slice()) else {
        return;
    };
    let Ok(schema) = db.schema() else { return };
    for entry in schema {
        if let Ok(leaves) = db.index_tree(entry.root).map(|t| t.leaves) {
            for leaf in leaves.iter().take(8) {
                let _ = db.index_leaf_rowids(leaf.page);
            }
        }
        if let Ok(rows) = db.table_rows(entry.root) {
            if let Ok(mut map) = TableMap::new(&db, entry.root) {
                for &(_, rowid) in rows.iter().take(50) {
                    let _ = map.leaf_for(&db, rowid);
                }
            }
        }
    }
}

/// Runs the planner over every page of `bytes` as if SQLite were reading them in order.
fn poke_planner(bytes: &[u8]) {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(bytes).unwrap();
    let mut planner = ScanPlanner::new(std::sync::Arc::new(file.reopen().unwrap()));
    let pages = bytes.len() as u64 / 4096;
    for page in 0..pages {
        let _ = planner.plan(page.checked_sub(1).map(|p| p * 4096), page * 4096);
    }
}

fn mutated(mutations: &[(usize, u8)]) -> Vec<u8> {
    let mut bytes = pristine().to_vec();
    let len = bytes.len();
    for &(at, value) in mutations {
        bytes[at % len] = value;
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_pages_never_panic(number in 1u32..4, bytes in proptest::collection::vec(any::<u8>(), 0..4200), usable in 0u32..70000) {
        poke_page(number, &bytes, usable);
    }

    #[test]
    fn pages_with_valid_type_bytes_never_panic(kind in prop::sample::select(vec![2u8, 5, 10, 13]), mut bytes in proptest::collection::vec(any::<u8>(), 4096)) {
        bytes[0] = kind;
        bytes[3] = 0;
        poke_page(2, &bytes, 4096);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn mutated_databases_never_panic(mutations in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..64)) {
        poke_database(mutated(&mutations));
    }

    #[test]
    fn mutated_page_headers_never_panic(pages in proptest::collection::vec((0usize..64, 0usize..12, any::<u8>()), 1..16)) {
        let mutations: Vec<(usize, u8)> = pages.iter().map(|&(page, at, v)| (page * 4096 + at + if page == 0 { 100 } else { 0 }, v)).collect();
        let bytes = mutated(&mutations);
        poke_database(bytes.clone());
        poke_planner(&bytes);
    }
}

#[test]
fn pristine_database_reads_cleanly() {
    let db = Database::open(pristine().to_vec().into_boxed_slice()).unwrap();
    let schema = db.schema().unwrap();
    assert!(schema
        .iter()
        .any(|e| e.name == "customer_zip" && e.kind == "index"));
}
