//! The libprefetch planner: one client's access list, its schedule of
//! fetches and drops, the pages it keeps, and AIMD. Pure: the caller
//! supplies residency answers and performs the advice calls it returns.
//! The live library and the simulator both drive this type.
//!
//! Follows libprefetch (ATC 2009) sections 4.1-4.6 for the list, the
//! rounds and AIMD, and Cao, Felten, Karlin and Li (SIGMETRICS 1995)
//! section 2.2 for what a round fetches and drops. Each tracked read moves
//! the position along the list:
//!
//! ```text
//!   read of page p     where p is on the list           verdict
//!   ---------------    -----------------------------    -------------------------------
//!   next entry         at the position                  Consumed
//!   later entry        in the window, after position    Consumed (small divergence, 4.1)
//!   earlier entry      in the window, already passed    Reread
//!   anything else      not in the window                Diverged: call back, new round
//! ```
//!
//! A read is placed by the page holding its first byte; its further pages
//! are consumed only if they are the next entries (`on_read_continued`),
//! since the paper matches "a file offset" against the list (4.2) and
//! Figure 7 lists one entry per multi-page tile.
//!
//! # Window growth
//!
//! The window starts small ([`PlannerConfig::start_bytes`], 128 KiB in the
//! library) and grows from what the application is seen to consume; on a
//! seek-bound disk a sparse first window is followed, not fetched. The
//! problem, the cost model, the regimes and the figures that chose them:
//! `planner_growth.rs` ([`growth_factor`]).
//!
//! # Schedules
//!
//! The window (see [`crate::window`]) knows each listed page's next use.
//! Every page the plan keeps counts against the budget (see
//! [`crate::held`]): pages it prefetched, infill pages, and listed pages
//! that were cached already. A schedule (`crate::schedule`, one file
//! each behind one trait) decides when a round is due and what it fetches
//! and drops: `window` (the paper's), `aggressive` and `conservative`
//! (Cao's); `by-shape`, the default, picks one of them per list. This
//! file is what they share: the list, the position, the held pages,
//! AIMD, infill and the advice.
//!
//! Infill fills a gap between two pages to fetch when it is at most the
//! device's break-even gap ([`PlannerConfig::infill_bytes`]) and the
//! budget has room for its pages; infill pages are the first dropped.
//!
//! A new round is due when a read diverges or misses, when the window is
//! used up, and when its schedule says so.
//! A premature eviction is a page the plan keeps, seen in memory (read, or
//! confirmed by the caller's probe), found missing when read: never a page
//! that may simply not have arrived yet. It halves the budget once per
//! round (window) or per epoch (a window's worth of reads, the others),
//! when the plan keeps at least half of the memory available (below that,
//! something other than the plan pushed the page out); a round or epoch
//! without one grows it (section 4.6).
//!
//! A round's cost follows what changed, not the window's size: the window
//! slides from the previous round's, and MIN steps over each entry once.
//! Only these walk the whole window: a list replaced by `PF_SET` /
//! `PF_SET_FROM_MARK`, a premature eviction under `window` (the whole
//! window is advised again), a conservative restart (the budget fell below
//! what MIN keeps, or the position passed MIN), and the reverse pass
//! ([`PlannerConfig::reverse_pass`]).
//!
//! Deviations: the paper halves on any premature eviction; here only when
//! the plan keeps half of the memory available or more. A read past the
//! end of the window is a divergence only if its page is not the next
//! entry. Within a round, WILLNEED ranges go in C-LOOK order from the next
//! page needed (section 3.3) rather than in order of use: they are issued
//! together, and the device serves them best in position order. Each
//! schedule's own deviations are in its file.

use crate::access_list::{AccessList, Entry, Mode, PageKey};
use crate::aimd::Aimd;
use crate::core_state::Core;
use crate::evict::partly_read::PartlyRead;
use crate::held::{Held, Role};
use crate::ranges::{
    clook_from, merge_with_infill, merge_within_room, reverse_access_runs, split_long, GapPage,
};
use crate::readahead::ReadAhead;
use crate::readers::Readers;
use crate::schedule::{self, Due, Rounds};
use crate::window::Window;

