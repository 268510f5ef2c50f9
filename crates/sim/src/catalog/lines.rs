//! The catalog's lines: every policy the simulator runs, one line each, written once in
//! [`lines!`] and read twice, by [`crate::catalog`] (which writes them into its table) and by
//! the modules that hold the policies' files (which declare the files the lines name, through
//! [`files!`]). Adding a policy is therefore its file plus its line here.
//!
//! A line is `(NAME, SECTION, OPTIONS, CONSTRUCTOR),`: its name on the command line, its paper
//! and section, its `key=value` options and defaults (`-` when none), and the constructor of a
//! [`crate::catalog::Configured`] policy from its options (names resolve in `catalog.rs`).
//! A line that brings a file of its own opens with `mod KIND::FILE`: `policy::FILE` for a policy
//! deciding at idle (`src/policy/FILE.rs`), `replace::FILE` for a replacement policy
//! (`src/disksim/replace/FILE.rs`), `prefetch::FILE` for a prefetcher
//! (`src/disksim/prefetch/FILE.rs`); its parent declares it `pub mod FILE`, so the file's path
//! is `sim::policy::FILE` and so on. A line reusing files of other lines (an alias, a schedule
//! of the planner) has no `mod`. The table keeps the order of the lines (`prefetch sim --list`).
//!
//! Why a macro: `mod` items a macro emits resolve their file relative to the module where the
//! macro is invoked, so one list can declare files in three directories while the catalog's
//! table stays the one place a policy is named.

