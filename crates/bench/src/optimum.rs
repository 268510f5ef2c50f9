//! The fewest pages any prefetcher must read for a workload in a given memory: the optimum's fetch
//! count, computed by the simulator's `opt-demand` policy (Belady's optimal replacement with demand
//! fetching, Cao et al. section 2.1) on the workload's page sequence, with a cache of as many pages
//! as the memory limit holds. Prefetching changes when pages are read, not how many: no policy
//! fetches fewer pages than this (Cao et al., Theorem 1's setting), so a mode's pages read from disk
//! divided by it is its overhead in bytes.
//!
//! Without a memory limit every distinct page fits, and the optimum reads each once.
//! Deviations: the cache is the whole limit (the process's own memory is not subtracted), so the
//! figure is a bound the live library cannot quite reach.

use std::collections::HashSet;

use anyhow::{anyhow, Result};

use crate::workload::{access_pages, Read, PAGE_SIZE};

/// Pages the optimum reads for `reads` with `memory_bytes` of cache (`None`: unlimited).
pub fn optimum_pages(reads: &[Read], memory_bytes: Option<u64>) -> Result<u64> {
    let pages = access_pages(reads);
    let distinct = pages.iter().collect::<HashSet<_>>().len() as u64;
    let capacity = memory_bytes.map_or(distinct, |bytes| (bytes / PAGE_SIZE).max(1));
    if capacity >= distinct {
        return Ok(distinct);
    }
    let policy = sim::find("opt-demand").map_err(|e| anyhow!("{e}"))?;
    let future = sim::Future::from_blocks(&pages);
    let setup = sim::RunSetup::simplified(capacity as usize, 1);
    let metrics = sim::run_future(policy, &future, &setup).map_err(|e| anyhow!("{e}"))?;
    Ok(metrics.fetches())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(list: &[u64]) -> Vec<Read> {
        list.iter()
            .map(|&page| Read {
                offset: page * PAGE_SIZE,
                len: PAGE_SIZE,
            })
            .collect()
    }

    #[test]
    fn unlimited_memory_reads_each_distinct_page_once() {
        assert_eq!(optimum_pages(&pages(&[1, 2, 1, 3, 2]), None).unwrap(), 3);
    }

    #[test]
    fn a_small_cache_rereads_what_belady_evicts() {
        // Cache of 2 pages, references 1 2 3 1 2 3: Belady fetches 1, 2, 3 (evicting 2, used last),
        // keeps 1 for its reuse, then fetches 2 again (evicting 1): 4 fetches, then 3 is a hit.
        let two_pages = Some(2 * PAGE_SIZE);
        assert_eq!(
            optimum_pages(&pages(&[1, 2, 3, 1, 2, 3]), two_pages).unwrap(),
            4
        );
    }
}
