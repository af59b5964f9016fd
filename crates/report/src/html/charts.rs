//! What each chart of the HTML report shows, decided here and handed to the page as data: the
//! page's script only draws what it is given (series, scales, axis labels, marks), so every
//! choice of what to plot is in Rust and testable. Values that a log scale cannot show (zero,
//! missing) are `null`, which the chart draws as a gap.

use crate::{ScenarioResult, SecondRow};
use results::find::{By, FindResult};
use serde::Serialize;
use std::collections::BTreeSet;

/// One chart: an x axis, y scales (one or two), series on them, and vertical marks.
#[derive(Serialize)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    /// Log x axis (latency by percentile).
    pub x_log: bool,
    /// Tick labels for a log percentile axis (`x` holds 1/(1-p)).
    pub x_percentile: bool,
    pub x: Vec<f64>,
    pub axes: Vec<Axis>,
    pub series: Vec<Series>,
    pub marks: Vec<Mark>,
    /// A line of text under the chart.
    pub note: Option<String>,
}

#[derive(Serialize)]
pub struct Axis {
    pub scale: &'static str,
    pub label: String,
    pub log: bool,
    /// 0: left, 1: right.
    pub side: u8,
}

#[derive(Serialize)]
pub struct Series {
    pub label: String,
    pub scale: &'static str,
    pub values: Vec<Option<f64>>,
    /// Points without lines (measured points under a fitted curve).
    pub points: bool,
    pub dash: bool,
    /// Join across missing values (samples that fell in a neighbouring second) instead of
    /// leaving a gap (a second without responses).
    pub join: bool,
}

/// A vertical line at `x` with a label (the knee, the maximum sustainable level).
#[derive(Serialize)]
pub struct Mark {
    pub x: f64,
    pub label: String,
}

pub fn series(label: &str, scale: &'static str, values: Vec<Option<f64>>) -> Series {
    Series {
        label: label.to_string(),
        scale,
        values,
        points: false,
        dash: false,
        join: false,
    }
}

/// Positive values for a log scale; anything else is a gap.
pub fn positive(v: f64) -> Option<f64> {
    (v.is_finite() && v > 0.0).then_some(v)
}

pub fn axis(scale: &'static str, label: &str, log: bool, side: u8) -> Axis {
    Axis {
        scale,
        label: label.to_string(),
        log,
        side,
    }
}

/// What the load level of a timeline is called: connections, or req/s in the open model
/// (iterations/s for a flow, whose schedule starts iterations).
fn load_label(model: model::LoadModel, flow: bool) -> &'static str {
    match (model, flow) {
        (model::LoadModel::Open, true) => "target iterations/s",
        (model::LoadModel::Open, false) => "target req/s",
        _ => "target connections",
    }
}

fn timeline(title: &str, rows: &[SecondRow]) -> Chart {
    Chart {
        title: title.to_string(),
        x_label: "seconds".into(),
        x_log: false,
        x_percentile: false,
        x: rows.iter().map(|r| r.t as f64).collect(),
        axes: Vec::new(),
        series: Vec::new(),
        marks: Vec::new(),
        note: None,
    }
}

/// Latency percentiles over time (log scale), with the load level on a second axis. The open
/// model times from each request's intended start; the closed model from when its connection
/// was free to send it (the connect included, when it needed one).
pub fn latency(rows: &[SecondRow], model: model::LoadModel, flow: bool) -> Chart {
    let title = if model == model::LoadModel::Open {
        "Latency over time (from the intended start)"
    } else {
        "Latency over time (connect included when a request needed one)"
    };
    let mut c = timeline(title, rows);
    c.axes = vec![axis("ms", "latency (ms)", true, 0)];
    for (label, f) in [
        ("p50", (|r: &SecondRow| r.p50) as fn(&SecondRow) -> f64),
        ("p90", |r| r.p90),
        ("p99", |r| r.p99),
        ("max", |r| r.max),
    ] {
        c.series.push(series(
            label,
            "ms",
            rows.iter().map(|r| positive(f(r))).collect(),
        ));
    }
    if rows.iter().any(|r| r.target.is_some()) {
        let label = load_label(model, flow);
        c.axes.push(axis("load", label, false, 1));
        let mut s = series(label, "load", rows.iter().map(|r| r.target).collect());
        s.dash = true;
        c.series.push(s);
    }
    c
}

