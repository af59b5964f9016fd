//! The event-stream flags of an `http(s)://` run, made into the engine's one
//! [`EventRule`](engine::EventRule): which answers are read as events (`--stream`, or
//! `--llm`), how large an event may be, how long a stream may go quiet (`--idle-timeout`),
//! where events carry their send time (`--sent-at`), and whether the streams are held for the
//! run and reopened as a browser would (`--hold`). Whether each fits the run's target and
//! load is decided here, once.

use crate::cli::LoadArgs;
use crate::exit::Fail;
use engine::{Load, Protocol};
use plan::compile::Settings;
use std::time::Duration;

/// The rule of a run of `protocol` with `load` (`counted`: it also ends after a number of
/// requests): flags first, then the plan's settings. `timeout`: the run's request timeout (a
/// held stream's silence is bounded by it unless `--idle-timeout` says otherwise).
pub fn rule(
    a: &LoadArgs,
    plan: &Settings,
    protocol: Protocol,
    (load, counted): (&Load, bool),
    timeout: Duration,
) -> Result<engine::EventRule, Fail> {
    let http = protocol.is_http();
    if plan.hold && !http {
        return Err(Fail::input(
            "hold: true holds event streams at http:// and https:// targets; a WebSocket scenario holds its connections with every:",
        ));
    }
    let hold = (a.hold || plan.hold) && http;
    let idle = match a.idle_timeout.as_deref() {
        Some(v) => Some(plan::load::positive_duration("--idle-timeout", v).map_err(Fail::input)?),
        None => plan.idle_timeout,
    }
    .filter(|d| !d.is_zero());
    if hold {
        refuse_hold(a.llm || plan.llm, load, counted)?;
    }
    Ok(engine::EventRule {
        llm: (a.llm || plan.llm).then(engine::PerRequest::default),
        idle: if hold { idle.or(Some(timeout)) } else { idle },
        force: a.stream || plan.stream.unwrap_or(false),
        max: match &a.max_event_size {
            Some(m) => plan::parse_size(m)
                .map_err(|e| Fail::input(format!("--max-event-size: {e}")))?
                .max(1) as usize,
            None => engine::MAX_EVENT,
        },
        sent_at: match &a.sent_at {
            Some(p) if http => Some(engine::SentAt::new(sent_at_path(p)?)),
            _ => None,
        },
        hold,
    })
}

/// `--sent-at`'s JSON path.
pub fn sent_at_path(p: &str) -> Result<serde_json_path::JsonPath, Fail> {
    serde_json_path::JsonPath::parse(p).map_err(|e| {
        let hint = match p.starts_with('$') {
            true => "",
            false => " (a JSON path starts with $, e.g. '$.ts')",
        };
        Fail::input(format!("--sent-at {p}: {e}{hint}"))
    })
}

/// `--hold` (a plan's `hold: true`) on an event stream: the closed model's `-c` streams,
/// each open until the run ends, so the run needs a duration and no rate (`counted`: it
/// also ends after a number of requests).
fn refuse_hold(llm: bool, load: &Load, counted: bool) -> Result<(), Fail> {
    if counted {
        return Err(Fail::input(
            "--hold keeps each stream open until the run ends: -n (a number of requests) does not fit; give -d alone",
        ));
    }
    if llm {
        return Err(Fail::input(
            "--hold keeps notification streams open for the run; a --llm stream ends with its answer, so -c streams are already held",
        ));
    }
    if !matches!(load, Load::Closed { .. }) {
        return Err(Fail::input(
            "--hold holds the -c streams of the closed model for the run; the server sets the pace of their events, not --rate",
        ));
    }
    if load.end().is_none() {
        return Err(Fail::input(
            "--hold keeps each stream open until the run ends: give the run a duration (-d 60s), not only -n",
        ));
    }
    Ok(())
}

/// A `delivery` objective on a run whose events carry no send time it reads (no
/// `--sent-at`): refused, as it could only ever say "no data".
pub fn refuse_undated(rule: &engine::EventRule, slos: &[stats::slo::Slo]) -> Result<(), Fail> {
    use stats::slo::{Metric, StreamTime};
    let delivery = slos
        .iter()
        .find(|s| matches!(s.metric, Metric::Stream(StreamTime::Delivery, _)));
    match delivery {
        Some(s) if rule.sent_at.is_none() => Err(Fail::input(format!(
            "objective '{}' times events from the send time they carry: add --sent-at JSONPATH (an event stream's, e.g. '$.ts')",
            s.text
        ))),
        _ => Ok(()),
    }
}
