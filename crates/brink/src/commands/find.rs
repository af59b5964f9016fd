//! `brink find`: raw search flags -> a checked [`Search`] (levels, step, warm-up, precision,
//! health probe, pool, within the open-file limit) and the job it searches (the URL's, or a
//! plan scenario with its SLOs, else the default objectives), then the search itself.

use crate::cli::{FindArgs, LoadArgs, SearchArgs};
use crate::exit::Fail;
use crate::exit::{INTERRUPTED, SLO_FAILED};
use crate::resolve::Session;
use crate::resolve::{run_config, Job, RunConfig};
use engine::Target;
use results::find::By;
use results::find::Finding;
use runner::{Event, Search};
use stats::slo::Slo;
use std::path::PathBuf;
use std::time::Duration;

/// Objectives used when neither the plan nor `--slo` gives any.
const DEFAULT_SLOS: [&str; 2] = ["p99 < 1s", "errors < 1%"];
fn level_arg(by: By, name: &str, v: &str) -> Result<f64, Fail> {
    if by == By::Rate {
        let r = plan::parse_rate(v).map_err(|e| Fail::input(format!("{name}: {e}")))?;
        // Levels are whole requests per second.
        plan::load::check_rate(name, v, r, false)
            .map_err(Fail::input)
            .and_then(|r| {
                if r < 1.0 {
                    Err(Fail::input(format!(
                        "{name} must be at least 1/s, got '{v}'"
                    )))
                } else {
                    Ok(r)
                }
            })
    } else {
        Ok(plan::load::connections(name, v).map_err(Fail::input)? as f64)
    }
}

/// A step must leave at least a second to judge after its warm-up, and last at least 2 s.
pub fn check_step(
    step_text: &str,
    step: Duration,
    warmup_text: &str,
    warmup: Duration,
) -> Result<(), Fail> {
    if step < Duration::from_secs(2) || warmup + Duration::from_secs(1) > step {
        return Err(Fail::input(format!(
            "--step ({step_text}) must be at least 2s and at least 1s longer than --warmup ({warmup_text})"
        )));
    }
    Ok(())
}

/// The whole search of `a`: how it steps ([`steps`]) and its hooks (flags, else the plan's).
pub fn settings(a: &FindArgs, job: &Job, plan_hooks: &plan::Hooks) -> Result<Search, Fail> {
    let mut search = steps(&a.search, &a.run.load, job)?;
    search.hooks = hooks(a, &search.run_id, plan_hooks)?;
    Ok(search)
}

/// How the search `a` of the load `load` steps and judges, without hooks: all a worker needs.
pub fn steps(a: &SearchArgs, load: &LoadArgs, job: &Job) -> Result<Search, Fail> {
    let by = a.by;
    let by_rate = by == By::Rate;
    if load.duration.is_some()
        || load.requests.is_some()
        || load.rate.is_some()
        || load.stages.is_some()
    {
        return Err(Fail::input(
            "find sets the load itself: use --by, --from, --to and --step instead of -d, -n, --rate, --stages",
        ));
    }
    if by_rate && (load.hold || load.every.is_some() || job.spec.every.is_some()) {
        return Err(Fail::input(
            "--hold and --every pace each held connection: search them with --by connections; --by rate sets the pace itself",
        ));
    }
    if load.connections.is_some() && !by_rate {
        return Err(Fail::input(
            "-c is the connection pool of --by rate; with --by connections use --from/--to",
        ));
    }
    let from = level_arg(
        by,
        "--from",
        a.from
            .as_deref()
            .unwrap_or(if by_rate { "10" } else { "1" }),
    )?;
    let to = level_arg(
        by,
        "--to",
        a.to.as_deref()
            .unwrap_or(if by_rate { "100000" } else { "1000" }),
    )?;
    if to < from {
        return Err(Fail::input(format!("--to ({to}) is below --from ({from})")));
    }
    let dur = |flag: &str, v: &str| {
        plan::parse_duration(v).map_err(|e| Fail::input(format!("{flag}: {e}")))
    };
    let step = dur("--step", &a.step)?;
    let warmup = dur("--warmup", &a.warmup)?;
    check_step(&a.step, step, &a.warmup, warmup)?;
    let precision = a
        .precision
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| (0.1..100.0).contains(p));
    let precision = precision.ok_or_else(|| {
        Fail::input(format!(
            "--precision: '{}' is not a percentage from 0.1 to 100",
            a.precision
        ))
    })? / 100.0;
    let health = match &a.health {
        Some(h) => Target::parse(h).map_err(|e| Fail::input(format!("--health: {e}")))?,
        None => job.spec.target.clone(),
    };
    let pool = match &load.connections {
        Some(c) => plan::load::connections("-c", c).map_err(Fail::input)?,
        None => 1000,
    };
    let run_id = crate::trace_flags::run_id(u64::from(std::process::id()));
    let most = if by_rate { pool } else { to as usize };
    crate::resolve::check_open_files(&most.to_string(), most)?;
    Ok(Search {
        by,
        from,
        to,
        step,
        warmup,
        cooldown: dur("--cooldown", &a.cooldown)?,
        precision,
        health,
        recovery: dur("--recovery", &a.recovery)?,
        pool,
        hooks: runner::hooks::Hooks::default(),
        run_id,
    })
}

