//! The pages a plan keeps in memory, and what became of the ones it read in.
//!
//! Everything the planner keeps counts against its budget: pages it
//! prefetched, infill pages read only to join two requests, and pages of the
//! list that were already cached when it decided to keep them. Libprefetch
//! (ATC 2009, sections 4.5-4.6) sizes only the window's unique pages by the
//! budget; Cao et al. (SIGMETRICS 1995, section 2.1) count every block in
//! the cache of k blocks, as here. Each page carries its role, which decides
//! the order of drops (infill first, then pages the plan no longer needs,
//! whose next use is beyond the window: section 2.2 rule 2) and the
//! counters of [`HeldStats`].
//!
//! A page is *confirmed* once the plan has seen it in memory (a read found
//! it resident, or the caller's probe saw it): only a confirmed page found
//! missing is a premature eviction. A page advised but not yet read in may
//! simply still be on its way.
//!
//! Deviations: among pages the plan no longer needs, the oldest goes first
//! (their next uses are not known, so rule 2 cannot rank them).

use std::collections::VecDeque;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use crate::access_list::PageKey;

/// Why a held page is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A page of the list ahead (in the window, or in the next-use plan).
    Listed,
    /// A gap page read only so that two requests became one.
    Infill,
    /// A page the plan no longer needs, kept until its room is wanted.
    Stale,
}

/// A held page with its role and history, in its key's 16 bytes (the
/// flags in the padding): the table of held pages is the largest of the
/// planner's structures that grow with the budget.
#[derive(Clone, Copy, Debug)]
struct HeldPage {
    page: u64,
    fd: i32,
    role: Role,
    /// The planner advised it (as opposed to finding it cached).
    fetched: bool,
    /// Read since it was advised.
    used: bool,
    /// Seen in memory since it was advised.
    confirmed: bool,
}

impl HeldPage {
    fn key(&self) -> PageKey {
        PageKey {
            fd: self.fd,
            page: self.page,
        }
    }
}

fn hash(key: PageKey) -> u64 {
    FxBuildHasher.hash_one(key)
}

/// What became of the pages the plan read in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldStats {
    /// Prefetched pages later read while held.
    pub prefetched_used: u64,
    /// Prefetched pages dropped before any read.
    pub prefetched_unused_dropped: u64,
    /// Gap pages advised as infill.
    pub infill_pages: u64,
}

/// The held pages with their roles.
#[derive(Debug, Default)]
pub struct Held {
    pages: HashTable<HeldPage>,
    /// Candidates for the first drops, oldest first; an entry whose page has
    /// changed role or left is skipped when popped.
    infill: VecDeque<PageKey>,
    stale: VecDeque<PageKey>,
    stats: HeldStats,
}

impl Held {
    /// Pages held.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// True if nothing is held.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// True if `key` is held.
    pub fn contains(&self, key: PageKey) -> bool {
        self.get(key).is_some()
    }

    /// The role of `key`, if held.
    pub fn role(&self, key: PageKey) -> Option<Role> {
        self.get(key).map(|p| p.role)
    }

    fn get(&self, key: PageKey) -> Option<&HeldPage> {
        self.pages.find(hash(key), |page| page.key() == key)
    }

    fn get_mut(&mut self, key: PageKey) -> Option<&mut HeldPage> {
        self.pages.find_mut(hash(key), |page| page.key() == key)
    }

    /// The counters.
    pub fn stats(&self) -> HeldStats {
        self.stats
    }

