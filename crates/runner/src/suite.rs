//! Running jobs in order: each scenario's run with its live progress and its SLOs followed
//! second by second (an `abort` SLO stops the scenario at the first broken window), then its
//! summary and SLA table, the pause, the next scenario. An interrupt stops the current
//! scenario, keeps what it measured, and skips the rest.

use crate::sink::{Event, Sinks};
use crate::watch::{Judged, Watch};
use crate::{Error, Executor};
use engine::RunSpec;
use observe::Sampler;
use results::find::Observed;
use results::{RunResult, ScenarioResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// One scenario, ready to run.
pub struct Job {
    pub name: String,
    pub spec: RunSpec,
    pub slos: Vec<stats::slo::Slo>,
    /// Wait after it before the next job.
    pub pause: Duration,
    /// When the work the load started is done (`complete_when`), if asked.
    pub completion: Option<observe::completion::Probe>,
}

/// What to observe on the server while the load runs, and the figures it gives (table
/// columns).
pub struct Observing {
    pub sources: Vec<observe::Source>,
    pub columns: Vec<String>,
}

/// Starts sampling what `observing` names, if anything.
pub fn start_observing(observing: Option<&Observing>) -> Option<Sampler> {
    observing.map(|o| Sampler::start(o.sources.clone(), Duration::from_secs(1)))
}

/// Puts the samples taken during a scenario that started at `from` on its timeline: peak and
/// mean over the scenario, and each sample in the second it was taken.
pub fn attach_samples(
    sc: &mut ScenarioResult,
    sampler: Option<&Sampler>,
    from: Instant,
    to: Instant,
) {
    let Some(s) = sampler else {
        return;
    };
    let samples = s.snapshot();
    sc.observed = observe::summarise(&samples, from, to)
        .into_iter()
        .map(|(k, (peak, mean))| (k, Observed { peak, mean }))
        .collect();
    let within = |x: &&observe::Sample| x.at >= from && x.at <= to;
    if let Some(last) = samples.iter().rfind(within) {
        sc.observed_sources = last.seen.clone();
    }
    for sample in samples.iter().filter(within) {
        let t = sample.at.duration_since(from).as_secs();
        if let Some(row) = sc.timeseries.iter_mut().find(|r| r.t == t) {
            row.observed
                .extend(sample.values.iter().map(|(k, v)| (k.clone(), *v)));
        }
    }
}

/// Runs `jobs` in order, telling `sinks` what happens, and returns the whole result.
pub fn run_jobs(
    jobs: Vec<Job>,
    exec: &dyn Executor,
    interrupt: &AtomicBool,
    sinks: &mut Sinks,
    seed: u64,
    sampler: Option<&Sampler>,
) -> Result<RunResult, Error> {
    let started = results::rfc3339_utc(SystemTime::now());
    let count = jobs.len();
    let mut runs = Vec::new();
    for (index, job) in jobs.into_iter().enumerate() {
        sinks.show(&Event::Scenario {
            name: &job.name,
            index,
            count,
        });
        let from = Instant::now();
        let (mut scenario, totals) = match run_one(&job, index, exec, interrupt, sinks) {
            Ok(done) => done,
            Err(fail) => {
                // Keep what the earlier scenarios measured; record why this one did not run.
                let scenario = failed_scenario(&job, &fail.0);
                sinks.show(&Event::ScenarioFailed {
                    name: &job.name,
                    why: &fail.0,
                });
                runs.push((scenario, stats::Totals::default()));
                break;
            }
        };
        attach_samples(&mut scenario, sampler, from, Instant::now());
        scenario.broke = crate::broke::broke(&scenario);
        let stop = scenario.interrupted;
        sinks.show(&Event::ScenarioDone(&scenario));
        runs.push((scenario, totals));
        if stop {
            break;
        }
        if index + 1 < count && !pause(job.pause, interrupt) {
            break;
        }
    }
    RunResult::new(started, seed, runs).ok_or_else(|| Error("no scenario ran".into()))
}

fn run_one(
    job: &Job,
    index: usize,
    exec: &dyn Executor,
    interrupt: &AtomicBool,
    sinks: &mut Sinks,
) -> Result<(ScenarioResult, stats::Totals), Error> {
    let names = job.spec.workload.names();
    let total = job.spec.load.end();
    let mut watch = Watch::new(sinks, &job.slos, &names, Judged::Whole, total);
    let (cpu0, t0) = (crate::outcome::own_cpu(), Instant::now());
    let cfs0 = observe::procfs::own_cfs();
    let probe = job.completion.clone().map(|p| p.start(t0));
    let unit = crate::Unit {
        spec: &job.spec,
        job: index,
        level: None,
    };
    let out = exec.run(unit, interrupt, &mut watch);
    let (cpu, wall) = (crate::outcome::own_cpu() - cpu0, t0.elapsed().as_secs_f64());
    let throttled = observe::procfs::throttled_share(cfs0, observe::procfs::own_cfs());
    watch.finish();
    let out = out?;
    let mut slo = watch.verdicts(out.scheduled.as_secs_f64());
    let aborted_by = watch.aborted_by.take();
    let unreachable = watch.unreachable;
    drop(watch);
    let completion = match (probe, &job.completion) {
        (Some(running), Some(p)) => {
            sinks.show(&Event::Waiting {
                what: &format!(
                    "load done; waiting for completion: {} (within {:.0}s)",
                    p.until.text,
                    p.within.as_secs_f64()
                ),
            });
            running.load_done();
            let seen = running.finish(interrupt);
            let c = crate::outcome::completion_json(p, &seen, out.duration);
            crate::outcome::judge_completion(&job.slos, &c, &mut slo);
            Some(c)
        }
        _ => None,
    };
    let mut scenario = crate::outcome::scenario_result(&job.name, &job.spec, &out, slo, aborted_by);
    scenario.completion = completion;
    scenario.unreachable = unreachable;
    crate::outcome::judge_async(&job.slos, scenario.async_jobs.as_ref(), &mut scenario.slo);
    scenario.slo_passed = (!scenario.slo.is_empty()).then(|| scenario.slo.iter().all(|s| s.pass));
    scenario.generator = Some(crate::outcome::generator_check(
        crate::outcome::Used {
            cpu,
            wall,
            throttled,
        },
        &out,
        &scenario.summary,
    ));
    Ok((scenario, out.totals))
}

/// The result of a scenario that could not run: nothing measured, and why.
fn failed_scenario(job: &Job, why: &str) -> ScenarioResult {
    let out = merge::RunOutput {
        totals: stats::Totals::default(),
        by_request: job
            .spec
            .workload
            .names()
            .into_iter()
            .map(|n| (n, stats::Totals::default()))
            .collect(),
        aborted: false,
        seconds: Vec::new(),
        duration: Duration::ZERO,
        scheduled: Duration::ZERO,
        interrupted: false,
        unfinished: 0,
        workers: 0,
        sched: None,
        completions: Vec::new(),
        remote: Vec::new(),
    };
    let mut sc = crate::outcome::scenario_result(&job.name, &job.spec, &out, Vec::new(), None);
    sc.error = Some(why.to_string());
    sc
}

/// Checks every job before the first one sends anything (targets resolve, TLS files load,
/// requests may be sent): one line naming the scenario at fault.
pub fn preflight(jobs: &[Job], exec: &dyn Executor) -> Result<(), Error> {
    for (index, job) in jobs.iter().enumerate() {
        let unit = crate::Unit {
            spec: &job.spec,
            job: index,
            level: None,
        };
        // One scenario (a URL on the command line) needs no name in front of its error.
        exec.check(unit).map_err(|e| match jobs.len() {
            1 => Error(e.to_string()),
            _ => Error(format!("scenario '{}': {e}", job.name)),
        })?;
    }
    Ok(())
}

/// Waits `d` unless interrupted; false when interrupted.
pub fn pause(d: Duration, interrupt: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if interrupt.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
    }
    !interrupt.load(Ordering::Relaxed)
}