/// Hands every line of the catalog to the macro `$then` (in scope where `lines!` is invoked),
/// after the tokens `$arg`: `lines!(then, arg)` expands to `then! { arg LINE, LINE, ... }`.
macro_rules! lines {
    ($then:ident $(, $arg:tt)*) => {
        $then! { $($arg)*
            ("lru", "demand LRU (Cao s4.1 LRU-demand; libCacheSim LRU)", "-",
                |o| at_idle(&policy::lru_demand::INFO, o)),
            mod policy::lru_demand ("lru-demand", "Cao et al. SIGMETRICS'95 s4.1", "-",
                |o| at_idle(&policy::lru_demand::INFO, o)),
            mod policy::opt_demand ("opt-demand", "Cao s4.1 (Belady's MIN)", "-",
                |o| at_idle(&policy::opt_demand::INFO, o)),
            mod policy::lru_obl ("lru-obl", "Cao s4.1 (one-block lookahead)", "-",
                |o| at_idle(&policy::lru_obl::INFO, o)),
            mod policy::opt_obl ("opt-obl", "Cao s4.1", "-",
                |o| at_idle(&policy::opt_obl::INFO, o)),
            mod policy::lru_sensible ("lru-sensible", "Cao s4.1", "-",
                |o| at_idle(&policy::lru_sensible::INFO, o)),
            mod policy::lru_throttled ("lru-throttled", "Cao s4.1 (informed prefetching)", "-",
                |o| at_idle(&policy::lru_throttled::INFO, o)),
            mod policy::aggressive ("aggressive", "Cao s2.5", "-",
                |o| at_idle(&policy::aggressive::INFO, o)),
            mod policy::conservative ("conservative", "Cao s2.4", "-",
                |o| at_idle(&policy::conservative::INFO, o)),
            mod policy::optimal ("optimal", "Cao s3 (exhaustive search; small traces)", "-",
                |o| at_idle(&policy::optimal::INFO, o)),
            mod policy::fifo ("fifo", "demand FIFO (libCacheSim FIFO)", "-",
                |o| at_idle(&policy::fifo::INFO, o)),
            mod policy::clock ("clock", "demand CLOCK, second chance (libCacheSim Clock)", "-",
                |o| at_idle(&policy::clock::INFO, o)),
            mod replace::dulo ("dulo", "DULO FAST'05 s3 (+ Linux read-ahead)",
                "bank=8M, evict=64M",
                |o| {
                    let readahead = prefetch::readahead::Options::parse(&defaults())?;
                    pair(replace::dulo::Options::parse(&to("dulo", o))?, readahead)
                }),
            mod prefetch::readahead ("linux-readahead", "Linux read-ahead over CLOCK (TR840 s2.1)",
                "init=16, max=32",
                |o| over_clock(prefetch::readahead::Options::parse(&to("readahead", o))?)),
            mod prefetch::obl ("obl",
                "one-block lookahead over CLOCK (Cao s4.1 after Smith; libCacheSim OBL)", "k=1",
                |o| over_clock(prefetch::obl::Options::parse(&to("obl", o))?)),
            mod prefetch::pg ("pg",
                "probability graph over CLOCK (libCacheSim PG, after Griffioen and Appleton)",
                "lookahead-range=20, block-size=1, max-metadata-size=0.1, \
                 prefetch-threshold=0.05",
                |o| over_clock(prefetch::pg::Options::parse(&to("pg", o))?)),
            mod prefetch::mithril ("mithril",
                "Mithril over CLOCK (libCacheSim Mithril, after Yang et al. SoCC'17 s3)",
                "lookahead-range=20, max-support=8, min-support=2, confidence=1, \
                 pf-list-size=2, rec-trigger=miss, block-size=(the run's), \
                 max-metadata-size=0.1, cycle-time=1, mining-threshold=5120",
                |o| over_clock(prefetch::mithril::Options::parse(&to("mithril", o))?)),
            mod prefetch::ap ("ap", "aggressive prefetching, TR840 s5.2", "depth=256",
                |o| over_clock(prefetch::ap::Options::parse(&to("ap", o))?)),
            mod prefetch::stream ("cp",
                "competitive prefetching, TR840 s3 (the live plan::stream over Linux read-ahead)",
                "depth (the disk's; needed on unit:F)",
                |o| over_clock(prefetch::stream::Options::parse(&to("competitive", o))?)),
            mod prefetch::cpem ("cpem", "CP + CPEM prefetch memory, TR840 s4",
                "ceiling, unit, threshold=5, region, depth", cpem),
            mod prefetch::reorder ("reorder", "libprefetch reorder buffer, ATC'09 s3",
                "buffer, infill",
                |o| over_clock(prefetch::reorder::Options::parse(&to("reorder", o))?)),
            mod prefetch::planner ("libprefetch",
                "libprefetch planner, ATC'09 s4 (the live default schedule, by-shape)",
                "buffer, infill, batch, reserve, schedule",
                |o| over_clock(prefetch::planner::Options::parse(&to("planner", o))?)),
            mod prefetch::phases ("loader-phases",
                "the Python data loaders' phases, ATC'09 s4.5 in s3.3 order (the live plan::loader)",
                "phase (the live default), call=8M",
                |o| over_clock(prefetch::phases::Options::parse(&to("loader-phases", o))?)),
            ("libprefetch-window", "libprefetch planner, ATC'09 s3 window",
                "buffer, infill, batch", |o| planner("window", o)),
            ("libprefetch-aggressive", "libprefetch planner, Cao s2.5 schedule",
                "buffer, infill, batch", |o| planner("aggressive", o)),
            ("libprefetch-conservative", "libprefetch planner, Cao s2.4 schedule",
                "buffer, infill, batch, reserve", |o| planner("conservative", o)),
            mod replace::sieve ("sieve", "SIEVE, NSDI'24 s3 (libCacheSim Sieve)", "-",
                |o| alone(replace::sieve::Options::parse(&to("sieve", o))?)),
            mod replace::s3fifo ("s3fifo", "S3-FIFO, SOSP'23 s4 (libCacheSim S3FIFO)",
                "small=0.1, ghost=0.9, threshold=2",
                |o| alone(replace::s3fifo::Options::parse(&to("s3fifo", o))?)),
            mod replace::twoq ("2q", "2Q, VLDB'94 s2 (libCacheSim TwoQ)", "in=0.25, out=0.5",
                |o| alone(replace::twoq::Options::parse(&to("2q", o))?)),
            mod replace::slru ("slru", "Segmented LRU, IEEE Computer'94 (libCacheSim SLRU)",
                "segments=4",
                |o| alone(replace::slru::Options::parse(&to("slru", o))?)),
            mod replace::wtinylfu ("wtinylfu", "W-TinyLFU, ACM TOS'17 s3-4 (libCacheSim WTinyLFU)",
                "window=0.01",
                |o| alone(replace::wtinylfu::Options::parse(&to("wtinylfu", o))?)),
            mod replace::lruk ("lruk", "LRU-K, SIGMOD'93 s2.1 (libCacheSim LRUK)", "k=2",
                |o| alone(replace::lruk::Options::parse(&to("lruk", o))?)),
            mod replace::lfu ("lfu", "LFU (libCacheSim LFU)", "-",
                |o| alone(replace::lfu::Options::parse(&to("lfu", o))?)),
            mod replace::lfuda ("lfuda", "LFU-DA, PER'00 s3.3 (libCacheSim LFUDA)", "-",
                |o| alone(replace::lfuda::Options::parse(&to("lfuda", o))?)),
            mod replace::arc ("arc", "ARC, FAST'03 s4 (libCacheSim ARC)", "-",
                |o| alone(replace::arc::Options::parse(&to("arc", o))?)),
            mod replace::lirs ("lirs", "LIRS, SIGMETRICS'02 s3.3 (libCacheSim LIRS)", "-",
                |o| alone(replace::lirs::Options::parse(&to("lirs", o))?)),
            mod replace::clockpro ("clockpro", "CLOCK-Pro, USENIX ATC'05 s3 (go-clockpro)", "-",
                |o| alone(replace::clockpro::Options::parse(&to("clockpro", o))?)),
        }
    };
}
pub(crate) use lines;

/// Declares, in the module where it is invoked, the files the lines of kind `$kind` bring:
/// `lines!(files, policy)` in `policy/mod.rs` declares `pub mod lru_demand;` and the others.
/// One line at a time, so its depth is the number of lines (under the compiler's 128).
macro_rules! files {
    ($kind:ident) => {};
    (policy mod policy::$file:ident $line:tt, $($rest:tt)*) => {
        pub mod $file;
        $crate::catalog::lines::files! { policy $($rest)* }
    };
    (replace mod replace::$file:ident $line:tt, $($rest:tt)*) => {
        pub mod $file;
        $crate::catalog::lines::files! { replace $($rest)* }
    };
    (prefetch mod prefetch::$file:ident $line:tt, $($rest:tt)*) => {
        pub mod $file;
        $crate::catalog::lines::files! { prefetch $($rest)* }
    };
    ($kind:ident mod $other:ident::$file:ident $line:tt, $($rest:tt)*) => {
        $crate::catalog::lines::files! { $kind $($rest)* }
    };
    ($kind:ident $line:tt, $($rest:tt)*) => {
        $crate::catalog::lines::files! { $kind $($rest)* }
    };
}
pub(crate) use files;
