//! Tests of a client (`client.rs`): its list and budget take their share of the memory
//! available, and rounds at a small budget re-read memory at a bounded rate.

use super::*;

/// Held by the tests whose clients hold a list: each client's share of
/// memory depends on how many of the process's clients hold one.
static HOLDING_A_LIST: Mutex<()> = Mutex::new(());

fn hold_alone() -> MutexGuard<'static, ()> {
    HOLDING_A_LIST.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn a_list_and_its_budget_take_at_most_their_share_of_the_available_memory() {
    let (entry, page) = (
        plan::ENTRY_COST_BYTES as u64,
        plan::BUDGET_PAGE_COST_BYTES as u64,
    );
    let available: u64 = 20 << 20;
    let budget_pages = available * 9 / 10 / page_size();
    for share in [
        plan::LIST_MEMORY_SHARE,
        plan::CONSERVATIVE_LIST_MEMORY_SHARE,
    ] {
        let allowed = list_capacity(1 << 20, available, 0, share) as u64;
        // The most entries that fit beside the budget's pages.
        assert!(allowed * entry + budget_pages * page <= available / share);
        assert!((allowed + 1) * entry + budget_pages * page > available / share);
        // Several budgets of list: the budget's part is the smaller.
        assert!(
            allowed > 5 * budget_pages,
            "{allowed} entries, {budget_pages} pages"
        );
        // Entries already held are no longer in the available figure: they count back in, not twice.
        let held = allowed as usize / 2;
        let after = available - held as u64 * entry;
        assert_eq!(list_capacity(1 << 20, after, held, share) as u64, allowed);
    }
}

#[test]
fn a_conservative_client_may_hold_a_longer_list() {
    let _alone = hold_alone();
    let with_schedule = |schedule| {
        let config = Config {
            schedule,
            max_budget_bytes: Some(8 << 20),
            ..Config::default()
        };
        Client::register(config, |_: &Client, _: CallbackInfo| {}).unwrap()
    };
    let (client, window) = (
        with_schedule(Schedule::Conservative),
        with_schedule(Schedule::Window),
    );
    let entries: Vec<AccessEntry> = (0..100_000u64)
        .map(|page| AccessEntry {
            offset: page * 4096,
            fd: 0,
            mark: false,
        })
        .collect();
    let budget_pages = plan::Aimd::new(8 << 20, 0).cap() / page_size();
    let allowed = |share: u64| plan::entries_within((8 << 20) / share, budget_pages);
    let taken = |client: &Client| client.request_prefetching(&entries, Mode::SET).unwrap() as u64;
    assert_eq!(taken(&window), allowed(plan::LIST_MEMORY_SHARE));
    assert_eq!(
        taken(&client),
        allowed(plan::CONSERVATIVE_LIST_MEMORY_SHARE)
    );
}

#[test]
fn rounds_at_a_small_budget_reread_memory_at_a_bounded_rate() {
    let _alone = hold_alone();
    use std::os::fd::AsRawFd;
    let file = tempfile::tempfile().unwrap();
    file.set_len(64 << 20).unwrap();
    let fd = file.as_raw_fd();
    let config = Config {
        schedule: Schedule::Conservative,
        max_budget_bytes: Some(1 << 20),
        background_advice: false,
        ..Config::default()
    };
    let client = Client::register(config, |_: &Client, _: CallbackInfo| {}).unwrap();
    client.register_region(fd, 0, 64 << 20).unwrap();
    // Scattered pages, each read once, of a file never read: each read misses and asks for a round.
    let pages: Vec<u64> = (0..3000u64).map(|i| (i * 2477) % 16384).collect();
    let entries: Vec<AccessEntry> = pages
        .iter()
        .map(|&page| AccessEntry {
            offset: page * 4096,
            fd,
            mark: false,
        })
        .collect();
    let started = Instant::now();
    client.request_prefetching(&entries, Mode::SET).unwrap();
    for &page in &pages {
        ClientInner::on_read(&client.inner, fd, page * 4096, 4096, Probe::Mincore);
    }
    let elapsed = started.elapsed();
    let (rounds, readings) = (client.stats().rounds, client.inner.memory.readings());
    // Before: one reading (three files) per round and one per request.
    let bound = 1 + (elapsed.as_micros() / memory::PROBE_INTERVAL.as_micros()) as u64;
    assert!(
        readings <= bound,
        "{readings} readings for {rounds} rounds in {elapsed:?}"
    );
    assert!(rounds > 0);
    assert_eq!(client.inner.rounds_in_flight.load(Ordering::Acquire), 0);
}

#[test]
fn the_configured_capacity_caps_a_roomy_machine() {
    assert_eq!(
        list_capacity(1000, 1 << 40, 0, plan::LIST_MEMORY_SHARE),
        1000
    );
    assert_eq!(list_capacity(1000, 0, 0, plan::LIST_MEMORY_SHARE), 0);
}