    /// Every held page (unordered).
    pub fn keys(&self) -> impl Iterator<Item = PageKey> + '_ {
        self.pages.iter().map(HeldPage::key)
    }

    /// Keeps `key` in `role`; returns true if it was not held (so the
    /// caller must advise it). A held page only changes role.
    pub fn fetch(&mut self, key: PageKey, role: Role) -> bool {
        if self.contains(key) {
            self.set_role(key, role);
            return false;
        }
        let page = HeldPage {
            page: key.page,
            fd: key.fd,
            role,
            fetched: true,
            used: false,
            confirmed: false,
        };
        self.pages
            .insert_unique(hash(key), page, |page| hash(page.key()));
        self.queue(key, role);
        if role == Role::Infill {
            self.stats.infill_pages += 1;
        }
        true
    }

    /// Changes the role of a held page (no effect if not held).
    pub fn set_role(&mut self, key: PageKey, role: Role) {
        let Some(page) = self.get_mut(key) else {
            return;
        };
        if page.role != role {
            page.role = role;
            self.queue(key, role);
        }
    }

    fn queue(&mut self, key: PageKey, role: Role) {
        match role {
            Role::Infill => self.infill.push_back(key),
            Role::Stale => self.stale.push_back(key),
            Role::Listed => {}
        }
    }

    /// Forgets `key`; returns true if it was held (so the caller drops it).
    pub fn drop_page(&mut self, key: PageKey) -> bool {
        let Some(page) = self.remove(key) else {
            return false;
        };
        if page.fetched && !page.used {
            self.stats.prefetched_unused_dropped += 1;
        }
        true
    }

    fn remove(&mut self, key: PageKey) -> Option<HeldPage> {
        let entry = self
            .pages
            .find_entry(hash(key), |page| page.key() == key)
            .ok()?;
        Some(entry.remove().0)
    }

    /// Forgets a page kept by [`Held::fetch`] whose advice has not been
    /// issued: it was never read, so it counts as neither fetched nor
    /// dropped.
    pub fn cancel(&mut self, key: PageKey) {
        self.remove(key);
    }

    /// Drops the oldest infill page, else the oldest stale one; returns it.
    pub fn drop_first_unneeded(&mut self) -> Option<PageKey> {
        for role in [Role::Infill, Role::Stale] {
            while let Some(key) = self.queue_of(role).pop_front() {
                if self.role(key) == Some(role) {
                    self.drop_page(key);
                    return Some(key);
                }
            }
        }
        None
    }

    fn queue_of(&mut self, role: Role) -> &mut VecDeque<PageKey> {
        match role {
            Role::Infill => &mut self.infill,
            _ => &mut self.stale,
        }
    }

    /// Accounts a read of `key`; returns true if it is a premature
    /// eviction: held, confirmed in memory, and now found missing.
    pub fn on_read(&mut self, key: PageKey, resident: bool) -> bool {
        let Some(page) = self.pages.find_mut(hash(key), |page| page.key() == key) else {
            return false;
        };
        let premature = !resident && page.confirmed;
        if page.fetched && !page.used {
            page.used = true;
            self.stats.prefetched_used += 1;
        }
        // Missing or not, the read brings it in.
        page.confirmed = true;
        premature
    }

    /// The caller's probe saw `key` in memory.
    pub fn confirm(&mut self, key: PageKey) {
        if let Some(page) = self.get_mut(key) {
            page.confirmed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(page: u64) -> PageKey {
        PageKey { fd: 1, page }
    }

    #[test]
    fn a_held_page_takes_the_bytes_of_its_key() {
        assert_eq!(std::mem::size_of::<HeldPage>(), 16);
    }

    #[test]
    fn infill_goes_first_then_stale() {
        let mut held = Held::default();
        held.fetch(key(1), Role::Listed);
        held.fetch(key(2), Role::Stale);
        held.fetch(key(3), Role::Infill);
        assert_eq!(held.drop_first_unneeded(), Some(key(3)));
        assert_eq!(held.drop_first_unneeded(), Some(key(2)));
        assert_eq!(held.drop_first_unneeded(), None);
        assert_eq!(held.len(), 1);
    }

    #[test]
    fn a_page_listed_again_is_not_dropped_as_stale() {
        let mut held = Held::default();
        held.fetch(key(1), Role::Stale);
        assert!(!held.fetch(key(1), Role::Listed));
        assert_eq!(held.drop_first_unneeded(), None);
    }

    #[test]
    fn only_a_confirmed_page_found_missing_is_premature() {
        let mut held = Held::default();
        held.fetch(key(1), Role::Listed);
        assert!(!held.on_read(key(1), false), "never seen in memory");
        assert!(held.on_read(key(1), false), "read in, then gone");
        held.fetch(key(2), Role::Listed);
        held.confirm(key(2));
        assert!(held.on_read(key(2), false));
    }

    #[test]
    fn counts_used_unused_and_infill() {
        let mut held = Held::default();
        held.fetch(key(1), Role::Listed);
        held.fetch(key(2), Role::Listed);
        held.fetch(key(3), Role::Infill);
        held.on_read(key(1), true);
        held.on_read(key(1), true);
        held.drop_page(key(1));
        held.drop_page(key(2));
        assert_eq!(
            held.stats(),
            HeldStats {
                prefetched_used: 1,
                prefetched_unused_dropped: 1,
                infill_pages: 1,
            }
        );
    }
}
