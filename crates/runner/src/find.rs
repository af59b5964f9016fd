//! A capacity search run locally: the `search` crate decides the levels, this controller runs
//! each step on the engine. Every step is an ordinary run of the chosen scenario at
//! one level (connections or rate) for `--step`; its first `--warmup` is measured but left out
//! of the verdict. Levels grow geometrically (x2) from `--from` until a step fails (an SLO, no
//! response at all, the generator's own limit) or `--to` passes; then the gap between the last
//! pass and the first fail is bisected until they are within `--precision`. After a failing
//! step the health URL is probed: a service that does not answer within `--recovery` is stuck,
//! and the search stops there (bounded: every step and probe has a deadline).

use crate::sink::{Event, Sinks};
use crate::step::Step;
use crate::suite::{Job, Observing};
use crate::watch::{Judged, Watch};
use crate::{Error, Executor};
use engine::Target;
use observe::health as probe;
use results::find::{By, StepRow};
use results::RunResult;
use stats::{ErrorKind, LatencySummary};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

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
    /// Commands at chosen moments (a profiler at the peak).
    pub hooks: crate::hooks::Hooks,
    /// Names the run in the hooks' environment.
    pub run_id: String,
}

impl Search {
    /// The most steps the search can run, and how long they take: levels doubling from
    /// `from` past `to`, then the bisection of a doubled gap down to `precision`, each a step
    /// and a cooldown.
    pub fn most_steps(&self) -> (u32, Duration) {
        let ratio = (self.to / self.from.max(f64::MIN_POSITIVE)).max(1.0);
        let doubling = ratio.log2().ceil() as u32 + 1;
        let bisecting = (1.0 / self.precision.max(0.001)).log2().ceil().max(0.0) as u32;
        let steps = doubling + bisecting;
        (steps, (self.step + self.cooldown) * steps)
    }

    /// How the search steps, as the history keeps it: `by connections from 1 to 1000`.
    pub fn how(&self) -> String {
        format!(
            "by {} from {} to {}",
            self.by.name(),
            self.by.cell(self.from),
            self.by.cell(self.to)
        )
    }
}

