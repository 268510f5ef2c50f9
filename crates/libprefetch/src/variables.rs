//! Every environment variable the project reads, defined once: its name,
//! the values it takes, its default and one line of what it does. Every
//! reader (this crate, the preload library, the SQLite extension, the
//! command line that sets them for `prefetch run` and `prefetch record`)
//! names a variable through this table, and `include/libprefetch.h`,
//! `docs/api.md` ("Environment") and `prefetch run --help` list the same
//! set (the test `variables_listed` checks that they agree).
//!
//! Three readers: `pf_register_client` (and every client made from the
//! environment: the SQLite extension's, the Python package's) reads the
//! client's tunables; `libprefetch.so`, as it is loaded, reads what it
//! does in a program it was preloaded into; the SQLite extension reads its
//! own. How each value is parsed stays with its reader (`env.rs` for the
//! tunables, whose refused values warn once).

/// One environment variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variable {
    /// The name, e.g. `LIBPREFETCH_INFILL`.
    pub name: &'static str,
    /// Who reads it.
    pub reader: Reader,
    /// The values it takes, in words.
    pub values: &'static str,
    /// What holds when it is unset.
    pub default: &'static str,
    /// What it does, in one line.
    pub doc: &'static str,
}

/// Who reads a variable, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// Every client made from the environment, as it registers
    /// (`pf_register_client`, the SQLite extension, the Python package).
    Client,
    /// `libprefetch.so` as it is loaded into a program (`prefetch run`,
    /// `prefetch record` set these).
    Load,
    /// The SQLite extension.
    Sqlite,
}

impl Variable {
    /// This process's value of the variable, if set.
    pub fn value(&self) -> Option<std::ffi::OsString> {
        std::env::var_os(self.name)
    }
}