/// `--at-peak`, `--hook-each-step`, `--hook-on-fail`, `--hook-after` with their settings; a
/// plan's `hooks:` where no flag names the same hook.
fn hooks(
    a: &FindArgs,
    run_id: &str,
    plan_hooks: &plan::Hooks,
) -> Result<runner::hooks::Hooks, Fail> {
    if !(0.0..=1.0).contains(&a.hooks.hook_at) {
        return Err(Fail::input(format!(
            "--hook-at {}: a share of the step, from 0 to 1",
            a.hooks.hook_at
        )));
    }
    let timeout = plan::parse_duration(&a.hooks.hook_timeout)
        .map_err(|e| Fail::input(format!("--hook-timeout: {e}")))?;
    if timeout.is_zero() {
        return Err(Fail::input(
            "--hook-timeout 0s would stop every hook as it starts: give how long a hook may run, e.g. 30s",
        ));
    }
    let hook = |cmd: &Option<String>, from_plan: &Option<plan::HookSpec>| match (cmd, from_plan) {
        (Some(c), _) => Some(runner::hooks::Hook {
            command: c.clone(),
            at: a.hooks.hook_at,
            timeout,
            required: a.hooks.hook_required,
        }),
        (None, Some(p)) => Some(runner::hooks::Hook {
            command: p.command.clone(),
            at: p.at.unwrap_or(a.hooks.hook_at),
            timeout: p.timeout.unwrap_or(timeout),
            required: p.required || a.hooks.hook_required,
        }),
        (None, None) => None,
    };
    let mut hooks = runner::hooks::Hooks {
        peak: hook(&a.hooks.at_peak, &plan_hooks.peak),
        each_step: hook(&a.hooks.hook_each_step, &plan_hooks.each_step),
        on_fail: hook(&a.hooks.hook_on_fail, &plan_hooks.on_fail),
        after: hook(&a.hooks.hook_after, &plan_hooks.after),
        out_dir: PathBuf::new(),
        dry_run: a.dry_run,
    };
    hooks.out_dir = match &a.hooks.hooks_dir {
        Some(d) => d.clone(),
        None => hooks_dir(&a.run, run_id, hooks.any() && !a.dry_run)?,
    };
    Ok(hooks)
}

/// Where hooks write by default: `hooks/RUN_ID` beside the history that keeps the run (so
/// nothing lands in the working directory), else (`--no-history`) a fresh folder only this
/// user can enter, made now when `make` (a hook will run), never a predictable shared path.
fn hooks_dir(r: &crate::cli::RunArgs, run_id: &str, make: bool) -> Result<PathBuf, Fail> {
    let beside_history = crate::resolve::recording(&r.keep)
        .ok()
        .and_then(|rec| rec.path)
        .and_then(|h| h.parent().map(|d| d.join("hooks").join(run_id)));
    match beside_history {
        Some(d) => Ok(d),
        None if make => model::private::fresh_dir(&format!("brink-hooks-{run_id}")).map_err(|e| {
            Fail::input(format!(
                "cannot make a private folder for hook outputs: {e}"
            ))
        }),
        None => Ok(std::env::temp_dir().join(format!("brink-hooks-{run_id}-RANDOM"))),
    }
}