pub use crate::planner_types::{PlannerConfig, PlannerStats, ReadOutcome, RoundPlan, Verdict};
pub use crate::schedule::{
    Schedule, CONSERVATIVE_LIST_MEMORY_SHARE, LIST_MEMORY_SHARE, SEEK_BOUND_GAP_BYTES,
};

/// A premature eviction halves the buffer only while the plan keeps at
/// least 1/SHORT_MEMORY_SHARE of the memory available for caching. A page
/// evicted while the plan keeps far less was pushed out by something else
/// (another program, or a proactive reclaimer such as DAMON's pageout
/// scheme, which on this machine's host reclaims a few pages of a fresh
/// prefetch now and then): halving then only re-reads the pages dropped.
/// Measured on the records benchmark (2 GiB, 20 GiB free): one such
/// eviction per epoch halved a slow-starting window, dropped 31k
/// prefetched pages unused and read 12% more of the file.
const SHORT_MEMORY_SHARE: u64 = 2;

/// With several readers, a read outside the window is looked up at most
/// this many entries before its start and past its end
/// ([`Planner::on_read_by`]): threads that share one queue read close
/// together (`git grep`'s 8 threads, a few pages a file, stay within a
/// hundred entries), and a read off the list costs at most this scan.
const NEAR_ENTRIES: u64 = 256;

#[path = "planner_growth.rs"]
mod growth;
pub use growth::{follows_first_window, growth_factor, MAX_GROWTH};

/// One client's planning state: the core, and the schedule in force.
#[derive(Debug)]
pub struct Planner {
    core: Core,
    /// The schedule in force: `config.schedule`, or under `by-shape` the
    /// one chosen for the current list.
    rounds: Box<dyn Rounds>,
    /// A read of a listed page found it missing since the last round, and
    /// slow start grew the buffer for it (once a round).
    grown_on_miss: bool,
    /// The current window is the list's first and is followed, not
    /// fetched (`planner_growth.rs`): its reads are expected misses.
    following: bool,
    /// A read made a round due and it has not been planned yet: the pages
    /// of the same read (or later reads before the round) find it still
    /// due, but do not end the window, nor grow AIMD, again.
    round_pending: Option<Due>,
    /// The callback was last asked at this position and added nothing:
    /// do not ask again until the position moves.
    exhausted_at: Option<u64>,
    /// The callback is asked again only once the position reaches this: a
    /// budget's worth of entries after the last callback (or its list's
    /// end), the paper's cadence of one callback per window. Without it
    /// the sliding schedules, whose rounds come every batch, would ask at
    /// every round while the list is shorter than the budget.
    next_callback_at: u64,
    /// The list was given with [`Mode::SHARED_EDGES`]: held pages a read
    /// covered only in part are forgotten, not dropped.
    shared_edges: bool,
    partly_read: PartlyRead,
    stats: PlannerStats,
}

impl Planner {
    /// A planner with an empty access list.
    pub fn new(config: PlannerConfig) -> Planner {
        Planner {
            rounds: schedule::rounds(config.schedule),
            core: Core {
                list: AccessList::with_capacity(config.capacity),
                window: None,
                list_replaced: false,
                aimd: match config.start_bytes {
                    None => Aimd::new(config.available_bytes, config.floor_bytes),
                    Some(start) => {
                        Aimd::starting_at(config.available_bytes, config.floor_bytes, start)
                    }
                }
                .with_growth(growth_factor(config.request_cost_pages)),
                evicted_this_round: false,
                held: Held::default(),
                readers: Readers::default(),
                readahead: ReadAhead::default(),
                take_back: false,
                last_round_at: 0,
                epoch_end: None,
                config,
            },
            grown_on_miss: false,
            following: false,
            round_pending: None,
            exhausted_at: None,
            next_callback_at: 0,
            shared_edges: false,
            partly_read: PartlyRead::default(),
            stats: PlannerStats::default(),
        }
    }

