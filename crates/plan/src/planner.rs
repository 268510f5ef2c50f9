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
//! The problem: the planner does not know how much of its list the
//! application will read. A `LIMIT 20` query lists a whole index scan and
//! stops after 20 rows; Figure 7 lists 3,000 pages and reads them all. A
//! window of 90% of memory (the paper's start) reads the whole list for
//! the first and is right for the second; a small window is right for the
//! first and, on a disk, ruinous for the second: every round is one C-LOOK
//! sweep across the file, and a sweep of a few dozen scattered pages costs
//! a seek and a turn a page, as unsorted reads do.
//!
//! So the window starts small ([`PlannerConfig::start_bytes`], 128 KiB in
//! the library) and grows from what the application is seen to consume,
//! as PostgreSQL's `read_stream.c` grows its look-ahead distance when the
//! consumer has to wait for I/O. The regimes:
//!
//! - **Keeps reading.** Once the application has read all but 1/g of the
//!   window, the next window is g times larger and is planned at once, so
//!   its sweep overlaps the rest of this window's reads.
//! - **Waits.** A read of a listed page that is missing (neither cached nor
//!   in flight: the application outran the plan) takes the next step at
//!   once, once a round, whatever the window's progress.
//! - **Abandons.** Nothing grows: the list cost the windows already
//!   planned, one on a seek-bound disk, two on flash for 20 reads.
//! - **Memory short.** A premature eviction ends slow start (AIMD, section
//!   4.6); [`Mode::WHOLE_LIST`] skips it (the application says it reads
//!   everything).
//!
//! g is the device's cost of a far request in pages of transfer
//! ([`PlannerConfig::request_cost_pages`], [`growth_factor`]), at least 2:
//! a window of w scattered pages costs about w far requests, so the next
//! window is sized to take as long to transfer as this one took in
//! requests. On flash g is 2 (doubling, planned at half the window); on
//! the emulated 7200 RPM disk (13.5 ms a far request at 103 MB/s, 339
//! pages) the second window holds 10,880 pages, and Figure 7's 3,000
//! reads take two sweeps:
//!
//! ```text
//!   reads ->   0        16   32                                  3000
//!   flash      [32][--64--][---128---][----256----] ... (doubling at half)
//!   disk       [32]---------[---- 10,880: the rest of the list ----]
//!                  ^ step: all but 32/339 of the first window read
//! ```
//!
//! The figures that chose this (emulated disk, time scale 0.1, 3,000
//! random pages of a 128 MiB file, docs/repro.md): doubling from 128 KiB
//! took 0.555 s, seven sweeps of which the five below 1,024 pages cost
//! about a turn a page; the paper's start 0.17 s; growth by the far cost
//! 0.19 s, within 1.15x of it. A step is capped at [`MAX_GROWTH`] so that
//! no profile, however slow its device, turns the first step into more
//! than 1,024 windows. What it costs: on the disk a list abandoned after
//! 20 reads still reads its first window of 32 pages (a sweep of 32
//! scattered pages, about a turn each), and one abandoned after 200 reads
//! reads its whole second window.
//!
//! # Schedules
//!
//! The window (see [`crate::window`]) knows each listed page's next use.
//! Every page the plan keeps counts against the budget (see
//! [`crate::held`]): pages it prefetched, infill pages, and listed pages
//! that were cached already. Three schedules decide a round's advice (a
//! fourth, `by-shape`, the default, picks one of them per list):
//!
//! - `window`, the paper's reorder buffer (section 4.5): a round takes the
//!   first `budget` unique pages; the next round starts when they have all
//!   been read. Kept so that the paper's results can be reproduced.
//! - `aggressive` (Cao section 2.5): the window slides every `batch` reads;
//!   the pages that entered it (needed soonest, rule 1) are fetched and the
//!   pages that left it (needed after all of the window's, rule 2) make
//!   room. Since every page entering is needed before every page leaving,
//!   no fetch does harm (rule 3).
//! - `conservative` (Cao section 2.4): Belady's MIN run ahead on the list
//!   (see [`crate::min_ahead`]); each of its replacements is issued once
//!   the victim's last use before the replacement has been read (rules 3
//!   and 4). It fetches what MIN fetches: the fewest possible. Alone, on a
//!   list with reuse larger than memory, that fetches each page a read or
//!   two before its use, with no queue depth; so by default MIN plans with
//!   7/8 of the budget and the rest is a reserve into which the next
//!   replacements' pages are fetched ahead ([`PlannerConfig::reserve_pages`];
//!   `Some(0)` is Cao's schedule exactly).
//!
//! Measured on two lists larger than memory (docs/repro.md, "Next-use
//! planning"; simulated, 64 MiB and 124 MiB of memory, the budget AIMD's
//! 90% of it):
//!
//! ```text
//!   list                       pages read (x Belady's optimum)      time, simulated NVMe
//!                              window  aggressive  conservative     window  conservative
//!   random, 400k of 512 MiB    1.44    1.52        1.06             1.7 s   1.4 s
//!   SQLite-like index scan     1.80    2.15        1.19             1.9 s   1.6 s
//! ```
//!
//! In simulation conservative with its reserve reads the fewest pages and
//! is the fastest on the SSD model (without the reserve, three prefetches
//! in four are read within 32 entries of their round: no queue depth). On
//! the simulated rotating disk the window is 3.7-7.4x faster even so: its
//! rounds are whole windows in C-LOOK order (49-102 KiB average seek,
//! against 4-8 MiB for conservative's rounds of 1/64 of the budget).
//!
//! The default was long `window`, by the live measurement: the
//! random list above through the library on this project's test machine
//! (virtio disk, 64 MiB memory cgroup) took 5.9-10.0 s with `window` and
//! 11.1-15.4 s with `conservative` (when its window indexed the whole
//! list), both reading about 1.4-1.5 GiB, what
//! stock reads (the planner before budgeted infill read 4.4-5.0 GiB, in
//! 14.5-16.9 s; stock took 24.6-34.2 s). The kernel's LRU evicted the
//! pages MIN keeps longest (read once, long ago: the oldest pages of the
//! cgroup), 79-89 premature evictions halved the budget to 6-12 MB, and
//! with it went MIN's advantage; the window keeps only pages needed soon,
//! which the kernel's LRU keeps too. With the index bounded to eight
//! budgets, conservative read 1.27 GiB (10% less than stock and the
//! window) but took 12.9-15.6 s, stalling on 1,300-1,900 reads whose page
//! had not arrived (the window: 4-9); with a reserve of 1/4 of the budget
//! it took 6.3-9.7 s (the window 5.9 s in that session), still reading
//! 1.28 GiB.
//!
//! Aggressive against window, live, later (this machine's disk, one run
//! each, other builds running): under memory pressure aggressive is as
//! good or better: a 1 GiB SQLite index scan in a cgroup of 1/4, 16.0 s
//! against 23.6 s (the extension now picks aggressive for a database larger
//! than memory); the reuse-heavy random list in 64 MiB, 4.4-4.6 s against
//! 5.9-10.2 s; random 1 GiB in 100 MiB, 1.23-1.26 s against 1.33-1.39 s,
//! for 2.6% more pages. It is worse on the Python records epoch in a
//! cgroup (6.4-7.0 s against 5.6-6.7 s) and, with memory free, on the
//! SQLite scan (9.8-11.2 s against 8.6-9.1 s). The benchmark table run both
//! ways later, on a quiet machine (`LIBPREFETCH_SCHEDULE`, window against
//! aggressive, medians of 3 or one run): random 1 GiB 1.24 / 1.10 s; in a
//! 100 MiB cgroup 1.55 / 1.12 s; the reuse-heavy list in 64 MiB 6.33 /
//! 4.48 s; three instances in 200 MiB 9.99 / 3.52 s; but sequential 0.64 /
//! 1.22 s and strided 1.24 / 2.89 s: on lists of runs of adjacent pages the
//! window's large sorted rounds make large requests and aggressive's small
//! batches do not.
//!
//! Hence the default, `by-shape` ([`Schedule::for_list`], chosen for each
//! list set): runs of adjacent pages get the window; scattered pages get
//! aggressive while the list ahead has no more entries than memory has
//! pages, conservative when it has more. Conservative, once a budget cut
//! no longer restarted MIN, read fewer pages than aggressive on every
//! scattered list larger than memory (one run each, same minutes: random
//! 1 GiB in 100 MiB 90,094 against 92,961 pages, 1.08 s both; the
//! reuse-heavy list 351,069 against 368,803, 3.99 against 4.44 s; three
//! instances in 200 MiB 272.9-278.4k against 285.5k, but 3.41-4.66 s
//! against 3.31-3.49 s). Charged the 320 bytes an entry its structures
//! were then said to cost, its list is shorter and it reads 1-2% more
//! (91,911, 360,672 and 277,138 pages). On a seek-bound device (see
//! [`SEEK_BOUND_GAP_BYTES`]) the window is kept for scattered lists too.
//! The Python records epoch is planned as runs, as before; the SQLite
//! extension chooses for itself: window when the database fits in memory,
//! where it is faster on the index scan, conservative when it does not
//! (with entries of 200 bytes, 7% fewer pages than aggressive on the 1 GiB
//! scan in a quarter, in the same time; at 320 bytes it read no fewer)
//! but memory holds at least an eighth of it, window again below that.
//!
//! What keeps live conservative from its simulated reads is the length of
//! the list: MIN needs next uses several budgets ahead. The library lets
//! the planner take 1/8 of the memory, 1/3 under conservative
//! ([`CONSERVATIVE_LIST_MEMORY_SHARE`], measured there), at
//! [`crate::ENTRY_COST_BYTES`] (74) an entry beside
//! [`crate::BUDGET_PAGE_COST_BYTES`] (124) a page of its largest budget:
//! about 6.0 budgets of entries at 1/8, 18.8 at 1/3. Before the two were
//! told apart, one charge of 200 bytes an entry covered both and allowed
//! 2.8 budgets at 1/8, 7.6 at 1/3 (1.3 at the 384 bytes entries cost
//! before the window's index and the list were made compact, 2.5 at 224
//! before the round's page lists and the list's growth were trimmed, 1.8
//! for conservative at the 320 it was charged before MIN's cache, heap and
//! queue were made compact; measured by `tests/memory.rs` over list
//! lengths across an octave, where the earlier structures really took up
//! to 410 bytes an entry, not the 297.5 one length showed). Memory that
//! grew with the budget (MIN's cache by page, a heap of 32-byte keys, the
//! held pages' table) then filled most of the share; MIN's cache is now
//! kept by list position, and the window, the list and the held pages
//! store each key once, compactly. On the Python records benchmark's epoch
//! (666,661 entries over 524,280 pages, a budget of 112,000 pages),
//! replaying the planner with the list refilled by callbacks as the library
//! does: conservative reads 524,280 pages with the whole list (the
//! optimum), 545,507 with 600,000 entries and 617,857 with the 150,000 the
//! library allowed at 384 bytes an entry (live: 613-636 k); the window
//! reads 607,093 at any length. At 224 bytes the library allowed about
//! 257,000 entries, at 200 about 288,000. On the SQLite-like scan
//! (`cargo run --release -p sim --example list_length`) conservative reads
//! 1.86x the optimum with 1.4 budgets of list, 1.54x with 2.8, 1.37x with
//! 5.6. On the reuse-heavy random list in 40 MiB (what the budget finds in
//! the benchmark's 64 MiB cgroup) it reads 1.36x, 1.34x, 1.23x, 1.13x and
//! 1.08x the optimum with 1.4, 2.8, 5.6, 11 and 22 budgets of list, and
//! the window and aggressive 1.37x and 1.41x at any length: live, with
//! about 2.5 budgets, all three read what LRU reads. At the 6.0 budgets
//! the library now allows at 1/8, conservative reads 1.21x the optimum on
//! the random list and 1.34x on the SQLite-like scan (1.34x and 1.52x at
//! 2.8, in the same replay). Live at 1/3 (18.8 budgets; one sitting, one
//! run each): the reuse-heavy list in 64 MiB read 296-298k pages, 1.27x
//! the cgroup's optimum, against 303-308k (1.30-1.32x) at 7.6 budgets
//! charged 200 bytes an entry; the 1 GiB SQLite scan in a quarter 1.07 M
//! pages (1.48x) in 15.6 s, against 1.08 M (1.51x) in 13.7 s (stock: 1.60
//! M in 79.8 s). Eleven budgets of
//! list at 224 bytes an entry would take 20 MiB of that cgroup; entries of
//! about 56 bytes would fit them in the list's share of 1/8. Live with the compact entries, the 1 GiB SQLite scan in a cgroup of
//! a quarter (three runs each): conservative 1.28-1.37 M pages in 18.3-20.3
//! s, aggressive 1.35-1.45 M in 15.5-17.6 s (optimum 0.72 M); so the
//! extension keeps aggressive. Conservative restarted MIN whenever the
//! budget fell below what MIN and its reserve held, and the live budget
//! moves every round (the cgroup's active file pages come and go): its
//! counters showed 0.9-2.6 M listed pages advised and dropped before use.
//! Now a budget lowered by less than the reserve only gives back pages
//! fetched ahead.
//!
//! Under `by-shape`, a page deeper into a run of adjacent pages than the
//! kernel's read-ahead window is left to the kernel, which reads such runs
//! ahead in large requests by itself ([`crate::readahead`],
//! [`Planner::raise_readahead_pages`]).
//!
//! Infill fills a gap between two pages to fetch when it is at most the
//! device's break-even gap ([`PlannerConfig::infill_bytes`]) and the
//! budget has room for its pages; infill pages are the first dropped.
//!
//! A new round is due when a read diverges or misses, when the window is
//! used up, and: (window) once the window has been read; (aggressive,
//! conservative) every `batch` reads ([`PlannerConfig::batch_pages`]);
//! (conservative without a reserve) once `batch` replacements are
//! issuable or the first is needed within `batch` entries.
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
//! the plan keeps half of the memory available or more. The paper drops the previous round's pages that the new
//! window does not need; here they are dropped only when their room is
//! wanted (with a list that is a prefix of the real future, which section
//! 4.2 allows, that threw away pages needed right after it), infill first.
//! The paper starts a round on any buffer-cache miss; here a round also
//! starts as soon as the window is consumed. A read past the end of the
//! window is a divergence only if its page is not the next entry. Cao's
//! rule 4 asks for a fetch at every opportunity; `batch` gathers fetches
//! into fewer advice calls. Conservative's reserve breaks rule 3 on
//! purpose: a page fetched ahead into it is held while MIN drops pages
//! needed before it; the price is MIN's fetches for 7/8 of the budget.
//! Within a round, WILLNEED ranges go in C-LOOK order from the next page
//! needed (section 3.3) rather than in order of use: they are issued
//! together, and the device serves them best in position order.
//! Conservative's window reaches eight budgets ahead, so a read skips
//! ahead to a later entry only within a budget's worth of entries; under aggressive
//! and conservative a read of a page the plan keeps is a reread, not a
//! divergence.

