//! What a plan says about watching past the response: the search's hooks (`hooks:`), a
//! scenario's async completion probe (`complete_when:`) and a step's per-attempt completion
//! (`complete:`), with their defaults. Each error points at the value at fault.

use crate::compile::{Cx, HookSpec, Hooks};
use crate::error::PlanError;
use crate::file::S;
use model::Target;
use std::time::Duration;
use workload::template::Names;

/// How often a completion probe polls, and how long it may wait, unless the plan says.
pub const DEFAULT_EVERY: Duration = Duration::from_millis(100);
pub const DEFAULT_WITHIN: Duration = Duration::from_secs(120);

/// A step's completion polls, unless it says.
pub const STEP_EVERY: Duration = Duration::from_millis(200);
pub const STEP_WITHIN: Duration = Duration::from_secs(30);

impl Cx<'_> {
    pub(crate) fn hooks(&self, h: &crate::file::RawHooks) -> Result<Hooks, PlanError> {
        let one = |x: &Option<S<crate::file::RawHook>>| -> Result<Option<HookSpec>, PlanError> {
            let Some(x) = x else { return Ok(None) };
            Ok(Some(match &x.value {
                crate::file::RawHook::Command(c) => HookSpec {
                    command: c.clone(),
                    at: None,
                    timeout: None,
                    required: false,
                },
                crate::file::RawHook::Full {
                    run,
                    at,
                    timeout,
                    required,
                } => {
                    if let Some(a) = at {
                        if !(0.0..=1.0).contains(a) {
                            return Err(
                                self.err(x, format!("at: {a} is not a share of the step (0 to 1)"))
                            );
                        }
                    }
                    HookSpec {
                        command: run.clone(),
                        at: *at,
                        timeout: timeout
                            .as_ref()
                            .map(|t| self.duration(x, t, "timeout"))
                            .transpose()?,
                        required: *required,
                    }
                }
            }))
        };
        Ok(Hooks {
            peak: one(&h.peak)?,
            each_step: one(&h.each_step)?,
            on_fail: one(&h.on_fail)?,
            after: one(&h.after)?,
        })
    }

    /// A step's `complete:`: its URL a template of this iteration's values.
    pub(crate) fn step_complete(
        &self,
        c: &S<crate::file::RawComplete>,
        names: &Names,
    ) -> Result<workload::StepComplete, PlanError> {
        let v = &c.value;
        if let Some(p) = &v.progress {
            return Err(self.err(
                p,
                "progress applies to a scenario's complete_when, not a step's",
            ));
        }
        let dur = |d: &Option<S<String>>, key: &str, default: Duration| match d {
            Some(s) => self.duration(s, &s.value, key),
            None => Ok(default),
        };
        let until = match (&v.until, &v.prometheus) {
            (Some(u), None) => {
                observe::completion::Condition::parse(&u.value).map_err(|e| self.err(u, e))?
            }
            (None, Some(p)) => observe::completion::Condition::parse_prometheus(&p.value)
                .map_err(|e| self.err(p, e))?,
            _ => {
                return Err(self.err(
                    c,
                    "complete takes until: (a JSONPath comparison) or prometheus: (a series comparison)",
                ))
            }
        };
        Ok(workload::StepComplete {
            url: self.template(&v.get, names)?,
            until,
            every: dur(&v.every, "every", STEP_EVERY)?,
            within: dur(&v.within, "within", STEP_WITHIN)?,
        })
    }

    pub(crate) fn completion(
        &self,
        c: &S<crate::file::RawComplete>,
        target: &Target,
    ) -> Result<observe::completion::Probe, PlanError> {
        let v = &c.value;
        let dur = |d: &Option<S<String>>, key: &str, default: Duration| match d {
            Some(s) => self.duration(s, &s.value, key),
            None => Ok(default),
        };
        let every = dur(&v.every, "every", DEFAULT_EVERY)?;
        let within = dur(&v.within, "within", DEFAULT_WITHIN)?;
        let (until_at, until) = match (&v.until, &v.prometheus) {
            (Some(u), None) => (u, u.value.clone()),
            (None, Some(p)) => (p, format!("prometheus: {}", p.value)),
            _ => {
                return Err(self.err(
                    c,
                    "complete_when takes until: (a JSONPath comparison) or prometheus: (a series comparison)",
                ))
            }
        };
        observe::completion::Probe::new(
            target,
            &v.get.value,
            &until,
            v.progress.as_ref().map(|p| p.value.as_str()),
            every,
            within,
        )
        .map_err(|e| {
            if e.starts_with("get ") {
                self.err(&v.get, e)
            } else if let (true, Some(p)) = (e.starts_with("progress "), &v.progress) {
                self.err(p, e)
            } else if e.starts_with("every") {
                self.err(c, e)
            } else {
                self.err(until_at, e)
            }
        })
    }
}
