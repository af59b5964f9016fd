//! `brink run`: a URL or a plan, every scenario in order, the sinks fed as it goes; the exit
//! code the run earned.

use crate::cli::RunArgs;
use crate::exit::{Fail, INTERRUPTED, SLO_FAILED, UNREACHABLE};
use crate::resolve::{run_config, RunConfig};
use crate::signals::install_signals;
use report::RunResult;
use runner::Event;

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

pub fn run_cmd(a: &RunArgs) -> Result<i32, Fail> {
    if a.list {
        return crate::grpc_call::list(a);
    }
    let RunConfig { jobs, session, .. } = run_config(a)?;
    runner::preflight(&jobs)?;
    crate::proxy_check::warn_about_proxies(&jobs);
    let mut sinks = crate::sinks::standard(session.quiet, &session.files)?;
    let meta = crate::record::meta("run", &jobs, None, &session.recording);
    sinks.push(Box::new(crate::record::Recorder::new(
        &session.recording,
        meta,
    )));
    let interrupt = install_signals()?;
    let sampler = runner::start_observing(session.observing.as_ref());
    let result = runner::run_jobs(jobs, &interrupt, &mut sinks, session.seed, sampler.as_ref());
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
        Some((name, why)) => Err(Fail::input(format!("scenario '{name}': {why}"))),
        None => verdict(&result),
    };
    sinks.show(&Event::Exit(code.as_ref().map_or_else(|f| f.code, |c| *c)));
    code
}
