//! The capacity search as a library, without a command line, a terminal or a load engine:
//! given the search's settings and the outcomes of the steps run so far, [`decide`] says which
//! level to try next or why the search is over. Whatever runs the steps (the local engine
//! today, remote workers later) and whatever shows them (terminal, JSON, a web page) sits
//! outside; this crate only decides, so every rule is table-tested here.
//!
//! The rules: levels double from `from` (each later level rounded to a whole number, never
//! past `to`) until a step fails or `to` passes; then the gap between the last pass and the
//! first fail is bisected (`round((lo + hi) / 2)`) until `hi / lo - 1 <= precision` or no whole
//! level is left between them. Before that, a step can end the search on its own: it was
//! interrupted, the service got stuck (no answer to its health probe within the recovery
//! time), or brink's own workers were the limit.

mod decide;

pub use decide::{decide, Decision, Outcome, Settings, Stop};

/// A step during which brink's own worker threads were at least this busy (0..1) measured
/// brink, not the service: the search stops there and the diagnosis says so.
pub const GENERATOR_BUSY: f64 = 0.9;
