//! The disk-timed simulator. Policies are judged by time on a disk model, not only by
//! misses: DULO (FAST'05), competitive prefetching (TR840) and libprefetch's reorder buffer
//! (ATC'09 section 3) run here.
//!
//! # What it simulates
//!
//! N concurrent *streams* (request handlers, processes) each walk their own list of block
//! references ([`Step`]: a block of a file, with an optional think time before it). A shared
//! page cache of `cache_blocks` blocks holds what was fetched. One [`crate::Policy`] decides
//! for it: here a [`Paired`] replacement policy ([`Replacement`], the cache's order) and
//! prefetcher ([`Prefetcher`], which says on every reference which extra blocks to fetch). Misses and prefetches become [`disk::Request`]s queued in an
//! [`IoScheduler`] (any scheduler of the `disk` crate, or the engine-aware ones such as
//! anticipatory scheduling); the disk model ([`disk::DiskModel`]) says how long each takes, and
//! time advances by those service times and the streams' think times. Nothing else costs time
//! unless [`EngineConfig::hit_time`] says so.
//!
//! ```text
//!  stream 0: Step Step Step ..   \                       +-------------+   pop(head, now)
//!  stream 1: Step Step ..         >-- reference --> cache | Replacement |   +-----------+   service()
//!  stream N: Step ..             /        |               +-------------+-->|IoScheduler|-->DiskModel
//!                                         v                miss/prefetch    +-----------+      |
//!                                    Prefetcher --- FetchRange ---^                            |
//!                                         ^------------- on_evict / on_stream_end              |
//!  a stream that misses (or hits a block still in flight) waits for that request <-- completion
//! ```
//!
//! # Contract
//!
//! * Addresses: a [`Layout`] places each file's blocks contiguously on the disk; the cache and
//!   the replacement policies speak *disk block numbers* ([`DiskBlock`]), prefetchers speak
//!   ([`FileBlock`]) file coordinates. Request byte addresses are `disk block * block_size`.
//! * Per reference, in this order: look the block up (hit, in flight, or miss); call
//!   [`Prefetcher::on_access`]; fetch the demand block (if missed) and the prefetcher's ranges.
//!   Blocks already cached or in flight are dropped from the ranges; what remains of each range
//!   becomes requests of consecutive blocks (at most `max_request_blocks` each) in the order
//!   given. A demand block that falls inside a range rides in that range's request; otherwise it
//!   is a one-block request queued first.
//! * A fetched block takes its cache slot when the request is queued (as Linux allocates the
//!   page at submission); making room calls [`Replacement::evict`]. A block evicted while in
//!   flight is lost (its read still costs disk time); a stream waiting on it still resumes when
//!   the request completes. Demand blocks are inserted as referenced (`prefetched = false`),
//!   the others as prefetched. Blocks a prefetcher drops ([`Prefetcher::drops`]) leave at
//!   once, or when they arrive if they are in flight (as a DONTNEED after the read completes).
//! * Streams are closed loops: a stream issues its next reference when the previous one is
//!   served (and its think time has passed).
//! * Decisions at idle ([`crate::Policy::AtIdle`], Cao et al.'s rule 4, for Cao's policies,
//!   run through [`cao`]): no ranges are queued per reference. A demand block is fetched only
//!   when the device is idle (the stream waits for the device otherwise), in place of the
//!   victim [`crate::AtIdle::demand_victim`] chooses; the idle device is offered to
//!   [`crate::AtIdle::prefetch`] at each reference whose block is available (that block
//!   pinned) and at each completion while a stream computes, until it declines. The policy
//!   hears of each request, each reference served and each block that arrives, the initial
//!   contents included ([`engine::run_from`]), and reads the loop's cache through a
//!   [`crate::cache::CacheView`]. A prefetch completing once every stream has ended is
//!   cancelled, not counted.
//! * Everything is deterministic: equal-time events run in a fixed order (completions first,
//!   then streams by index).
//!
//! # Plugging in
//!
//! One part = one file implementing [`Replacement`] or [`Prefetcher`] and its typed
//! configuration ([`MakeReplacement`], [`MakePrefetcher`]), plus one line of
//! [`crate::catalog::CATALOG`] pairing it with the other part ([`Pair`]); [`run::run_pair`] is
//! the one place a pair's run is built, and [`Paired`] joins the two parts for the loop. The
//! catalog reads a policy's options (`name:key=value,key=value`, [`PolicySpec`]) once into the
//! parts' configurations; sizes accept `K`/`M`/`G` suffixes (bytes) or a plain number of
//! blocks where the option says so.
//!
//! # Where things are
//!
//! * Replacement: [`replace::clock`] (CLOCK, the papers' "LRU"), [`replace::lru`] (strict LRU,
//!   DULO Table 1's drawing), [`replace::dulo`] (DULO), CPEM's prefetch cache
//!   ([`prefetch::cpem`], TR840 s4), and any demand policy of the catalog through
//!   [`replace::demand`].
//! * Prefetchers: [`prefetch::none`], [`prefetch::obl`] (one-block lookahead),
//!   [`prefetch::readahead`] (Linux), [`prefetch::ap`]
//!   and [`prefetch::competitive`] (TR840), [`prefetch::reorder`] (libprefetch's s3 benchmark)
//!   and [`prefetch::planner`] (the live library's `plan::Planner`).
//! * Schedulers: the `disk` crate's (fifo, clook, sstf, deadline) and [`anticipatory`].
//! * Workloads: [`workload`] (layouts, reference traces), [`microbench`] (TR840),
//!   [`experiments::synthetic`] (DULO's random and sequential stand-ins).
//! * Reproductions: [`experiments::dulo`], [`experiments::libprefetch`], [`tr840`].
//! * Cao et al.'s policies on this loop: [`cao`] (their programs and fetch device; the loop
//!   drives the policy itself).
//!
//! Every result of this module is *simulated* on a named disk model; reports must say so.

pub mod anticipatory;
pub mod cao;
pub mod engine;
pub mod experiments;
pub mod iosched;
pub mod microbench;
pub mod paired;
pub mod prefetch;
mod program;
pub mod replace;
pub mod run;
pub mod schedulers;
pub mod spec;
mod state;
pub mod tr840;
pub mod workload;

pub use engine::{run, EngineConfig};
pub use iosched::{Dispatch, IoScheduler, Plain};
pub use paired::{Paired, Policy};
pub use prefetch::{Access, FetchRange, MakePrefetcher, Prefetcher};
pub use replace::{MakeReplacement, Replacement, Touch};
pub use run::{run_pair, Pair};
pub use spec::PolicySpec;
pub use workload::{DiskBlock, FileBlock, Layout, Step, Workload};
