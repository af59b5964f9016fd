//! Where a run's load is generated. The suite and the search hand every run (a scenario, a
//! search step) to one [`Executor`] and never know which it is: this process's engine
//! ([`Local`]), or a coordinator that splits the run over worker processes and merges their
//! seconds with the same `merge::Merger`. Both see the same [`RunSpec`], give every merged
//! second to the same observer and return the same [`RunOutput`].

use crate::Error;
use engine::RunSpec;
use merge::{OnSecond, RunOutput};
use std::sync::atomic::AtomicBool;

/// Runs what the suite or the search asks for.
pub trait Executor {
    /// Checks everything `spec` needs before any load is sent (the target resolves, TLS files
    /// load, the requests may be sent; for workers: they answer and agree).
    fn check(&self, spec: &RunSpec) -> Result<(), Error>;

    /// Runs `spec` until its schedule ends, `-n` is reached, `interrupt` is set or `observer`
    /// asks to stop, handing `observer` every merged second in order.
    fn run(
        &self,
        spec: &RunSpec,
        interrupt: &AtomicBool,
        observer: &mut dyn OnSecond,
    ) -> Result<RunOutput, Error>;
}

/// The engine of this process: one worker thread per core.
pub struct Local;

impl Executor for Local {
    fn check(&self, spec: &RunSpec) -> Result<(), Error> {
        engine::check(spec).map_err(|e| Error(e.to_string()))
    }

    fn run(
        &self,
        spec: &RunSpec,
        interrupt: &AtomicBool,
        observer: &mut dyn OnSecond,
    ) -> Result<RunOutput, Error> {
        engine::run(spec, interrupt, observer).map_err(|e| Error(e.to_string()))
    }
}
