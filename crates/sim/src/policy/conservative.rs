//! Conservative (Cao et al. section 2.4): exactly MIN's replacements, each fetch issued at the
//! earliest opportunity consistent with the four rules of section 2.2. It makes the minimum
//! number of fetches and is within a factor 2 of the optimal elapsed time (Lemma 3).
//!
//! Rules as applied: rule 1 and rule 2 hold because the m-th fetch is MIN's m-th miss, the next
//! block missing from a cache equal to MIN's; rule 3 is the issue condition (the victim's next
//! reference is after the fetched block's); rule 4 holds because the engine offers every
//! opportunity (fetch completion, cursor move). Mechanism in `schedule`.

use crate::policy::schedule::EarlySchedule;
use crate::policy::{opt_demand, AtIdle, Build, PolicyInfo};
use crate::SimError;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "conservative",
    summary: "MIN's fetches and replacements, each at its first harmless opportunity",
    needs_future: true,
    build,
};

fn build(b: &Build<'_>) -> Result<Box<dyn AtIdle>, SimError> {
    Ok(Box::new(EarlySchedule::record(&opt_demand::INFO, b)?))
}
