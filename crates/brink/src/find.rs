//! The capacity search of `brink find` (and `brink demo`), run locally: the search library
//! decides the levels, this controller runs each step on the engine. Every step is an ordinary run of the chosen scenario at
//! one level (connections or rate) for `--step`; its first `--warmup` is measured but left out
//! of the verdict. Levels grow geometrically (x2) from `--from` until a step fails (an SLO, no
//! response at all, the generator's own limit) or `--to` passes; then the gap between the last
//! pass and the first fail is bisected until they are within `--precision`. After a failing
//! step the health URL is probed: a service that does not answer within `--recovery` is stuck,
//! and the search stops there (bounded: every step and probe has a deadline).

use crate::cli::RunArgs;
use crate::diagnose;
use crate::exit::{Fail, INTERRUPTED, SLO_FAILED};
use crate::resolve::Job;
use crate::sink::{Event, Sinks};
use crate::step::Step;
use crate::watch::Watch;
use engine::{Curve, Load, Target};
use observe::health as probe;
use report::find::{By, FindResult, KneeInfo, StepRow, Sustained, UslInfo};
use report::RunResult;
use stats::capacity::{knee, Point, Usl};
use stats::{ErrorKind, LatencySummary};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use search::GENERATOR_BUSY;

/// The search's settings, checked.
pub struct Search {
    pub by: By,
    pub from: f64,
    pub to: f64,
    pub step: Duration,
    pub warmup: Duration,
    pub cooldown: Duration,
    pub precision: f64,
    pub health: Target,
    pub recovery: Duration,
    pub pool: usize,
}

/// Runs the search of `job` with `search`'s settings; `run` gives the outputs (`--json`,
/// `-q`), the observers and the seed. `brink demo` calls this directly.
pub fn run_search(run: &RunArgs, job: Job, search: &Search) -> Result<i32, Fail> {
    crate::suite::preflight(std::slice::from_ref(&job))?;
    let mut sinks = Sinks::standard(run.quiet, crate::output::open_json(run.json.as_ref())?);
    let interrupt = crate::signals::install_signals()?;
    let observing = crate::suite::start_observing(run)?;
    let columns = observing.as_ref().map_or_else(Vec::new, |(_, c)| c.clone());
    let started = report::rfc3339_utc(SystemTime::now());
    let slos: Vec<&str> = job.slos.iter().map(|s| s.text.as_str()).collect();
    let header = format!(
        "find: {} {} by {} from {} to {}, {}s steps ({}s warm-up), objectives: {}\n",
        job.spec.workload.requests[0].method,
        job.spec.target.url(),
        search.by.name(),
        search.from,
        search.to,
        search.step.as_secs_f64(),
        search.warmup.as_secs_f64(),
        slos.join(", ")
    );
    sinks.show(&Event::Search {
        header: &header,
        by: search.by,
        columns: &columns,
    });
    let mut ctl = Controller {
        job: &job,
        search,
        interrupt: &interrupt,
        sinks: &mut sinks,
        steps: Vec::new(),
        sampler: observing.as_ref().map(|(s, _)| s),
    };
    let stopped = ctl.search();
    let steps = ctl.steps;
    if let Some((s, _)) = observing {
        s.stop();
    }
    let find = summarise(&job, search, &steps, stopped.clone());
    let stuck = steps.iter().any(|s| s.stuck);
    let passed_any = find.max_sustainable.is_some();
    let runs = steps.into_iter().map(|s| (s.scenario, s.totals)).collect();
    let mut result = RunResult::new(started, crate::resolve::seed(run), runs)
        .ok_or_else(|| Fail::input("the search ran no step"))?;
    result.find = Some(find);
    sinks.emit(&Event::Finished(&result))?;
    if interrupt.load(Ordering::Relaxed) {
        return Ok(INTERRUPTED);
    }
    Ok(if stuck || !passed_any { SLO_FAILED } else { 0 })
}

struct Controller<'a> {
    job: &'a Job,
    search: &'a Search,
    interrupt: &'a AtomicBool,
    sinks: &'a mut Sinks,
    steps: Vec<Step>,
    sampler: Option<&'a observe::Sampler>,
}