/// Runs the search of `job` with `search`'s settings, observing the server as `observing`
/// says, telling `sinks` what happens (the header, every step, but not the final result: the
/// caller emits that once it has added what it wants). Returns the whole result, with its
/// `find` section; stops early, keeping every step, when `interrupt` is set.
pub fn search_job(
    job: &Job,
    search: &Search,
    exec: &dyn Executor,
    seed: u64,
    observing: Option<&Observing>,
    interrupt: &AtomicBool,
    sinks: &mut Sinks,
) -> Result<RunResult, Error> {
    let sampler = crate::suite::start_observing(observing);
    let columns = observing.map_or_else(Vec::new, |o| o.columns.clone());
    let started = results::rfc3339_utc(SystemTime::now());
    let slos: Vec<&str> = job.slos.iter().map(|s| s.text.as_str()).collect();
    let no_errors = errors_note(&slos);
    let (most, took) = search.most_steps();
    // A rate step needs so many judged seconds for a latency climbing through it to show:
    // with fewer, a queue growing slowly can pass, and the header says so.
    let judged_s = search.step.saturating_sub(search.warmup).as_secs_f64();
    let short = if search.by == By::Rate && judged_s < search::overload::TREND_SECONDS as f64 {
        format!(
            "      note: each step judges {judged_s:.0} s; a latency climbing through a step needs {} s of them to be seen, so a queue growing slowly can pass (a longer --step sees it)\n",
            search::overload::TREND_SECONDS
        )
    } else {
        String::new()
    };
    let header = format!(
        "find: {} {} by {} from {} to {}, {}s steps ({}s warm-up), objectives: {}{no_errors}\n      at most {most} steps, about {} (fewer when a step fails early)\n",
        job.spec.workload.requests[0].method,
        job.spec.target.url(),
        search.by.name(),
        search.from,
        search.to,
        search.step.as_secs_f64(),
        search.warmup.as_secs_f64(),
        slos.join(", "),
        about(took)
    ) + &short;
    sinks.show(&Event::Search {
        header: &header,
        by: search.by,
        columns: &columns,
        held: job.spec.events.hold,
        most,
        per_step: search.step + search.cooldown,
    });
    let mut ctl = Controller {
        job,
        exec,
        search,
        interrupt,
        sinks,
        steps: Vec::new(),
        sampler: sampler.as_ref(),
        hook_runs: Vec::new(),
        origin: Instant::now(),
        reruns: Vec::new(),
    };
    let stop = ctl.search();
    let steps = std::mem::take(&mut ctl.steps);
    let reruns = std::mem::take(&mut ctl.reruns);
    let facts: Vec<search::StepFacts> = steps
        .iter()
        .map(|s| search::StepFacts {
            row: &s.row,
            stuck: s.stuck,
            interrupted: s.row.interrupted,
            steady: &s.steady,
        })
        .collect();
    let slo_texts: Vec<String> = job.slos.iter().map(|x| x.text.clone()).collect();
    let find = search::summarise(
        search.by,
        &slo_texts,
        &facts,
        stop,
        search.recovery.as_secs_f64(),
        match (job.spec.every, job.spec.events.hold) {
            (Some(every), _) => results::find::Pace::Every(every),
            (None, true) => results::find::Pace::Held,
            (None, false) => results::find::Pace::Free,
        },
    );
    drop(facts);
    let mut find = find;
    ctl.steps = steps;
    find.reruns = reruns;
    find.captures = ctl.captures(&find);
    ctl.after_hook();
    find.hooks = std::mem::take(&mut ctl.hook_runs);
    let steps = std::mem::take(&mut ctl.steps);
    drop(ctl);
    if let Some(s) = sampler {
        s.stop();
    }
    let runs = steps.into_iter().map(|s| (s.scenario, s.totals)).collect();
    let mut result = RunResult::new(started, seed, runs)
        .ok_or_else(|| Error("the search ran no step".into()))?;
    // A search's load, at the top, is the one its capacity was measured at (the maximum
    // sustainable level), else its first step's, as for any suite.
    let at = find
        .max_sustainable
        .as_ref()
        .map(|m| format!("step {}", search.by.describe(m.level)));
    if let Some(sc) = at.and_then(|name| result.scenarios.iter().find(|s| s.name == name)) {
        result.load = sc.load.clone();
    }
    result.find = Some(find);
    Ok(result)
}

struct Controller<'a> {
    job: &'a Job,
    exec: &'a dyn Executor,
    search: &'a Search,
    interrupt: &'a AtomicBool,
    sinks: &'a mut Sinks,
    steps: Vec<Step>,
    sampler: Option<&'a observe::Sampler>,
    /// Hooks that ran, in order.
    hook_runs: Vec<results::find::HookRun>,
    /// When the search started (hook times are from here).
    origin: Instant,
    /// The first attempts of failing steps run again because brink's workers waited for a
    /// CPU.
    reruns: Vec<StepRow>,
}

impl Controller<'_> {
    /// Runs the search (the library decides, this controller runs the steps); returns why it
    /// ended.
    fn search(&mut self) -> search::Stop {
        let s = self.search;
        let settings = search::Settings {
            from: s.from,
            to: s.to,
            precision: s.precision,
        };
        search::search(&settings, self).1
    }
}

