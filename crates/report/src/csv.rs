//! The result as CSV, for spreadsheets and scripts: one row per second of every scenario, and
//! for a capacity search one row per step. Columns (times in milliseconds, latency from the
//! intended start):
//!
//! * seconds: `scenario, t, requests, ok, errors, rps, p50_ms, p90_ms, p99_ms, max_ms, target,
//!   connects, connect_p99_ms, tls_p99_ms, upgrade_p99_ms` (a WebSocket's upgrades), then one column per observed server figure, by its
//!   machine name with its unit ([`model::metrics::column`]: `srv_cpu_percent`,
//!   `srv_rss_bytes`, `srv_threads`, `srv_fds`, `srv_sockets`, `srv_throttled_percent`,
//!   `srv_cpu_wait_percent`, `srv_ctx_vol_per_s`, `srv_ctx_invol_per_s`,
//!   `host_listen_overflows_per_s`, `host_listen_drops_per_s`, `host_retransmits_per_s`, and
//!   custom `--metric` names cleaned the same way). `t` counts seconds from the scenario's
//!   start; `rps` is the second's requests (a row is one second); `target` is the schedule's
//!   level in that second (connections, or req/s in the open model); empty cells are figures
//!   that were not measured that second.
//! * steps: `level, unit, pass, p50_ms, p75_ms, p90_ms, p99_ms, mean_ms, rps, ok_rps, requests,
//!   errors, timeouts, generator_busy_percent, generator_wait_percent, late_share, max_lag_ms,
//!   reason`, then the peak
//!   of each observed figure over the step (`srv_cpu_percent_peak`, ...).
//!
//! Text cells (scenario names, reasons) are quoted when needed, and a cell that a spreadsheet
//! would run as a formula (starting with `=`, `+`, `-`, `@`) gets a leading `'`.

use crate::RunResult;
use results::find::{By, FindResult};
use std::collections::BTreeSet;
use std::fmt::Write;

/// One row per second of every scenario.
pub fn seconds(r: &RunResult) -> String {
    let observed: BTreeSet<&str> = r
        .scenarios
        .iter()
        .flat_map(|s| s.timeseries.iter())
        .flat_map(|row| row.observed.keys().map(String::as_str))
        .collect();
    let mut out = String::from(
        "scenario,t,requests,ok,errors,rps,p50_ms,p90_ms,p99_ms,max_ms,target,connects,connect_p99_ms,tls_p99_ms,upgrade_p99_ms",
    );
    for name in &observed {
        out.push(',');
        out.push_str(&text(&model::metrics::column(name)));
    }
    out.push('\n');
    for s in &r.scenarios {
        for row in &s.timeseries {
            let mut cells = vec![
                text(&s.name),
                row.t.to_string(),
                row.requests.to_string(),
                row.ok.to_string(),
                row.errors.to_string(),
                row.requests.to_string(),
                num(Some(row.p50)),
                num(Some(row.p90)),
                num(Some(row.p99)),
                num(Some(row.max)),
                num(row.target),
                row.connects.to_string(),
                num(row.connect_p99),
                num(row.tls_p99),
                num(row.upgrade_p99),
            ];
            cells.extend(observed.iter().map(|k| num(row.observed.get(*k).copied())));
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    out
}

/// One row per step of a capacity search, in the order the steps ran.
pub fn steps(f: &FindResult) -> String {
    let observed: BTreeSet<&str> = f
        .steps
        .iter()
        .flat_map(|s| s.observed.keys().map(String::as_str))
        .collect();
    let mut out = String::from(
        "level,unit,pass,p50_ms,p75_ms,p90_ms,p99_ms,mean_ms,rps,ok_rps,requests,errors,timeouts,generator_busy_percent,generator_wait_percent,late_share,max_lag_ms,reason",
    );
    for name in &observed {
        let _ = write!(out, ",{}_peak", text(&model::metrics::column(name)));
    }
    out.push('\n');
    let unit = match f.by {
        By::Rate => "req/s",
        By::Connections => "connections",
    };
    for s in &f.steps {
        let mut cells = vec![
            num(Some(s.level)),
            unit.to_string(),
            s.pass.to_string(),
            num(Some(s.p50)),
            num(Some(s.p75)),
            num(Some(s.p90)),
            num(Some(s.p99)),
            num(Some(s.mean)),
            num(Some(s.rps)),
            num(Some(s.ok_rps)),
            s.requests.to_string(),
            s.errors.to_string(),
            s.timeouts.to_string(),
            num(Some(s.generator_cpu * 100.0)),
            num(s.generator_wait.map(|w| w * 100.0)),
            num(Some(s.late_share)),
            num(Some(s.max_lag_ms)),
            text(&s.reason),
        ];
        cells.extend(
            observed
                .iter()
                .map(|k| num(s.observed.get(*k).map(|o| o.peak))),
        );
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// A number cell: empty when absent, at most 3 decimals, no trailing zeros.
fn num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => {
            let s = format!("{x:.3}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            if s == "-0" {
                "0".to_string()
            } else {
                s.to_string()
            }
        }
        _ => String::new(),
    }
}

/// A text cell: quoted when it holds a comma, a quote or a line break; a leading `=`, `+`,
/// `-` or `@` (a formula to a spreadsheet) is defused with `'`.
fn text(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_plain_numbers_and_safe_text() {
        assert_eq!(num(Some(1.5)), "1.5");
        assert_eq!(num(Some(2.0)), "2");
        assert_eq!(num(Some(0.12345)), "0.123");
        assert_eq!(num(Some(-0.0001)), "0");
        assert_eq!(num(None), "");
        assert_eq!(num(Some(f64::NAN)), "");
        assert_eq!(text("login"), "login");
        assert_eq!(text("a,b"), "\"a,b\"");
        assert_eq!(text("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(text("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(text("-1+2"), "'-1+2");
        assert_eq!(text("two\nlines"), "\"two\nlines\"");
    }
}
