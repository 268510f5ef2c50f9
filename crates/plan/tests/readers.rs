//! Several threads reading one list (`plan::readers`): the thread ahead
//! moves the position, yet the pages the thread behind has still to read
//! are neither dropped nor advised twice, and a thread that stopped reading
//! does not hold the window back.

use std::collections::HashSet;

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, Schedule};

const FD: i32 = 3;

/// How many entries the fast reader runs ahead of the slow one.
const LEAD: usize = 8;

fn key(page: u64) -> PageKey {
    PageKey { fd: FD, page }
}

/// A window planner with a budget of 36 pages (90% of 40), no infill, and
/// `pages` listed.
fn planner(pages: &[u64]) -> Planner {
    let mut planner = Planner::new(PlannerConfig {
        available_bytes: 40 * 4096,
        floor_bytes: 4096,
        infill_bytes: 0,
        schedule: Schedule::Window,
        ..PlannerConfig::default()
    });
    planner.request(&entries(pages), Mode::SET | Mode::WHOLE_LIST);
    planner
}

/// `pages` as list entries.
fn entries(pages: &[u64]) -> Vec<Entry> {
    pages
        .iter()
        .map(|&page| Entry {
            key: key(page),
            mark: false,
        })
        .collect()
}

/// [`planner`] of 400 scattered pages, its first round run and reader 2
/// `LEAD` entries in.
fn started() -> (Vec<u64>, Planner, Seen) {
    let pages: Vec<u64> = (0..400).map(|i| i * 100).collect();
    let mut planner = planner(&pages);
    let mut seen = Seen::default();
    seen.round(&mut planner);
    for &page in &pages[..LEAD] {
        seen.read(&mut planner, 2, page);
    }
    (pages, planner, seen)
}

/// What the reads saw: pages advised (with repeats) and pages dropped
/// before the slow reader read them.
#[derive(Default)]
struct Seen {
    advised: Vec<u64>,
    dropped: HashSet<u64>,
}

impl Seen {
    fn round(&mut self, planner: &mut Planner) {
        let plan = planner.plan_round();
        for range in plan.fetch {
            self.advised.extend(range.start..range.start + range.len);
            for page in range.start..range.start + range.len {
                self.dropped.remove(&page);
            }
        }
        for range in plan.evict {
            self.dropped.extend(range.start..range.start + range.len);
        }
    }

    /// `reader` reads `page`, found resident unless dropped since advised;
    /// runs the round it asks for.
    fn read(&mut self, planner: &mut Planner, reader: u64, page: u64) {
        if self.read_only(planner, reader, page) {
            self.round(planner);
        }
    }

    /// [`Seen::read`] without the round: returns whether one is due (its
    /// thread runs it once the read is accounted, other threads read
    /// meanwhile).
    fn read_only(&mut self, planner: &mut Planner, reader: u64, page: u64) -> bool {
        let resident = !self.dropped.contains(&page);
        let (_, outcome) = planner.on_read_by(reader, key(page), resident);
        if outcome.call_back {
            let end = planner.list_end();
            planner.callback_returned(end);
        }
        outcome.start_round
    }
}

/// Reader 2 runs 8 entries ahead of reader 1 through 400 scattered pages,
/// with a window of 36; reader 3 reads the first page once and stops.
#[test]
fn a_thread_ahead_does_not_drop_what_a_thread_behind_has_still_to_read() {
    let pages: Vec<u64> = (0..400).map(|i| i * 100).collect();
    let mut planner = planner(&pages);
    let mut seen = Seen::default();
    seen.round(&mut planner);
    seen.read(&mut planner, 3, pages[0]);
    for &page in &pages[..LEAD] {
        seen.read(&mut planner, 2, page);
    }
    for (i, &page) in pages.iter().enumerate() {
        if let Some(&ahead) = pages.get(i + LEAD) {
            seen.read(&mut planner, 2, ahead);
        }
        assert!(
            !seen.dropped.contains(&page),
            "entry {i} (page {page}) was dropped before the slow reader read it"
        );
        seen.read(&mut planner, 1, page);
    }
    let unique: HashSet<u64> = seen.advised.iter().copied().collect();
    assert_eq!(seen.advised.len(), unique.len(), "a page was advised twice");
    assert_eq!(unique.len(), pages.len(), "every page was advised");
}

/// Readers 2 to 6 take the next five entries, 8 ahead of reader 1, and
/// read them out of order; a round runs only once all have read. A read
/// a little past a window its round has not yet slid is found on the
/// list, not a divergence (its callback would restart the list at that
/// reader's place, and the next read behind would restart it back).
#[test]
fn a_thread_just_past_the_window_before_its_round_is_not_a_divergence() {
    let (pages, mut planner, mut seen) = started();
    for (chunk, slow) in pages.chunks(5).enumerate() {
        let mut due = false;
        for (reader, at) in [(6, 4), (2, 0), (5, 3), (3, 1), (4, 2)] {
            if let Some(&ahead) = pages.get(5 * chunk + LEAD + at) {
                due |= seen.read_only(&mut planner, reader, ahead);
            }
        }
        for &page in slow {
            assert!(!seen.dropped.contains(&page), "page {page} dropped unread");
            due |= seen.read_only(&mut planner, 1, page);
        }
        if due {
            seen.round(&mut planner);
        }
    }
    assert_eq!(planner.stats().divergences, 0);
}