/// Largest gap merged into one prefetch range.
pub const INFILL: Variable = Variable {
    name: "LIBPREFETCH_INFILL",
    reader: Reader::Client,
    values: "size; 0 turns infill off; auto",
    default: "auto: the device's break-even gap",
    doc: "largest gap between listed pages advised with them",
};
/// Cap on the memory the client plans with.
pub const MAX_MEMORY: Variable = Variable {
    name: "LIBPREFETCH_MAX_MEMORY",
    reader: Reader::Client,
    values: "size, above 0",
    default: "what /proc/meminfo and the memory cgroup allow",
    doc: "a cap on the memory AIMD plans with",
};
/// Longest access list.
pub const LIST_CAPACITY: Variable = Variable {
    name: "LIBPREFETCH_LIST_CAPACITY",
    reader: Reader::Client,
    values: "entries, a plain integer above 0",
    default: "1048576",
    doc: "longest access list; a request beyond it gets a short count",
};
/// The second WILLNEED pass in reverse order.
pub const REVERSE_PASS: Variable = Variable {
    name: "LIBPREFETCH_REVERSE_PASS",
    reader: Reader::Client,
    values: "0 or 1",
    default: "0",
    doc: "the second WILLNEED pass in reverse access order (section 4.5)",
};
/// Advice from the advice thread.
pub const BACKGROUND_ADVICE: Variable = Variable {
    name: "LIBPREFETCH_BACKGROUND_ADVICE",
    reader: Reader::Client,
    values: "0 or 1",
    default: "1",
    doc: "0: the reading thread issues a round's advice itself, as in the paper",
};
/// The first window of the slow start.
pub const START_WINDOW: Variable = Variable {
    name: "LIBPREFETCH_START_WINDOW",
    reader: Reader::Client,
    values: "size; 0",
    default: "128K",
    doc: "the first window, grown as the list is consumed; 0 starts at 90% of memory",
};
/// The planner's schedule.
pub const SCHEDULE: Variable = Variable {
    name: "LIBPREFETCH_SCHEDULE",
    reader: Reader::Client,
    values: "by-shape, window, aggressive, conservative",
    default: "by-shape",
    doc: "when a round fetches and what it drops",
};
/// Record the program's reads.
pub const RECORD: Variable = Variable {
    name: "LIBPREFETCH_RECORD",
    reader: Reader::Load,
    values: "a file",
    default: "no recording",
    doc: "appends the pages each process reads to the file (prefetch record -o)",
};
/// Also record rereads.
pub const RECORD_REREADS: Variable = Variable {
    name: "LIBPREFETCH_RECORD_REREADS",
    reader: Reader::Load,
    values: "page reads, a plain integer",
    default: "0: first reads only",
    doc: "also lists rereads after that many page reads (prefetch record --rereads-after)",
};
/// Replay a recording ahead of the program.
pub const REPLAY: Variable = Variable {
    name: "LIBPREFETCH_REPLAY",
    reader: Reader::Load,
    values: "a recording",
    default: "no replay",
    doc: "prefetches the recording's pages ahead of the program (prefetch run --replay)",
};
/// Competitive prefetching of sequential readers.
pub const COMPETITIVE: Variable = Variable {
    name: "LIBPREFETCH_COMPETITIVE",
    reader: Reader::Load,
    values: "1",
    default: "off",
    doc: "advises ahead of sequential readers by the device's competitive depth (prefetch run --competitive)",
};
/// The page-cache budget.
pub const CACHE_BUDGET: Variable = Variable {
    name: "LIBPREFETCH_CACHE_BUDGET",
    reader: Reader::Load,
    values: "size, above 0",
    default: "no budget",
    doc: "keeps the pages the program reads within the size (prefetch run --cache-budget)",
};
/// The page-cache budget's replacement order.
pub const CACHE_POLICY: Variable = Variable {
    name: "LIBPREFETCH_CACHE_POLICY",
    reader: Reader::Load,
    values: "dulo, lru, clock, drop-behind",
    default: "dulo",
    doc: "the order the budget drops pages in (prefetch run --cache-policy)",
};
/// The budget's counts at exit.
pub const CACHE_BUDGET_REPORT: Variable = Variable {
    name: "LIBPREFETCH_CACHE_BUDGET_REPORT",
    reader: Reader::Load,
    values: "1",
    default: "off",
    doc: "prints the budget's counts on stderr as the process exits",
};
/// Start the writeback of the dirty pages the budget lets go.
pub const CACHE_WRITEBACK: Variable = Variable {
    name: "LIBPREFETCH_CACHE_WRITEBACK",
    reader: Reader::Load,
    values: "1",
    default: "off",
    doc:
        "the budget starts writing back the dirty pages it lets go (prefetch run --cache-writeback)",
};
/// The replay's counts at exit.
pub const REPLAY_REPORT: Variable = Variable {
    name: "LIBPREFETCH_REPLAY_REPORT",
    reader: Reader::Load,
    values: "1",
    default: "off",
    doc: "prints the replay's counts on stderr as the process exits (pages prefetched, read, left unread)",
};
/// Keep the library from the program's children.
pub const NO_CHILDREN: Variable = Variable {
    name: "LIBPREFETCH_NO_CHILDREN",
    reader: Reader::Load,
    values: "1",
    default: "off: children inherit the library",
    doc: "removes the library and these variables from the environment of programs it executes (prefetch run --no-children)",
};
/// The SQLite extension's counters.
pub const SQLITE_STATS: Variable = Variable {
    name: "PREFETCH_SQLITE_STATS",
    reader: Reader::Sqlite,
    values: "set, not empty or 0",
    default: "off",
    doc: "each tracked database file prints libprefetch's counters on stderr when closed",
};
/// Every connection's full scans listed whole, as the URI parameter `prefetch_scan=whole` asks.
pub const SQLITE_SCAN: Variable = Variable {
    name: "PREFETCH_SQLITE_SCAN",
    reader: Reader::Sqlite,
    values: "whole",
    default: "each connection's URI parameter prefetch_scan",
    doc: "whole: every database file opened is treated as named with prefetch_scan=whole",
};

/// Every variable, the client's tunables first, in the order they are applied.
pub const ALL: [Variable; 19] = [
    INFILL,
    MAX_MEMORY,
    LIST_CAPACITY,
    REVERSE_PASS,
    BACKGROUND_ADVICE,
    START_WINDOW,
    SCHEDULE,
    RECORD,
    RECORD_REREADS,
    REPLAY,
    REPLAY_REPORT,
    COMPETITIVE,
    CACHE_BUDGET,
    CACHE_POLICY,
    CACHE_BUDGET_REPORT,
    CACHE_WRITEBACK,
    NO_CHILDREN,
    SQLITE_STATS,
    SQLITE_SCAN,
];

/// The variables as a text table, one a line: name, values, default and
/// what it does (`prefetch run --help` prints it).
pub fn table() -> String {
    let width = ALL.iter().map(|v| v.name.len()).max().unwrap_or(0);
    ALL.iter()
        .map(|v| {
            format!(
                "  {:width$}  {}; {}; default {}\n",
                v.name, v.doc, v.values, v.default
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once() {
        let mut names: Vec<&str> = ALL.iter().map(|v| v.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
    }

    #[test]
    fn the_table_has_one_line_per_variable() {
        let table = table();
        assert_eq!(table.lines().count(), ALL.len());
        assert!(table
            .lines()
            .all(|line| ALL.iter().any(|v| line.contains(v.name))));
    }
}
