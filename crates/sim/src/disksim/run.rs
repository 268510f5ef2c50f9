//! The one place a run of a replacement policy and a prefetcher is built: [`Pair`], the two
//! parts configured from their options (typed values, parsed once by the catalog or written by
//! an experiment), and [`run_pair`], which builds fresh parts for a workload, a disk and its
//! request scheduler and runs the loop. The catalog's runs on `unit:F` and disk models, the
//! experiments (DULO, libprefetch, TR840) and the tests all run a pair through it; Cao's
//! policies run through [`super::cao`].

use std::fmt;
use std::sync::Arc;

use super::engine::{run, EngineConfig, Parts};
use super::paired::{Paired, Policy};
use super::prefetch::{Disk, MakePrefetcher, PrefetchSetup};
use super::replace::{CacheGeometry, MakeReplacement};
use super::schedulers::io_scheduler_from_name;
use super::workload::Workload;
use crate::metrics::Metrics;
use crate::SimError;

/// A replacement policy and a prefetcher, configured: ready to run on any workload, cache
/// size and disk (a clone shares the configurations).
#[derive(Clone)]
pub struct Pair {
    /// Which cached block leaves.
    pub replacement: Arc<dyn MakeReplacement>,
    /// What to fetch besides demand misses.
    pub prefetcher: Arc<dyn MakePrefetcher>,
}

impl Pair {
    /// The pair of `replacement` and `prefetcher`.
    pub fn new(
        replacement: impl MakeReplacement + 'static,
        prefetcher: impl MakePrefetcher + 'static,
    ) -> Pair {
        Pair {
            replacement: Arc::new(replacement),
            prefetcher: Arc::new(prefetcher),
        }
    }
}

impl fmt::Debug for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pair")
            .field("replacement", &self.replacement)
            .field("prefetcher", &self.prefetcher)
            .finish()
    }
}

/// Runs `workload` with fresh parts of `pair` on `disk` (described and measured once by the
/// caller) behind the request scheduler named `scheduler`, with the loop's settings `config`.
pub fn run_pair(
    pair: &Pair,
    workload: &Workload,
    (disk, scheduler): (&Disk, &str),
    config: EngineConfig,
) -> Result<Metrics, SimError> {
    let geometry = CacheGeometry {
        capacity: config.cache_blocks,
        block_size: workload.layout.block_size,
    };
    let mut replacement = pair.replacement.build(geometry);
    let setup = PrefetchSetup {
        workload,
        cache_blocks: config.cache_blocks,
        disk,
    };
    let mut prefetcher = pair.prefetcher.build(&setup)?;
    let mut scheduler = io_scheduler_from_name(scheduler)?;
    let mut model = disk.spec.build()?;
    let parts = Parts {
        policy: Policy::Pair(Paired {
            replacement: replacement.as_mut(),
            prefetcher: prefetcher.as_mut(),
        }),
        scheduler: scheduler.as_mut(),
        model: model.as_mut(),
    };
    run(workload, config, parts, &mut |_| {})
}

/// The disk model named `name` (`disk` crate names: presets, `fixed:MS`, ...), measured once.
pub fn disk_named(name: &str) -> Result<Disk, SimError> {
    Ok(Disk::new(disk::spec_from_name(name)?.into()))
}