impl Controller<'_> {
    /// Runs the search (the library decides, this controller runs the steps); returns why it
    /// ended, in words.
    fn search(&mut self) -> String {
        let s = self.search;
        let settings = search::Settings {
            from: s.from,
            to: s.to,
            precision: s.precision,
        };
        match search::search(&settings, self).1 {
            search::End::Stopped(stop) => stop_text(s, stop),
            search::End::Failed(why) => why,
        }
    }
}

impl search::StepRunner for Controller<'_> {
    /// Runs one step and says what it means for the search; `Err` when it could not run
    /// (interrupted in the cooldown, or the run failed to start).
    fn run_step(&mut self, level: f64) -> Result<search::Outcome, String> {
        if self.interrupt.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        if !self.steps.is_empty() && !crate::suite::pause(self.search.cooldown, self.interrupt) {
            return Err("interrupted".into());
        }
        let from = Instant::now();
        let mut step = run_step(self.job, self.search, level, self.interrupt, self.sinks)
            .map_err(|f| f.message)?;
        crate::suite::attach_samples(&mut step.scenario, self.sampler, from, Instant::now());
        step.row.observed = step.scenario.observed.clone();
        let interrupted = step.scenario.interrupted;
        self.sinks.show(&Event::StepDone(&step.row));
        if !step.row.pass && !interrupted {
            let stop = || self.interrupt.load(Ordering::Relaxed);
            if probe::wait_for_recovery(&self.search.health, self.search.recovery, &stop).is_none()
            {
                step.stuck = true;
            }
        }
        let outcome = search::Outcome {
            level,
            pass: step.row.pass,
            interrupted,
            stuck: step.stuck,
            generator_busy: step.row.generator_cpu,
            generator_bound: step.row.generator_cpu >= GENERATOR_BUSY,
        };
        self.steps.push(step);
        Ok(outcome)
    }
}

/// Why the search ended, in words (the `stopped` line and field).
fn stop_text(s: &Search, stop: search::Stop) -> String {
    use search::Stop;
    let lvl = |l: f64| s.by.describe(l);
    match stop {
        Stop::Interrupted => "interrupted".into(),
        Stop::Stuck { level } => format!(
            "service stopped responding at {} and did not recover within {}s",
            lvl(level),
            s.recovery.as_secs_f64()
        ),
        Stop::GeneratorBound {
            level,
            busy,
            passed: false,
        } => format!(
            "the generator, not the service, was the limit at {} (brink's workers {:.0}% busy)",
            lvl(level),
            busy * 100.0
        ),
        Stop::GeneratorBound { level, busy, .. } => format!(
            "the generator reached its own limit at {} (workers {:.0}% busy): higher levels would measure brink, not the service",
            lvl(level),
            busy * 100.0
        ),
        Stop::AllPassed { to } => format!("every level up to --to {} passed", lvl(to)),
        Stop::FirstFailed { from } => format!("the first level ({}) already failed", lvl(from)),
        Stop::Bisected { pass, fail } => format!(
            "bisected between {} (pass) and {} (fail)",
            lvl(pass),
            lvl(fail)
        ),
    }
}