impl Controller<'_> {
    fn moment<'m>(&'m self, hook: &'m str, step: &'m str, level: f64) -> crate::hooks::Moment<'m> {
        crate::hooks::Moment {
            hook,
            step,
            level,
            duration: self.search.step,
            run_id: &self.search.run_id,
        }
    }

    /// Starts `h` its share into the step about to run.
    fn start_hook(
        &self,
        h: &crate::hooks::Hook,
        hook: &str,
        step: &str,
        level: f64,
    ) -> crate::hooks::Pending {
        let delay = self.search.step.mul_f64(h.at.clamp(0.0, 1.0));
        let m = self.moment(hook, step, level);
        crate::hooks::start(h, &m, &self.search.hooks.out_dir, delay, self.origin)
    }

    fn run_hook_now(&mut self, h: &crate::hooks::Hook, hook: &str, step: &str, level: f64) {
        let r = crate::hooks::run(
            h,
            &self.moment(hook, step, level),
            &self.search.hooks.out_dir,
            self.origin,
        );
        self.hook_runs.push(r);
    }

    fn collect(&mut self, pending: Option<crate::hooks::Pending>) {
        if let Some(r) = pending.and_then(crate::hooks::Pending::join) {
            self.hook_runs.push(r);
        }
    }

    /// With a peak hook: a capture step at the maximum sustainable level and one at the first
    /// failing level, each with the hook running its share into the step.
    fn captures(&mut self, find: &results::find::FindResult) -> Vec<StepRow> {
        let Some(h) = self.search.hooks.peak.clone() else {
            return Vec::new();
        };
        let first_fail = find
            .steps
            .iter()
            .filter(|s| !s.pass && !s.interrupted)
            .map(|s| s.level)
            .fold(None, |m: Option<f64>, l| Some(m.map_or(l, |m| m.min(l))));
        let levels = [
            ("peak", find.max_sustainable.as_ref().map(|m| m.level)),
            ("first fail", first_fail),
        ];
        let mut rows = Vec::new();
        for (label, level) in levels {
            let Some(level) = level else { continue };
            if self.interrupt.load(Ordering::Relaxed)
                || !crate::suite::pause(self.search.cooldown, self.interrupt)
            {
                break;
            }
            let pending = self.start_hook(&h, "peak", label, level);
            let step = self.measure(level);
            self.collect(Some(pending));
            if let Ok(step) = step {
                let mut row = step.row;
                row.reason = format!("capture ({label}) {}", row.reason)
                    .trim()
                    .to_string();
                rows.push(row);
            }
        }
        rows
    }

    fn after_hook(&mut self) {
        if let Some(h) = self.search.hooks.after.clone() {
            let level = self.steps.last().map_or(0.0, |s| s.row.level);
            self.run_hook_now(&h, "after", "search", level);
        }
    }
}

impl search::StepRunner for Controller<'_> {
    /// Runs one step and says what it means for the search; `Err` when it could not run
    /// (interrupted in the cooldown, or the run failed to start).
    fn run_step(&mut self, level: f64) -> Result<search::Outcome, search::Stop> {
        if self.interrupt.load(Ordering::Relaxed) {
            return Err(search::Stop::Interrupted);
        }
        if !self.steps.is_empty() && !crate::suite::pause(self.search.cooldown, self.interrupt) {
            return Err(search::Stop::Interrupted);
        }
        let from = Instant::now();
        let name = format!("step {}", self.search.by.describe(level));
        let during = self
            .search
            .hooks
            .each_step
            .as_ref()
            .map(|h| self.start_hook(h, "each_step", &name, level));
        let step = self.measure(level);
        self.collect(during);
        let mut step = step.map_err(|f| search::Stop::StepFailed {
            why: format!("{name}: {}", f.0),
        })?;
        crate::suite::attach_samples(&mut step.scenario, self.sampler, from, Instant::now());
        step.row.observed = step.scenario.observed.clone();
        if let Some(again) = self.again_if_disturbed(&mut step, level, &name)? {
            step = again;
        }
        let interrupted = step.scenario.interrupted;
        self.sinks.show(&Event::StepDone(&step.row));
        if !step.row.pass && !interrupted {
            let stop = || self.interrupt.load(Ordering::Relaxed);
            if probe::wait_for_recovery(&self.search.health, self.search.recovery, &stop).is_none()
            {
                step.stuck = true;
            }
        }
        if !step.row.pass && !interrupted {
            if let Some(h) = self.search.hooks.on_fail.clone() {
                self.run_hook_now(&h, "on_fail", &name, level);
            }
        }
        let outcome = search::Outcome {
            level,
            pass: step.row.pass,
            interrupted,
            stuck: step.stuck,
            generator_busy: step.row.generator_cpu,
            generator_wait: step.row.generator_wait,
            generator_bound: search::generator_limited(
                step.row.generator_cpu,
                step.row.generator_wait,
            ),
        };
        let short = step.short.take();
        self.steps.push(step);
        match short {
            // The user's interrupt is said as such; a generator that gave up is the reason.
            Some(why) if !self.interrupt.load(Ordering::Relaxed) => Err(search::Stop::StepFailed {
                why: format!("{name}: {why}"),
            }),
            _ => Ok(outcome),
        }
    }
}

