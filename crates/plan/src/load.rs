//! The load of one scenario from raw values, whether they came from flags (`-c 50 --rate 200`)
//! or from a plan's `load:` mapping: every rule about which settings combine lives here, and
//! errors name the setting the way the user wrote it (the `Names` say how).

use model::units::{parse_duration, parse_rate, parse_stages, Stages};
use model::{Curve, Load};
use std::time::Duration;

/// Default run length when neither a duration, a request count nor stages bound the run.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Default connections (closed model) or pool size (open model).
pub const DEFAULT_CONNECTIONS: usize = 50;

/// Raw load settings, all optional; later sources override earlier ones field by field.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadInput {
    pub connections: Option<String>,
    pub rate: Option<String>,
    pub stages: Option<String>,
    pub duration: Option<String>,
    pub requests: Option<String>,
}

/// How settings are called where they came from, for error messages.
pub struct Names {
    pub connections: &'static str,
    pub rate: &'static str,
    pub stages: &'static str,
    pub duration: &'static str,
    pub requests: &'static str,
}

/// Flag names.
pub const FLAGS: Names = Names {
    connections: "-c/--concurrency",
    rate: "--rate",
    stages: "--stages",
    duration: "-d/--duration",
    requests: "-n/--requests",
};

/// Plan keys.
pub const KEYS: Names = Names {
    connections: "connections",
    rate: "rate",
    stages: "stages",
    duration: "duration",
    requests: "requests",
};

impl LoadInput {
    /// `self` with every setting `over` has replacing this one's.
    pub fn overridden_by(&self, over: &LoadInput) -> LoadInput {
        let pick = |a: &Option<String>, b: &Option<String>| b.clone().or_else(|| a.clone());
        // A rate or stages given on top replaces the other shape of load entirely.
        let (rate, stages) = match (&over.rate, &over.stages) {
            (None, None) => (self.rate.clone(), self.stages.clone()),
            _ => (over.rate.clone(), over.stages.clone()),
        };
        // Stages given on top also set the duration.
        let duration = if over.stages.is_some() {
            over.duration.clone()
        } else {
            pick(&self.duration, &over.duration)
        };
        LoadInput {
            connections: pick(&self.connections, &over.connections),
            rate,
            stages,
            duration,
            requests: pick(&self.requests, &over.requests),
        }
    }
}

/// Most connections (or pool slots) one run may open: each costs a descriptor and a little
/// memory, and the number must stay far from allocation limits.
pub const MAX_CONNECTIONS: u64 = 1_000_000;
/// Most requests `-n` may ask for.
pub const MAX_REQUESTS: u64 = 1_000_000_000_000;
/// Slowest rate accepted: one request per 1000 s.
pub const MIN_RATE: f64 = 0.001;
/// Fastest rate accepted.
pub const MAX_RATE: f64 = 10_000_000.0;

/// A positive whole number.
pub fn positive_count(name: &str, v: &str) -> Result<u64, String> {
    match v.trim().parse::<u64>() {
        Ok(0) => Err(format!("{name} must be at least 1, got '{v}'")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{name} expects a whole number, got '{v}'")),
    }
}

/// A whole number in `1..=max`.
pub fn bounded_count(name: &str, v: &str, max: u64) -> Result<u64, String> {
    let n = positive_count(name, v)?;
    if n > max {
        return Err(format!("{name} must be at most {max}, got '{v}'"));
    }
    Ok(n)
}

/// A connection count (or pool size) within [`MAX_CONNECTIONS`].
pub fn connections(name: &str, v: &str) -> Result<usize, String> {
    bounded_count(name, v, MAX_CONNECTIONS).map(|n| n as usize)
}

/// A request rate within [`MIN_RATE`]..=[`MAX_RATE`] (`zero_ok`: a stage may ramp to 0).
pub fn check_rate(name: &str, text: &str, rate: f64, zero_ok: bool) -> Result<f64, String> {
    if zero_ok && rate == 0.0 {
        return Ok(rate);
    }
    if !(MIN_RATE..=MAX_RATE).contains(&rate) {
        return Err(format!(
            "{name}: rate '{text}' is out of range ({MIN_RATE}/s to {MAX_RATE}/s)"
        ));
    }
    Ok(rate)
}

/// `-d '{"name":"x"}'` is data in ghz, hey and curl: say where a body goes in brink.
fn data_hint(name: &str, v: &str) -> &'static str {
    let data = v.trim_start().starts_with(['{', '[', '<', '"']) || v.contains('=');
    if name.starts_with("-d") && data {
        "; -d is the duration in brink: send a body with -b/--body (a gRPC message with --data)"
    } else {
        ""
    }
}