/// CPU seconds this process has used so far.
fn own_cpu() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct; RUSAGE_SELF is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
    if rc != 0 {
        return 0.0;
    }
    // SAFETY: initialised by the successful call above.
    let u = unsafe { u.assume_init() };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn run_step(
    job: &Job,
    s: &Search,
    level: f64,
    interrupt: &AtomicBool,
    sinks: &mut Sinks,
) -> Result<Step, crate::exit::Fail> {
    let mut spec = job.spec.clone();
    spec.max_requests = None;
    spec.load = if s.by == By::Rate {
        Load::Open {
            rate: Curve::flat(level, Some(s.step)),
            pool: s.pool,
        }
    } else {
        Load::Closed {
            connections: Curve::flat(level, Some(s.step)),
        }
    };
    let names = spec.workload.names();
    let total = spec.load.end();
    let mut watch = Watch::new(sinks, &job.slos, &names, s.warmup.as_secs(), false, total);
    let (cpu0, t0) = (own_cpu(), Instant::now());
    let out = engine::run(&spec, interrupt, &mut watch);
    let (cpu, wall) = (own_cpu() - cpu0, t0.elapsed().as_secs_f64());
    watch.finish();
    let out = out.map_err(|e| crate::exit::Fail::input(e.to_string()))?;
    // The steady part: from the end of the warm-up to the end of the step.
    let steady_s = (out.duration.as_secs_f64() - s.warmup.as_secs() as f64).max(0.5);
    let slo_results = watch.verdicts(steady_s);
    let b = &watch.judged;
    let lat = LatencySummary::of(&b.corrected);
    let mut reasons: Vec<String> = slo_results
        .iter()
        .filter(|r| !r.pass)
        .map(|r| r.slo.clone())
        .collect();
    if b.ok == 0 {
        reasons.insert(0, "no successful response".into());
    }
    if out.interrupted {
        // A partial step proves nothing either way; it is kept in the table but judged by no one.
        reasons = vec!["interrupted (partial step, not judged)".to_string()];
    }
    let name = format!("step {}", s.by.describe(level));
    let scenario = crate::outcome::scenario_result(&name, &spec, &out, slo_results, None);
    let row = StepRow {
        level,
        p50: lat.p50,
        p75: lat.p75,
        p90: lat.p90,
        p99: lat.p99,
        mean: lat.mean,
        rps: b.requests as f64 / steady_s,
        ok_rps: b.ok as f64 / steady_s,
        requests: out.totals.all.requests,
        errors: out.totals.all.errors(),
        timeouts: out.totals.all.errors_by_kind[ErrorKind::Timeout.index()],
        late_share: b.late as f64 / b.requests.max(1) as f64,
        max_lag_ms: b.max_lag_us as f64 / 1000.0,
        generator_cpu: if wall > 0.0 {
            cpu / (wall * out.workers.max(1) as f64)
        } else {
            0.0
        },
        observed: BTreeMap::new(),
        pass: reasons.is_empty(),
        reason: reasons.join(", "),
    };
    Ok(Step {
        row,
        scenario,
        totals: out.totals,
        stuck: false,
        steady: watch.judged,
    })
}

fn summarise(job: &Job, s: &Search, all_steps: &[Step], stopped: String) -> FindResult {
    let by_rate = s.by == By::Rate;
    // Only whole steps count; an interrupted one is listed but never judged.
    let whole: Vec<&Step> = all_steps
        .iter()
        .filter(|x| !x.scenario.interrupted)
        .collect();
    let steps = &whole[..];
    let best = steps
        .iter()
        .filter(|x| x.row.pass)
        .max_by(|a, b| a.row.level.total_cmp(&b.row.level));
    let first_fail_above = |lvl: f64| {
        steps
            .iter()
            .filter(|x| !x.row.pass && x.row.level > lvl)
            .map(|x| x.row.level)
            .min_by(f64::total_cmp)
    };
    let max_sustainable = best.map(|b| Sustained {
        level: b.row.level,
        rps: b.row.ok_rps,
        slo: job.slos.iter().map(|x| x.text.clone()).collect(),
        resolution: first_fail_above(b.row.level).map(|f| f / b.row.level - 1.0),
    });
    let points: Vec<Point> = steps
        .iter()
        .map(|x| Point {
            level: x.row.level,
            throughput: x.row.ok_rps,
            p90_ms: x.row.p90,
        })
        .collect();
    let knee = knee(&points).map(|k| KneeInfo {
        level: k.level,
        reason: k.reason,
    });
    // USL is about concurrency: for rate steps, the concurrency actually in the system is
    // throughput x mean latency (Little's law).
    let usl_points: Vec<(f64, f64)> = steps
        .iter()
        .filter(|x| x.row.ok_rps > 0.0)
        .map(|x| {
            let n = if by_rate {
                x.row.ok_rps * x.row.mean / 1000.0
            } else {
                x.row.level
            };
            (n, x.row.ok_rps)
        })
        .collect();
    let usl = Usl::fit(&usl_points).map(|u| UslInfo {
        lambda: u.lambda,
        sigma: u.sigma,
        kappa: u.kappa,
        peak_concurrency: u.peak_n,
        peak_rps: u.peak_x,
        r2: u.r2,
        poor_fit: u.r2 < 0.8,
    });
    let mut find = FindResult {
        by: s.by,
        steps: all_steps.iter().map(|x| x.row.clone()).collect(),
        max_sustainable,
        knee,
        usl,
        diagnosis: Vec::new(),
        findings: Vec::new(),
        stopped,
    };
    find.findings = diagnose::diagnose(&find, steps);
    find.diagnosis = find.findings.iter().map(|x| x.describe(s.by)).collect();
    find
}
