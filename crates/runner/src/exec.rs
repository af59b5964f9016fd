//! Where a run's load is generated. The suite and the search hand every run (a scenario, a
//! search step) to one [`Executor`] and never know which it is: this process's engine
//! ([`Local`]), or a coordinator that splits the run over worker processes and merges their
//! seconds with the same `merge::Merger`. Both see the same [`RunSpec`], give every merged
//! second to the same observer and return the same [`RunOutput`].

use crate::Error;
use engine::{Curve, Load, RunSpec};
use merge::{OnSecond, RunOutput};
use results::find::By;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// One run the suite or the search asks for: its spec, and where it comes from in the
/// command, so a worker that compiled the same command builds the same spec.
#[derive(Clone, Copy)]
pub struct Unit<'a> {
    pub spec: &'a RunSpec,
    /// The job's index among the command's jobs (a plan's scenarios, in order; a search
    /// has one job, 0).
    pub job: usize,
    /// A search step's level: the spec is the job's at this flat level ([`step_spec`]).
    pub level: Option<f64>,
}

/// Runs what the suite or the search asks for.
pub trait Executor {
    /// Checks everything `unit` needs before any load is sent (the target resolves, TLS files
    /// load, the requests may be sent; for workers: they answer and agree).
    fn check(&self, unit: Unit) -> Result<(), Error>;

    /// Runs `unit` until its schedule ends, `-n` is reached, `interrupt` is set or `observer`
    /// asks to stop, handing `observer` every merged second in order.
    fn run(
        &self,
        unit: Unit,
        interrupt: &AtomicBool,
        observer: &mut dyn OnSecond,
    ) -> Result<RunOutput, Error>;
}

/// A search step: `spec` at a flat `level` of the search's dimension for `step`, without `-n`
/// (connections for `By::Connections`, the rate with a pool of `pool` for `By::Rate`).
pub fn step_spec(spec: &RunSpec, by: By, level: f64, step: Duration, pool: usize) -> RunSpec {
    let mut spec = spec.clone();
    spec.max_requests = None;
    spec.load = match by {
        By::Rate => Load::Open {
            rate: Curve::flat(level, Some(step)),
            pool,
        },
        By::Connections => Load::Closed {
            connections: Curve::flat(level, Some(step)),
        },
    };
    spec
}

/// The engine of this process: one worker thread per core.
pub struct Local;

impl Executor for Local {
    fn check(&self, unit: Unit) -> Result<(), Error> {
        engine::check(unit.spec).map_err(|e| Error(e.to_string()))
    }

    fn run(
        &self,
        unit: Unit,
        interrupt: &AtomicBool,
        observer: &mut dyn OnSecond,
    ) -> Result<RunOutput, Error> {
        engine::run(unit.spec, interrupt, observer).map_err(|e| Error(e.to_string()))
    }
}