/// The seconds to chart: the last one is left out when the run ended part-way through it
/// (its counts cover a fraction of a second, and every chart would drop towards zero there).
pub fn whole_seconds(rows: &[SecondRow], duration_s: f64) -> &[SecondRow] {
    match rows.split_last() {
        Some((last, rest)) if !rest.is_empty() && (last.t + 1) as f64 > duration_s + 0.001 => rest,
        _ => rows,
    }
}

/// The scenario's whole-run latency objectives as level lines on its latency chart
/// (`SLO p99 < 25ms`), so a breach shows where the curve crosses its line.
pub fn slo_lines(c: &mut Chart, s: &ScenarioResult) {
    let parse = |d: &str| model::parse_duration(d).map_err(|e| e.to_string());
    for r in &s.slo {
        let Ok(slo) = stats::slo::Slo::parse(&r.slo, parse) else {
            continue;
        };
        if !matches!(slo.metric, stats::slo::Metric::Latency(_)) || slo.request.is_some() {
            continue;
        }
        let mut line = series(
            &format!("SLO {}", r.slo),
            "ms",
            vec![positive(slo.threshold); c.x.len()],
        );
        line.dash = true;
        c.series.push(line);
    }
}

/// Successful and failed requests per second.
pub fn throughput(rows: &[SecondRow]) -> Chart {
    let mut c = timeline("Throughput", rows);
    c.axes = vec![axis("rps", "requests per second", false, 0)];
    c.series.push(series(
        "ok/s",
        "rps",
        rows.iter().map(|r| Some(r.ok as f64)).collect(),
    ));
    c.series.push(series(
        "failed/s",
        "rps",
        rows.iter()
            .map(|r| Some(r.requests.saturating_sub(r.ok) as f64))
            .collect(),
    ));
    c
}

/// Failed responses by status, failed gRPC calls by code and transport errors by kind, per
/// second; `None` when every request succeeded.
pub fn errors(rows: &[SecondRow], s: &ScenarioResult) -> Option<Chart> {
    let ok_status = |code: &str| code.parse().is_ok_and(|c| s.counts_as_ok(c));
    let ok_code = |name: &str| s.code_counts_as_ok(name);
    type Get = fn(&SecondRow) -> &std::collections::BTreeMap<String, u64>;
    type Ok<'a> = &'a dyn Fn(&str) -> bool;
    let groups: [(&str, Get, Ok); 3] = [
        ("status ", |r| &r.status, &ok_status),
        ("code ", |r| &r.grpc_status, &ok_code),
        ("", |r| &r.errors_by_kind, &|_| false),
    ];
    let mut c = timeline("Errors per second, by status, code and kind", rows);
    c.axes = vec![axis("n", "per second", false, 0)];
    for (prefix, get, ok) in groups {
        let failed: BTreeSet<&str> = rows
            .iter()
            .flat_map(|r| get(r).keys().map(String::as_str))
            .filter(|k| !ok(k))
            .collect();
        for k in failed {
            c.series.push(series(
                &format!("{prefix}{k}"),
                "n",
                rows.iter()
                    .map(|r| Some(get(r).get(k).copied().unwrap_or(0) as f64))
                    .collect(),
            ));
        }
    }
    (!c.series.is_empty()).then_some(c)
}

/// Async completion: the probe's progress value over time, with the last response and the
/// moment the condition held marked; `None` without a probe or progress values.
pub fn completion(s: &ScenarioResult) -> Option<Chart> {
    let c = s.completion.as_ref()?;
    if c.timeline.is_empty() {
        return None;
    }
    let mut marks = vec![Mark {
        x: c.responses_done_s,
        label: "last response".into(),
    }];
    if let Some(done) = c.complete_s {
        marks.push(Mark {
            x: done,
            label: "complete".into(),
        });
    }
    Some(Chart {
        title: format!("Completion: {}", c.until),
        x_label: "seconds from the first send".into(),
        x_log: false,
        x_percentile: false,
        x: c.timeline.iter().map(|(t, _)| *t).collect(),
        axes: vec![axis("v", "progress", false, 0)],
        series: vec![series(
            "progress",
            "v",
            c.timeline.iter().map(|(_, v)| Some(*v)).collect(),
        )],
        marks,
        note: None,
    })
}

