//! The commands: `run` (one load test) and `demo` (the built-in service, loaded). Each returns
//! the exit code or a [`Fail`].

use crate::cli::{Command, DemoArgs, RunArgs};
use crate::exit::{Fail, INTERRUPTED, UNREACHABLE};
use crate::resolve::resolve;
use clap::Parser;
use engine::{RunOutput, RunSpec, Second};
use report::{Progress, RunResult};
use stats::Totals;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Writes to stdout, ignoring a closed pipe (`brink demo | head`): the run still writes its
/// result file and returns its verdict.
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// `println!` through [`emit`].
macro_rules! emitln {
    ($($arg:tt)*) => { emit(&format!("{}\n", format_args!($($arg)*))) };
}

pub fn dispatch(cmd: Command) -> Result<i32, Fail> {
    match cmd {
        Command::Run(a) => run_cmd(&a),
        Command::Demo(a) => demo_cmd(&a),
    }
}

/// Sets a flag on SIGINT/SIGTERM; a second signal exits at once with 130.
fn install_signals() -> Result<Arc<AtomicBool>, Fail> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, INTERRUPTED, stop.clone())
            .and_then(|_| signal_hook::flag::register(sig, stop.clone()))
            .map_err(|e| Fail::input(format!("cannot install signal handler: {e}")))?;
    }
    Ok(stop)
}

/// Opens the result file before the run, so an unwritable path fails before any load is sent.
fn open_json(path: Option<&PathBuf>) -> Result<Option<(PathBuf, File)>, Fail> {
    path.map(|p| {
        File::create(p)
            .map(|f| (p.clone(), f))
            .map_err(|e| Fail::input(format!("--json {}: {e}", p.display())))
    })
    .transpose()
}

fn write_json(out: Option<(PathBuf, File)>, result: &RunResult) -> Result<(), Fail> {
    if let Some((path, file)) = out {
        let w = std::io::BufWriter::new(file);
        serde_json::to_writer_pretty(w, result)
            .map_err(|e| Fail::input(format!("--json {}: {e}", path.display())))?;
    }
    Ok(())
}

/// Runs `spec` with a progress line (unless quiet) and returns the output and its result.
fn execute(spec: &RunSpec, quiet: bool) -> Result<(RunOutput, RunResult), Fail> {
    let stop = install_signals()?;
    let started = report::rfc3339_utc(SystemTime::now());
    let out = if quiet {
        engine::run(spec, stop, &mut |_: &Second, _: &Totals| {})
    } else {
        let mut progress = Progress::new(spec.load.end());
        let r = engine::run(spec, stop, &mut progress);
        progress.finish();
        r
    }
    .map_err(|e| Fail::input(e.to_string()))?;
    let result = RunResult::new(spec, &out, started);
    Ok((out, result))
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
    Ok(0)
}

fn run_cmd(a: &RunArgs) -> Result<i32, Fail> {
    let spec = resolve(a)?;
    let json = open_json(a.json.as_ref())?;
    let (_, result) = execute(&spec, a.quiet)?;
    if !a.quiet {
        emit(&report::render(&result));
    }
    write_json(json, &result)?;
    verdict(&result)
}

fn demo_cmd(a: &DemoArgs) -> Result<i32, Fail> {
    let d = plan::parse_duration(&a.duration)
        .map_err(|e| Fail::input(format!("-d/--duration: {e}")))?;
    let demo = testkit::demo::spawn(8, Duration::from_millis(4))
        .map_err(|e| Fail::input(format!("cannot start the demo service: {e}")))?;
    let url = demo.server.url("/api/items");
    emitln!("demo service on {} ({} service slots, log-normal service time, median {:?}, mean {:.2} ms)", demo.server.addr, demo.slots, demo.median, demo.mean_service().as_secs_f64() * 1000.0);
    emitln!("32 connections is more than its slots, so requests queue for a slot.");
    emitln!("running: brink run {url} -c 32 -d {}s", d.as_secs_f64());
    // The demo is an ordinary `run`: parse its command line so every default is run's own.
    let d_arg = a.duration.as_str();
    let args = match crate::cli::Cli::try_parse_from([
        "brink",
        "run",
        url.as_str(),
        "-c",
        "32",
        "-d",
        d_arg,
    ]) {
        Ok(crate::cli::Cli {
            command: Command::Run(args),
        }) => *args,
        Ok(_) => {
            return Err(Fail::input(
                "demo: internal command line did not parse as run",
            ))
        }
        Err(e) => return Err(Fail::input(format!("demo: {e}"))),
    };
    let spec = resolve(&args)?;
    let json = open_json(a.json.as_ref())?;
    let (_, result) = execute(&spec, false)?;
    emit(&report::render(&result));
    explain_demo(&result, demo.slots, 32);
    write_json(json, &result)?;
    verdict(&result)
}

/// What the demo's figures mean, derived only from what was measured (Little's law: the
/// requests in the system equal throughput times time in the system).
fn explain_demo(result: &RunResult, slots: usize, conns: usize) {
    let s = &result.summary;
    if s.ok_rps <= 0.0 {
        return;
    }
    let little_ms = conns as f64 / s.rps * 1000.0;
    let held_ms = slots as f64 / s.rps * 1000.0;
    emitln!("\nreading it:");
    emitln!(
        "  {conns} connections / {:.0} req/s = {} per request by Little's law; measured mean {} (the numbers agree).",
        s.rps,
        report::fmt_ms(little_ms),
        report::fmt_ms(s.latency_ms.mean)
    );
    emitln!(
        "  {slots} slots / {:.0} req/s = {} each request held a slot; the other {} of the mean was queueing for one.",
        s.rps,
        report::fmt_ms(held_ms),
        report::fmt_ms((s.latency_ms.mean - held_ms).max(0.0))
    );
    emitln!("  more connections would only add queueing: this service is at its capacity of ~{:.0} req/s.", s.rps);
}