/// `--dry-run`: the search, its pace and objectives, and each hook, with when it would run
/// and what it would get.
fn dry_run(search: &Search, job: &Job) -> String {
    let mut o = format!(
        "find by {} from {} to {}, {}s steps\n  levels: {}, until a step fails; then the gap between the last pass and the first failure is halved until it is within {:.0}%\n",
        search.by.name(),
        search.by.cell(search.from),
        search.by.cell(search.to),
        search.step.as_secs_f64(),
        doubling(search.from, search.to)
            .iter()
            .map(|l| search.by.cell(*l))
            .collect::<Vec<_>>()
            .join(", "),
        search.precision * 100.0
    );
    if let Some(every) = job.spec.every {
        o.push_str(&format!(
            "  each connection sends every {}: the search finds how many connections the service holds at that pace\n",
            results::fmt::fmt_period(every.as_secs_f64() * 1000.0)
        ));
    }
    let objectives: Vec<&str> = job.slos.iter().map(|s| s.text.as_str()).collect();
    let (most, took) = search.most_steps();
    o.push_str(&format!(
        "  a step passes while: {}{}\n  at most {most} steps, about {} (fewer when a step fails early)\n",
        objectives.join(", "),
        runner::errors_note(&objectives),
        runner::about(took)
    ));
    let h = &search.hooks;
    for (name, hook, when) in [
        ("peak", &h.peak, "during a capture step at the maximum sustainable level, and one at the first failing level"),
        ("each_step", &h.each_step, "during every step"),
        ("on_fail", &h.on_fail, "after each failing step"),
        ("after", &h.after, "after the search"),
    ] {
        if let Some(k) = hook {
            let at = if matches!(name, "peak" | "each_step") {
                format!(", {:.0}% into the step", k.at * 100.0)
            } else {
                String::new()
            };
            o.push_str(&format!(
                "  {name}: sh -c {:?} {when}{at}; stopped after {:.0}s{}\n",
                k.command,
                k.timeout.as_secs_f64(),
                if k.required { "; required" } else { "" }
            ));
        }
    }
    if [&h.peak, &h.each_step, &h.on_fail, &h.after]
        .iter()
        .any(|k| k.is_some())
    {
        o.push_str(&format!(
            "  hooks write to {}\n  environment: BRINK_HOOK, BRINK_LEVEL, BRINK_STEP, BRINK_DURATION_S, BRINK_OUT_DIR, BRINK_RUN_ID\n",
            h.out_dir.display()
        ));
    }
    o
}

/// The levels a search tries before any step fails: doubling from `from` (whole numbers),
/// never past `to` (the search's own rule, `search::decide`).
fn doubling(from: f64, to: f64) -> Vec<f64> {
    let mut levels = vec![from];
    let mut level = from;
    while level < to && levels.len() < 64 {
        level = (level * 2.0).min(to).round().max(1.0);
        levels.push(level);
    }
    levels
}

/// The job the search steps, out of `all`: the URL's, or the chosen scenario of the plan.
pub fn base_job(a: &SearchArgs, mut all: Vec<Job>) -> Result<Job, Fail> {
    let idx = match &a.scenario {
        Some(name) => all.iter().position(|j| &j.name == name).ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|j| j.name.as_str()).collect();
            Fail::input(format!(
                "--scenario {name}: no such scenario (scenarios: {})",
                names.join(", ")
            ))
        })?,
        None => 0,
    };
    let mut job = all.swap_remove(idx);
    if job.slos.is_empty() {
        job.slos = DEFAULT_SLOS
            .iter()
            .map(|t| Slo::parse(t, |d| plan::parse_duration(d).map_err(|e| e.to_string())))
            .collect::<Result<_, _>>()
            .map_err(|e| Fail::input(e.0))?;
    }
    Ok(job)
}