/// A duration longer than zero.
pub fn positive_duration(name: &str, v: &str) -> Result<Duration, String> {
    let d = parse_duration(v).map_err(|e| format!("{name}: {e}{}", data_hint(name, v)))?;
    if d.is_zero() {
        return Err(format!("{name} must be longer than zero, got '{v}'"));
    }
    Ok(d)
}

/// Builds the load and the request cap (`-n`).
pub fn build(input: &LoadInput, n: &Names) -> Result<(Load, Option<u64>), String> {
    let conns = input
        .connections
        .as_deref()
        .map(|c| connections(n.connections, c))
        .transpose()?;
    let max_requests = input
        .requests
        .as_deref()
        .map(|v| bounded_count(n.requests, v, MAX_REQUESTS))
        .transpose()?;
    let dur = input
        .duration
        .as_deref()
        .map(|d| positive_duration(n.duration, d))
        .transpose()?;
    let bounded = dur.or(if max_requests.is_some() {
        None
    } else {
        Some(DEFAULT_DURATION)
    });
    let load = match (input.rate.as_deref(), input.stages.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{} and {} cannot be combined: put the rate in the stages",
                n.rate, n.stages
            ))
        }
        (Some(r), None) => {
            let rate = parse_rate(r).map_err(|e| format!("{}: {e}", n.rate))?;
            if rate <= 0.0 {
                return Err(format!("{} must be above zero, got '{r}'", n.rate));
            }
            let rate = check_rate(n.rate, r, rate, false)?;
            Load::Open {
                rate: Curve::flat(rate, bounded),
                pool: conns.unwrap_or(DEFAULT_CONNECTIONS),
            }
        }
        (None, Some(s)) => {
            if dur.is_some() {
                return Err(format!(
                    "{} cannot be combined with {}: the stages set the duration",
                    n.duration, n.stages
                ));
            }
            match parse_stages(s).map_err(|e| format!("{}: {e}", n.stages))? {
                Stages::Rate(st) => {
                    for (_, r) in &st {
                        check_rate(n.stages, &format!("{r:e}/s"), *r, true)?;
                    }
                    if st.iter().all(|(_, r)| *r == 0.0) {
                        return Err(format!("{} '{s}' never sends a request", n.stages));
                    }
                    Load::Open {
                        rate: Curve::stages(&st),
                        pool: conns.unwrap_or(DEFAULT_CONNECTIONS),
                    }
                }
                Stages::Connections(st) => {
                    if let Some((_, c)) = st.iter().find(|(_, c)| *c > MAX_CONNECTIONS as f64) {
                        return Err(format!(
                            "{}: {c} connections is more than {MAX_CONNECTIONS}",
                            n.stages
                        ));
                    }
                    if conns.is_some() {
                        return Err(format!(
                            "{} cannot be combined with connection {}: the stages set the connections",
                            n.connections, n.stages
                        ));
                    }
                    let curve = Curve::stages(&st);
                    if curve.peak() < 1.0 {
                        return Err(format!("{} '{s}' never opens a connection", n.stages));
                    }
                    Load::Closed { connections: curve }
                }
            }
        }
        (None, None) => Load::Closed {
            connections: Curve::flat(conns.unwrap_or(DEFAULT_CONNECTIONS) as f64, bounded),
        },
    };
    Ok((load, max_requests))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(
        c: Option<&str>,
        rate: Option<&str>,
        stages: Option<&str>,
        d: Option<&str>,
    ) -> LoadInput {
        LoadInput {
            connections: c.map(Into::into),
            rate: rate.map(Into::into),
            stages: stages.map(Into::into),
            duration: d.map(Into::into),
            requests: None,
        }
    }

    #[test]
    fn flags_override_plan_values_field_by_field() {
        let plan = input(Some("50"), Some("200/s"), None, Some("2m"));
        // -d only: keeps the plan's rate and connections.
        let merged = plan.overridden_by(&input(None, None, None, Some("10s")));
        assert_eq!(merged, input(Some("50"), Some("200/s"), None, Some("10s")));
        // --stages replaces the plan's rate and duration rather than clashing with them.
        let merged = plan.overridden_by(&input(None, None, Some("10s:5/s"), None));
        assert_eq!((merged.rate, merged.duration), (None, None));
        assert_eq!(merged.stages.as_deref(), Some("10s:5/s"));
    }

    #[test]
    fn combination_errors_use_the_source_names() {
        let e = build(&input(None, Some("5"), Some("1s:5/s"), None), &KEYS).unwrap_err();
        assert!(e.starts_with("rate and stages cannot be combined"), "{e}");
        let e = build(&input(Some("0"), None, None, None), &FLAGS).unwrap_err();
        assert_eq!(e, "-c/--concurrency must be at least 1, got '0'");
        let (load, n) = build(&input(Some("3"), None, None, None), &KEYS).unwrap();
        assert_eq!(n, None);
        assert_eq!(load.end(), Some(DEFAULT_DURATION));
    }
}
