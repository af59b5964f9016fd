//! `brink run`: a URL or a plan, every scenario in order, the sinks fed as it goes; the exit
//! code the run earned.

use crate::cli::RunArgs;
use crate::exit::{Fail, INTERRUPTED, SLO_FAILED, UNREACHABLE};
use crate::resolve::{run_config, RunConfig};
use crate::signals::install_signals;
use results::RunResult;
use runner::Event;
use stats::ErrorKind;

/// The exit code a finished run earns; `interrupted`: the user stopped it.
fn verdict(result: &RunResult, interrupted: bool) -> Result<i32, Fail> {
    let s = &result.summary;
    let short = result
        .scenarios
        .iter()
        .find_map(|s| model::WorkerReport::first_short(&s.workers));
    match short {
        // A worker lost or failed: the run delivered less than was asked, and not because
        // anyone asked it to stop. A tool error; the result is kept.
        Some(why) if !interrupted => {
            return Err(Fail::input(format!(
                "the run is short: {why}; its share was not re-run"
            )))
        }
        _ if result.interrupted => return Ok(INTERRUPTED),
        _ => {}
    }
    // Held streams still open at the end were held, as asked: none had to end.
    let held = s
        .stream
        .as_ref()
        .and_then(|st| st.held)
        .is_some_and(|n| n > 0);
    if s.ok == 0 && !held {
        let kinds: Vec<String> = s
            .errors_by_kind
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let answers = result.scenarios.iter().flat_map(report::failed_answers);
        // The rule the answers broke, when they broke one: what the user fixes first.
        let rule = result
            .scenarios
            .iter()
            .find_map(|s| s.answer_failures.first())
            .map(|p| format!("the first {} error: {}", p.kind, p.reason));
        let detail = kinds
            .into_iter()
            .chain(answers)
            .chain(rule)
            .collect::<Vec<_>>()
            .join(", ");
        let finished = match (s.requests, s.unfinished) {
            (0, n) if n > 0 => format!(
                "none finished: {n} still waited for an answer when the run ended; raise -d or lower --timeout"
            ),
            (n, _) => format!("{n} attempts: {detail}"),
        };
        return Err(Fail {
            code: UNREACHABLE,
            message: format!(
                "no request succeeded ({finished}){}{}",
                connect_reason(result),
                http2_hint(result)
            ),
        });
    }
    if result.slo_passed == Some(false) {
        return Ok(SLO_FAILED);
    }
    Ok(0)
}

/// Why nothing could connect, in the system's words with the address (`: connection refused:
/// 127.0.0.1:18099`), when every attempt was a connect error.
fn connect_reason(result: &RunResult) -> String {
    let s = &result.summary;
    let connect = s.errors_of(ErrorKind::Connect);
    if connect == 0 || connect != s.requests {
        return String::new();
    }
    let Ok(addr) = model::Target::parse(&result.target.url).and_then(|t| t.resolve()) else {
        return String::new();
    };
    match std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(1)) {
        Ok(_) => String::new(),
        Err(e) => {
            let why = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
                std::io::ErrorKind::TimedOut => "connect timed out".to_string(),
                _ => e.to_string(),
            };
            format!(": {why}: {addr}")
        }
    }
}

/// Why HTTP/2 requests that all failed did (as `protocol` or `reset` errors): the server
/// answered HTTP/2's preface in HTTP/1.1 (it speaks only that).
fn http2_hint(result: &RunResult) -> &'static str {
    let s = &result.summary;
    let protocol = s.errors_of(ErrorKind::Protocol) + s.errors_of(ErrorKind::Reset) > 0;
    let h2c = result.target.protocol == model::Wire::H2 && !result.target.url.starts_with("https");
    let speaks_h1 = || {
        model::Target::parse(&result.target.url)
            .is_ok_and(|t| engine::answers_http1_to_h2(&t, std::time::Duration::from_secs(2)))
    };
    if protocol && h2c && speaks_h1() {
        ": the server did not answer HTTP/2 (it answered in HTTP/1.1); drop --http2"
    } else {
        ""
    }
}

pub fn run_cmd(a: &RunArgs) -> Result<i32, Fail> {
    if a.list {
        return crate::grpc_call::list(&a.load);
    }
    let RunConfig { jobs, session, .. } = run_config(a)?;
    let order = crate::distribute::WorkerOrder::new(&a.load, None, session.seed);
    let generators = crate::distribute::generators(&a.fleet, &order)?;
    let exec = generators.exec.as_ref();
    runner::preflight(&jobs, exec)?;
    crate::proxy_check::warn_about_proxies(&jobs);
    let mut sinks = crate::sinks::standard(session.quiet, &session.files)?;
    if let Some(m) = crate::live_metrics::sink(&a.live, a.quiet, &jobs, &session.recording.tags)? {
        sinks.push(Box::new(m));
    }
    let meta = crate::record::meta(model::RunCommand::Run, &jobs, None, &session.recording);
    sinks.push(Box::new(crate::record::Recorder::new(
        &session.recording,
        meta,
    )));
    let interrupt = install_signals()?;
    let sampler = runner::start_observing(session.observing.as_ref());
    let result = runner::run_jobs(
        jobs,
        exec,
        &interrupt,
        &mut sinks,
        session.seed,
        sampler.as_ref(),
    );
    if let Some(s) = sampler {
        s.stop();
    }
    let result = result?;
    sinks.emit(&Event::Finished(&result))?;
    let code = match result
        .scenarios
        .iter()
        .find_map(|s| Some((&s.name, s.error.as_ref()?)))
    {
        Some((_, why)) if result.scenarios.len() == 1 => Err(Fail::input(why.to_string())),
        Some((name, why)) => Err(Fail::input(format!("scenario '{name}': {why}"))),
        None => verdict(
            &result,
            interrupt.load(std::sync::atomic::Ordering::Relaxed),
        ),
    };
    sinks.show(&Event::Exit(code.as_ref().map_or_else(|f| f.code, |c| *c)));
    code
}
