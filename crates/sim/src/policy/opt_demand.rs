//! OPT-demand, Belady's MIN (Cao et al. section 4.1): no prefetching; on a miss, discard the
//! block whose next reference is furthest in the future (rule 2). Its fetch count is the
//! minimum any policy can achieve, the baseline of the paper's normalised elapsed time.
//!
//! O(log k) per reference with the lazy heap of `furthest`.

use crate::policy::compose::{Composed, NoPrefetch};
use crate::policy::furthest::Furthest;
use crate::policy::{AtIdle, Build, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "opt-demand",
    summary: "demand paging, Belady's MIN replacement (furthest next reference)",
    needs_future: true,
    build,
};

fn build(b: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    Ok(Composed::boxed(Furthest::new(b.capacity), NoPrefetch))
}