/// Seconds in which connections must open for set-up to be charted over time.
const SETUP_SECONDS: usize = 3;

/// TCP connect, TLS handshake and WebSocket upgrade p99 per second, with connections opened; `None` unless
/// connections opened through the run (in [`SETUP_SECONDS`] seconds or more). A kept-alive run
/// opens its connections in its first second: one point is no chart, and the latency table
/// already gives their connect times.
pub fn setup(rows: &[SecondRow]) -> Option<Chart> {
    let opening = rows
        .iter()
        .filter(|r| r.connect_p99.is_some() || r.tls_p99.is_some() || r.upgrade_p99.is_some())
        .count();
    if opening < SETUP_SECONDS {
        return None;
    }
    let mut c = timeline("Connection set-up", rows);
    c.axes = vec![
        axis("ms", "p99 (ms)", true, 0),
        axis("n", "connections opened", false, 1),
    ];
    c.series.push(series(
        "connect p99",
        "ms",
        rows.iter()
            .map(|r| r.connect_p99.and_then(positive))
            .collect(),
    ));
    if rows.iter().any(|r| r.tls_p99.is_some()) {
        c.series.push(series(
            "TLS p99",
            "ms",
            rows.iter().map(|r| r.tls_p99.and_then(positive)).collect(),
        ));
    }
    if rows.iter().any(|r| r.upgrade_p99.is_some()) {
        c.series.push(series(
            "upgrade p99",
            "ms",
            rows.iter()
                .map(|r| r.upgrade_p99.and_then(positive))
                .collect(),
        ));
    }
    let mut opened = series(
        "opened/s",
        "n",
        rows.iter().map(|r| Some(r.connects as f64)).collect(),
    );
    opened.dash = true;
    c.series.push(opened);
    Some(c)
}

/// Percentiles at which the distribution is drawn (x = 1/(1-p), as HdrHistogram plots do).
const SPECTRUM: [f64; 17] = [
    0.0, 25.0, 50.0, 75.0, 90.0, 95.0, 97.5, 99.0, 99.5, 99.75, 99.9, 99.95, 99.975, 99.99, 99.995,
    99.999, 100.0,
];

/// Latency by percentile from the scenario's whole histogram; `None` without responses or
/// when the histogram cannot be read.
pub fn distribution(s: &ScenarioResult) -> Option<Chart> {
    let h = stats::decode(&s.summary.latency_hdr).ok()?;
    if h.is_empty() {
        return None;
    }
    let mut x = Vec::new();
    let mut values = Vec::new();
    for p in SPECTRUM {
        // The top of the axis stands for the maximum; 1/(1-p) needs a finite point for it.
        let at = if p >= 100.0 { 1e6 } else { 100.0 / (100.0 - p) };
        x.push(at);
        values.push(positive(h.value_at_quantile(p / 100.0) as f64 / 1000.0));
    }
    Some(Chart {
        title: "Latency distribution (by percentile)".into(),
        x_label: "percentile".into(),
        x_log: true,
        x_percentile: true,
        x,
        axes: vec![axis("ms", "latency (ms)", true, 0)],
        series: vec![series("latency", "ms", values)],
        marks: Vec::new(),
        note: None,
    })
}

/// One chart per observed server figure, over time.
pub fn observed(rows: &[SecondRow]) -> Vec<Chart> {
    let names: BTreeSet<&str> = rows
        .iter()
        .flat_map(|r| r.observed.keys().map(String::as_str))
        .collect();
    // A figure with nothing to show (never measured, or zero throughout) gets no chart.
    names
        .into_iter()
        .filter(|name| {
            rows.iter().any(|r| {
                r.observed
                    .get(*name)
                    .is_some_and(|v| v.is_finite() && *v != 0.0)
            })
        })
        .map(|name| {
            let mut c = timeline(&format!("Server: {name}"), rows);
            let unit = if name == model::metrics::THROTTLED {
                "% of CFS periods"
            } else if model::metrics::is_percent(name) {
                "% of one core"
            } else if name.ends_with("rss") {
                "bytes"
            } else {
                ""
            };
            c.axes = vec![axis("v", unit, false, 0)];
            let mut s = series(
                name,
                "v",
                rows.iter().map(|r| r.observed.get(name).copied()).collect(),
            );
            s.join = true;
            c.series.push(s);
            c
        })
        .collect()
}