    /// Lowers the longest single advice range (e.g. for a device whose
    /// WILLNEED calls load less); never raises it.
    pub fn limit_advice_bytes(&mut self, bytes: u64) {
        let floor = self.core.config.page_size;
        self.core.config.max_advice_bytes = self.core.config.max_advice_bytes.min(bytes.max(floor));
    }

    /// Raises the device's far-request cost to `pages` (never lowers it): a
    /// client whose regions lie on several devices grows as fast as its
    /// slowest-seeking device asks ([`PlannerConfig::request_cost_pages`]).
    pub fn raise_request_cost_pages(&mut self, pages: u64) {
        if pages > self.core.config.request_cost_pages {
            self.core.config.request_cost_pages = pages;
            self.core.aimd = self.core.aimd.with_growth(growth_factor(pages));
            self.core.readahead.raise_request_cost(pages);
        }
    }

    /// Raises the kernel's read-ahead window to `pages` (never lowers it):
    /// a page deeper than that into a run of adjacent pages is left to the
    /// kernel ([`crate::readahead`]); 0, the default, leaves nothing. Only
    /// under `by-shape`: a schedule chosen by name advises every page, as
    /// its paper does.
    pub fn raise_readahead_pages(&mut self, pages: u64) {
        if self.core.config.schedule == Schedule::ByShape {
            self.core.readahead.raise_window(pages);
            self.core
                .readahead
                .raise_request_cost(self.core.config.request_cost_pages);
        }
    }

    /// Lowers the infill gap to `bytes` (never raises it): a client whose
    /// regions lie on several devices fills only gaps that pay on all.
    pub fn limit_infill_bytes(&mut self, bytes: u64) {
        self.core.config.infill_bytes = self.core.config.infill_bytes.min(bytes);
    }

    /// The access list may take 1/this of the memory available for
    /// caching, under the schedule in force ([`LIST_MEMORY_SHARE`],
    /// [`CONSERVATIVE_LIST_MEMORY_SHARE`]).
    pub fn list_memory_share(&self) -> u64 {
        self.rounds.list_memory_share()
    }