pub fn find_cmd(a: &FindArgs) -> Result<i32, Fail> {
    let RunConfig {
        jobs,
        session,
        hooks,
        ..
    } = run_config(&a.run)?;
    let job = base_job(&a.search, jobs)?;
    let search = settings(a, &job, &hooks)?;
    if a.dry_run {
        crate::console::emit(&dry_run(&search, &job));
        return Ok(0);
    }
    let order = crate::distribute::WorkerOrder::new(&a.run.load, Some(&a.search), session.seed);
    let generators = crate::distribute::generators(&a.run.fleet, &order)?;
    let live = crate::live_metrics::sink(
        &a.run.live,
        a.run.quiet,
        std::slice::from_ref(&job),
        &session.recording.tags,
    )?;
    run_search(&session, job, &search, generators.exec.as_ref(), live)
}

/// Runs the search of `job` with `search`'s settings in `session` (outputs, observers, seed)
/// and returns the exit code it earned: 1 when the service got stuck or no level held the
/// objectives. `brink demo` calls this directly. `live`: the `--metrics-listen` sink.
pub fn run_search(
    session: &Session,
    job: Job,
    search: &Search,
    exec: &dyn runner::Executor,
    live: Option<crate::live_metrics::LiveMetrics>,
) -> Result<i32, Fail> {
    runner::preflight(std::slice::from_ref(&job), exec)?;
    crate::proxy_check::warn_about_proxies(std::slice::from_ref(&job));
    let mut sinks = crate::sinks::standard(session.quiet, &session.files)?;
    if let Some(m) = live {
        sinks.push(Box::new(m));
    }
    let meta = crate::record::meta(
        model::RunCommand::Find,
        std::slice::from_ref(&job),
        Some((search.how(), search.by.model())),
        &session.recording,
    );
    sinks.push(Box::new(crate::record::Recorder::new(
        &session.recording,
        meta,
    )));
    let interrupt = crate::signals::install_signals()?;
    let result = runner::search_job(
        &job,
        search,
        exec,
        session.seed,
        session.observing.as_ref(),
        &interrupt,
        &mut sinks,
    )?;
    sinks.emit(&Event::Finished(&result))?;
    let hooks_failed = hook_warnings(&result);
    let code = if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
        INTERRUPTED
    } else if hooks_failed {
        SLO_FAILED
    } else {
        search_code(&result)
    };
    sinks.show(&Event::Exit(code));
    Ok(code)
}

/// Warns about each hook that failed; true when a required one did.
fn hook_warnings(result: &results::RunResult) -> bool {
    let Some(find) = &result.find else {
        return false;
    };
    let mut required_failed = false;
    for h in find.hooks.iter().filter(|h| runner::hooks::failed(h)) {
        let how = match (&h.error, h.timed_out, h.exit_code) {
            (Some(e), _, _) => e.clone(),
            (None, true, _) => "timed out and was stopped".to_string(),
            (None, false, Some(c)) => format!("exited with {c}"),
            (None, false, None) => "was killed by a signal".to_string(),
        };
        crate::console::warn(&format!(
            "hook {} ({}) at {}: {how}; its output: {}",
            h.hook, h.command, h.step, h.stderr
        ));
        required_failed |= h.required;
    }
    required_failed
}

/// 2 when a step could not run (the search did not finish), 1 when the service got stuck or
/// no level held the objectives, else 0.
fn search_code(result: &results::RunResult) -> i32 {
    let find = result.find.as_ref();
    // A step could not run (a worker gave up): the search did not finish, whatever passed.
    if find.is_some_and(|f| matches!(f.stop, Some(results::find::Stop::StepFailed { .. }))) {
        return crate::exit::INPUT;
    }
    let stuck = find.is_some_and(|f| {
        f.findings
            .iter()
            .any(|x| matches!(x, Finding::Stuck { .. }))
    });
    let passed_any = find.is_some_and(|f| f.max_sustainable.is_some());
    if stuck || !passed_any {
        SLO_FAILED
    } else {
        0
    }
}

#[cfg(test)]
mod dry_run_tests {
    use super::doubling;

    /// `--dry-run` lists the levels the search's own rule tries: doubling, whole, never past
    /// `--to`.
    #[test]
    fn the_levels_before_a_failure_double_up_to_the_ceiling() {
        assert_eq!(
            doubling(50.0, 1000.0),
            [50.0, 100.0, 200.0, 400.0, 800.0, 1000.0]
        );
        assert_eq!(doubling(1.0, 1.0), [1.0]);
        assert_eq!(doubling(3.0, 20.0), [3.0, 6.0, 12.0, 20.0]);
    }
}
