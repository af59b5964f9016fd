//! What the summary of a search and its diagnosis read of one step: its table row, whether
//! the service stopped answering after it or it was cut short, and its steady counts.

use results::find::StepRow;
use stats::Bucket;

/// What the summary and the diagnosis read of one step.
#[derive(Clone, Copy)]
pub struct StepFacts<'a> {
    /// Its table row (level, verdict, throughput, generator CPU, observed server figures).
    pub row: &'a StepRow,
    /// The service stopped answering after it and did not recover.
    pub stuck: bool,
    /// It was cut short by an interrupt: listed, never judged.
    pub interrupted: bool,
    /// Its steady part (after the warm-up): status and error counts.
    pub steady: &'a Bucket,
}
