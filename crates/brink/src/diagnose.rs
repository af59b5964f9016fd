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
use report::find::FindResult;
use stats::ErrorKind;

const SERVER_CPU: &str = observe::CPU;

pub fn diagnose(f: &FindResult, steps: &[&Step]) -> Vec<String> {
    let lvl = |l: f64| f.by.describe(l);
    let mut out = Vec::new();
    if let Some(s) = steps.iter().find(|s| s.stuck) {
        out.push(format!(
            "stuck: after {} the service stopped answering its health probe ({} ok of {} attempts in the step's steady part); it needs a restart: look for deadlocks, exhausted pools or a hung dependency",
            lvl(s.row.level),
            s.steady.ok,
            s.steady.requests
        ));
    }
    if let Some(s) = steps
        .iter()
        .find(|s| s.row.generator_cpu >= search::GENERATOR_BUSY)
    {
        out.push(format!(
            "generator-bound: brink's workers were {:.0}% busy at {}: from there on the limit measured is brink's, not the service's (give brink more --threads or CPU)",
            s.row.generator_cpu * 100.0,
            lvl(s.row.level)
        ));
    }
    let first_fail = steps
        .iter()
        .filter(|s| !s.row.pass)
        .min_by(|a, b| a.row.level.total_cmp(&b.row.level));
    if let Some(s) = first_fail {
        let b = &s.steady;
        let total = b.requests.max(1) as f64;
        let n429 = b.status.get(429);
        if n429 as f64 / total >= 0.01 {
            out.push(format!(
                "rate-limited: {:.1}% of responses at {} were 429 ({} of {}): the service (or a proxy) is throttling, not failing",
                n429 as f64 / total * 100.0,
                lvl(s.row.level),
                n429,
                b.requests
            ));
        }
        let connect = b.errors_by_kind[ErrorKind::Connect.index()]
            + b.errors_by_kind[ErrorKind::ConnectTimeout.index()];
        if connect > 0 && !s.stuck {
            out.push(format!(
                "connections did not open at {}: {connect} failed connects while the service still answered its health probe: check the server's listen backlog and accept rate, and brink's open-file limit (ulimit -n)",
                lvl(s.row.level)
            ));
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
            out.push(format!(
                "overload errors at {}: {} 5xx responses and {} timeouts out of {} attempts ({:.1}%)",
                lvl(s.row.level),
                n5xx,
                timeouts,
                b.requests,
                (n5xx + timeouts) as f64 / total * 100.0
            ));
        }
    }
    if let Some(k) = &f.knee {
        let at = steps.iter().find(|s| s.row.level == k.level);
        let cpu = at
            .and_then(|s| s.row.observed.get(SERVER_CPU))
            .map(|o| o.peak);
        let peak_cpu = steps
            .iter()
            .filter_map(|s| s.row.observed.get(SERVER_CPU).map(|o| o.peak))
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        match (cpu, peak_cpu) {
            (Some(c), Some(p)) if c >= 80.0 && c >= 0.9 * p => out.push(format!(
                "CPU-bound: at the knee ({}, {}) the server used {c:.0}% CPU, its highest of the search: more CPU (or less work per request) moves the limit",
                lvl(k.level),
                k.reason
            )),
            (Some(c), _) if c < 60.0 => out.push(format!(
                "not CPU-bound: at the knee ({}: {}) server CPU was only {c:.0}%: the limit is elsewhere: pools, locks, connection handling or the network path (a container network bridge or a proxy in front of the service can be the limit, not the service)",
                lvl(k.level),
                k.reason
            )),
            _ => {
                let x = at.map_or(0.0, |s| s.row.ok_rps);
                out.push(format!(
                    "queueing at ~{x:.0} req/s: the knee is at {} ({}); requests wait for something the service has a fixed amount of (workers, pool slots, CPU). Add --observe to see which",
                    lvl(k.level),
                    k.reason
                ));
            }
        }
    }
    out
}
