//! The `conservative` schedule: Cao, Felten, Karlin and Li's conservative
//! (SIGMETRICS 1995, section 2.4) on libprefetch's list (ATC 2009,
//! section 4.2): Belady's MIN run ahead on the list ([`crate::min_ahead`]),
//! each of its replacements issued once the victim's last use before the
//! replacement has been read (rules 3 and 4). It fetches what MIN fetches:
//! the fewest possible.
//!
//! The problem: on a list whose pages come back after memory has filled,
//! the window keeps the pages needed soonest and re-reads the rest; MIN
//! keeps the pages whose next use is nearest, which needs their next uses,
//! several budgets ahead on the list.
//!
//! ```text
//!   list     P ---- victim's last use v ---------- replacement's use r ----
//!   MIN      runs ahead MIN_RUN_AHEAD_BUDGETS budgets: (victim v, page r)
//!   window   indexes LOOKAHEAD_BUDGETS budgets of distinct pages ahead
//!   issued   once P passes v: DONTNEED v's page, WILLNEED r's page
//!   budget   [ MIN's capacity: 7/8 ........................ | reserve 1/8 ]
//!                                                            pages of the next
//!                                                            replacements, ahead
//! ```
//!
//! The regimes:
//!
//! - **Reserve** (the default, 1/8 of the budget,
//!   [`crate::PlannerConfig::reserve_pages`]): alone, on a list with reuse
//!   larger than memory, MIN fetches each page a read or two before its
//!   use, with no queue depth; so MIN plans with 7/8 of the budget and the
//!   next replacements' pages are fetched ahead into the rest. A round
//!   every `batch` reads while MIN has a replacement pending.
//! - **No reserve** (`Some(0)`, Cao's schedule exactly): a round once
//!   `batch` replacements are issuable or the first is needed within
//!   `batch` entries.
//! - **Budget cut.** A budget lowered by less than the reserve gives back
//!   pages fetched ahead; only a budget below MIN's capacity (or a
//!   replaced list, or a position past MIN) starts MIN over. The live
//!   budget moves every round with the memory cgroup's active pages, and a
//!   restart dropped MIN's long-kept pages each time (0.9-2.6 M pages
//!   advised and dropped unused on the 1 GiB SQLite scan in a cgroup of a
//!   quarter).
//! - **Epoch.** AIMD grows after a budget's worth of reads with no
//!   premature eviction.
//!
//! The figures that chose the constants (the random and SQLite-like lists
//! larger than memory of docs/repro.md, "Next-use planning", in pages
//! read against Belady's optimum): the window indexes
//! [`LOOKAHEAD_BUDGETS`] = 8 budgets (1.41x / 1.64x with 2, 1.15x / 1.19x
//! with 4, 1.06x / 1.19x with 8 as with the whole list); the list may take
//! [`CONSERVATIVE_LIST_MEMORY_SHARE`] = 1/3 of memory (the 1 GiB SQLite
//! scan in a quarter read 1.03-1.04 M pages against 1.04-1.07 M at 1/5
//! and 1.22-1.25 M at 1/8). How `by-shape` came to pick it for scattered
//! lists longer than memory: the same section.
//!
//! Deviations: the reserve breaks rule 3 on purpose: a page fetched ahead
//! into it is held while MIN drops pages needed before it; the price is
//! MIN's fetches for 7/8 of the budget. `batch` gathers fetches into fewer
//! advice calls (rule 4 asks for one at every opportunity). The window
//! reaches eight budgets ahead, so a read skips ahead to a later entry only
//! within a budget's worth of entries; a read of a page the plan keeps is a
//! reread, not a divergence.

use super::by_shape::Schedule;
use super::types::{Due, Rounds};
use crate::access_list::PageKey;
use crate::core_state::Core;
use crate::held::Role;
use crate::min_ahead::MinAhead;
use crate::window::Window;

/// MIN runs this many budgets' worth of entries ahead of the position.
/// Its replacements are the same however far it runs; running further
/// only lets one be issued earlier when its victim's last use is far
/// behind its own use, and costs the first round a walk of the list
/// (1.5-2.3 s for 1.6 M entries, against 0.4 s to index them).
const MIN_RUN_AHEAD_BUDGETS: u64 = 2;

