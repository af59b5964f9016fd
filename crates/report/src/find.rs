//! The `find` section of a result and its terminal form: one row per step (the sweep table
//! people make by hand), the maximum sustainable level, the knee, the USL fit and the diagnosis.

use crate::fmt::{fmt_count, fmt_ms, fmt_rate, observed_value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// What a search steps: connections (closed model) or the request rate (open model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    Connections,
    Rate,
}

impl By {
    /// A level as a number for a table cell: `16`, `2,000/s`.
    pub fn cell(self, level: f64) -> String {
        match self {
            By::Rate => format!("{}/s", fmt_rate(level)),
            By::Connections => fmt_count(level.round() as u64),
        }
    }

    /// A level in words: `1 connection`, `16 connections`, `2,000/s`.
    pub fn describe(self, level: f64) -> String {
        match self {
            By::Rate => format!("{}/s", fmt_rate(level)),
            By::Connections => connections(level),
        }
    }

    /// `connections` or `rate`.
    pub fn name(self) -> &'static str {
        match self {
            By::Rate => "rate",
            By::Connections => "connections",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FindResult {
    pub by: By,
    /// Steps in the order they ran.
    pub steps: Vec<StepRow>,
    pub max_sustainable: Option<Sustained>,
    pub knee: Option<KneeInfo>,
    pub usl: Option<UslInfo>,
    pub diagnosis: Vec<String>,
    /// Why the search ended.
    pub stopped: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepRow {
    pub level: f64,
    /// Latency after the warm-up (ms).
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub mean: f64,
    /// Attempts per second after the warm-up.
    pub rps: f64,
    pub ok_rps: f64,
    pub requests: u64,
    pub errors: u64,
    pub timeouts: u64,
    /// Share of brink's worker threads' CPU used during the step (1.0 = all busy).
    pub generator_cpu: f64,
    /// Open model: share of requests that started more than 1 ms late, and the worst lag (ms).
    /// With brink's CPU free, lateness means no connection of the pool was free (the service
    /// was slow), not that brink fell behind.
    pub late_share: f64,
    pub max_lag_ms: f64,
    /// Observed server figures: name -> (peak, mean) over the step.
    pub observed: BTreeMap<String, Observed>,
    pub pass: bool,
    /// Why it failed (empty when it passed).
    pub reason: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Observed {
    pub peak: f64,
    pub mean: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sustained {
    pub level: f64,
    pub rps: f64,
    /// The objectives it met.
    pub slo: Vec<String>,
    /// Relative distance to the first failing level (the bisection's resolution), if one failed.
    pub resolution: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KneeInfo {
    pub level: f64,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UslInfo {
    pub lambda: f64,
    pub sigma: f64,
    pub kappa: f64,
    pub peak_concurrency: Option<f64>,
    pub peak_rps: Option<f64>,
    pub r2: f64,
    /// R² below 0.8: the curve does not describe these points well.
    pub poor_fit: bool,
}

/// `1 connection`, `16 connections`.
pub fn connections(level: f64) -> String {
    let n = level.round() as u64;
    format!(
        "{} connection{}",
        fmt_count(n),
        if n == 1 { "" } else { "s" }
    )
}

/// The table header, printed before the first step.
pub fn step_header(by: By, observed: &[String]) -> String {
    let mut o = format!(
        "\n {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>5}",
        if by == By::Rate { "rate" } else { "conns" },
        "p50",
        "p75",
        "p90",
        "p99",
        "req/s",
        "errors",
        "gen"
    );
    for name in observed {
        let _ = write!(o, " {:>9}", short(name));
    }
    o.push_str("  verdict\n");
    o
}

/// Column label: without the `srv ` prefix, at most 9 characters.
fn short(name: &str) -> String {
    name.trim_start_matches("srv ").chars().take(9).collect()
}

/// One table row, printed as soon as the step ends.
pub fn step_line(by: By, s: &StepRow, observed: &[String], knee: Option<&str>) -> String {
    let mut o = format!(
        " {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>4.0}%",
        by.cell(s.level),
        fmt_ms(s.p50),
        fmt_ms(s.p75),
        fmt_ms(s.p90),
        fmt_ms(s.p99),
        fmt_rate(s.rps),
        fmt_count(s.errors),
        s.generator_cpu * 100.0
    );
    for name in observed {
        let v = s
            .observed
            .get(name)
            .map_or("-".to_string(), |v| observed_value(name, v.peak));
        let _ = write!(o, " {v:>9}");
    }
    let verdict = if s.pass {
        "pass".to_string()
    } else {
        format!("FAIL {}", s.reason)
    };
    let _ = write!(o, "  {verdict}");
    if let Some(k) = knee {
        let _ = write!(o, "  <- knee: {k}");
    }
    o.push('\n');
    o
}

/// The steps again, by level, with the knee marked (the live table is in the order they ran).
pub fn by_level(f: &FindResult, observed: &[String]) -> String {
    let mut rows: Vec<&StepRow> = f.steps.iter().collect();
    rows.sort_by(|a, b| a.level.total_cmp(&b.level));
    let mut o = format!("\n by level:{}", step_header(f.by, observed));
    for r in rows {
        let knee = f
            .knee
            .as_ref()
            .filter(|k| k.level == r.level)
            .map(|k| k.reason.as_str());
        o.push_str(&step_line(f.by, r, observed, knee));
    }
    o
}

/// Everything after the table: the maximum, the knee, the USL fit and the diagnosis.
pub fn render_summary(f: &FindResult) -> String {
    let mut o = String::new();
    let _ = writeln!(o);
    match &f.max_sustainable {
        Some(m) => {
            let res = m.resolution.map_or(String::new(), |r| {
                format!(" (bisected to +-{:.0}%)", r * 100.0)
            });
            let _ = writeln!(
                o,
                " Maximum sustainable: {}, {} req/s with {}{res}",
                f.by.describe(m.level),
                fmt_rate(m.rps),
                m.slo.join(", ")
            );
        }
        None => {
            let _ = writeln!(
                o,
                " Maximum sustainable: none (no level met the objectives)"
            );
        }
    }
    let _ = writeln!(o, " Search ended: {}", f.stopped);
    if let Some(k) = &f.knee {
        let _ = writeln!(o, " Knee: at {} ({})", f.by.describe(k.level), k.reason);
    }
    if let Some(u) = &f.usl {
        let peak = match (u.peak_concurrency, u.peak_rps) {
            (Some(n), Some(x)) => format!("predicted peak N* = {n:.1} at {} req/s", fmt_rate(x)),
            _ => "no predicted peak (no coherency cost measured)".to_string(),
        };
        let _ = writeln!(
            o,
            " USL fit: sigma {:.4}, kappa {:.6}, {peak}, R^2 {:.3}{}",
            u.sigma,
            u.kappa,
            u.r2,
            if u.poor_fit {
                " (poor fit: read it with care)"
            } else {
                ""
            }
        );
    }
    if !f.diagnosis.is_empty() {
        let _ = writeln!(o, " Diagnosis:");
        for d in &f.diagnosis {
            let _ = writeln!(o, "   - {d}");
        }
    }
    o
}
