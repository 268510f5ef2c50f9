//! The planner's real memory cost per access-list entry, measured with a
//! counting allocator, against [`plan::ENTRY_COST_BYTES`], the figure the
//! live library uses to keep a client's list within its memory cgroup.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use plan::{Entry, Mode, PageKey, Planner, PlannerConfig, Schedule};

/// The system allocator, counting the bytes live now and at most.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// One measurement at a time: the counters are global, and a test running
/// beside another would count the other's bytes too.
static MEASURING: Mutex<()> = Mutex::new(());

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// List lengths across one octave: every table and queue grows by doubling
/// (a hash table also at 7/8 full), so its bytes per entry vary with where
/// the length falls between two powers of two, and one length alone can
/// hide the worst (a length of 2^18 showed 297.5 bytes an entry under
/// conservative where 150,000 took 398.5).
fn lengths() -> impl Iterator<Item = u64> {
    (0..16).map(|step| (1 << 16) * (16 + step) / 16)
}

/// Peak bytes per entry of a planner given `entries` entries (page `i * stride % span` each, so `unique` of them
/// distinct) with a budget covering all of them, through one round and a read of every entry.
fn peak_bytes_per_entry(entries: u64, span: u64) -> f64 {
    peak_with_budget(entries, span, entries + 1, Schedule::Window)
}

/// [`peak_bytes_per_entry`] with a budget of `budget_pages` pages and `schedule`.
fn peak_with_budget(entries: u64, span: u64, budget_pages: u64, schedule: Schedule) -> f64 {
    let _alone = MEASURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let page_size = 4096;
    let mut planner = Planner::new(PlannerConfig {
        page_size,
        capacity: entries as usize,
        // AIMD's budget is 90% of this: `budget_pages` pages.
        available_bytes: budget_pages * page_size * 10 / 9 + page_size,
        schedule,
        floor_bytes: page_size,
        ..PlannerConfig::default()
    });
    let list: Vec<Entry> = (0..entries)
        .map(|i| Entry {
            key: PageKey {
                fd: 3,
                page: i.wrapping_mul(2_654_435_761) % span,
            },
            mark: i % 64 == 0,
        })
        .collect();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    // The caller hands the list over in chunks (libprefetch's request_from uses 64 Ki entries).
    let mut mode = Mode::SET;
    for chunk in list.chunks(1 << 16) {
        planner.request(chunk, mode);
        mode = Mode::APPEND;
    }
    planner.plan_round();
    for entry in &list[..list.len() / 2] {
        planner.on_read(entry.key, true);
    }
    planner.plan_round();
    (PEAK.load(Ordering::Relaxed) - before) as f64 / entries as f64
}

/// The span of pages that gives `entries` entries about `entries_per_page`
/// entries a page (every entry distinct at 1).
fn span(entries: u64, entries_per_page: u64) -> u64 {
    match entries_per_page {
        1 => u64::MAX,
        n => entries / n,
    }
}

/// The most of [`peak_bytes_per_entry`] over [`lengths`].
fn worst_over_lengths(entries_per_page: u64) -> f64 {
    lengths()
        .map(|entries| peak_bytes_per_entry(entries, span(entries, entries_per_page)))
        .fold(0.0, f64::max)
}

#[test]
fn every_entry_unique_costs_at_most_the_stated_bytes() {
    let cost = worst_over_lengths(1);
    println!("all entries unique: {cost:.1} bytes per entry at worst");
    assert!(
        cost <= plan::ENTRY_COST_BYTES as f64,
        "{cost:.1} bytes per entry"
    );
}

#[test]
fn repeated_pages_cost_at_most_the_stated_bytes() {
    let cost = worst_over_lengths(16);
    println!("16 entries per page: {cost:.1} bytes per entry at worst");
    assert!(
        cost <= plan::ENTRY_COST_BYTES as f64,
        "{cost:.1} bytes per entry"
    );
}

/// Conservative at the list lengths the live library allows it: 1/8 of the
/// memory in entries at its stated cost (while `by-shape` has not yet
/// chosen it), then 1/3, against a budget of 90% of the memory in pages.
#[test]
fn conservative_at_the_list_length_allowed_costs_at_most_its_stated_bytes() {
    for share in [
        plan::LIST_MEMORY_SHARE,
        plan::CONSERVATIVE_LIST_MEMORY_SHARE,
    ] {
        conservative_with_share(share);
    }
}

fn conservative_with_share(share: u64) {
    let memory_per_entry = share * plan::ENTRY_COST_BYTES as u64;
    for entries_per_page in [1, 2, 16] {
        let worst = lengths()
            .map(|entries| {
                let budget_pages = entries * memory_per_entry * 9 / 10 / 4096;
                let span = span(entries, entries_per_page);
                peak_with_budget(entries, span, budget_pages, Schedule::Conservative)
            })
            .fold(0.0, f64::max);
        println!(
            "conservative, {:.2} budgets of list, {entries_per_page} entries a page: \
             {worst:.1} bytes per entry at worst",
            4096.0 * 10.0 / 9.0 / memory_per_entry as f64
        );
        assert!(
            worst <= plan::ENTRY_COST_BYTES as f64,
            "{worst:.1} bytes per entry"
        );
    }
}
