//! Running jobs in order: each scenario's run with its live progress and its SLOs followed
//! second by second (an `abort` SLO stops the scenario at the first broken window), then its
//! summary and SLA table, the pause, the next scenario. An interrupt stops the current
//! scenario, keeps what it measured, and skips the rest.

use crate::exit::Fail;
use crate::resolve::Job;
use crate::sink::{Event, Sinks};
use crate::watch::Watch;
use observe::Sampler;
use report::find::Observed;
use report::{RunResult, ScenarioResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Starts the `--observe` sources, if any, and names the figures they give (table columns).
pub fn start_observing(a: &crate::cli::RunArgs) -> Result<Option<(Sampler, Vec<String>)>, Fail> {
    if a.observe.is_empty() {
        if !a.metric.is_empty() {
            return Err(Fail::input("--metric needs --observe prometheus=URL"));
        }
        return Ok(None);
    }
    let sources = a
        .observe
        .iter()
        .map(|s| observe::parse(s, &a.metric))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Fail::input)?;
    let mut columns = vec![observe::CPU.to_string(), observe::THREADS.to_string()];
    columns.extend(
        a.metric
            .iter()
            .filter_map(|m| m.split_once('=').map(|(n, _)| n.to_string())),
    );
    Ok(Some((
        Sampler::start(sources, Duration::from_secs(1)),
        columns,
    )))
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
    for sample in samples.iter().filter(|x| x.at >= from && x.at <= to) {
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
    interrupt: &AtomicBool,
    sinks: &mut Sinks,
    seed: u64,
    sampler: Option<&Sampler>,
) -> Result<RunResult, Fail> {
    let started = report::rfc3339_utc(SystemTime::now());
    let count = jobs.len();
    let mut runs = Vec::new();
    for (index, job) in jobs.into_iter().enumerate() {
        sinks.show(&Event::Scenario {
            name: &job.name,
            index,
            count,
        });
        let from = Instant::now();
        let (mut scenario, totals) = match run_one(&job, interrupt, sinks) {
            Ok(done) => done,
            Err(fail) => {
                // Keep what the earlier scenarios measured; record why this one did not run.
                let scenario = failed_scenario(&job, &fail.message);
                sinks.show(&Event::ScenarioFailed {
                    name: &job.name,
                    why: &fail.message,
                });
                runs.push((scenario, stats::Totals::default()));
                break;
            }
        };
        attach_samples(&mut scenario, sampler, from, Instant::now());
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
    RunResult::new(started, seed, runs).ok_or_else(|| Fail::input("no scenario ran"))
}

fn run_one(
    job: &Job,
    interrupt: &AtomicBool,
    sinks: &mut Sinks,
) -> Result<(ScenarioResult, stats::Totals), Fail> {
    let names = job.spec.workload.names();
    let total = job.spec.load.end();
    let mut watch = Watch::new(sinks, &job.slos, &names, 0, true, total);
    let out = engine::run(&job.spec, interrupt, &mut watch).map_err(|e| Fail::input(e.to_string()));
    watch.finish();
    let out = out?;
    let slo = watch.verdicts(out.duration.as_secs_f64());
    let scenario =
        crate::outcome::scenario_result(&job.name, &job.spec, &out, slo, watch.aborted_by);
    Ok((scenario, out.totals))
}

/// The result of a scenario that could not run: nothing measured, and why.
fn failed_scenario(job: &Job, why: &str) -> ScenarioResult {
    let out = engine::RunOutput {
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
        interrupted: false,
        unfinished: 0,
        workers: 0,
    };
    let mut sc = crate::outcome::scenario_result(&job.name, &job.spec, &out, Vec::new(), None);
    sc.error = Some(why.to_string());
    sc
}

/// Checks every job before the first one sends anything (targets resolve, TLS files load,
/// requests may be sent): one line naming the scenario at fault, exit 2.
pub fn preflight(jobs: &[Job]) -> Result<(), Fail> {
    for job in jobs {
        engine::check(&job.spec)
            .map_err(|e| Fail::input(format!("scenario '{}': {e}", job.name)))?;
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