use crate::access_list::{AccessList, Entry, Mode, PageKey};
use crate::aimd::Aimd;
use crate::held::{Held, Role};
use crate::min_ahead::MinAhead;
use crate::ranges::{
    clook_from, merge_with_infill, merge_within_room, reverse_access_runs, split_long, GapPage,
    PageRange,
};
use crate::readahead::ReadAhead;
use crate::window::Window;

/// Conservative: MIN runs this many budgets' worth of entries ahead of the
/// position. Its replacements are the same however far it runs; running
/// further only lets one be issued earlier when its victim's last use is
/// far behind its own use, and costs the first round a walk of the list
/// (1.5-2.3 s for 1.6 M entries, against 0.4 s to index them).
const MIN_RUN_AHEAD_BUDGETS: u64 = 2;

/// Conservative: the window indexes the list ahead up to this many budgets
/// of distinct pages, for MIN's next uses. Pages read 1.41x / 1.64x of
/// Belady's optimum with 2 budgets, 1.15x / 1.19x with 4, 1.06x / 1.19x
/// with 8 as with the whole list (the random and SQLite-like lists of
/// docs/repro.md); the index costs memory in proportion, but never more
/// than the list it indexes: at the 6.0 budgets of list the library allows
/// it covers the whole list (its page index is counted per entry).
const LOOKAHEAD_BUDGETS: u64 = 8;

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

