//! Raw command-line values -> a validated [`RunSpec`]. Every rule about which flags combine
//! lives here, and every error names the flag and the value at fault.

use crate::cli::RunArgs;
use crate::exit::Fail;
use engine::{Curve, Load, RequestSpec, RunSpec, StatusSet, Target};
use plan::{parse_duration, parse_rate, parse_stages, Stages};
use std::time::Duration;

/// Default run length when neither `-d`, `-n` nor `--stages` bounds the run.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Default connections (closed model) or pool size (open model).
pub const DEFAULT_CONNECTIONS: usize = 50;

fn read_body(inline: Option<&str>, file: Option<&std::path::Path>) -> Result<Vec<u8>, Fail> {
    match (inline, file) {
        (Some(b), _) => Ok(b.as_bytes().to_vec()),
        (None, Some(p)) => {
            std::fs::read(p).map_err(|e| Fail::input(format!("--body-file {}: {e}", p.display())))
        }
        (None, None) => Ok(Vec::new()),
    }
}

fn positive_count(flag: &str, v: &str) -> Result<u64, Fail> {
    match v.trim().parse::<u64>() {
        Ok(0) => Err(Fail::input(format!("{flag} must be at least 1, got '{v}'"))),
        Ok(n) => Ok(n),
        Err(_) => Err(Fail::input(format!(
            "{flag} expects a whole number, got '{v}'"
        ))),
    }
}

fn duration(flag: &str, v: &str) -> Result<Duration, Fail> {
    let d = parse_duration(v).map_err(|e| Fail::input(format!("{flag}: {e}")))?;
    if d.is_zero() {
        return Err(Fail::input(format!(
            "{flag} must be longer than zero, got '{v}'"
        )));
    }
    Ok(d)
}

/// Builds the engine's run from the flags.
pub fn resolve(a: &RunArgs) -> Result<RunSpec, Fail> {
    let target = Target::parse(&a.url).map_err(|e| Fail::input(e.to_string()))?;
    let body = read_body(a.body.as_deref(), a.body_file.as_deref())?;
    let request = RequestSpec::new(target, &a.method, &a.headers, body.into())
        .map_err(|e| Fail::input(e.to_string()))?;
    let conns = a
        .connections
        .as_deref()
        .map(|c| positive_count("-c/--connections", c))
        .transpose()?
        .map(|c| c as usize);
    let max_requests = a
        .requests
        .as_deref()
        .map(|n| positive_count("-n/--requests", n))
        .transpose()?;
    let dur = a
        .duration
        .as_deref()
        .map(|d| duration("-d/--duration", d))
        .transpose()?;
    let bounded = |d: Option<Duration>| {
        d.or(if max_requests.is_some() {
            None
        } else {
            Some(DEFAULT_DURATION)
        })
    };
    let load = match (a.rate.as_deref(), a.stages.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(Fail::input(
                "--rate and --stages cannot be combined: put the rate in the stages",
            ))
        }
        (Some(r), None) => {
            let rate = parse_rate(r).map_err(|e| Fail::input(format!("--rate: {e}")))?;
            if rate <= 0.0 {
                return Err(Fail::input(format!("--rate must be above zero, got '{r}'")));
            }
            Load::Open {
                rate: Curve::flat(rate, bounded(dur)),
                pool: conns.unwrap_or(DEFAULT_CONNECTIONS),
            }
        }
        (None, Some(s)) => {
            if dur.is_some() {
                return Err(Fail::input(
                    "-d cannot be combined with --stages: the stages set the duration",
                ));
            }
            match parse_stages(s).map_err(|e| Fail::input(format!("--stages: {e}")))? {
                Stages::Rate(st) => Load::Open {
                    rate: Curve::stages(&st),
                    pool: conns.unwrap_or(DEFAULT_CONNECTIONS),
                },
                Stages::Connections(st) => {
                    if conns.is_some() {
                        return Err(Fail::input("-c cannot be combined with connection --stages: the stages set the connections"));
                    }
                    let curve = Curve::stages(&st);
                    if curve.peak() < 1.0 {
                        return Err(Fail::input(format!(
                            "--stages '{s}' never opens a connection"
                        )));
                    }
                    Load::Closed { connections: curve }
                }
            }
        }
        (None, None) => Load::Closed {
            connections: Curve::flat(conns.unwrap_or(DEFAULT_CONNECTIONS) as f64, bounded(dur)),
        },
    };
    let ok_status = match &a.ok_status {
        Some(s) => StatusSet::parse(s).map_err(|e| Fail::input(format!("--ok-status: {e}")))?,
        None => StatusSet::default(),
    };
    if let Some(p) = &a.cacert {
        if !p.is_file() {
            return Err(Fail::input(format!(
                "--cacert {}: no such file",
                p.display()
            )));
        }
    }
    if a.threads == Some(0) {
        return Err(Fail::input("--threads must be at least 1"));
    }
    Ok(RunSpec {
        request,
        load,
        max_requests,
        timeout: duration("--timeout", &a.timeout)?,
        connect_timeout: duration("--connect-timeout", &a.connect_timeout)?,
        keepalive: !a.no_keepalive,
        http2: a.http2,
        insecure: a.insecure,
        cacert: a.cacert.clone(),
        ok_status,
        threads: a
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        grace: parse_duration(&a.grace).map_err(|e| Fail::input(format!("--grace: {e}")))?,
    })
}
