//! The table pages of the index leaves a scan may list again (libprefetch ATC'09 s5.4: the callback
//! lists, for each index leaf, the table pages its entries point to).
//!
//! A stretch is listed from the application's leaf on, and the next stretch (or a `Set` from where
//! the application is) lists some of the same leaves again, so their table pages, read from the table's
//! interior pages, are kept until the application passes them. Leaves are kept by their position in
//! the index's key order: the application only moves forward, so forgetting the leaves behind it takes
//! the kept leaves off the front, each once (a scan of all kept leaves per stretch, as a map keyed by
//! page needed, was 45% of a followed scan's CPU over a 103 MiB table: tens of thousands of stretches
//! times thousands of leaves).

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// The kept leaves of one index: position in key order -> the table pages its entries point to, in
/// order.
#[derive(Default)]
pub struct KeptLeaves {
    /// The index the leaves belong to (none kept while `None`).
    root: Option<u32>,
    by_position: BTreeMap<usize, Box<[u32]>>,
}

impl KeptLeaves {
    /// Keeps only the leaves of index `root` at position `at` or later.
    pub fn forget_before(&mut self, root: u32, at: usize) {
        if self.root != Some(root) {
            self.clear();
            self.root = Some(root);
        }
        while let Some(first) = self.by_position.first_entry() {
            if *first.key() >= at {
                break;
            }
            first.remove();
        }
    }

    /// Forgets every leaf.
    pub fn clear(&mut self) {
        self.root = None;
        self.by_position.clear();
    }

    /// The table pages of the leaf at `position` of the index last given to [`Self::forget_before`],
    /// read by `read` if not kept yet.
    pub fn get_or_read<E>(
        &mut self,
        position: usize,
        read: impl FnOnce() -> Result<Box<[u32]>, E>,
    ) -> Result<&[u32], E> {
        Ok(match self.by_position.entry(position) {
            Entry::Occupied(kept) => kept.into_mut(),
            Entry::Vacant(slot) => slot.insert(read()?),
        })
    }

    /// How many leaves are kept.
    pub fn len(&self) -> usize {
        self.by_position.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep(kept: &mut KeptLeaves, positions: std::ops::Range<usize>) {
        for position in positions {
            let pages = [position as u32];
            kept.get_or_read::<()>(position, || Ok(Box::new(pages)))
                .unwrap();
        }
    }

    #[test]
    fn the_leaves_behind_the_application_are_forgotten_and_the_rest_kept() {
        let mut kept = KeptLeaves::default();
        kept.forget_before(7, 0);
        keep(&mut kept, 0..10);
        kept.forget_before(7, 4);
        assert_eq!(kept.len(), 6);
        let again = kept
            .get_or_read::<()>(4, || panic!("leaf 4 is kept"))
            .unwrap();
        assert_eq!(again, &[4]);
        let read = kept.get_or_read::<()>(2, || Ok(Box::new([20]))).unwrap();
        assert_eq!(read, &[20], "a leaf forgotten is read again");
    }

    #[test]
    fn another_index_forgets_every_leaf_of_the_first() {
        let mut kept = KeptLeaves::default();
        kept.forget_before(7, 0);
        keep(&mut kept, 0..10);
        kept.forget_before(9, 0);
        assert_eq!(kept.len(), 0);
    }

    #[test]
    fn a_read_that_fails_keeps_nothing() {
        let mut kept = KeptLeaves::default();
        kept.forget_before(7, 0);
        assert_eq!(kept.get_or_read(3, || Err("torn page")), Err("torn page"));
        assert_eq!(kept.len(), 0);
    }
}