/// Objectives the user gave without one on errors judge none (they replace the defaults,
/// `errors < 1%` among them): said beside them, never silently dropped.
pub fn errors_note(slos: &[&str]) -> &'static str {
    if slos.iter().any(|s| s.trim_start().starts_with("errors")) {
        ""
    } else {
        " (none on errors: add --slo 'errors<1%' to judge them)"
    }
}

/// A search's length in words: `2 min 40 s`, `45 s`.
pub fn about(took: std::time::Duration) -> String {
    match took.as_secs() {
        s if s >= 60 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{s} s"),
    }
}

impl Controller<'_> {
    /// A step that failed while brink's own workers waited for a CPU others held measured the
    /// host as much as the service: it is shown as it was, kept in the result's `reruns`, and
    /// run again once; the second attempt is what the search believes (marked `disturbed`
    /// when it too failed so). `None` when the step stands as it is.
    fn again_if_disturbed(
        &mut self,
        step: &mut Step,
        level: f64,
        name: &str,
    ) -> Result<Option<Step>, search::Stop> {
        let row = &mut step.row;
        if row.pass || row.interrupted || !row.disturbed_by_host() || step.short.is_some() {
            return Ok(None);
        }
        let wait = row.generator_wait.unwrap_or(0.0) * 100.0;
        row.reason = format!(
            "{} (brink waited for a CPU {wait:.0}% of the step: run again)",
            row.reason
        );
        self.sinks.show(&Event::StepDone(row));
        self.reruns.push(row.clone());
        if self.interrupt.load(Ordering::Relaxed)
            || !crate::suite::pause(self.search.cooldown, self.interrupt)
        {
            return Ok(None);
        }
        let from = Instant::now();
        let mut again = self.measure(level).map_err(|f| search::Stop::StepFailed {
            why: format!("{name}: {}", f.0),
        })?;
        crate::suite::attach_samples(&mut again.scenario, self.sampler, from, Instant::now());
        again.row.observed = again.scenario.observed.clone();
        let r = &mut again.row;
        if !r.pass && !r.interrupted && r.disturbed_by_host() {
            r.disturbed = true;
            let wait = r.generator_wait.unwrap_or(0.0) * 100.0;
            r.reason = format!(
                "{} (disturbed again: brink waited for a CPU {wait:.0}%)",
                r.reason
            );
        }
        Ok(Some(again))
    }

    /// Runs one step at `level` on the executor: an ordinary run of the job at a flat load.
    fn measure(&mut self, level: f64) -> Result<Step, Error> {
        let (job, s, interrupt) = (self.job, self.search, self.interrupt);
        step_on(self.exec, job, s, level, interrupt, self.sinks)
    }
}

