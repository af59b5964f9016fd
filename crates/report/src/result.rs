//! The result file, schema `brink.result/v1`. Keys are a contract (`summary.requests`,
//! `summary.latency_ms.p50`, `summary.status["503"]`, `summary.errors_by_kind.timeout`): add
//! freely, never rename without bumping the version. `schemas/brink.result.v1.json` describes it
//! and a test validates real output against it.

use engine::{Load, RunOutput, RunSpec};
use serde::{Deserialize, Serialize};
use stats::{ErrorKind, Histogram, LatencySummary};
use std::collections::BTreeMap;

/// The schema identifier written in every result.
pub const SCHEMA: &str = "brink.result/v1";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub brink_version: String,
    pub started_at: String,
    pub interrupted: bool,
    pub target: TargetInfo,
    pub load: LoadInfo,
    pub summary: SummaryJson,
    pub timeseries: Vec<SecondRow>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetInfo {
    pub url: String,
    pub method: String,
    /// `http/1.1` or `h2`.
    pub protocol: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoadInfo {
    /// `closed` or `open`.
    pub model: String,
    /// Closed: peak connections; open: connection pool (max in flight).
    pub connections: usize,
    /// Open model with a constant rate: requests per second.
    pub rate: Option<f64>,
    /// Staged profiles: each stage ramps to `target` over `duration_s`.
    pub stages: Vec<StageJson>,
    pub duration_s: Option<f64>,
    pub requests: Option<u64>,
    pub threads: usize,
    pub timeout_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageJson {
    pub duration_s: f64,
    pub target: f64,
}

/// Transport errors by kind; every kind is always present.
pub type ErrorsByKind = BTreeMap<String, u64>;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SummaryJson {
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub duration_s: f64,
    pub rps: f64,
    pub ok_rps: f64,
    pub success_rate: f64,
    /// Requests in flight when the run stopped; not counted anywhere else.
    pub unfinished: u64,
    /// From the intended start (coordinated-omission corrected), responses only.
    pub latency_ms: LatencySummary,
    /// From the actual send, responses only.
    pub service_time_ms: LatencySummary,
    pub status: BTreeMap<String, u64>,
    pub errors_by_kind: ErrorsByKind,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Open model only: how well the generator kept to the schedule.
    pub schedule: Option<ScheduleInfo>,
    /// Corrected latency in log-spaced bins.
    pub latency_histogram: Vec<HistBin>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScheduleInfo {
    /// Requests the schedule asked for in the time that ran.
    pub intended: u64,
    pub intended_rps: f64,
    /// Sent more than 1 ms after their intended time because no connection was free.
    pub late: u64,
    pub max_lag_ms: f64,
    /// Due before the end but never sent (no free connection in time).
    pub not_sent: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HistBin {
    pub le_ms: f64,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SecondRow {
    pub t: u64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    /// The schedule's target level (connections or req/s) in this second.
    pub target: Option<f64>,
}

impl RunResult {
    /// Builds the result of a finished run.
    pub fn new(spec: &RunSpec, out: &RunOutput, started_at: String) -> RunResult {
        let s = out.totals.summary(out.duration.as_secs_f64());
        let status = s
            .status
            .sorted()
            .into_iter()
            .map(|(c, n)| (c.to_string(), n))
            .collect();
        let errors_by_kind = ErrorKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), s.errors_by_kind[k.index()]))
            .collect();
        let schedule = match &spec.load {
            Load::Open { rate, .. } => {
                let ran = rate.truncated(out.duration);
                let mut intended = ran.total().ceil() as u64;
                if let Some(n) = spec.max_requests {
                    intended = intended.min(n);
                }
                let sent = s.requests + out.unfinished;
                Some(ScheduleInfo {
                    intended,
                    intended_rps: if out.duration.is_zero() {
                        0.0
                    } else {
                        ran.total() / out.duration.as_secs_f64()
                    },
                    late: s.late,
                    max_lag_ms: s.max_lag_us as f64 / 1000.0,
                    not_sent: intended.saturating_sub(sent),
                })
            }
            Load::Closed { .. } => None,
        };
        RunResult {
            schema: SCHEMA.to_string(),
            brink_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at,
            interrupted: out.interrupted,
            target: TargetInfo {
                url: spec.request.target.url(),
                method: spec.request.method.clone(),
                protocol: if spec.http2 { "h2" } else { "http/1.1" }.to_string(),
            },
            load: load_info(spec, out.workers),
            summary: SummaryJson {
                requests: s.requests,
                ok: s.ok,
                errors: s.errors,
                duration_s: s.duration_s,
                rps: s.rps,
                ok_rps: s.ok_rps,
                success_rate: s.success_rate,
                unfinished: out.unfinished,
                latency_ms: s.latency,
                service_time_ms: s.service,
                status,
                errors_by_kind,
                bytes_in: s.bytes_in,
                bytes_out: s.bytes_out,
                schedule,
                latency_histogram: bins(&out.totals.all.corrected),
            },
            timeseries: out
                .seconds
                .iter()
                .map(|x| SecondRow {
                    t: x.t,
                    requests: x.requests,
                    ok: x.ok,
                    errors: x.errors,
                    p50: x.latency.p50,
                    p90: x.latency.p90,
                    p99: x.latency.p99,
                    max: x.latency.max,
                    target: x.target,
                })
                .collect(),
        }
    }
}

fn load_info(spec: &RunSpec, threads: usize) -> LoadInfo {
    let (model, curve) = match &spec.load {
        Load::Closed { connections } => ("closed", connections),
        Load::Open { rate, .. } => ("open", rate),
    };
    let segs = curve.segments();
    let flat = segs.len() == 1 && segs[0].from == segs[0].to;
    let rate = match &spec.load {
        Load::Open { .. } if flat => Some(segs[0].from),
        _ => None,
    };
    let stages = if flat {
        Vec::new()
    } else {
        segs.iter()
            .map(|s| StageJson {
                duration_s: s.secs,
                target: s.to,
            })
            .collect()
    };
    LoadInfo {
        model: model.to_string(),
        connections: spec.load.max_connections(),
        rate,
        stages,
        duration_s: spec.load.end().map(|d| d.as_secs_f64()),
        requests: spec.max_requests,
        threads,
        timeout_s: spec.timeout.as_secs_f64(),
    }
}

/// Up to 12 log-spaced bins from the smallest to the largest value.
fn bins(h: &Histogram) -> Vec<HistBin> {
    if h.is_empty() {
        return Vec::new();
    }
    let (lo, hi) = (h.min().max(1) as f64, h.max().max(1) as f64);
    let n = if hi / lo < 1.5 { 1 } else { 12 };
    let mut out = Vec::with_capacity(n);
    let mut prev = 0u64;
    for i in 1..=n {
        let edge = lo * (hi / lo).powf(i as f64 / n as f64);
        let upper = if i == n { h.max() } else { edge as u64 };
        let below = h
            .iter_recorded()
            .filter(|v| v.value_iterated_to() <= upper)
            .map(|v| v.count_at_value())
            .sum::<u64>();
        out.push(HistBin {
            le_ms: h.highest_equivalent(upper) as f64 / 1000.0,
            count: below - prev,
        });
        prev = below;
    }
    out
}