/// The access list may take 1/LIST_MEMORY_SHARE of the memory available
/// for caching: the list is anonymous memory, so in a memory cgroup it
/// takes room from the cache it plans. Window and aggressive look at most
/// a budget or so ahead, so for them a longer list is only memory taken
/// from the cache.
pub const LIST_MEMORY_SHARE: u64 = 8;

/// ... and 1/CONSERVATIVE_LIST_MEMORY_SHARE under conservative, whose MIN
/// needs next uses several budgets ahead: a page of memory given to the
/// list saves more reads than the same page given to the cache. Measured
/// live against 1/8 (two runs each, one sitting): the 1 GiB SQLite scan in
/// a cgroup of a quarter read 1.09-1.10 M pages against 1.22-1.25 M
/// (1/2: 1.07-1.09 M, 1/4: 1.09-1.12 M); the 64 MiB database in 16 MiB
/// 74.8k against 86-88k; the reuse-heavy random list in 64 MiB 301k
/// against 343k (1/4: 311k), in 3.3 s against 5.0 s; random 1 GiB in 100
/// MiB 87.1k against 89.8k, three instances in 200 MiB 269k against 273k.
/// The Python records epoch (runs, planned by the window) read 4% more
/// with 1/3, hence the share follows the schedule. (Measured when one
/// charge of 200 bytes an entry stood for all the planner's memory: 1/3
/// then allowed 7.6 budgets of list, which took less than that share; at
/// the measured costs per entry and per budget page it allows 18.8.)
/// Measured again at those costs, 1/3 against 1/5 (two runs each, one
/// sitting): the SQLite scan 1.03-1.04 M pages against 1.04-1.07 M, the
/// reuse-heavy list 292k against 295k.
pub const CONSERVATIVE_LIST_MEMORY_SHARE: u64 = 3;

/// Slow start multiplies the buffer by at most this a step: from the
/// library's first window of 128 KiB, 128 MiB after one step (header,
/// "Window growth").
pub const MAX_GROWTH: u64 = 1024;

/// What a slow-start step multiplies the buffer by on a device whose far
/// request costs `request_cost_pages` pages of transfer: that cost itself,
/// between 2 (doubling, a device with no seek cost or an unknown one) and
/// [`MAX_GROWTH`]. The next window then takes as long to transfer as the
/// current one took in requests (header, "Window growth").
pub fn growth_factor(request_cost_pages: u64) -> u64 {
    request_cost_pages.clamp(2, MAX_GROWTH)
}

/// `by-shape`: entries sampled to tell runs from scattered pages.
const SHAPE_SAMPLE_ENTRIES: usize = 4096;

/// `by-shape`: a device whose break-even gap is this or more is seek-bound,
/// and gets the window whatever the list's shape. A random list of 4,000
/// pages of 256 MiB on the emulated 7200 RPM disk (break-even gap 1.4 MB)
/// took 10.1-10.3 s with the window and 13.3-14.6 s with aggressive; this
/// machine's virtio disk measures 9 KB.
pub const SEEK_BOUND_GAP_BYTES: u64 = 256 << 10;

/// When a round fetches and what it drops (see the module's header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// The paper's reorder buffer (ATC 2009, section 4.5): the first
    /// `budget` unique pages, the next round once they have all been read.
    Window,
    /// Cao et al.'s aggressive (section 2.5): the window slides every
    /// `batch` reads, dropping the pages that left it, fetching those that
    /// entered.
    Aggressive,
    /// Cao et al.'s conservative (section 2.4): MIN's replacements, each at
    /// its first harmless opportunity.
    Conservative,
    /// The paper's window for a list of runs of adjacent pages; for a list
    /// of scattered pages, aggressive while it fits in memory and
    /// conservative when it is longer; chosen from the first entries of
    /// each list set ([`Schedule::for_list`]). The live library's default.
    #[default]
    ByShape,
}

