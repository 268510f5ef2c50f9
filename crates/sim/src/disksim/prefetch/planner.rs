//! The live library's planner, whole, as a simulator policy: [`plan::Planner`] with its AIMD
//! budget, its schedule (by default the live library's, `by-shape`; `schedule=window` is the paper's reorder
//! buffer, whose rounds start when the window is consumed, a read diverges or misses), C-LOOK
//! starting at the next page the application needs, infill within the budget, and its DONTNEEDs
//! (libprefetch ATC'09 s4.1-4.6; Cao et al. SIGMETRICS'95 s2.2 for the `aggressive` and
//! `conservative` schedules). Where
//! [`super::reorder`] reproduces the paper's s3 benchmark (a fixed buffer, each buffer by
//! increasing disk position), this policy predicts what `libprefetch` itself does.
//!
//! The stream's whole trace is handed over as the access list before the run (`PF_SET`), so the
//! planner's callbacks have nothing to add: they are answered as empty, as an application at
//! the end of its list would.
//!
//! Deviations: a read is "resident" when its block is cached or already in flight (the live
//! library's residency probe cannot tell a page being read from a cached one either); the
//! planner's reverse-access-order WILLNEED pass changes only the kernel's LRU order, which the
//! simulator's replacement policies do not take from prefetch calls, so it is not replayed.

use plan::{Mode, PageRange, Planner, PlannerConfig, Schedule};

use super::{
    access_list, page_key, Access, Disk, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher,
};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::{FileBlock, Step};
use crate::SimError;

/// One planner per stream.
#[derive(Debug)]
pub struct LivePlanner {
    planners: Vec<Planner>,
    drops: Vec<FetchRange>,
}

impl LivePlanner {
    /// Planners configured by `config` (its capacity is raised to hold each stream's whole
    /// list), each given its stream's references as the access list.
    pub fn new(config: PlannerConfig, streams: &[Vec<Step>]) -> LivePlanner {
        let planners = streams
            .iter()
            .map(|steps| {
                let entries = access_list(steps);
                let mut planner = Planner::new(PlannerConfig {
                    capacity: entries.len().max(1),
                    ..config
                });
                planner.request(&entries, Mode::SET);
                planner
            })
            .collect();
        LivePlanner {
            planners,
            drops: Vec::new(),
        }
    }
}

fn to_fetch(range: &PageRange) -> FetchRange {
    FetchRange {
        file: u32::try_from(range.fd).unwrap_or(0),
        start: range.start,
        len: range.len,
    }
}

impl Prefetcher for LivePlanner {
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    fn on_stream_end(&mut self, _stream: usize) {}

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        let Some(planner) = self.planners.get_mut(access.stream) else {
            return Vec::new();
        };
        let page = page_key(access.block);
        let (_, outcome) = planner.on_read(page, access.found);
        if outcome.call_back {
            let end = planner.list_end();
            planner.callback_returned(end);
        }
        if !outcome.start_round {
            return Vec::new();
        }
        let round = planner.plan_round();
        self.drops = round.evict.iter().map(to_fetch).collect();
        round.fetch.iter().map(to_fetch).collect()
    }

    fn drops(&mut self) -> Vec<FetchRange> {
        std::mem::take(&mut self.drops)
    }

    fn demand_only(&self) -> bool {
        false
    }
}

/// The live planner's configuration: options `buffer` (bytes: the AIMD cap, 90% of the memory
/// the planner is told about; default 90% of the cache, as the live library takes 90% of
/// available memory), `infill` (bytes; default the disk's break-even gap, as the live library
/// takes its device's: a request's average switch cost times the mean transfer rate, 32K on a
/// fixed-time disk), `schedule` (`by-shape`, `window`, `aggressive` or `conservative`; default
/// the live library's, `by-shape`), `batch` (reads between rounds; default 1/64 of the budget)
/// and `reserve` (conservative: pages fetched ahead of MIN's replacements; default 1/8 of the
/// budget).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The AIMD cap in bytes; `None`: 90% of the cache.
    pub buffer: Option<u64>,
    /// The infill in bytes; `None`: the disk's break-even gap.
    pub infill: Option<u64>,
    /// The planner's schedule.
    pub schedule: Schedule,
    /// Reads between rounds (0: the planner's default).
    pub batch: u64,
    /// Conservative's reserve in pages; `None`: the planner's default.
    pub reserve: Option<u64>,
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&["buffer", "infill", "schedule", "batch", "reserve"])?;
        let name = given.text("schedule", Schedule::default().name());
        let schedule = Schedule::from_name(&name).ok_or_else(|| SimError::BadOption {
            spec: given.to_string(),
            reason: format!(
                "unknown schedule `{name}` (use by-shape, window, aggressive or conservative)"
            ),
        })?;
        Ok(Options {
            buffer: given.bytes_given("buffer")?,
            infill: given.bytes_given("infill")?,
            schedule,
            batch: given.count("batch", 0)?,
            reserve: match given.text("reserve", "").as_str() {
                "" => None,
                _ => Some(given.count("reserve", 0)?),
            },
        })
    }
}

impl MakePrefetcher for Options {
    fn build(&self, setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        let page = setup.workload.layout.block_size.max(1);
        let cache_bytes = setup.cache_blocks as u64 * page;
        let buffer = self.buffer.unwrap_or(cache_bytes / 10 * 9);
        let config = PlannerConfig {
            page_size: page,
            infill_bytes: self
                .infill
                .unwrap_or_else(|| break_even_gap_bytes(setup.disk)),
            available_bytes: buffer.div_ceil(9) * 10,
            floor_bytes: page,
            start_bytes: None,
            schedule: self.schedule,
            batch_pages: self.batch,
            reserve_pages: self.reserve,
            ..PlannerConfig::default()
        };
        Ok(Box::new(LivePlanner::new(config, &setup.workload.streams)))
    }
}

/// The disk's break-even gap (`plan::competitive::break_even_gap_bytes`): its average switch
/// (seek and half a turn) times its mean transfer rate; 32 KiB for a fixed-time disk, which has
/// no transfer rate.
fn break_even_gap_bytes(disk: &Disk) -> u64 {
    disk.break_even_gap_bytes().unwrap_or(32 << 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live library's by-shape schedule keeps the window on a seek-bound device; the
    /// simulator's default infill must tell a rotating model from a flash one as the live
    /// library's device profiles do.
    #[test]
    fn the_default_infill_is_the_disks_break_even_gap() {
        let disk = |name| Disk::new(disk::spec_from_name(name).unwrap().into());
        let gap = |name| break_even_gap_bytes(&disk(name));
        let seek_bound = plan::planner::SEEK_BOUND_GAP_BYTES;
        assert!(gap("st3500320as") >= seek_bound, "{}", gap("st3500320as"));
        assert!(gap("ibm-36z15") >= seek_bound, "{}", gap("ibm-36z15"));
        assert!(gap("nvme") < seek_bound, "{}", gap("nvme"));
        assert_eq!(break_even_gap_bytes(&disk("fixed:5")), 32 << 10);
    }
}