    /// Changes the access list's capacity (`PlannerConfig::capacity`), for
    /// example to what memory allows now; entries already on the list stay.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.core.config.capacity = capacity;
        self.core.list.set_capacity(capacity);
    }

    /// The configuration in force.
    pub fn config(&self) -> &PlannerConfig {
        &self.core.config
    }

    /// The page holding byte `offset` of `fd`.
    pub fn page_of(&self, fd: i32, offset: u64) -> PageKey {
        PageKey {
            fd,
            page: offset / self.core.config.page_size,
        }
    }

    /// Applies a `request_prefetching` call; returns the entries accepted.
    /// Replacing the list ends the current window (its entries are gone).
    pub fn request(&mut self, entries: &[Entry], mode: Mode) -> usize {
        let end_before = self.core.list.end_seq();
        if mode.contains(Mode::WHOLE_LIST) {
            self.core.aimd.skip_slow_start();
        }
        let replaces = mode.contains(Mode::SET) || mode.contains(Mode::SET_FROM_MARK);
        let shared = mode.contains(Mode::SHARED_EDGES);
        self.shared_edges = shared || (self.shared_edges && !replaces);
        if !self.shared_edges {
            self.partly_read = PartlyRead::default();
        }
        if replaces {
            // The window reads its pages from the list: it keeps them
            // before the list is replaced.
            if let Some(window) = &mut self.core.window {
                window.detach(&self.core.list);
            }
            self.core.end_window();
            self.core.list_replaced = true;
            self.next_callback_at = 0;
        }
        let accepted = self.core.list.request(entries, mode);
        if mode.contains(Mode::SET) || mode.contains(Mode::SET_FROM_MARK) {
            self.core.readers.restart(self.core.list.position());
        }
        if self.core.list.end_seq() != end_before || accepted > 0 {
            self.exhausted_at = None;
        }
        accepted
    }

    /// Accounts a tracked read of `key`; `resident` says whether the page
    /// was in memory when the read arrived. The list's only reader.
    pub fn on_read(&mut self, key: PageKey, resident: bool) -> (Verdict, ReadOutcome) {
        self.on_read_by(crate::readers::NO_READER, key, resident)
    }

    /// [`Planner::on_read`] by `reader` (a thread; or
    /// [`crate::readers::NO_READER`]) of a list several read at once: the
    /// window keeps the pages of the reader furthest behind
    /// ([`crate::readers`]).
    pub fn on_read_by(
        &mut self,
        reader: u64,
        key: PageKey,
        resident: bool,
    ) -> (Verdict, ReadOutcome) {
        let verdict = self.locate(key);
        self.follow_reader(reader, key, verdict);
        let refused = self.core.readahead.on_read(key, resident);
        self.core.take_back |= refused;
        let evicted = self.core.held.on_read(key, resident);
        if evicted {
            self.note_premature_eviction();
        }
        let mut outcome = ReadOutcome {
            start_round: refused,
            ..ReadOutcome::default()
        };
        match verdict {
            Verdict::Diverged => {
                self.stats.divergences += 1;
                outcome.call_back = true;
                outcome.start_round = true;
            }
            _ if !resident && !self.following => {
                if !evicted {
                    self.grow_on_miss();
                }
                outcome.start_round = true;
            }
            _ => {}
        }
        let due = self.round_due();
        outcome.start_round |= due != Due::No;
        if outcome.start_round && due != Due::Early && self.needs_more_list() {
            outcome.call_back = true;
        }
        (verdict, outcome)
    }

    /// Accounts a further page of a read whose first page went through
    /// [`Planner::on_read`]: it is consumed if it is the next entry and
    /// otherwise ignored, so a read of a multi-page record listed once (one
    /// entry per 16 KiB tile, as in Figure 7) is not a divergence.
    pub fn on_read_continued(&mut self, key: PageKey) -> ReadOutcome {
        self.on_read_rest(key.fd, key.page..key.page + 1)
    }

    /// Accounts the further `pages` of `fd` of a read, in order: the same
    /// state and outcome (the pages' outcomes joined) as
    /// [`Planner::on_read_continued`] page by page. Whether a round is due
    /// is asked only from the position the schedule names
    /// ([`Rounds::quiet_until`]): before it the answer is "no", with no
    /// effect, and a page read here changes nothing else that answer
    /// depends on (the pages are resident, so no eviction is seen).
    pub fn on_read_rest(&mut self, fd: i32, pages: std::ops::Range<u64>) -> ReadOutcome {
        let mut outcome = ReadOutcome::default();
        let quiet_until = self.rounds.quiet_until(&self.core);
        for page in pages {
            let key = PageKey { fd, page };
            if !self.core.list.consume_next(key) {
                continue;
            }
            self.core.held.on_read(key, true);
            if self.round_pending.is_none() && self.core.list.position() < quiet_until {
                continue;
            }
            let due = self.round_due();
            if due != Due::No {
                outcome.start_round = true;
                outcome.call_back |= due != Due::Early && self.needs_more_list();
            }
        }
        outcome
    }

    /// The end (exclusive) of the run of adjacent pages left to the
    /// kernel's read-ahead that holds `key`, if one does.
    pub fn left_run_end(&self, key: PageKey) -> Option<u64> {
        self.core.readahead.run_end(key)
    }

    /// Consumes `key` if it is the next entry, with no other effect: for a
    /// read already accounted once, placed again on a list its callback
    /// replaced (the read's pages are read, whatever the new list says).
    pub fn consume_if_next(&mut self, key: PageKey) -> bool {
        self.core.list.consume_next(key)
    }

    /// Moves the position up to the first entry of `key` at or after it
    /// (consuming the entries before it, as reads past them would), for a
    /// caller that stopped following the reads for a while (the live
    /// library's resting client) and picks up at the read of `key`; false,
    /// with no effect, if the list holds no such entry. Costs the entries
    /// passed over.
    pub fn skip_to(&mut self, key: PageKey) -> bool {
        let position = self.core.list.position();
        let found = self
            .core
            .list
            .iter_from(position)
            .find(|(_, entry)| entry.key == key);
        let Some((seq, _)) = found else {
            return false;
        };
        if seq > position {
            self.core.list.consume_through(seq - 1);
        }
        true
    }

    /// Consumes the next `entries` entries (at most to the list's end), as
    /// that many reads following the list would (the last marked entry
    /// among them becomes the last mark), for a caller that counted that
    /// many reads without following them (the live library's resting
    /// client) and whose next read is not on the list.
    pub fn pass_entries(&mut self, entries: u64) {
        let position = self.core.list.position();
        let end = self
            .core
            .list
            .end_seq()
            .min(position.saturating_add(entries));
        if end > position {
            self.core.list.consume_through(end - 1);
        }
    }

    /// The caller's probe saw `key` in memory: if the plan keeps it and it
    /// is later read missing, that is a premature eviction.
    pub fn confirm_cached(&mut self, key: PageKey) {
        self.core.held.confirm(key);
    }

    /// A followed read covered only part of `key` (it began or ended inside
    /// it): on a list given with [`Mode::SHARED_EDGES`] the rest is another
    /// reader's, so if the plan holds the page it will forget it rather than
    /// drop it ([`crate::evict::partly_read`]).
    pub fn note_partly_read(&mut self, key: PageKey) {
        if self.shared_edges && self.core.held.contains(key) {
            self.partly_read.note(key);
        }
    }

    /// Whether a round should start after the read just accounted; ends a
    /// consumed window's round (window) or an epoch (the others).
    fn round_due(&mut self) -> Due {
        if let Some(due) = self.round_pending {
            return due;
        }
        let due = self.rounds.round_due(&mut self.core);
        self.round_pending = (due != Due::No).then_some(due);
        due
    }

    /// Finds `key` on the list and moves the position past it.
    fn locate(&mut self, key: PageKey) -> Verdict {
        let position = self.core.list.position();
        if self.core.list.get(position).is_some_and(|e| e.key == key) {
            self.core.list.consume_through(position);
            return Verdict::Consumed;
        }
        let Some(window) = &self.core.window else {
            return Verdict::Diverged;
        };
        // A window ended by PF_SET keeps its pages (for the stale set) but
        // its sequence numbers now name the new list's entries.
        let reach = self.rounds.reach(&self.core, window);
        let in_window = window
            .find_from(&self.core.list, key, position)
            .filter(|&seq| seq < reach);
        if let Some(seq) = in_window {
            self.core.list.consume_through(seq);
            Verdict::Consumed
        } else if self.rounds.is_reread(&self.core, window, key) {
            Verdict::Reread
        } else if let Some(seq) = self.near_the_window(key, reach) {
            if seq < position {
                return Verdict::Reread;
            }
            self.core.list.consume_through(seq);
            Verdict::Consumed
        } else if let Some(seq) = self.skipped_to(key, reach) {
            self.core.list.consume_through(seq);
            Verdict::Consumed
        } else {
            Verdict::Diverged
        }
    }

    /// The entry of `key` past the window's `reach`, within what the next
    /// window would reach (the budget times the slow-start growth in slow
    /// start, else one budget): the application read on past entries its
    /// own cache served (SQLite's, for an index scan's repeated table
    /// pages), not a divergence; section 4.2's list may hold reads that
    /// never reach the file. Diverging there left the list behind the reads.
    fn skipped_to(&self, key: PageKey, reach: u64) -> Option<u64> {
        let steps = match self.core.aimd.in_slow_start() {
            true => self.core.aimd.growth(),
            false => 1,
        };
        let ahead = self.budget_pages().saturating_mul(steps);
        self.core
            .list
            .iter_from(reach)
            .take(usize::try_from(ahead).unwrap_or(usize::MAX))
            .find(|(_, entry)| entry.key == key)
            .map(|(seq, _)| seq)
    }

    /// With several readers on the list ([`crate::readers`]), the entry of
    /// `key` outside the window, at most half a window before its start or
    /// past the position: a thread a little ahead of the others reads there
    /// while the window is not yet slid (and a thread behind it reads
    /// what lies between), which is not a divergence (the callback would
    /// restart the list at its place, and the next read of a thread
    /// behind would restart it back). `None` with one reader: the paper's
    /// divergence.
    fn near_the_window(&self, key: PageKey, reach: u64) -> Option<u64> {
        let position = self.core.list.position();
        let lag = self.readers_lag();
        if !self.core.readers.several(position, lag) {
            return None;
        }
        // The window's entries were looked up already: only the bands
        // before the window's start when it was slid (a reader behind, after
        // a restart put every reader at the start) and past its end are
        // scanned, at most NEAR_ENTRIES each way (a window ended, consumed
        // but not yet planned, starts and ends at the position: around it).
        let near = lag.min(NEAR_ENTRIES);
        let floor = self.core.readers.last_floor().min(reach);
        let before = floor.saturating_sub(near)..floor;
        let after = match reach > position {
            true => reach..reach.saturating_add(near),
            false => position.saturating_sub(near)..position.saturating_add(near),
        };
        [before, after].into_iter().find_map(|band| {
            let entries = self.core.list.iter_from(band.start);
            let mut band = entries.take_while(|&(seq, _)| seq < band.end);
            band.find(|(_, entry)| entry.key == key).map(|(seq, _)| seq)
        })
    }

    /// How far behind the position a reader still holds the window
    /// ([`crate::readers`]): half of it.
    fn readers_lag(&self) -> u64 {
        self.budget_pages() / 2
    }

    /// Moves `reader`'s place: the position if its read moved it, else the
    /// entry it read behind the position, found in the window from its
    /// last place.
    fn follow_reader(&mut self, reader: u64, key: PageKey, verdict: Verdict) {
        let position = self.core.list.position();
        let readers = &mut self.core.readers;
        if verdict == Verdict::Consumed {
            readers.moved(reader, position);
            return;
        }
        let from = readers.place(reader).unwrap_or(0);
        let seq = self.core.window.as_ref().and_then(|window| {
            let seq = window.find_from(&self.core.list, key, from)?;
            (seq < position).then_some(seq)
        });
        readers.read_behind(reader, seq, position);
    }

    fn note_premature_eviction(&mut self) {
        self.stats.premature_evictions += 1;
        if !self.core.evicted_this_round {
            self.core.evicted_this_round = true;
            if self.memory_is_short() {
                self.core.aimd.decrease();
            }
        }
    }

    /// True when what the plan keeps is a large part of the memory it may
    /// use ([`SHORT_MEMORY_SHARE`]): only then can its own pages have
    /// pushed one of them out, and a smaller buffer help.
    fn memory_is_short(&self) -> bool {
        let held_bytes = (self.core.held.len() as u64).saturating_mul(self.core.config.page_size);
        held_bytes.saturating_mul(SHORT_MEMORY_SHARE) >= self.core.aimd.available()
    }

    /// A listed page was read missing (not a premature eviction): the
    /// application waits on a page the plan had not asked for yet, so slow
    /// start takes its next step now, once a round.
    fn grow_on_miss(&mut self) {
        if self.core.aimd.in_slow_start() && !self.grown_on_miss && !self.core.evicted_this_round {
            self.grown_on_miss = true;
            self.core.aimd.increase();
        }
    }

    /// True if the list ahead is shorter than a full window, the
    /// application has not already said it has nothing more from here, and
    /// a window's worth of entries has been read since the last callback.
    fn needs_more_list(&self) -> bool {
        let budget = self.budget_pages();
        let position = self.core.list.position();
        self.core.list.remaining() < budget
            && self.exhausted_at != Some(position)
            && position >= self.next_callback_at
    }

    /// Records that a callback ran at the current position; if it added
    /// nothing, further callbacks wait until the position moves. The next
    /// is asked a budget's worth of entries later, or at the list's end.
    pub fn callback_returned(&mut self, list_end_before: u64) {
        let position = self.core.list.position();
        if self.core.list.end_seq() == list_end_before {
            self.exhausted_at = Some(position);
        }
        self.next_callback_at = self
            .core
            .list
            .end_seq()
            .min(position.saturating_add(self.budget_pages()));
    }

    /// Sequence number one past the last entry (to compare around a callback).
    pub fn list_end(&self) -> u64 {
        self.core.list.end_seq()
    }

    /// Pages the current budget allows in one window.
    pub fn budget_pages(&self) -> u64 {
        self.core.budget_pages()
    }

    /// Starts a round: returns the pages to drop and the ranges to
    /// prefetch. Costs O(entries entering or leaving the window) when the
    /// window overlaps the previous one on an unreplaced list (plus, for
    /// conservative, MIN's steps over the new entries); O(window) after a
    /// premature eviction (window), when the reverse pass is on, when the
    /// window is selected from scratch, or when MIN starts over.
    pub fn plan_round(&mut self) -> RoundPlan {
        let first_window = self.core.window.is_none() || self.core.list_replaced;
        self.choose_schedule_by_shape();
        let budget = self.budget_pages();
        let (mut wanted, drops) = self.rounds.round(&mut self.core, budget);
        self.follow_if_sparse(first_window, &mut wanted);
        self.round_pending = None;
        self.grown_on_miss = false;
        let mut plan = self.advice(wanted, drops, budget);
        let window = self.core.window.get_or_insert_with(Window::default);
        if self.core.config.reverse_pass {
            plan.reverse = reverse_access_runs(window.access_order(&self.core.list));
        }
        plan.window_pages = window.page_count() as u64;
        plan.held_pages = self.core.held.len() as u64;
        self.stats.rounds += 1;
        self.stats.pages_prefetched += plan.fetch.iter().map(|r| r.len).sum::<u64>();
        self.stats.pages_dropped += plan.evict.iter().map(|r| r.len).sum::<u64>();
        self.core.last_round_at = self.core.list.position();
        self.rounds.after_round(&mut self.core);
        plan
    }

    /// A list's first window during slow start, on a seek-bound device, is
    /// followed rather than fetched when its pages are sparse
    /// ([`follows_first_window`]): its pages are no longer kept, and
    /// `wanted` is emptied. Any later round ends the following.
    fn follow_if_sparse(&mut self, first_window: bool, wanted: &mut Vec<PageKey>) {
        let config = &self.core.config;
        self.following = first_window
            && self.core.aimd.in_slow_start()
            && follows_first_window(wanted, config.request_cost_pages, config.page_size);
        if self.following {
            for key in wanted.drain(..) {
                self.core.held.cancel(key);
            }
        }
    }

    /// `by-shape`: picks the schedule for a list seen for the first time
    /// (the first round, or a list replaced since the last).
    fn choose_schedule_by_shape(&mut self) {
        let fresh_list = self.core.window.is_none() || self.core.list_replaced;
        if self.core.config.schedule != Schedule::ByShape || !fresh_list {
            return;
        }
        let memory_pages = self.core.aimd.cap() / self.core.config.page_size;
        let far_request_bytes = self
            .core
            .config
            .request_cost_pages
            .saturating_mul(self.core.config.page_size);
        let chosen = Schedule::for_list(
            &self.core.list,
            self.core.list.position(),
            memory_pages,
            self.core.config.infill_bytes.max(far_request_bytes),
        );
        if chosen != self.rounds.schedule() {
            self.rounds = schedule::rounds(chosen);
            self.core.epoch_end = None;
            self.core.evicted_this_round = false;
        }
    }

    /// Turns a round's pages into advice: the fetches merged with infill
    /// where the budget has room, in C-LOOK order from the next page the
    /// application needs, split at the advice limit; the drops as ranges.
    /// Each list of pages is freed once it is made ranges: all four at once
    /// were the peak of a round that fetches and drops many pages.
    fn advice(
        &mut self,
        mut wanted: Vec<PageKey>,
        mut drops: Vec<PageKey>,
        budget: u64,
    ) -> RoundPlan {
        let held = &self.core.held;
        self.partly_read
            .keep_cached(&mut drops, held.len(), |key| held.contains(key));
        drops.sort_unstable();
        let evict = merge_with_infill(&drops, 0);
        drop(drops);
        wanted.sort_unstable();
        wanted.dedup();
        let used = self.rounds.pages_in_use(&self.core);
        let room = budget.saturating_sub(used as u64);
        let infill_pages = self.core.config.infill_bytes / self.core.config.page_size;
        let (core, rounds) = (&self.core, &self.rounds);
        let (ranges, infill) = merge_within_room(&wanted, infill_pages, room, |key| {
            if core.held.contains(key) {
                GapPage::Held
            } else if rounds.forbids_infill(core, key) {
                GapPage::Forbidden
            } else {
                GapPage::Free
            }
        });
        drop(wanted);
        for &key in &infill {
            self.core.held.fetch(key, Role::Infill);
            self.rounds.took_infill(&self.core, key);
        }
        let head = self
            .core
            .list
            .get(self.core.list.position())
            .map(|e| e.key)
            .unwrap_or(PageKey {
                fd: i32::MIN,
                page: 0,
            });
        let max_pages = self.core.config.max_advice_bytes / self.core.config.page_size;
        RoundPlan {
            evict,
            fetch: split_long(clook_from(ranges, head), max_pages),
            ..RoundPlan::default()
        }
    }

    /// The last marked entry the application has passed.
    pub fn last_mark(&self) -> Option<PageKey> {
        self.core.list.last_mark()
    }

    /// Entries stored on the list.
    pub fn list_len(&self) -> usize {
        self.core.list.len()
    }

    /// Entries of the list not yet read (those past the position).
    pub fn list_remaining(&self) -> u64 {
        self.core.list.remaining()
    }

    /// Current reorder-buffer size in bytes.
    pub fn budget_bytes(&self) -> u64 {
        self.core.aimd.current()
    }

    /// Updates the memory available for caching (AIMD's reference).
    pub fn set_available(&mut self, bytes: u64) {
        self.core.aimd.set_available(bytes);
    }

    /// The planner's counters.
    pub fn stats(&self) -> PlannerStats {
        let held = self.core.held.stats();
        PlannerStats {
            prefetched_used: held.prefetched_used,
            prefetched_unused_dropped: held.prefetched_unused_dropped,
            infill_pages: held.infill_pages,
            ..self.stats
        }
    }

    /// Pages the plan keeps now (listed, infill, not yet dropped).
    pub fn held_pages(&self) -> u64 {
        self.core.held.len() as u64
    }

    /// True if the plan keeps `key`.
    pub fn holds(&self, key: PageKey) -> bool {
        self.core.held.contains(key)
    }

    /// The current window, if a round is in progress.
    pub fn window(&self) -> Option<&Window> {
        self.core.window.as_ref()
    }

    /// The current window's unique pages, sorted (none before a round).
    pub fn window_pages(&self) -> Vec<PageKey> {
        self.core
            .window
            .as_ref()
            .map_or_else(Vec::new, |window| window.pages(&self.core.list))
    }
}

#[cfg(test)]
#[path = "planner_rest_tests.rs"]
mod rest_tests;
