//! LRU-demand (Cao et al. section 4.1): no prefetching; on a miss, discard the least recently
//! used block. The replacement of traditional file systems.
//!
//! Needs no future, so it runs on a streamed trace.

use crate::policy::compose::{Composed, NoPrefetch};
use crate::policy::lru_list::LruList;
use crate::policy::{AtIdle, Build, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru-demand",
    summary: "demand paging, least recently used replacement",
    needs_future: false,
    build,
};

fn build(_: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    Ok(Composed::boxed(LruList::default(), NoPrefetch))
}