/// The window indexes the list ahead up to this many budgets of distinct
/// pages, for MIN's next uses (header); the index costs memory in
/// proportion, but never more than the list it indexes: at the 6.0
/// budgets of list the library allows it covers the whole list (its page
/// index is counted per entry).
const LOOKAHEAD_BUDGETS: u64 = 8;

/// The access list may take 1/this of the memory available for caching
/// under conservative, whose MIN needs next uses several budgets ahead: a
/// page of memory given to the list saves more reads than the same page
/// given to the cache (header; the others take
/// [`crate::LIST_MEMORY_SHARE`]).
pub const CONSERVATIVE_LIST_MEMORY_SHARE: u64 = 3;

/// Cao's conservative: MIN's state and how far the window indexes.
#[derive(Debug, Default)]
pub(super) struct Conservative {
    /// MIN run ahead.
    min: MinAhead,
    /// Distinct pages the window indexes ahead (the largest lookahead
    /// asked for so far).
    lookahead_pages: u64,
}

impl Rounds for Conservative {
    fn schedule(&self) -> Schedule {
        Schedule::Conservative
    }

    fn list_memory_share(&self) -> u64 {
        CONSERVATIVE_LIST_MEMORY_SHARE
    }

    fn round_due(&mut self, core: &mut Core) -> Due {
        core.check_epoch();
        let position = core.list.position();
        let batch = core.batch_pages();
        let due = if self.reserve_pages(core) == 0 {
            // Without a reserve, a replacement is issued when its victim is
            // free: at once if its page is needed within a batch.
            self.min.front().is_some_and(|first| {
                first.issuable(position)
                    && (first.at() < position + batch
                        || self.min.nth_issuable(batch as usize - 1, position))
            })
        } else {
            position >= core.last_round_at + batch && self.min.front().is_some()
        };
        if due || core.window_consumed() {
            Due::Yes
        } else {
            Due::No
        }
    }

    fn quiet_until(&self, _core: &Core) -> u64 {
        // Every answer may end an epoch (`Core::check_epoch`).
        0
    }

    fn reach(&self, core: &Core, window: &Window) -> u64 {
        // The window reaches eight budgets: a read skips ahead at most a
        // budget's worth of entries, as the others' windows allow.
        window.end.min(core.list.position() + core.budget_pages())
    }

    fn is_reread(&self, core: &Core, _window: &Window, key: PageKey) -> bool {
        core.held.contains(key)
    }

    fn round(&mut self, core: &mut Core, budget: u64) -> (Vec<PageKey>, Vec<PageKey>) {
        self.conservative_round(core, budget)
    }

    fn after_round(&mut self, core: &mut Core) {
        // An epoch is a window's worth of reads; the window reaches eight
        // budgets ahead, so a budget's worth of entries here.
        let entries = core.window_entries();
        core.start_epoch(entries.min(core.budget_pages()));
    }

    fn pages_in_use(&self, core: &Core) -> usize {
        core.held.len().max(self.min.cache_len())
    }

    fn forbids_infill(&self, core: &Core, key: PageKey) -> bool {
        core.window
            .as_ref()
            .is_some_and(|window| self.min.caches(&core.list, window, key))
    }

    fn took_infill(&mut self, core: &Core, key: PageKey) {
        if let Some(window) = &core.window {
            self.min.insert_infill(&core.list, window, key);
        }
    }
}

impl Conservative {
    /// The part of the budget that holds pages fetched ahead of their
    /// victims' last uses.
    fn reserve_pages(&self, core: &Core) -> u64 {
        let budget = core.budget_pages();
        match core.config.reserve_pages {
            None => budget / 8,
            Some(pages) => pages.min(budget.saturating_sub(1)),
        }
    }