fn step_on(
    exec: &dyn Executor,
    job: &Job,
    s: &Search,
    level: f64,
    interrupt: &AtomicBool,
    sinks: &mut Sinks,
) -> Result<Step, Error> {
    let spec = crate::step_spec(&job.spec, s.by, level, s.step, s.pool);
    let names = spec.workload.names();
    let total = spec.load.end();
    let mut watch = Watch::new(
        sinks,
        &job.slos,
        &names,
        Judged::Step {
            from: s.warmup.as_secs(),
        },
        total,
    );
    let (cpu0, t0) = (crate::outcome::own_cpu(), Instant::now());
    let unit = crate::Unit {
        spec: &spec,
        job: 0,
        level: Some(level),
    };
    let out = exec.run(unit, interrupt, &mut watch);
    let (cpu, wall) = (crate::outcome::own_cpu() - cpu0, t0.elapsed().as_secs_f64());
    watch.finish();
    let out = out?;
    let (busy, waiting) = crate::outcome::generator_load(cpu, wall, &out);
    // The steady part: from the end of the warm-up to the end of the step's schedule; the
    // answers of the grace after it count in its latency, not its rates.
    let steady_s = (out.scheduled.as_secs_f64() - s.warmup.as_secs() as f64).max(0.5);
    let slo_results = watch.verdicts(steady_s);
    let b = &watch.judged;
    let grace = &watch.grace;
    let lat = LatencySummary::of(&b.corrected);
    let mut reasons: Vec<String> = slo_results
        .iter()
        .filter(|r| !r.pass)
        .map(|r| match r.value {
            // What it measured, so a failed objective with no column of its own
            // (handshake.p99, closed, a check) still shows how far it was.
            Some(_) => format!("{} ({})", r.slo, r.result),
            None => r.slo.clone(),
        })
        .collect();
    // Held streams open at the end of the step were held, as asked: none had to end.
    let held = spec.events.hold && out.unfinished > 0;
    if b.ok == 0 && !held {
        reasons.insert(0, "no successful response".into());
    }
    // A worker of a distributed step that did not finish its share ends the search there.
    let short = model::WorkerReport::first_short(&out.remote);
    if out.interrupted {
        // A partial step proves nothing either way; it is kept in the table but judged by no one.
        let why = short.as_deref().unwrap_or("interrupted");
        reasons = vec![format!("{why} (partial step, not judged)")];
    }
    let name = format!("step {}", s.by.describe(level));
    let rps = b.requests.saturating_sub(grace.requests) as f64 / steady_s;
    // A rate the service cannot hold fails whatever the objectives say: it delivered less
    // than asked, or its latency climbed through the step (a queue the objectives had not
    // yet seen). Paced and held steps ask for no rate of answers.
    let paced = spec.every.is_some() || spec.events.hold;
    if s.by == By::Rate && !paced && !out.interrupted && b.ok > 0 {
        let step = search::overload::RateStep {
            asked: level,
            delivered: rps,
            window_s: steady_s,
            p50_ms: &watch.judged_p50_ms,
        };
        if let Some(why) = search::overload::overload(&step) {
            reasons.push(pool_or_service(why, &spec, &out));
        }
    }
    let mean = window_mean_ms(b, grace);
    // Paced connections (held WebSocket connections) wait for their pace, not an answer,
    // between requests (held streams for their reconnect): N / X is the pace, and Little's
    // law says nothing of the latency.
    let little = (s.by == By::Connections && !paced && !out.interrupted)
        .then(|| {
            search::little::check(&search::little::StepFigures {
                level,
                rps,
                mean_ms: mean,
                attempts: b.requests.saturating_sub(grace.requests),
                failed: b.unanswered(),
                in_flight: watch.grace.requests + out.unfinished,
                in_flight_wait_s: in_flight_wait_s(&watch.grace, out.unfinished, &out),
                generator_busy: busy,
                longest_ms: lat.max,
                window_s: steady_s,
            })
        })
        .flatten();
    let scenario = crate::outcome::scenario_result(&name, &spec, &out, slo_results, None);
    let row = StepRow {
        level,
        p50: lat.p50,
        p75: lat.p75,
        p90: lat.p90,
        p99: lat.p99,
        mean,
        rps,
        ok_rps: b.ok.saturating_sub(grace.ok) as f64 / steady_s,
        requests: out.totals.all.requests,
        errors: out.totals.all.errors(),
        timeouts: out.totals.all.errors_by_kind[ErrorKind::Timeout.index()],
        late_share: b.late as f64 / b.requests.max(1) as f64,
        max_lag_ms: b.max_lag_us as f64 / 1000.0,
        generator_cpu: busy,
        generator_wait: waiting,
        observed: BTreeMap::new(),
        pass: reasons.is_empty(),
        interrupted: out.interrupted,
        reason: reasons.join(", "),
        little,
        held: spec.events.hold.then(|| held_step(b, grace, steady_s)),
        disturbed: false,
    };
    Ok(Step {
        row,
        scenario,
        totals: out.totals,
        stuck: false,
        steady: watch.judged,
        short,
    })
}

