//! One finished step of a capacity search: its table row, its result as a scenario, its
//! totals, whether the service got stuck after it, and its steady part (after the warm-up),
//! which the diagnosis reads. The search controller makes them; the diagnosis reads them.

use results::find::StepRow;
use results::ScenarioResult;
use stats::{Bucket, Totals};

/// One finished step.
pub struct Step {
    pub row: StepRow,
    pub scenario: ScenarioResult,
    pub totals: Totals,
    /// The service stopped answering during it and did not recover.
    pub stuck: bool,
    /// Status counts of the steady part, for the diagnosis.
    pub steady: Bucket,
    /// A worker of a distributed step that did not finish its share, said.
    pub short: Option<String>,
}
