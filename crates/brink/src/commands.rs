//! The commands: `run` (a URL or a plan), `validate` (check a plan) and `demo` (the built-in
//! service, loaded). Each returns the exit code or a [`Fail`].

use crate::cli::{Command, DemoArgs, RunArgs, ValidateArgs};
use crate::emitln;
use crate::exit::{Fail, INTERRUPTED, SLO_FAILED, UNREACHABLE};
use crate::output::open_json;
use crate::resolve::jobs;
use crate::signals::install_signals;
use crate::sink::{Event, Sinks};
use report::RunResult;
use std::time::Duration;

pub fn dispatch(cmd: Command) -> Result<i32, Fail> {
    match cmd {
        Command::Run(a) => run_cmd(&a),
        Command::Find(a) => crate::find::find_cmd(&a),
        Command::Validate(a) => validate_cmd(&a),
        Command::Demo(a) => demo_cmd(&a),
    }
}

/// The exit code a finished run earns.
fn verdict(result: &RunResult) -> Result<i32, Fail> {
    let s = &result.summary;
    if result.interrupted {
        return Ok(INTERRUPTED);
    }
    if s.ok == 0 {
        let kinds: Vec<String> = s
            .errors_by_kind
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let statuses: Vec<String> = s
            .status
            .iter()
            .map(|(c, n)| format!("status {c}: {n}"))
            .collect();
        let detail = [kinds, statuses].concat().join(", ");
        return Err(Fail {
            code: UNREACHABLE,
            message: format!("no request succeeded ({} attempts: {detail})", s.requests),
        });
    }
    if result.slo_passed == Some(false) {
        return Ok(SLO_FAILED);
    }
    Ok(0)
}

fn run_cmd(a: &RunArgs) -> Result<i32, Fail> {
    let jobs = jobs(a)?;
    crate::suite::preflight(&jobs)?;
    let mut sinks = Sinks::standard(a.quiet, open_json(a.json.as_ref())?);
    let interrupt = install_signals()?;
    let observing = crate::suite::start_observing(a)?;
    let sampler = observing.as_ref().map(|(s, _)| s);
    let result = crate::suite::run_jobs(
        jobs,
        &interrupt,
        &mut sinks,
        crate::resolve::seed(a),
        sampler,
    );
    if let Some((s, _)) = observing {
        s.stop();
    }
    let result = result?;
    sinks.emit(&Event::Finished(&result))?;
    if let Some((name, why)) = result
        .scenarios
        .iter()
        .find_map(|s| Some((&s.name, s.error.as_ref()?)))
    {
        return Err(Fail::input(format!("scenario '{name}': {why}")));
    }
    verdict(&result)
}

fn validate_cmd(a: &ValidateArgs) -> Result<i32, Fail> {
    let plan = plan::load_file(&a.plan, 0).map_err(|e| Fail::input(e.to_string()))?;
    emitln!("{}: ok, {} scenario(s)", plan.file, plan.scenarios.len());
    for s in &plan.scenarios {
        let kind = if s.workload.flow { "flow" } else { "mix" };
        let steps: Vec<&str> = s
            .workload
            .requests
            .iter()
            .map(|x| x.name.as_str())
            .collect();
        emitln!(
            "  {}: {} {} of {} ({}), {} SLO(s)",
            s.name,
            s.target.url(),
            kind,
            steps.len(),
            steps.join(", "),
            s.slos.len()
        );
    }
    Ok(0)
}

/// `brink demo --serve PORT`: the demo service in the foreground until interrupted.
fn serve_demo(port: u16) -> Result<i32, Fail> {
    let demo = demo_service::spawn_on(port, 8, Duration::from_millis(4)).map_err(|e| {
        Fail::input(format!(
            "--serve {port}: cannot listen on 127.0.0.1:{port}: {e}"
        ))
    })?;
    emitln!(
        "demo service on http://{} ({} service slots, median {:?}); Ctrl-C stops it",
        demo.server.addr,
        demo.slots,
        demo.median
    );
    let interrupt = install_signals()?;
    while !interrupt.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(0)
}

fn demo_cmd(a: &DemoArgs) -> Result<i32, Fail> {
    if let Some(port) = a.serve {
        return serve_demo(port);
    }
    let demo = demo_service::spawn(8, Duration::from_millis(4))
        .map_err(|e| Fail::input(format!("cannot start the demo service: {e}")))?;
    let url = demo.server.url("/api/items");
    let metrics = format!("prometheus={}", demo.server.url("/metrics"));
    emitln!(
        "demo service on {} ({} service slots, log-normal service time: median {:?}, mean {:.2} ms)",
        demo.server.addr,
        demo.slots,
        demo.median,
        demo.mean_service().as_secs_f64() * 1000.0
    );
    // The demo is an ordinary search, built here directly; the equivalent command line is
    // printed so the user can run it against their own service.
    let slos = ["p99<25ms", "errors<0.1%"];
    let run = RunArgs {
        url: url.clone(),
        slo: slos.iter().map(|s| s.to_string()).collect(),
        observe: vec![metrics.clone()],
        json: a.json.clone(),
        ..RunArgs::default()
    };
    let step = plan::parse_duration(&a.step).map_err(|e| Fail::input(format!("--step: {e}")))?;
    let warmup = Duration::from_secs(1);
    crate::find::check_step(&a.step, step, "1s", warmup)?;
    let job = jobs(&run)?
        .pop()
        .ok_or_else(|| Fail::input("demo: no job for the demo URL"))?;
    let search = crate::find::Search {
        by: report::find::By::Connections,
        from: 1.0,
        to: 256.0,
        step,
        warmup,
        cooldown: Duration::ZERO,
        precision: 0.05,
        health: job.spec.target.clone(),
        recovery: Duration::from_secs(60),
        pool: 1000,
    };
    emitln!(
        "running: brink find {url} --slo {} --slo {} --to 256 --step {} --warmup 1s --cooldown 0s --observe {metrics}",
        slos[0],
        slos[1],
        a.step
    );
    let code = crate::find::run_search(&run, job, &search)?;
    emitln!(
        "\nreading it: the service holds {} requests at a time, so past ~{} connections extra requests only queue.",
        demo.slots,
        demo.slots
    );
    emitln!(
        "Throughput stops growing once every slot is busy (the knee), and latency then grows with the queue"
    );
    emitln!("(Little's law: latency = connections / throughput): the largest queue that keeps p99 under 25 ms is the maximum above.");
    Ok(code)
}