impl Schedule {
    /// Every schedule, in the order of [`Schedule::name`].
    pub const ALL: [Schedule; 4] = [
        Schedule::Window,
        Schedule::Aggressive,
        Schedule::Conservative,
        Schedule::ByShape,
    ];

    /// The schedule's name: `window`, `aggressive`, `conservative` or
    /// `by-shape`.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Window => "window",
            Schedule::Aggressive => "aggressive",
            Schedule::Conservative => "conservative",
            Schedule::ByShape => "by-shape",
        }
    }

    /// The schedule `by-shape` picks for `list` from `position`, with room
    /// for `memory_pages` pages, on a device whose break-even gap (per
    /// request cost times transfer rate, [`PlannerConfig::infill_bytes`])
    /// is `break_even_bytes`: `window` if among the next 4,096 entries at
    /// least half continue a run (the page of the entry before them or the
    /// next one, in the same file), whose large sorted rounds make large
    /// requests, or if the device is seek-bound (a break-even gap of
    /// [`SEEK_BOUND_GAP_BYTES`] or more: a rotating disk), where its whole
    /// rounds in C-LOOK order pay for their pages. Otherwise the pages are
    /// scattered on a device without seek cost: `aggressive` if the list
    /// ahead has no more entries than memory has pages (it cannot need
    /// more than memory), else `conservative`, which reads fewer pages
    /// when they are read again after memory has filled.
    pub fn for_list(
        list: &AccessList,
        position: u64,
        memory_pages: u64,
        break_even_bytes: u64,
    ) -> Schedule {
        let mut previous: Option<PageKey> = None;
        let (mut sampled, mut continuing) = (0u64, 0u64);
        for (_, entry) in list.iter_from(position).take(SHAPE_SAMPLE_ENTRIES) {
            let key = entry.key;
            if let Some(before) = previous {
                sampled += 1;
                let follows =
                    key.fd == before.fd && (key.page == before.page || key.page == before.page + 1);
                continuing += u64::from(follows);
            }
            previous = Some(key);
        }
        if continuing * 2 >= sampled || break_even_bytes >= SEEK_BOUND_GAP_BYTES {
            Schedule::Window
        } else if list.end_seq().saturating_sub(position) <= memory_pages {
            Schedule::Aggressive
        } else {
            Schedule::Conservative
        }
    }

    /// The schedule called `name`, if any.
    pub fn from_name(name: &str) -> Option<Schedule> {
        Schedule::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Tunables of one planner. Sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannerConfig {
    /// Page size used to turn byte offsets into pages.
    pub page_size: u64,
    /// Largest gap filled between two pages to fetch (section 3.3): the
    /// device's break-even gap, per-request cost times transfer rate
    /// ([`crate::competitive::break_even_gap_bytes`]); 0 disables infill.
    /// Gap pages count against the budget and are filled only where it
    /// has room.
    pub infill_bytes: u64,
    /// Longest single WILLNEED range; one fadvise call loads at most
    /// max(read_ahead_kb, max_sectors_kb), so longer ranges are split.
    pub max_advice_bytes: u64,
    /// Maximum number of access-list entries.
    pub capacity: usize,
    /// Memory available for caching (AIMD's reference).
    pub available_bytes: u64,
    /// Lowest reorder-buffer size AIMD may reach.
    pub floor_bytes: u64,
    /// First reorder-buffer size: `None` starts at 90% of the available
    /// memory, as the paper does; `Some(bytes)` starts there and grows as
    /// the application consumes the list (slow start, the header's
    /// "Window growth"; [`Aimd::starting_at`]).
    pub start_bytes: Option<u64>,
    /// The device's cost of a far request (a seek and rotation on a disk,
    /// a command on flash) in pages of transfer: far-request seconds times
    /// the transfer rate over the page size; 0 when unknown. Sets how fast
    /// slow start grows ([`growth_factor`]) and, at
    /// [`SEEK_BOUND_GAP_BYTES`] or more, marks the device seek-bound.
    pub request_cost_pages: u64,
    /// Compute the reverse-access-order ranges of each round
    /// ([`RoundPlan::reverse`]); they cost a walk of the whole window.
    pub reverse_pass: bool,
    /// When rounds fetch and what they drop.
    pub schedule: Schedule,
    /// Aggressive and conservative: reads between two rounds; 0 means
    /// 1/64 of the budget.
    pub batch_pages: u64,
    /// Conservative: the part of the budget kept for pages fetched ahead of
    /// MIN's replacements (see [`crate::min_ahead`]); `None` means 1/8 of
    /// the budget, `Some(0)` Cao's conservative exactly (MIN's fetches,
    /// each just in time).
    pub reserve_pages: Option<u64>,
}

impl Default for PlannerConfig {
    fn default() -> PlannerConfig {
        PlannerConfig {
            page_size: 4096,
            infill_bytes: 32 << 10,
            max_advice_bytes: 4 << 20,
            capacity: 1 << 20,
            available_bytes: 1 << 30,
            floor_bytes: 1 << 20,
            start_bytes: None,
            request_cost_pages: 0,
            reverse_pass: false,
            schedule: Schedule::default(),
            batch_pages: 0,
            reserve_pages: None,
        }
    }
}

/// Where a tracked read falls relative to the access list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The read is on the list at or after the position; the position moved past it.
    Consumed,
    /// The page was already read earlier in this window (or, under
    /// aggressive and conservative, the plan keeps it).
    Reread,
    /// The page is not in the current window: the application changed its plan.
    Diverged,
}

/// What the caller should do after a read (beyond letting it proceed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOutcome {
    /// Ask the application for a new access list before the next round.
    pub call_back: bool,
    /// Run a prefetching round now (`Planner::plan_round`).
    pub start_round: bool,
}

/// The advice of one round, in the order it should be issued.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundPlan {
    /// Pages the plan stops keeping (infill, pages no longer needed, or the
    /// victims of the round's replacements): DONTNEED them, in one batch,
    /// before the fetches.
    pub evict: Vec<PageRange>,
    /// WILLNEED ranges in C-LOOK order, with infill, split at the advice
    /// limit: the pages the plan now keeps and did not before (under
    /// `window`, the whole window again after a premature eviction).
    pub fetch: Vec<PageRange>,
    /// WILLNEED again in reverse access order, so that under memory pressure
    /// the pages needed last are evicted first (section 4.5); empty unless
    /// [`PlannerConfig::reverse_pass`] is set.
    pub reverse: Vec<PageRange>,
    /// Unique pages in the window.
    pub window_pages: u64,
    /// Pages the plan keeps after this round: listed, infill and not yet
    /// dropped (never above the budget once the round's drops are issued).
    pub held_pages: u64,
}

