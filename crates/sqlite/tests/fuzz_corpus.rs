//! Fuzzing the SQLite b-tree page parser and file reader from the repository's corpus
//! (`fuzz/corpus/sqlite-btree/`: small databases of 512-byte pages, so that an edit lands in a
//! header, a cell pointer or a record often) with libFuzzer-style byte mutation (proptest,
//! stable Rust): bit flips, boundary values, insertions, deletions, duplications, which shift
//! pages as a truncated or spliced file does. The corpus is replayed first, then `FUZZ_CASES`
//! mutated files (256 by default). Invariant: every call returns a result; none panics or
//! loops (the reader bounds every walk).

#[path = "../../../fuzz/mutate.rs"]
mod mutate;

use prefetch_sqlite::btree::{Database, TableMap};
use prefetch_sqlite::format::{record_values, BtreePage, Header};
use proptest::prelude::*;

/// Parses every page of `bytes` on its own and reads the whole file through its schema;
/// returns how many rows the tables gave (for the corpus check).
fn read_everything(bytes: &[u8]) -> usize {
    let _ = Header::parse(bytes);
    let Ok(db) = Database::open(bytes.to_vec().into_boxed_slice()) else {
        return 0;
    };
    let usable = db.header().usable_size;
    for number in 1..=db.page_count().min(64) {
        let Ok(page) = db.read_page(number) else {
            continue;
        };
        if let Ok(parsed) = BtreePage::parse(number, &page, usable) {
            for cell in 0..parsed.cell_count() {
                let _ = parsed.left_child(cell);
                let _ = parsed.int_key(cell);
                if let Ok(payload) = parsed.payload(cell) {
                    let _ = record_values(payload.local);
                }
            }
        }
    }
    let Ok(schema) = db.schema() else { return 0 };
    let mut rows = 0;
    for entry in schema {
        if let Ok(tree) = db.index_tree(entry.root) {
            for leaf in &tree.leaves {
                let _ = db.index_leaf_rowids(leaf.page);
            }
        }
        if let Ok(table) = db.table_rows(entry.root) {
            rows += table.len();
            if let Ok(mut map) = TableMap::new(&db, entry.root) {
                for &(_, rowid) in &table {
                    let _ = map.leaf_for(&db, rowid);
                }
            }
        }
    }
    rows
}

#[test]
fn fuzz_btree_pages_from_the_corpus() {
    let seeds: Vec<Vec<u8>> = mutate::corpus("sqlite-btree")
        .into_iter()
        .map(|(path, bytes)| {
            assert!(
                read_everything(&bytes) > 0,
                "{} reads no rows",
                path.display()
            );
            bytes
        })
        .collect();
    proptest!(mutate::config(), |(bytes in mutate::mutated(seeds.clone(), mutate::BINARY_TOKENS))| {
        read_everything(&bytes);
    });
}