/// A rate step short of its rate because every connection of brink's pool was busy while the
/// service answered about as fast as unloaded is said as the pool's limit (raise `-c`), not
/// the service's: the run's shortfall tells the two apart, as `brink run` does.
fn pool_or_service(why: String, spec: &engine::RunSpec, out: &merge::RunOutput) -> String {
    let pool = crate::outcome::schedule_info(spec, out)
        .and_then(|s| s.shortfall)
        .filter(|f| f.limit == "pool");
    match pool {
        Some(f) if why.starts_with("delivered") => format!(
            "{why} (brink's pool was the limit: all {} connections busy while the service answered in {:.1} ms, about as fast as unloaded: raise -c)",
            f.pool, f.service_ms
        ),
        _ => why,
    }
}

/// What a level's held streams carried over its steady part (`b`, the grace after it in
/// `grace`, left out of the rate).
fn held_step(b: &stats::Bucket, grace: &stats::Bucket, steady_s: f64) -> results::find::HeldStep {
    let events = |x: &stats::Bucket| x.events.as_deref().map_or(0, |e| e.events);
    let p99 =
        |h: &stats::Histogram| (!h.is_empty()).then(|| h.value_at_quantile(0.99) as f64 / 1000.0);
    let e = b.events.as_deref();
    let channel = e.and_then(|e| e.channel.as_deref());
    results::find::HeldStep {
        events_per_s: events(b).saturating_sub(events(grace)) as f64 / steady_s,
        gap_p99_ms: e.and_then(|e| p99(&e.gap)),
        delivery_p99_ms: channel.and_then(|c| p99(&c.delay)),
        reconnects: channel.map_or(0, |c| c.reconnects),
    }
}

/// How long the requests in flight at the end of a step's schedule had waited, seconds, at
/// most: the answers of the grace after it waited their latency; those never answered waited
/// through the grace too.
fn in_flight_wait_s(grace: &stats::Bucket, unfinished: u64, out: &merge::RunOutput) -> f64 {
    let answered = grace.corrected.mean() / 1e6 * grace.corrected.len() as f64;
    let grace_s = out.duration.saturating_sub(out.scheduled).as_secs_f64();
    answered + unfinished as f64 * grace_s
}

/// The mean latency, ms, of the answers within a step's window: all judged answers but those
/// of the grace after it (which, in flight at its end, are the slow ones more often). On it,
/// connections / throughput = mean latency holds.
fn window_mean_ms(judged: &stats::Bucket, grace: &stats::Bucket) -> f64 {
    let (n, m) = (judged.corrected.len(), grace.corrected.len());
    if n <= m {
        return 0.0;
    }
    let sum = judged.corrected.mean() * n as f64 - grace.corrected.mean() * m as f64;
    sum / (n - m) as f64 / 1000.0
}
