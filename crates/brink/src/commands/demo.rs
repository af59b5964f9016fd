//! `brink demo`: the demo service on 127.0.0.1 and a capacity search of it, built directly
//! (no command line re-parsed); `--serve PORT` runs the service alone as a target for examples.

use crate::cli::{DemoArgs, KeepArgs, LoadArgs, RunArgs, WatchArgs};
use crate::emitln;
use crate::exit::Fail;
use crate::resolve::{run_config, RunConfig};
use crate::signals::install_signals;
use std::time::Duration;

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

pub fn demo_cmd(a: &DemoArgs) -> Result<i32, Fail> {
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
        load: LoadArgs {
            url: url.clone(),
            slo: slos.iter().map(|s| s.to_string()).collect(),
            ..LoadArgs::default()
        },
        watch: WatchArgs {
            observe: vec![metrics.clone()],
            ..WatchArgs::default()
        },
        keep: KeepArgs {
            json: a.json.clone(),
            html: a.html.clone(),
            history: a.history.clone(),
            no_history: a.no_history,
            ..KeepArgs::default()
        },
        ..RunArgs::default()
    };
    let step = plan::parse_duration(&a.step).map_err(|e| Fail::input(format!("--step: {e}")))?;
    let warmup = Duration::from_secs(1);
    super::find::check_step(&a.step, step, "1s", warmup)?;
    let RunConfig {
        mut jobs, session, ..
    } = run_config(&run)?;
    let job = jobs
        .pop()
        .ok_or_else(|| Fail::input("demo: no job for the demo URL"))?;
    let search = runner::Search {
        by: results::find::By::Connections,
        from: 1.0,
        to: 256.0,
        step,
        warmup,
        cooldown: Duration::ZERO,
        precision: 0.05,
        health: job.spec.target.clone(),
        recovery: Duration::from_secs(60),
        pool: 1000,
        hooks: runner::hooks::Hooks::default(),
        run_id: String::new(),
    };
    emitln!(
        "running: brink find {url} --slo {} --slo {} --to 256 --step {} --warmup 1s --cooldown 0s --observe {metrics}",
        slos[0],
        slos[1],
        a.step
    );
    let code = super::find::run_search(&session, job, &search, &runner::Local, None)?;
    emitln!(
        "(the demo service holds {} requests at a time: that is where its knee should be)",
        demo.slots
    );
    Ok(code)
}