/// p99 and successful throughput against the search's level, with the knee and the maximum
/// sustainable level marked.
pub fn find_levels(f: &FindResult) -> Chart {
    let mut steps: Vec<_> = f.steps.iter().collect();
    steps.sort_by(|a, b| a.level.total_cmp(&b.level));
    let unit = match f.by {
        By::Rate => "offered req/s",
        By::Connections => "connections",
    };
    let marks = level_marks(f);
    let mut p99 = series(
        "p99 (ms)",
        "ms",
        steps.iter().map(|s| positive(s.p99)).collect(),
    );
    p99.points = true;
    let mut ok = series(
        "ok req/s",
        "rps",
        steps.iter().map(|s| Some(s.ok_rps)).collect(),
    );
    ok.points = true;
    // Levels double as a search climbs: on a linear axis 1-32 of 1,000 sit in its first 3%.
    let (low, high) = (
        steps.first().map_or(0.0, |s| s.level),
        steps.last().map_or(0.0, |s| s.level),
    );
    Chart {
        title: "p99 and throughput by level".into(),
        x_label: unit.into(),
        x_log: low > 0.0 && high >= 8.0 * low,
        x_percentile: false,
        x: steps.iter().map(|s| s.level).collect(),
        axes: vec![
            axis("ms", "p99 (ms)", true, 0),
            axis("rps", "ok req/s", false, 1),
        ],
        series: vec![p99, ok],
        marks,
        note: None,
    }
}

/// The knee and the maximum sustainable level as vertical marks; one mark with both names
/// when they are the same level, so their labels never sit on each other.
fn level_marks(f: &FindResult) -> Vec<Mark> {
    let mut marks: Vec<Mark> = Vec::new();
    let found = [
        f.knee.as_ref().map(|k| ("knee", k.level)),
        f.max_sustainable
            .as_ref()
            .map(|m| ("max sustainable", m.level)),
    ];
    for (name, level) in found.into_iter().flatten() {
        match marks.iter_mut().find(|m| m.x == level) {
            Some(m) => {
                m.label = format!("knee = {name} {}", f.by.cell(level));
            }
            None => marks.push(Mark {
                x: level,
                label: format!("{name} {}", f.by.cell(level)),
            }),
        }
    }
    marks
}

