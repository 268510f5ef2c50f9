//! [`Schedule`], the names of the planner's schedules, and `by-shape`, the
//! live library's default, which picks one of them for each list set
//! ([`Schedule::for_list`]; how its rules were chosen: docs/repro.md,
//! "Next-use planning").

use crate::access_list::{AccessList, PageKey};

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
    /// request cost times transfer rate, [`crate::PlannerConfig::infill_bytes`])
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
