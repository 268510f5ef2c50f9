//! OPT-OBL (Cao et al. section 4.1): optimal (furthest next reference) replacement plus
//! sequential one-block lookahead. The lookahead ignores the future: it may fetch a block that
//! is never referenced, or discard a block needed before the prefetched one (it breaks rule 3).
//!
//! Deviations: the prefetch victim is never the block the program is about to reference.

use crate::policy::compose::Composed;
use crate::policy::furthest::Furthest;
use crate::policy::obl::Obl;
use crate::policy::{AtIdle, Build, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "opt-obl",
    summary: "MIN replacement with one-block lookahead (K, K+1 -> prefetch K+2)",
    needs_future: true,
    build,
};

fn build(b: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    Ok(Composed::boxed(Furthest::new(b.capacity), Obl::default()))
}
