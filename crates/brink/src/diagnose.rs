//! Turning a search's figures into short hints, each quoting the numbers behind it. The rules,
//! in the order they are reported:
//!
//! * **stuck**: a failing step after which the health probe got no answer within `--recovery`
//!   (as when a service deadlocks under load and needs a restart);
//! * **generator-bound**: brink's own worker threads were >= 90% busy during a step, so that
//!   step measured brink, not the service;
//! * **rate-limited**: >= 1% of the first failing step's responses were 429 (a gateway or the service throttling);
//! * **connections not opening**: connect failures in the first failing step while the service
//!   still answers its probe (listen backlog, accept rate, or brink's open-file limit);
//! * **overload errors**: 5xx responses or timeouts in the first failing step;
//! * **CPU-bound** / **not CPU-bound** (needs server CPU from `--observe`, in % of one core):
//!   at the knee, CPU at least 80% and at least 90% of the search's peak (as when a model server's pods
//!   need more CPU) versus CPU under 60% (the cause is elsewhere: pools, locks, connection
//!   handling or the network path, as when a container network bridge was the limit);
//! * **queueing**: throughput flat while latency grows, without server metrics to say why.

use crate::step::Step;
use report::find::{FindResult, Finding, KneeInfo};
use stats::ErrorKind;

const SERVER_CPU: &str = observe::CPU;

/// The findings of a search, in the order above.
pub fn diagnose(f: &FindResult, steps: &[&Step]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(s) = steps.iter().find(|s| s.stuck) {
        out.push(Finding::Stuck {
            level: s.row.level,
            ok: s.steady.ok,
            attempts: s.steady.requests,
        });
    }
    if let Some(s) = steps
        .iter()
        .find(|s| s.row.generator_cpu >= search::GENERATOR_BUSY)
    {
        out.push(Finding::GeneratorBound {
            level: s.row.level,
            busy_percent: s.row.generator_cpu * 100.0,
        });
    }
    let first_fail = steps
        .iter()
        .filter(|s| !s.row.pass)
        .min_by(|a, b| a.row.level.total_cmp(&b.row.level));
    if let Some(s) = first_fail {
        failing_step(s, &mut out);
    }
    if let Some(k) = &f.knee {
        out.push(at_the_knee(k, steps));
    }
    out
}

/// What the first failing step's errors say.
fn failing_step(s: &Step, out: &mut Vec<Finding>) {
    let b = &s.steady;
    let level = s.row.level;
    let n429 = b.status.get(429);
    if n429 as f64 / b.requests.max(1) as f64 >= 0.01 {
        out.push(Finding::RateLimited {
            level,
            throttled: n429,
            attempts: b.requests,
        });
    }
    let connect = b.errors_by_kind[ErrorKind::Connect.index()]
        + b.errors_by_kind[ErrorKind::ConnectTimeout.index()];
    if connect > 0 && !s.stuck {
        out.push(Finding::ConnectionsNotOpening {
            level,
            failed_connects: connect,
        });
    }
    let n5xx: u64 = b
        .status
        .sorted()
        .iter()
        .filter(|(c, _)| *c >= 500)
        .map(|(_, n)| n)
        .sum();
    let timeouts = b.errors_by_kind[ErrorKind::Timeout.index()];
    if n5xx + timeouts > 0 {
        out.push(Finding::OverloadErrors {
            level,
            server_errors: n5xx,
            timeouts,
            attempts: b.requests,
        });
    }
}

/// What the server's CPU at the knee says (queueing when it was not observed).
fn at_the_knee(k: &KneeInfo, steps: &[&Step]) -> Finding {
    let at = steps.iter().find(|s| s.row.level == k.level);
    let cpu = at
        .and_then(|s| s.row.observed.get(SERVER_CPU))
        .map(|o| o.peak);
    let peak_cpu = steps
        .iter()
        .filter_map(|s| s.row.observed.get(SERVER_CPU).map(|o| o.peak))
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let (level, knee) = (k.level, k.reason.clone());
    match (cpu, peak_cpu) {
        (Some(c), Some(p)) if c >= 80.0 && c >= 0.9 * p => Finding::CpuBound {
            level,
            cpu_percent: c,
            knee,
        },
        (Some(c), _) if c < 60.0 => Finding::NotCpuBound {
            level,
            cpu_percent: c,
            knee,
        },
        _ => Finding::Queueing {
            level,
            ok_rps: at.map_or(0.0, |s| s.row.ok_rps),
            knee,
        },
    }
}