/// Counters the planner keeps about its own decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlannerStats {
    /// Rounds planned.
    pub rounds: u64,
    /// Reads that were not in the window.
    pub divergences: u64,
    /// Held pages seen in memory and later found missing before their use.
    pub premature_evictions: u64,
    /// Pages covered by WILLNEED ranges (infill included).
    pub pages_prefetched: u64,
    /// Pages covered by DONTNEED ranges.
    pub pages_dropped: u64,
    /// Prefetched pages later read while the plan kept them.
    pub prefetched_used: u64,
    /// Prefetched pages dropped before any read.
    pub prefetched_unused_dropped: u64,
    /// Gap pages advised as infill.
    pub infill_pages: u64,
}

/// One client's planning state.
#[derive(Debug)]
pub struct Planner {
    config: PlannerConfig,
    /// The schedule in force: `config.schedule`, or under `by-shape` the
    /// one chosen for the current list.
    schedule: Schedule,
    list: AccessList,
    window: Option<Window>,
    /// The list was replaced since the window was last selected, so the
    /// window's entries no longer match it.
    list_replaced: bool,
    aimd: Aimd,
    /// A premature eviction was seen in the current round (window) or
    /// epoch (aggressive, conservative).
    evicted_this_round: bool,
    /// A read of a listed page found it missing since the last round, and
    /// slow start grew the buffer for it (once a round).
    grown_on_miss: bool,
    /// A read made a round due and it has not been planned yet: the pages
    /// of the same read (or later reads before the round) find it still
    /// due, but do not end the window, nor grow AIMD, again.
    round_pending: Option<Due>,
    /// The pages the plan keeps.
    held: Held,
    /// MIN run ahead (conservative).
    min: MinAhead,
    /// The run pages left to the kernel's read-ahead (window, aggressive).
    readahead: ReadAhead,
    /// A read showed that the kernel does not read ahead: the next round
    /// advises the pages left to it.
    take_back: bool,
    /// Position at the last round (aggressive: the next is due a batch later).
    last_round_at: u64,
    /// Conservative: distinct pages the window indexes ahead (the largest
    /// lookahead asked for so far).
    lookahead_pages: u64,
    /// Aggressive and conservative: AIMD grows once the position passes
    /// this with no premature eviction (a window's worth of reads).
    epoch_end: Option<u64>,
    /// The callback was last asked at this position and added nothing:
    /// do not ask again until the position moves.
    exhausted_at: Option<u64>,
    /// The callback is asked again only once the position reaches this: a
    /// budget's worth of entries after the last callback (or its list's
    /// end), the paper's cadence of one callback per window. Without it
    /// the sliding schedules, whose rounds come every batch, would ask at
    /// every round while the list is shorter than the budget.
    next_callback_at: u64,
    stats: PlannerStats,
}

/// Whether a read makes a round due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Due {
    No,
    Yes,
    /// The window's next round, planned at half its reads during slow
    /// start; the list is not asked for more (the window is not used up).
    Early,
}

impl Planner {
    /// A planner with an empty access list.
    pub fn new(config: PlannerConfig) -> Planner {
        Planner {
            schedule: match config.schedule {
                Schedule::ByShape => Schedule::Window,
                chosen => chosen,
            },
            list: AccessList::with_capacity(config.capacity),
            window: None,
            list_replaced: false,
            aimd: match config.start_bytes {
                None => Aimd::new(config.available_bytes, config.floor_bytes),
                Some(start) => Aimd::starting_at(config.available_bytes, config.floor_bytes, start),
            }
            .with_growth(growth_factor(config.request_cost_pages)),
            grown_on_miss: false,
            evicted_this_round: false,
            round_pending: None,
            held: Held::default(),
            min: MinAhead::default(),
            readahead: ReadAhead::default(),
            take_back: false,
            last_round_at: 0,
            lookahead_pages: 0,
            epoch_end: None,
            exhausted_at: None,
            next_callback_at: 0,
            stats: PlannerStats::default(),
            config,
        }
    }

    /// Lowers the longest single advice range (e.g. for a device whose
    /// WILLNEED calls load less); never raises it.
    pub fn limit_advice_bytes(&mut self, bytes: u64) {
        let floor = self.config.page_size;
        self.config.max_advice_bytes = self.config.max_advice_bytes.min(bytes.max(floor));
    }

    /// Raises the device's far-request cost to `pages` (never lowers it): a
    /// client whose regions lie on several devices grows as fast as its
    /// slowest-seeking device asks ([`PlannerConfig::request_cost_pages`]).
    pub fn raise_request_cost_pages(&mut self, pages: u64) {
        if pages > self.config.request_cost_pages {
            self.config.request_cost_pages = pages;
            self.aimd = self.aimd.with_growth(growth_factor(pages));
            self.readahead.raise_request_cost(pages);
        }
    }

    /// Raises the kernel's read-ahead window to `pages` (never lowers it):
    /// a page deeper than that into a run of adjacent pages is left to the
    /// kernel ([`crate::readahead`]); 0, the default, leaves nothing. Only
    /// under `by-shape`: a schedule chosen by name advises every page, as
    /// its paper does.
    pub fn raise_readahead_pages(&mut self, pages: u64) {
        if self.config.schedule == Schedule::ByShape {
            self.readahead.raise_window(pages);
            self.readahead
                .raise_request_cost(self.config.request_cost_pages);
        }
    }

    /// Lowers the infill gap to `bytes` (never raises it): a client whose
    /// regions lie on several devices fills only gaps that pay on all.
    pub fn limit_infill_bytes(&mut self, bytes: u64) {
        self.config.infill_bytes = self.config.infill_bytes.min(bytes);
    }

    /// The access list may take 1/this of the memory available for
    /// caching, under the schedule in force ([`LIST_MEMORY_SHARE`],
    /// [`CONSERVATIVE_LIST_MEMORY_SHARE`]).
    pub fn list_memory_share(&self) -> u64 {
        match self.schedule {
            Schedule::Conservative => CONSERVATIVE_LIST_MEMORY_SHARE,
            _ => LIST_MEMORY_SHARE,
        }
    }

