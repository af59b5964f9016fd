//! The series in Prometheus's text exposition format (0.0.4): one `# HELP` and `# TYPE` per
//! family, label values escaped (backslash, double quote, newline), so a scenario named by a
//! plan can never break a line or add a label.

use crate::series::{Request, Scenario, Series, BOUNDS, QUANTILES};
use stats::ErrorKind;
use std::fmt::Write;

/// Every family written, with its type: what a dashboard may query.
pub const FAMILIES: [(&str, &str); 12] = [
    ("brink_requests_total", "counter"),
    ("brink_responses_total", "counter"),
    ("brink_errors_total", "counter"),
    ("brink_grpc_total", "counter"),
    ("brink_late_total", "counter"),
    ("brink_request_duration_seconds", "histogram"),
    ("brink_latency_seconds", "gauge"),
    ("brink_seconds_total", "counter"),
    ("brink_load_target", "gauge"),
    ("brink_scenario_start_timestamp_seconds", "gauge"),
    ("brink_scenario_end_timestamp_seconds", "gauge"),
    ("brink_run_info", "gauge"),
];

/// A label value, escaped.
pub fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn labels(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// What one request's samples share: the run's labels, its scenario and its name.
fn base<'a>(s: &'a Series, sc: &'a Scenario, r: &'a Request) -> Vec<(&'a str, &'a str)> {
    let mut l: Vec<(&str, &str)> = s
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    l.push(("scenario", &sc.name));
    l.push(("request", &r.name));
    l
}

/// Every request of every scenario, with its labels.
fn each(s: &Series) -> impl Iterator<Item = (Vec<(&str, &str)>, &Request)> {
    s.scenarios
        .iter()
        .flat_map(move |sc| sc.requests.iter().map(move |r| (base(s, sc, r), r)))
}

fn sample(out: &mut String, name: &str, l: &[(&str, &str)], v: impl std::fmt::Display) {
    let _ = writeln!(out, "{name}{} {v}", labels(l));
}

fn with<'a>(l: &[(&'a str, &'a str)], k: &'a str, v: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut l = l.to_vec();
    l.push((k, v));
    l
}

pub fn render(s: &Series) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "brink_requests_total",
        "counter",
        "Attempts finished: responses and errors.",
    );
    for (l, r) in each(s) {
        sample(&mut out, "brink_requests_total", &l, r.requests);
    }
    family(
        &mut out,
        "brink_responses_total",
        "counter",
        "Responses by HTTP status.",
    );
    for (l, r) in each(s) {
        for (code, n) in &r.status {
            sample(
                &mut out,
                "brink_responses_total",
                &with(&l, "status", &code.to_string()),
                n,
            );
        }
    }
    family(
        &mut out,
        "brink_errors_total",
        "counter",
        "Attempts that got no response, by kind.",
    );
    for (l, r) in each(s) {
        for k in ErrorKind::ALL {
            sample(
                &mut out,
                "brink_errors_total",
                &with(&l, "kind", k.name()),
                r.errors[k.index()],
            );
        }
    }
    family(
        &mut out,
        "brink_grpc_total",
        "counter",
        "gRPC calls by status code.",
    );
    for (l, r) in each(s) {
        for (code, n) in &r.grpc {
            sample(
                &mut out,
                "brink_grpc_total",
                &with(&l, "code", &code.to_string()),
                n,
            );
        }
    }
    family(
        &mut out,
        "brink_late_total",
        "counter",
        "Open model: requests started more than 1 ms after their intended time.",
    );
    for (l, r) in each(s) {
        sample(&mut out, "brink_late_total", &l, r.late);
    }
    family(
        &mut out,
        "brink_request_duration_seconds",
        "histogram",
        "Latency from the intended start, responses only.",
    );
    for (l, r) in each(s) {
        for (bound, n) in BOUNDS.iter().zip(r.buckets) {
            sample(
                &mut out,
                "brink_request_duration_seconds_bucket",
                &with(&l, "le", &bound.to_string()),
                n,
            );
        }
        sample(
            &mut out,
            "brink_request_duration_seconds_bucket",
            &with(&l, "le", "+Inf"),
            r.count,
        );
        sample(&mut out, "brink_request_duration_seconds_sum", &l, r.sum);
        sample(
            &mut out,
            "brink_request_duration_seconds_count",
            &l,
            r.count,
        );
    }
    family(
        &mut out,
        "brink_latency_seconds",
        "gauge",
        "The last second's latency from the intended start at a quantile, exact to HDR precision.",
    );
    for (l, r) in each(s) {
        if let Some(last) = r.last {
            for (q, v) in QUANTILES.iter().zip(last) {
                sample(
                    &mut out,
                    "brink_latency_seconds",
                    &with(&l, "quantile", &q.to_string()),
                    v,
                );
            }
        }
    }
    scenario_families(&mut out, s);
    family(
        &mut out,
        "brink_run_info",
        "gauge",
        "Always 1: the run's labels, to join on.",
    );
    let run: Vec<(&str, &str)> = s
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    sample(&mut out, "brink_run_info", &run, 1);
    out
}

/// Per scenario: the seconds merged, and when it started and ended (run markers).
fn scenario_families(out: &mut String, s: &Series) {
    fn per<'a>(s: &'a Series, sc: &'a Scenario) -> Vec<(&'a str, &'a str)> {
        let mut l: Vec<(&str, &str)> = s
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        l.push(("scenario", sc.name.as_str()));
        l
    }
    family(
        out,
        "brink_seconds_total",
        "counter",
        "Seconds of the scenario merged so far.",
    );
    for sc in &s.scenarios {
        sample(out, "brink_seconds_total", &per(s, sc), sc.seconds);
    }
    family(
        out,
        "brink_load_target",
        "gauge",
        "The load asked for now: requests/s (open model) or connections (closed); a search step's level.",
    );
    for sc in &s.scenarios {
        if let Some(t) = sc.target {
            sample(out, "brink_load_target", &per(s, sc), t);
        }
    }
    family(
        out,
        "brink_scenario_start_timestamp_seconds",
        "gauge",
        "When the scenario (or search step) started.",
    );
    for sc in &s.scenarios {
        sample(
            out,
            "brink_scenario_start_timestamp_seconds",
            &per(s, sc),
            sc.started,
        );
    }
    family(
        out,
        "brink_scenario_end_timestamp_seconds",
        "gauge",
        "When the scenario (or search step) ended.",
    );
    for sc in &s.scenarios {
        if let Some(end) = sc.ended {
            sample(
                out,
                "brink_scenario_end_timestamp_seconds",
                &per(s, sc),
                end,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_families_written_are_the_ones_listed() {
        let mut s = Series::new(vec![("run".into(), "r1".into())]);
        s.start("s", &["r".to_string()]);
        let typed: Vec<(String, String)> = render(&s)
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_once(' '))
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        let listed: Vec<(String, String)> = FAMILIES
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        assert_eq!(typed, listed);
    }

    #[test]
    fn hostile_names_stay_inside_their_label() {
        let mut s = Series::new(vec![("run".into(), "r1".into())]);
        s.start("a\"b\\c\nx=\"y", &["get \"x\"".to_string()]);
        let text = render(&s);
        let line = text
            .lines()
            .find(|l| l.starts_with("brink_requests_total{"))
            .expect("a sample");
        assert_eq!(
            line,
            r#"brink_requests_total{run="r1",scenario="a\"b\\c\nx=\"y",request="get \"x\""} 0"#
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("brink_requests_total"))
                .count(),
            1
        );
    }
}
