//! LRU-OBL (Cao et al. section 4.1): LRU replacement plus sequential one-block lookahead, the
//! combination of existing file systems (Ultrix 4.3). A prefetched block enters the
//! most-recently-used end of the list when it arrives (the paper's footnote 2).
//!
//! Deviations: the prefetch victim is the least recently used block other than the block the
//! program is about to reference. Needs no future, so it runs on a streamed trace.

use crate::policy::compose::Composed;
use crate::policy::lru_list::LruList;
use crate::policy::obl::Obl;
use crate::policy::{AtIdle, Build, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru-obl",
    summary: "LRU replacement with one-block lookahead (K, K+1 -> prefetch K+2)",
    needs_future: false,
    build,
};

fn build(_: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    Ok(Composed::boxed(LruList::default(), Obl::default()))
}