    /// MIN runs ahead over the list (the window indexes eight
    /// budgets of it) and its replacements are issued as they do no harm. Returns the
    /// pages to fetch and to drop.
    fn conservative_round(&mut self, core: &mut Core, budget: u64) -> (Vec<PageKey>, Vec<PageKey>) {
        let to_usize = |pages: u64| usize::try_from(pages).unwrap_or(usize::MAX);
        let budget_pages = to_usize(budget);
        let capacity = to_usize(budget.saturating_sub(self.reserve_pages(core)).max(1));
        let position = core.list.position();
        // The lookahead only grows: a shrinking window would take entries
        // MIN has seen from under it.
        let lookahead = budget.saturating_mul(LOOKAHEAD_BUDGETS);
        self.lookahead_pages = self.lookahead_pages.max(lookahead);
        let window = core.window.get_or_insert_with(Window::default);
        window.advance(&core.list, self.lookahead_pages, core.list_replaced);
        core.list.keep_from(window.first_indexed());
        let mut drops = Vec::new();
        // A lower budget is absorbed by the reserve: pages fetched ahead
        // are given back (dropped) while MIN's own pages still fit; only a
        // budget below MIN's capacity starts MIN over. The live budget
        // moves every round with the memory cgroup's active pages, and a
        // restart dropped MIN's long-kept pages each time (0.9-2.6 M pages
        // advised and dropped unused on the 1 GiB SQLite scan in 1/4).
        let mut restart = core.list_replaced
            || self.min.cursor() < position
            || window.end < self.min.indexed_to()
            || self.min.capacity() > budget_pages;
        core.list_replaced = false;
        if !restart {
            let planned = self.min.capacity() + self.min.fetched_ahead();
            let over = planned.max(core.held.len()).saturating_sub(budget_pages);
            for key in self.min.give_back(over) {
                if core.held.drop_page(key) {
                    drops.push(key);
                }
            }
            // Infill pages sit in MIN's cache beyond its capacity: when
            // the reserve alone cannot absorb the cut, MIN starts over
            // from the held pages and discards down to its capacity.
            restart = core.held.len() > budget_pages;
        }
        if restart {
            let held: Vec<(PageKey, bool)> = core
                .held
                .keys()
                .map(|key| (key, core.held.role(key) == Some(Role::Infill)))
                .collect();
            for key in self
                .min
                .reset(&core.list, position, held.into_iter(), window, capacity)
            {
                core.held.drop_page(key);
                drops.push(key);
            }
        } else {
            self.min.grow_to(capacity);
        }
        self.min.extend(&core.list, window);
        let until = position.saturating_add(budget.saturating_mul(MIN_RUN_AHEAD_BUDGETS));
        let mut wanted = Vec::new();
        let held = &mut core.held;
        self.min.run(
            &core.list,
            window,
            until,
            position,
            |replacement, fetched_ahead| {
                if let Some(victim) = replacement.victim() {
                    if held.drop_page(victim) {
                        drops.push(victim);
                    }
                }
                if !fetched_ahead && held.fetch(replacement.page(), Role::Listed) {
                    wanted.push(replacement.page());
                }
            },
        );
        // The reserve's room, and never beyond the budget (infill pages may
        // sit in MIN's cache beyond its capacity until MIN discards them).
        let reserve = budget_pages.saturating_sub(self.min.capacity());
        let room = reserve
            .saturating_sub(self.min.fetched_ahead())
            .min(budget_pages.saturating_sub(core.held.len()));
        for page in self.min.fetch_ahead(room) {
            if core.held.fetch(page, Role::Listed) {
                wanted.push(page);
            }
        }
        // MIN's cache can count pages the plan no longer keeps (given
        // back, or evicted by the kernel), so its replacements may bring
        // more than they drop: the fetches needed last wait for a later
        // round rather than take the plan beyond its budget.
        while core.held.len() > budget_pages {
            let Some(page) = wanted.pop() else { break };
            core.held.cancel(page);
        }
        // A page dropped and fetched again in one batch stays; one fetched
        // and dropped again is not read at all.
        drops.retain(|&key| !core.held.contains(key));
        wanted.retain(|&key| core.held.contains(key));
        // Pushed one by one, the lists may hold twice their pages: a round
        // that issues budgets of replacements (after a long wait) peaked
        // with their slack beside its ranges.
        drops.shrink_to_fit();
        wanted.shrink_to_fit();
        (wanted, drops)
    }
}
