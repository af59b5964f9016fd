//! The tables a plan run adds to the summary: per request of a mix or flow, the SLA table of
//! each scenario (metric, target, result, margin, PASS/FAIL, in the style of the SLA tables
//! teams write by hand), and the verdict of a whole suite.

use crate::fmt::{fmt_count, fmt_margin, fmt_ms, fmt_rate};
use crate::{RunResult, ScenarioResult};
use std::fmt::Write;

/// Requests, rate, errors and latency per request name (empty for a single request).
pub fn requests_table(r: &ScenarioResult) -> String {
    let mut o = String::new();
    if r.requests.is_empty() {
        return o;
    }
    let w = r
        .requests
        .iter()
        .map(|q| q.name.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let _ = writeln!(
        o,
        "\n  {:<w$} {:>10} {:>9} {:>8} {:>9} {:>9} {:>9}",
        "request", "requests", "req/s", "errors", "p50", "p95", "p99"
    );
    for q in &r.requests {
        let s = &q.summary;
        // No latency was recorded (every attempt failed before an answer): no figure, not 0.
        let l = &s.latency_ms;
        let ms = |v: f64| if l.max > 0.0 { fmt_ms(v) } else { "-".into() };
        let _ = writeln!(
            o,
            "  {:<w$} {:>10} {:>9} {:>8} {:>9} {:>9} {:>9}",
            q.name,
            fmt_count(s.requests),
            fmt_rate(s.rps),
            fmt_count(s.errors),
            ms(l.p50),
            ms(l.p95),
            ms(l.p99)
        );
    }
    o
}

/// The SLA table of one scenario (empty without SLOs).
pub fn sla_table(r: &ScenarioResult) -> String {
    let mut o = String::new();
    if r.slo.is_empty() {
        return o;
    }
    // Every column as wide as its widest cell (by characters), so long targets and results
    // ("<= 760 req/s") never run into the next column.
    let width = |f: &dyn Fn(&crate::SloResult) -> &str, head: &str| {
        r.slo
            .iter()
            .map(|s| f(s).chars().count())
            .chain([head.chars().count()])
            .max()
            .unwrap_or(0)
    };
    let w = width(&|s| s.metric.as_str(), "SLO");
    let tw = width(&|s| s.target.as_str(), "target");
    let rw = width(&|s| s.result.as_str(), "result");
    let margins: Vec<String> = r
        .slo
        .iter()
        .map(|s| s.margin.map_or("-".to_string(), |m| fmt_margin(m, 0)))
        .collect();
    let mw = margins
        .iter()
        .map(String::len)
        .chain([6])
        .max()
        .unwrap_or(6);
    let _ = writeln!(
        o,
        "\n  {:<w$}  {:<tw$}  {:>rw$}  {:>mw$}  status",
        "SLO", "target", "result", "margin"
    );
    for (s, margin) in r.slo.iter().zip(&margins) {
        let mut status = if s.pass { "PASS" } else { "FAIL" }.to_string();
        if let (Some(end), Some(win)) = (s.worst_window_end_s, s.window_s) {
            if !s.pass {
                let _ = write!(
                    status,
                    "  {} of {} windows; worst {}s-{}s",
                    s.failed_windows,
                    s.windows,
                    end.saturating_sub(win),
                    end
                );
            }
        }
        let _ = writeln!(
            o,
            "  {:<w$}  {:<tw$}  {:>rw$}  {:>mw$}  {status}",
            s.metric, s.target, s.result, margin
        );
    }
    let passed = r.slo.iter().filter(|s| s.pass).count();
    let _ = writeln!(
        o,
        "  SLA: {} ({passed}/{} met)",
        if passed == r.slo.len() {
            "PASS"
        } else {
            "FAIL"
        },
        r.slo.len()
    );
    o
}

/// One line per scenario and the overall verdict, for runs of more than one scenario.
pub fn suite_table(r: &RunResult) -> String {
    let mut o = String::new();
    if r.scenarios.len() < 2 {
        return o;
    }
    let w = r
        .scenarios
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let _ = writeln!(
        o,
        "\n  {:<w$} {:>10} {:>9} {:>8} {:>9}  SLA",
        "scenario", "requests", "req/s", "errors", "p99"
    );
    for s in &r.scenarios {
        let sla = match (s.slo_passed, s.interrupted, &s.aborted_by) {
            (_, true, _) => "interrupted".to_string(),
            (Some(false), _, Some(a)) => format!("FAIL (aborted: {a})"),
            (Some(false), _, None) => {
                let failed: Vec<&str> = s
                    .slo
                    .iter()
                    .filter(|x| !x.pass)
                    .map(|x| x.slo.as_str())
                    .collect();
                format!("FAIL ({})", failed.join("; "))
            }
            (Some(true), _, _) => "PASS".to_string(),
            (None, _, _) => "-".to_string(),
        };
        let _ = writeln!(
            o,
            "  {:<w$} {:>10} {:>9} {:>8} {:>9}  {sla}",
            s.name,
            fmt_count(s.summary.requests),
            fmt_rate(s.summary.rps),
            fmt_count(s.summary.errors),
            fmt_ms(s.summary.latency_ms.p99)
        );
    }
    let verdict = match r.slo_passed {
        Some(true) => "PASS: every SLO met",
        Some(false) => "FAIL: at least one SLO missed",
        None => "no SLOs set",
    };
    let _ = writeln!(o, "  overall: {verdict}");
    o
}