/// The Universal Scalability Law curve over the measured points; `None` without a fit.
pub fn usl(f: &FindResult) -> Option<Chart> {
    let u = f.usl.as_ref()?;
    let mut points = f.usl_points();
    if points.is_empty() {
        return None;
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let top = points.last().map_or(1.0, |p| p.0) * 1.25;
    let curve = |n: f64| u.lambda * n / (1.0 + u.sigma * (n - 1.0) + u.kappa * n * (n - 1.0));
    // The curve on a fine grid, the measured points at their own x.
    // From one connection (the law's N starts there) to past the last measured point.
    let mut x: Vec<f64> = (0..=60)
        .map(|i| 1.0 + (top - 1.0).max(0.0) * i as f64 / 60.0)
        .collect();
    x.extend(points.iter().map(|p| p.0));
    x.sort_by(f64::total_cmp);
    x.dedup();
    let measured: Vec<Option<f64>> = x
        .iter()
        .map(|n| points.iter().find(|p| p.0 == *n).map(|p| p.1))
        .collect();
    let mut m = series("measured ok req/s", "rps", measured);
    m.points = true;
    let mut fit = series(
        "USL fit",
        "rps",
        x.iter().map(|n| Some(curve(*n).max(0.0))).collect(),
    );
    fit.dash = true;
    let mut marks = Vec::new();
    if let Some(n) = u.peak_concurrency {
        marks.push(Mark {
            x: n,
            label: format!("peak at {n:.0}"),
        });
    }
    Some(Chart {
        title: "Universal Scalability Law".into(),
        x_label: "concurrency (requests in flight)".into(),
        x_log: false,
        x_percentile: false,
        x,
        axes: vec![axis("rps", "ok req/s", false, 0)],
        series: vec![m, fit],
        marks,
        note: Some(format!(
            "sigma (contention) {:.4}, kappa (coherency) {:.6}, R² {:.3}{}",
            u.sigma,
            u.kappa,
            u.r2,
            if u.poor_fit {
                ": a poor fit, read it with care"
            } else {
                ""
            }
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, observed: &[(&str, f64)]) -> SecondRow {
        let mut v = serde_json::json!({
            "t": t, "requests": 10, "ok": 10, "errors": 0,
            "p50": 1.0, "p90": 2.0, "p99": 3.0, "max": 4.0, "target": null
        });
        v["observed"] = observed
            .iter()
            .map(|(k, x)| (k.to_string(), serde_json::json!(x)))
            .collect();
        serde_json::from_value(v).expect("a second")
    }

    #[test]
    fn server_charts_with_nothing_to_show_are_left_out() {
        let rows = [
            row(0, &[("srv cpu", 20.0), ("host listen drops/s", 0.0)]),
            row(1, &[("srv cpu", 25.0), ("host listen drops/s", 0.0)]),
        ];
        let titles: Vec<String> = observed(&rows).into_iter().map(|c| c.title).collect();
        assert_eq!(titles, ["Server: srv cpu"]);
    }

    fn search(levels: &[f64], knee: f64, max: f64) -> FindResult {
        let steps: Vec<serde_json::Value> = levels
            .iter()
            .map(|l| {
                serde_json::to_value(results::find::StepRow {
                    level: *l,
                    ..Default::default()
                })
                .unwrap()
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "by": "connections", "steps": steps,
            "max_sustainable": { "level": max, "rps": 1000.0, "slo": [], "resolution": null },
            "knee": { "level": knee, "reason": "" },
            "usl": null, "diagnosis": [], "stopped": ""
        }))
        .expect("a search")
    }

    #[test]
    fn levels_that_double_are_drawn_on_a_log_axis_and_one_level_gets_one_mark() {
        let levels = [
            1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1000.0,
        ];
        let c = find_levels(&search(&levels, 32.0, 32.0));
        assert!(
            c.x_log,
            "1 to 1,000 on a linear axis puts 1-32 in its first 3%"
        );
        let labels: Vec<&str> = c.marks.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(labels, ["knee = max sustainable 32"]);
        let c = find_levels(&search(&[10.0, 20.0, 40.0], 20.0, 40.0));
        assert!(!c.x_log, "a narrow span stays linear");
        let labels: Vec<&str> = c.marks.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(labels, ["knee 20", "max sustainable 40"]);
    }

    #[test]
    fn set_up_is_charted_only_when_connections_open_through_the_run() {
        let opened = |t: u64, connect: Option<f64>| {
            let mut r = row(t, &[]);
            r.connect_p99 = connect;
            r.connects = u64::from(connect.is_some()) * 50;
            r
        };
        let kept_alive = [
            opened(0, Some(0.2)),
            opened(1, None),
            opened(2, None),
            opened(3, None),
        ];
        assert!(
            setup(&kept_alive).is_none(),
            "one second of connects is no chart"
        );
        let closing: Vec<_> = (0..4).map(|t| opened(t, Some(0.2))).collect();
        assert!(setup(&closing).is_some());
    }

    #[test]
    fn the_last_partial_second_is_left_out() {
        let rows = [row(0, &[]), row(1, &[]), row(2, &[])];
        assert_eq!(whole_seconds(&rows, 2.5).len(), 2);
        assert_eq!(whole_seconds(&rows, 3.0).len(), 3);
        assert_eq!(
            whole_seconds(&rows[..1], 0.4).len(),
            1,
            "a run under a second keeps it"
        );
    }
}