    /// Changes the access list's capacity (`PlannerConfig::capacity`), for
    /// example to what memory allows now; entries already on the list stay.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.config.capacity = capacity;
        self.list.set_capacity(capacity);
    }

    /// The configuration in force.
    pub fn config(&self) -> &PlannerConfig {
        &self.config
    }

    /// The page holding byte `offset` of `fd`.
    pub fn page_of(&self, fd: i32, offset: u64) -> PageKey {
        PageKey {
            fd,
            page: offset / self.config.page_size,
        }
    }

    /// Applies a `request_prefetching` call; returns the entries accepted.
    /// Replacing the list ends the current window (its entries are gone).
    pub fn request(&mut self, entries: &[Entry], mode: Mode) -> usize {
        let end_before = self.list.end_seq();
        if mode.contains(Mode::WHOLE_LIST) {
            self.aimd.skip_slow_start();
        }
        if mode.contains(Mode::SET) || mode.contains(Mode::SET_FROM_MARK) {
            // The window reads its pages from the list: it keeps them
            // before the list is replaced.
            if let Some(window) = &mut self.window {
                window.detach(&self.list);
            }
            self.end_window();
            self.list_replaced = true;
            self.next_callback_at = 0;
        }
        let accepted = self.list.request(entries, mode);
        if self.list.end_seq() != end_before || accepted > 0 {
            self.exhausted_at = None;
        }
        accepted
    }

    /// Accounts a tracked read of `key`; `resident` says whether the page
    /// was in memory when the read arrived.
    pub fn on_read(&mut self, key: PageKey, resident: bool) -> (Verdict, ReadOutcome) {
        let verdict = self.locate(key);
        let refused = self.readahead.on_read(key, resident);
        self.take_back |= refused;
        let evicted = self.held.on_read(key, resident);
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
            _ if !resident => {
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
        let position = self.list.position();
        if self.list.get(position).is_none_or(|e| e.key != key) {
            return ReadOutcome::default();
        }
        self.list.consume_through(position);
        self.held.on_read(key, true);
        let mut outcome = ReadOutcome::default();
        let due = self.round_due();
        if due != Due::No {
            outcome.start_round = true;
            outcome.call_back = due != Due::Early && self.needs_more_list();
        }
        outcome
    }

    /// Consumes `key` if it is the next entry, with no other effect: for a
    /// read already accounted once, placed again on a list its callback
    /// replaced (the read's pages are read, whatever the new list says).
    pub fn consume_if_next(&mut self, key: PageKey) -> bool {
        let position = self.list.position();
        let next = self.list.get(position).is_some_and(|e| e.key == key);
        if next {
            self.list.consume_through(position);
        }
        next
    }

    /// The caller's probe saw `key` in memory: if the plan keeps it and it
    /// is later read missing, that is a premature eviction.
    pub fn confirm_cached(&mut self, key: PageKey) {
        self.held.confirm(key);
    }

    /// Whether a round should start after the read just accounted; ends a
    /// consumed window's round (window) or an epoch (the others).
    fn round_due(&mut self) -> Due {
        if let Some(due) = self.round_pending {
            return due;
        }
        let due = self.round_due_now();
        self.round_pending = (due != Due::No).then_some(due);
        due
    }

    /// [`Planner::round_due`] when no round is pending.
    fn round_due_now(&mut self) -> Due {
        if self.schedule == Schedule::Window {
            if self.window_consumed() {
                self.finish_round();
                return Due::Yes;
            }
            if self.slow_start_step_due() {
                self.grow_if_clean();
                return Due::Early;
            }
            return Due::No;
        }
        self.check_epoch();
        let position = self.list.position();
        let batch = self.batch_pages();
        let due = match self.schedule {
            Schedule::Aggressive => position >= self.last_round_at + batch,
            // Without a reserve, a replacement is issued when its victim is
            // free: at once if its page is needed within a batch.
            _ if self.reserve_pages() == 0 => self.min.front().is_some_and(|first| {
                first.issuable(position)
                    && (first.at() < position + batch
                        || self.min.nth_issuable(batch as usize - 1, position))
            }),
            _ => position >= self.last_round_at + batch && self.min.front().is_some(),
        };
        if due || self.window_consumed() {
            Due::Yes
        } else {
            Due::No
        }
    }

    /// Aggressive and conservative: AIMD grows after an epoch with no
    /// premature eviction.
    fn check_epoch(&mut self) {
        if self
            .epoch_end
            .is_some_and(|end| self.list.position() >= end)
        {
            if !self.evicted_this_round {
                self.aimd.increase();
            }
            self.evicted_this_round = false;
            self.epoch_end = None;
        }
    }

    /// Conservative: the part of the budget that holds pages fetched ahead
    /// of their victims' last uses.
    fn reserve_pages(&self) -> u64 {
        let budget = self.budget_pages();
        match self.config.reserve_pages {
            None => budget / 8,
            Some(pages) => pages.min(budget.saturating_sub(1)),
        }
    }

    /// Fetches a round gathers (aggressive, conservative).
    fn batch_pages(&self) -> u64 {
        match self.config.batch_pages {
            0 => (self.budget_pages() / 64).max(1),
            pages => pages,
        }
    }

    /// Finds `key` on the list and moves the position past it.
    fn locate(&mut self, key: PageKey) -> Verdict {
        let position = self.list.position();
        if self.list.get(position).is_some_and(|e| e.key == key) {
            self.list.consume_through(position);
            return Verdict::Consumed;
        }
        let Some(window) = &self.window else {
            return Verdict::Diverged;
        };
        // A window ended by PF_SET keeps its pages (for the stale set) but
        // its sequence numbers now name the new list's entries.
        // Conservative's window reaches eight budgets: a read skips ahead at
        // most a budget's worth of entries, as the others' windows allow.
        let next_use_schedule = self.schedule != Schedule::Window;
        let reach = match self.schedule {
            Schedule::Conservative => window.end.min(position + self.budget_pages()),
            _ => window.end,
        };
        let in_window = window
            .find_from(&self.list, key, position)
            .filter(|&seq| seq < reach);
        if let Some(seq) = in_window {
            self.list.consume_through(seq);
            Verdict::Consumed
        } else if (next_use_schedule && self.held.contains(key))
            || (window.contains(&self.list, key) && self.schedule != Schedule::Conservative)
        {
            Verdict::Reread
        } else {
            Verdict::Diverged
        }
    }

    fn note_premature_eviction(&mut self) {
        self.stats.premature_evictions += 1;
        if !self.evicted_this_round {
            self.evicted_this_round = true;
            if self.memory_is_short() {
                self.aimd.decrease();
            }
        }
    }

    /// True when what the plan keeps is a large part of the memory it may
    /// use ([`SHORT_MEMORY_SHARE`]): only then can its own pages have
    /// pushed one of them out, and a smaller buffer help.
    fn memory_is_short(&self) -> bool {
        let held_bytes = (self.held.len() as u64).saturating_mul(self.config.page_size);
        held_bytes.saturating_mul(SHORT_MEMORY_SHARE) >= self.aimd.available()
    }

    /// The whole window has been read.
    fn window_consumed(&self) -> bool {
        self.window
            .as_ref()
            .is_some_and(|w| self.list.position() >= w.end)
    }

    /// Window, during slow start: all but 1/growth of the window has been
    /// read (half of it when the window doubles). The next, `growth` times
    /// larger window is planned now, so its reads overlap the reading of
    /// the rest of this one; the bet that the application reads on is
    /// covered by that rest (header, "Window growth").
    fn slow_start_step_due(&self) -> bool {
        let growth = self.aimd.growth();
        self.aimd.in_slow_start()
            && self.window.as_ref().is_some_and(|w| {
                let len = w.end - w.start;
                let step = w.end - len / growth;
                len > 0 && self.list.position() >= step
            })
    }

    /// A listed page was read missing (not a premature eviction): the
    /// application waits on a page the plan had not asked for yet, so slow
    /// start takes its next step now, once a round.
    fn grow_on_miss(&mut self) {
        if self.aimd.in_slow_start() && !self.grown_on_miss && !self.evicted_this_round {
            self.grown_on_miss = true;
            self.aimd.increase();
        }
    }

    /// Ends a consumed round: AIMD grows if nothing was evicted early.
    fn finish_round(&mut self) {
        self.grow_if_clean();
        self.end_window();
    }

    /// AIMD grows after a round with no premature eviction.
    fn grow_if_clean(&mut self) {
        if !self.evicted_this_round {
            self.aimd.increase();
        }
    }

    /// Forgets the window's entries but keeps its pages for the stale set.
    fn end_window(&mut self) {
        if let Some(window) = &mut self.window {
            window.start = self.list.position();
            window.end = window.start;
        }
    }

    /// True if the list ahead is shorter than a full window, the
    /// application has not already said it has nothing more from here, and
    /// a window's worth of entries has been read since the last callback.
    fn needs_more_list(&self) -> bool {
        let budget = self.budget_pages();
        let position = self.list.position();
        self.list.remaining() < budget
            && self.exhausted_at != Some(position)
            && position >= self.next_callback_at
    }

    /// Records that a callback ran at the current position; if it added
    /// nothing, further callbacks wait until the position moves. The next
    /// is asked a budget's worth of entries later, or at the list's end.
    pub fn callback_returned(&mut self, list_end_before: u64) {
        let position = self.list.position();
        if self.list.end_seq() == list_end_before {
            self.exhausted_at = Some(position);
        }
        self.next_callback_at = self
            .list
            .end_seq()
            .min(position.saturating_add(self.budget_pages()));
    }

    /// Sequence number one past the last entry (to compare around a callback).
    pub fn list_end(&self) -> u64 {
        self.list.end_seq()
    }

    /// Pages the current budget allows in one window.
    pub fn budget_pages(&self) -> u64 {
        (self.aimd.current() / self.config.page_size).max(1)
    }

    /// Starts a round: returns the pages to drop and the ranges to
    /// prefetch. Costs O(entries entering or leaving the window) when the
    /// window overlaps the previous one on an unreplaced list (plus, for
    /// conservative, MIN's steps over the new entries); O(window) after a
    /// premature eviction (window), when the reverse pass is on, when the
    /// window is selected from scratch, or when MIN starts over.
    pub fn plan_round(&mut self) -> RoundPlan {
        self.choose_schedule_by_shape();
        let budget = self.budget_pages();
        let (wanted, drops) = match self.schedule {
            Schedule::Conservative => self.conservative_round(budget),
            _ => self.window_round(budget),
        };
        self.round_pending = None;
        self.grown_on_miss = false;
        let mut plan = self.advice(wanted, drops, budget);
        let window = self.window.get_or_insert_with(Window::default);
        if self.config.reverse_pass {
            plan.reverse = reverse_access_runs(window.access_order(&self.list));
        }
        plan.window_pages = window.page_count() as u64;
        plan.held_pages = self.held.len() as u64;
        self.stats.rounds += 1;
        self.stats.pages_prefetched += plan.fetch.iter().map(|r| r.len).sum::<u64>();
        self.stats.pages_dropped += plan.evict.iter().map(|r| r.len).sum::<u64>();
        self.last_round_at = self.list.position();
        if self.schedule == Schedule::Window {
            self.evicted_this_round = false;
        } else if self.epoch_end.is_none() {
            // A window's worth of reads; conservative's window reaches eight
            // budgets ahead, so a budget's worth of entries there.
            let entries = window.end - window.start;
            let reads = match self.schedule {
                Schedule::Conservative => entries.min(self.budget_pages()),
                _ => entries,
            };
            self.epoch_end = Some(self.last_round_at + reads.max(1));
        }
        plan
    }

    /// `by-shape`: picks the schedule for a list seen for the first time
    /// (the first round, or a list replaced since the last).
    fn choose_schedule_by_shape(&mut self) {
        let fresh_list = self.window.is_none() || self.list_replaced;
        if self.config.schedule != Schedule::ByShape || !fresh_list {
            return;
        }
        let memory_pages = self.aimd.cap() / self.config.page_size;
        let far_request_bytes = self
            .config
            .request_cost_pages
            .saturating_mul(self.config.page_size);
        let chosen = Schedule::for_list(
            &self.list,
            self.list.position(),
            memory_pages,
            self.config.infill_bytes.max(far_request_bytes),
        );
        if chosen != self.schedule {
            self.schedule = chosen;
            self.epoch_end = None;
            self.evicted_this_round = false;
        }
    }

    /// Window and aggressive: slides the window; the pages that entered
    /// are fetched, those that left are kept until their room is wanted.
    /// Returns the pages to fetch and to drop.
    fn window_round(&mut self, budget: u64) -> (Vec<PageKey>, Vec<PageKey>) {
        let window = self.window.get_or_insert_with(Window::default);
        // The runs left to the kernel are indexed as ranges, not page by
        // page: they enter the window without entering the round's pages.
        let (list, readahead) = (&self.list, &mut self.readahead);
        readahead.restart(list.position(), self.list_replaced);
        let slide = window.slide_skipping(list, budget, self.list_replaced, &mut |seq| {
            readahead.left_from(list, seq)
        });
        self.list.keep_from(window.first_indexed());
        self.list_replaced = false;
        let (held, readahead) = (&mut self.held, &self.readahead);
        let mut wanted: Vec<PageKey> = slide
            .entered
            .into_iter()
            .filter(|&key| !readahead.is_left(key) && held.fetch(key, Role::Listed))
            .collect();
        for key in slide.left {
            self.held.set_role(key, Role::Stale);
        }
        // Pages of the previous window were advised already; they need it
        // again only if some were found evicted (the kernel's read-ahead
        // reads its own again).
        if self.evicted_this_round && self.schedule == Schedule::Window {
            wanted = window.pages(&self.list);
            wanted.retain(|&key| !self.readahead.is_left(key));
        }
        if std::mem::take(&mut self.take_back) {
            let ahead = window.pages(&self.list);
            let held = &mut self.held;
            wanted.extend(
                self.readahead
                    .take_back(ahead)
                    .into_iter()
                    .filter(|&key| held.fetch(key, Role::Listed)),
            );
        }
        let mut drops = Vec::new();
        let keep = (self.aimd.keep_limit() / self.config.page_size).max(budget);
        while self.held.len() as u64 > keep {
            match self.held.drop_first_unneeded() {
                Some(key) => drops.push(key),
                None => break,
            }
        }
        (wanted, drops)
    }

    /// Conservative: MIN runs ahead over the list (the window indexes eight
    /// budgets of it) and its replacements are issued as they do no harm. Returns the
    /// pages to fetch and to drop.
    fn conservative_round(&mut self, budget: u64) -> (Vec<PageKey>, Vec<PageKey>) {
        let to_usize = |pages: u64| usize::try_from(pages).unwrap_or(usize::MAX);
        let budget_pages = to_usize(budget);
        let capacity = to_usize(budget.saturating_sub(self.reserve_pages()).max(1));
        let position = self.list.position();
        // The lookahead only grows: a shrinking window would take entries
        // MIN has seen from under it.
        let lookahead = budget.saturating_mul(LOOKAHEAD_BUDGETS);
        self.lookahead_pages = self.lookahead_pages.max(lookahead);
        let window = self.window.get_or_insert_with(Window::default);
        window.advance(&self.list, self.lookahead_pages, self.list_replaced);
        self.list.keep_from(window.first_indexed());
        let mut drops = Vec::new();
        // A lower budget is absorbed by the reserve: pages fetched ahead
        // are given back (dropped) while MIN's own pages still fit; only a
        // budget below MIN's capacity starts MIN over. The live budget
        // moves every round with the memory cgroup's active pages, and a
        // restart dropped MIN's long-kept pages each time (0.9-2.6 M pages
        // advised and dropped unused on the 1 GiB SQLite scan in 1/4).
        let mut restart = self.list_replaced
            || self.min.cursor() < position
            || window.end < self.min.indexed_to()
            || self.min.capacity() > budget_pages;
        self.list_replaced = false;
        if !restart {
            let planned = self.min.capacity() + self.min.fetched_ahead();
            let over = planned.max(self.held.len()).saturating_sub(budget_pages);
            for key in self.min.give_back(over) {
                if self.held.drop_page(key) {
                    drops.push(key);
                }
            }
            // Infill pages sit in MIN's cache beyond its capacity: when
            // the reserve alone cannot absorb the cut, MIN starts over
            // from the held pages and discards down to its capacity.
            restart = self.held.len() > budget_pages;
        }
        if restart {
            let held: Vec<(PageKey, bool)> = self
                .held
                .keys()
                .map(|key| (key, self.held.role(key) == Some(Role::Infill)))
                .collect();
            for key in self
                .min
                .reset(&self.list, position, held.into_iter(), window, capacity)
            {
                self.held.drop_page(key);
                drops.push(key);
            }
        } else {
            self.min.grow_to(capacity);
        }
        self.min.extend(&self.list, window);
        let until = position.saturating_add(budget.saturating_mul(MIN_RUN_AHEAD_BUDGETS));
        let mut wanted = Vec::new();
        let held = &mut self.held;
        self.min.run(
            &self.list,
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
            .min(budget_pages.saturating_sub(self.held.len()));
        for page in self.min.fetch_ahead(room) {
            if self.held.fetch(page, Role::Listed) {
                wanted.push(page);
            }
        }
        // MIN's cache can count pages the plan no longer keeps (given
        // back, or evicted by the kernel), so its replacements may bring
        // more than they drop: the fetches needed last wait for a later
        // round rather than take the plan beyond its budget.
        while self.held.len() > budget_pages {
            let Some(page) = wanted.pop() else { break };
            self.held.cancel(page);
        }
        // A page dropped and fetched again in one batch stays; one fetched
        // and dropped again is not read at all.
        drops.retain(|&key| !self.held.contains(key));
        wanted.retain(|&key| self.held.contains(key));
        // Pushed one by one, the lists may hold twice their pages: a round
        // that issues budgets of replacements (after a long wait) peaked
        // with their slack beside its ranges.
        drops.shrink_to_fit();
        wanted.shrink_to_fit();
        (wanted, drops)
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
        drops.sort_unstable();
        let evict = merge_with_infill(&drops, 0);
        drop(drops);
        wanted.sort_unstable();
        wanted.dedup();
        let conservative = self.schedule == Schedule::Conservative;
        let used = if conservative {
            self.held.len().max(self.min.cache_len())
        } else {
            self.held.len()
        };
        let room = budget.saturating_sub(used as u64);
        let infill_pages = self.config.infill_bytes / self.config.page_size;
        let (held, min, list, window) = (&self.held, &self.min, &self.list, self.window.as_ref());
        let (ranges, infill) = merge_within_room(&wanted, infill_pages, room, |key| {
            if held.contains(key) {
                GapPage::Held
            } else if conservative && window.is_some_and(|window| min.caches(list, window, key)) {
                GapPage::Forbidden
            } else {
                GapPage::Free
            }
        });
        drop(wanted);
        for &key in &infill {
            self.held.fetch(key, Role::Infill);
            if conservative {
                if let Some(window) = &self.window {
                    self.min.insert_infill(&self.list, window, key);
                }
            }
        }
        let head = self
            .list
            .get(self.list.position())
            .map(|e| e.key)
            .unwrap_or(PageKey {
                fd: i32::MIN,
                page: 0,
            });
        let max_pages = self.config.max_advice_bytes / self.config.page_size;
        RoundPlan {
            evict,
            fetch: split_long(clook_from(ranges, head), max_pages),
            ..RoundPlan::default()
        }
    }

    /// The last marked entry the application has passed.
    pub fn last_mark(&self) -> Option<PageKey> {
        self.list.last_mark()
    }

    /// Entries stored on the list.
    pub fn list_len(&self) -> usize {
        self.list.len()
    }

    /// Current reorder-buffer size in bytes.
    pub fn budget_bytes(&self) -> u64 {
        self.aimd.current()
    }

    /// Updates the memory available for caching (AIMD's reference).
    pub fn set_available(&mut self, bytes: u64) {
        self.aimd.set_available(bytes);
    }

    /// The planner's counters.
    pub fn stats(&self) -> PlannerStats {
        let held = self.held.stats();
        PlannerStats {
            prefetched_used: held.prefetched_used,
            prefetched_unused_dropped: held.prefetched_unused_dropped,
            infill_pages: held.infill_pages,
            ..self.stats
        }
    }

    /// Pages the plan keeps now (listed, infill, not yet dropped).
    pub fn held_pages(&self) -> u64 {
        self.held.len() as u64
    }

    /// True if the plan keeps `key`.
    pub fn holds(&self, key: PageKey) -> bool {
        self.held.contains(key)
    }

    /// The current window, if a round is in progress.
    pub fn window(&self) -> Option<&Window> {
        self.window.as_ref()
    }

    /// The current window's unique pages, sorted (none before a round).
    pub fn window_pages(&self) -> Vec<PageKey> {
        self.window
            .as_ref()
            .map_or_else(Vec::new, |window| window.pages(&self.list))
    }
}
