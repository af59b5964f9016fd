//! The HTML report's text and tables, rendered here so they read without JavaScript and print
//! as they are. Every value from a plan, a server or a flag is escaped; numbers use the same
//! formatters as the terminal.

use super::escape as e;
use crate::fmt::{fmt_count, fmt_margin, fmt_ms, fmt_rate, observed_value};
use crate::terminal::describe_load;
use crate::{RunResult, ScenarioResult, SummaryJson};
use results::find::FindResult;
use stats::ErrorKind;
use std::fmt::Write;

/// A table from a header row and body rows (cells already escaped or formatted).
fn table(class: &str, caption: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut o = format!("<table class=\"{class}\"><caption>{caption}</caption><thead><tr>");
    for h in head {
        let _ = write!(o, "<th>{h}</th>");
    }
    o.push_str("</tr></thead><tbody>\n");
    for r in rows {
        o.push_str("<tr>");
        for c in r {
            let _ = write!(o, "<td>{c}</td>");
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table>\n");
    o
}

fn verdict(pass: Option<bool>) -> String {
    match pass {
        Some(true) => "<span class=\"pass\">PASS</span>".into(),
        Some(false) => "<span class=\"fail\">FAIL</span>".into(),
        None => "<span class=\"none\">no SLOs</span>".into(),
    }
}

fn kpi(label: &str, value: &str) -> String {
    format!("<div class=\"kpi\"><span class=\"label\">{label}</span><span class=\"value\">{value}</span></div>")
}

fn percent(share: f64) -> String {
    let p = share * 100.0;
    if (99.995..100.0).contains(&p) {
        "99.99%".into()
    } else {
        format!("{p:.2}%")
    }
}

/// The strip at the top: what was loaded, how, and the outcome.
pub fn headline(r: &RunResult) -> String {
    let s = &r.summary;
    let how = match &r.find {
        Some(f) => format!("capacity search by {}", f.by.name()),
        None if r.scenarios.len() > 1 => format!("suite of {} scenarios", r.scenarios.len()),
        None => describe_load(&r.load),
    };
    let mut o = format!(
        "<header><h1>brink <span class=\"method\">{}</span> {}</h1>\n<p class=\"sub\">{} · {} · started {}{}</p>\n<div class=\"kpis\">",
        e(&r.target.method),
        e(&r.target.shown()),
        e(&how),
        e(r.target.protocol.name()),
        e(&r.started_at),
        if r.interrupted {
            " · <span class=\"fail\">interrupted</span>"
        } else {
            ""
        }
    );
    o.push_str(&kpi("duration", &format!("{:.1} s", s.duration_s)));
    o.push_str(&kpi("requests", &fmt_count(s.requests)));
    if let Some(f) = &r.find {
        o.push_str(&kpi("steps", &f.steps.len().to_string()));
        let (level, rps) = match &f.max_sustainable {
            Some(m) => (e(&f.by.describe(m.level)), fmt_rate(m.rps)),
            None => ("<span class=\"fail\">none</span>".into(), "-".into()),
        };
        o.push_str(&kpi("max sustainable", &level));
        o.push_str(&kpi("ok req/s there", &rps));
        if let Some(k) = &f.knee {
            o.push_str(&kpi("knee", &e(&f.by.describe(k.level))));
        }
    } else {
        o.push_str(&kpi("ok rate", &percent(s.success_rate)));
        o.push_str(&kpi("ok req/s", &fmt_rate(s.ok_rps)));
        o.push_str(&kpi("p50", &fmt_ms(s.latency_ms.p50)));
        o.push_str(&kpi("p99", &fmt_ms(s.latency_ms.p99)));
        o.push_str(&kpi("SLA", &verdict(r.slo_passed)));
    }
    o.push_str("</div></header>\n");
    o
}

/// A scenario's own strip: load, requests, ok rate, throughput, verdict.
pub fn scenario_figures(s: &ScenarioResult) -> String {
    let m = &s.summary;
    let mut o = format!(
        "<p class=\"sub\">{} {} · {}{}</p>\n<div class=\"kpis\">",
        e(&s.target.method),
        e(&s.target.shown()),
        e(&describe_load(&s.load)),
        match &s.aborted_by {
            Some(slo) => format!(" · <span class=\"fail\">stopped by {}</span>", e(slo)),
            None => String::new(),
        }
    );
    o.push_str(&kpi("requests", &fmt_count(m.requests)));
    o.push_str(&kpi("ok rate", &percent(m.success_rate)));
    o.push_str(&kpi("ok req/s", &fmt_rate(m.ok_rps)));
    o.push_str(&kpi("unfinished", &fmt_count(m.unfinished)));
    o.push_str(&kpi("SLA", &verdict(s.slo_passed)));
    o.push_str("</div>\n");
    o
}

fn latency_row(name: &str, l: &stats::LatencySummary) -> Vec<String> {
    let mut r = vec![name.to_string()];
    r.extend(
        [l.min, l.p50, l.p90, l.p95, l.p99, l.p999, l.max, l.mean]
            .iter()
            .map(|v| fmt_ms(*v)),
    );
    r
}

/// Latency and service time, with connect and TLS times where measured.
pub fn latency(s: &ScenarioResult) -> String {
    let m = &s.summary;
    if m.requests == 0 {
        return String::new();
    }
    let mut rows = vec![
        latency_row("latency (from intended start)", &m.latency_ms),
        latency_row("service time (from send)", &m.service_time_ms),
    ];
    if let Some(c) = &m.connect_ms {
        rows.push(latency_row("TCP connect", c));
    }
    if let Some(t) = &m.tls_ms {
        rows.push(latency_row("TLS handshake", t));
    }
    table(
        "num",
        "Latency",
        &[
            "", "min", "p50", "p90", "p95", "p99", "p99.9", "max", "mean",
        ],
        &rows,
    )
}

fn request_row(name: &str, s: &SummaryJson) -> Vec<String> {
    vec![
        e(name),
        fmt_count(s.requests),
        fmt_rate(s.rps),
        fmt_count(s.errors),
        fmt_ms(s.latency_ms.p50),
        fmt_ms(s.latency_ms.p95),
        fmt_ms(s.latency_ms.p99),
    ]
}

/// One row per request of a mix or flow.
pub fn requests(s: &ScenarioResult) -> String {
    let rows: Vec<_> = s
        .requests
        .iter()
        .map(|q| request_row(&q.name, &q.summary))
        .collect();
    table(
        "num",
        "Requests",
        &[
            "request", "requests", "req/s", "errors", "p50", "p95", "p99",
        ],
        &rows,
    )
}

/// The SLA table: objective, target, result, margin, verdict.
pub fn sla(s: &ScenarioResult) -> String {
    let rows: Vec<_> = s
        .slo
        .iter()
        .map(|x| {
            vec![
                e(&x.metric),
                e(&x.target),
                e(&x.result),
                x.margin.map_or("-".into(), |m| fmt_margin(m, 1)),
                verdict(Some(x.pass)),
            ]
        })
        .collect();
    table(
        "num",
        "SLA",
        &["objective", "target", "result", "margin", "verdict"],
        &rows,
    )
}

/// Responses by status and transport errors by kind, with what was refused or not extracted.
pub fn errors(s: &ScenarioResult) -> String {
    let m = &s.summary;
    let mut rows: Vec<Vec<String>> = m
        .status
        .iter()
        .map(|(code, n)| {
            let ok = code.parse().is_ok_and(|c| s.counts_as_ok(c));
            vec![
                format!("status {}", e(code)),
                fmt_count(*n),
                if ok { "ok" } else { "failed" }.into(),
            ]
        })
        .collect();
    rows.extend(m.grpc_status.iter().map(|(code, n)| {
        vec![
            format!("gRPC {}", e(code)),
            fmt_count(*n),
            if s.code_counts_as_ok(code) {
                "ok"
            } else {
                "failed"
            }
            .into(),
        ]
    }));
    rows.extend(
        m.errors_by_kind
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| {
                let answered = ErrorKind::ALL
                    .iter()
                    .any(|x| x.name() == k.as_str() && x.answered());
                let outcome = if answered {
                    "failed (answers counted above by status)"
                } else {
                    "failed"
                };
                vec![e(k), fmt_count(*n), outcome.into()]
            }),
    );
    let mut o = table(
        "num",
        "Outcomes",
        &["outcome", "count", "counted as"],
        &rows,
    );
    if let Some(st) = &m.grpc_stream {
        let first = |f: fn(&stats::LatencySummary) -> f64| {
            st.first_message_ms
                .as_ref()
                .map_or("-".to_string(), |l| fmt_ms(f(l)))
        };
        let row = vec![
            fmt_count(st.calls),
            fmt_count(st.messages_sent),
            fmt_count(st.messages_received),
            format!("{:.1}", st.received_per_call),
            fmt_count(st.received_per_s.round() as u64),
            first(|l| l.p50),
            first(|l| l.p99),
        ];
        o.push_str(&table(
            "num",
            "Streams (time to the first message from the intended start)",
            &[
                "calls",
                "sent",
                "received",
                "per call",
                "received/s",
                "first p50",
                "first p99",
            ],
            &[row],
        ));
    }
    if let Some(w) = &m.websocket {
        o.push_str(&websocket(w));
    }
    let refused: Vec<_> = s
        .refused
        .iter()
        .map(|r| vec![e(&r.request), fmt_count(r.count), e(&r.part), e(&r.value)])
        .collect();
    o.push_str(&table(
        "",
        "Refused before sending (the rendered value broke the wire rules)",
        &["request", "count", "part", "first value"],
        &refused,
    ));
    let unopened: Vec<_> = s
        .setup_failures
        .iter()
        .map(|x| vec![e(&x.request), e(&x.kind), fmt_count(x.count), e(&x.reason)])
        .collect();
    o.push_str(&table(
        "",
        "Connections that did not open",
        &["request", "kind", "count", "first reason"],
        &unopened,
    ));
    let extract: Vec<_> = s
        .extract_failures
        .iter()
        .map(|x| vec![e(&x.request), fmt_count(x.count), e(&x.reason)])
        .collect();
    o.push_str(&table(
        "",
        "Extractions that found nothing",
        &["request", "count", "first reason"],
        &extract,
    ));
    let failed: Vec<_> = s
        .answer_failures
        .iter()
        .map(|x| vec![e(&x.request), e(&x.kind), fmt_count(x.count), e(&x.reason)])
        .collect();
    o.push_str(&table(
        "",
        "Answers that failed, and why",
        &["request", "kind", "count", "first reason"],
        &failed,
    ));
    o.push_str(&checks(s));
    o
}

/// Response checks: each with its pass rate, failures and the first reason.
fn checks(s: &ScenarioResult) -> String {
    let rows: Vec<_> = s
        .checks
        .iter()
        .map(|c| {
            let mut failed = fmt_count(c.failed);
            if c.count_only && c.failed > 0 {
                failed.push_str(" (counted only)");
            }
            let mut why = e(c.first_failure.as_deref().unwrap_or(""));
            if c.unchecked > 0 {
                let _ = write!(
                    why,
                    "<br><small>{} not checked: {}</small>",
                    fmt_count(c.unchecked),
                    e(c.first_unchecked.as_deref().unwrap_or(""))
                );
            }
            vec![
                e(&c.name),
                e(&c.request),
                crate::fmt::pass_share(c.passed, c.passed + c.failed),
                fmt_count(c.passed),
                failed,
                why,
            ]
        })
        .collect();
    table(
        "",
        "Response checks",
        &[
            "check",
            "request",
            "passed",
            "ok",
            "failed",
            "first failure",
        ],
        &rows,
    )
}

/// A distributed run's workers: who, how they started, what they sent, how they ended.
pub fn workers(s: &ScenarioResult) -> String {
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_string(), fmt_ms);
    let pct = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |p| format!("{p:.0}%"));
    let rows: Vec<_> = s
        .workers
        .iter()
        .map(|w| {
            let status = match &w.why {
                Some(why) => format!("{}: {}", w.status, why),
                None => w.status.to_string(),
            };
            vec![
                format!("{} of {}", w.index + 1, w.count),
                e(&w.name),
                e(&w.host),
                ms(w.start_skew_ms),
                ms(w.clock_bound_ms),
                fmt_count(w.requests),
                w.seconds.to_string(),
                pct(w.busy_percent),
                pct(w.waiting_percent),
                e(&status),
            ]
        })
        .collect();
    let head = [
        "part",
        "worker",
        "host",
        "start skew",
        "clock bound",
        "requests",
        "seconds",
        "busy",
        "waiting",
        "ended",
    ];
    table("num", "Workers", &head, &rows)
}

/// Observed server figures: peak and mean over the scenario.
pub fn observed(s: &ScenarioResult) -> String {
    let rows: Vec<_> = s
        .observed
        .iter()
        .map(|(k, v)| {
            vec![
                e(k),
                e(&observed_value(k, v.peak)),
                e(&observed_value(k, v.mean)),
            ]
        })
        .collect();
    table("num", "Server", &["figure", "peak", "mean"], &rows)
}

/// The suite's verdict: one row per scenario.
pub fn suite(r: &RunResult) -> String {
    let rows: Vec<_> = r
        .scenarios
        .iter()
        .map(|s| {
            let mut row = request_row(&s.name, &s.summary);
            row.push(verdict(s.slo_passed));
            row
        })
        .collect();
    table(
        "num",
        "Suite",
        &[
            "scenario", "requests", "req/s", "errors", "p50", "p95", "p99", "SLA",
        ],
        &rows,
    )
}

/// The search's conclusions, as the terminal prints them.
pub fn find_summary(f: &FindResult) -> String {
    let mut o = String::from("<div class=\"conclusions\">\n");
    for line in crate::find::render_summary(f).lines() {
        let line = line.trim();
        if line.is_empty() || line == "Diagnosis:" {
            continue;
        }
        let line = line.strip_prefix("- ").unwrap_or(line);
        let _ = writeln!(o, "<p>{}</p>", e(line));
    }
    o.push_str("</div>\n");
    o
}

/// The search's steps: the level and its verdict first, then brink's figures; a failing step's
/// reason (and a Little's-law note) on a full-width line under it, so a long reason neither
/// hides the verdict nor makes the row tall. Server figures follow in their own table.
pub fn steps(f: &FindResult) -> String {
    if f.steps.is_empty() {
        return String::new();
    }
    let head = [
        "level",
        "verdict",
        "p50",
        "p90",
        "p99",
        "mean",
        "ok req/s",
        "requests",
        "errors",
        "brink CPU",
    ];
    let mut o = String::from(
        "<div class=\"scroll\"><table class=\"num steps\"><caption>Steps</caption><thead><tr>",
    );
    for h in head {
        let class = if h == "verdict" {
            " class=\"verdict\""
        } else {
            ""
        };
        let _ = write!(o, "<th{class}>{h}</th>");
    }
    o.push_str("</tr></thead><tbody>\n");
    for s in &f.steps {
        let cells = [
            fmt_ms(s.p50),
            fmt_ms(s.p90),
            fmt_ms(s.p99),
            fmt_ms(s.mean),
            fmt_rate(s.ok_rps),
            fmt_count(s.requests),
            fmt_count(s.errors),
            format!("{:.0}%", s.generator_cpu * 100.0),
        ];
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"verdict\">{}</td>",
            e(&f.by.cell(s.level)),
            verdict(Some(s.pass))
        );
        for c in cells {
            let _ = write!(o, "<td>{c}</td>");
        }
        o.push_str("</tr>\n");
        let mut why = Vec::new();
        if !s.pass && !s.reason.is_empty() {
            why.push(e(&s.reason));
        }
        if let Some(g) = &s.little {
            why.push(format!("<small>{}</small>", e(&g.describe())));
        }
        if !why.is_empty() {
            let _ = writeln!(
                o,
                "<tr class=\"why\"><td></td><td colspan=\"{}\">{}</td></tr>",
                head.len() - 1,
                why.join("<br>")
            );
        }
    }
    o.push_str("</tbody></table></div>\n");
    o.push_str(&server_by_level(f));
    o
}

/// What `--observe` and `--metric` saw at each level (peaks), apart from brink's figures.
fn server_by_level(f: &FindResult) -> String {
    let observed: std::collections::BTreeSet<&String> =
        f.steps.iter().flat_map(|s| s.observed.keys()).collect();
    if observed.is_empty() {
        return String::new();
    }
    let names: Vec<String> = observed.iter().map(|k| e(k)).collect();
    let mut head = vec!["level"];
    head.extend(names.iter().map(String::as_str));
    let rows: Vec<_> = f
        .steps
        .iter()
        .map(|s| {
            let mut r = vec![e(&f.by.cell(s.level))];
            r.extend(observed.iter().map(|k| {
                s.observed
                    .get(*k)
                    .map_or("-".into(), |o| e(&observed_value(k, o.peak)))
            }));
            r
        })
        .collect();
    let t = table("num steps", "Server at each level (peaks)", &head, &rows);
    format!("<div class=\"scroll\">{t}</div>\n")
}

/// `--trace`: the slowest and the first failed requests by trace id, linked when the result
/// has a link template (http and https links only).
pub fn traces(s: &ScenarioResult) -> String {
    let Some(t) = &s.traces else {
        return String::new();
    };
    let rows = |list: &[crate::TraceJson]| -> Vec<Vec<String>> {
        list.iter()
            .map(|x| {
                let id = match t.link_to(&x.trace_id) {
                    Some(url) if url.starts_with("https://") || url.starts_with("http://") => {
                        format!("<a href=\"{}\">{}</a>", e(&url), e(&x.trace_id))
                    }
                    _ => format!("<code>{}</code>", e(&x.trace_id)),
                };
                vec![
                    id,
                    e(&x.request),
                    fmt_ms(x.latency_ms),
                    e(&x.outcome),
                    format!("{:.1}s", x.t_s),
                ]
            })
            .collect()
    };
    let head = ["trace id", "request", "latency", "outcome", "at"];
    let mut o = table(
        "num",
        "Slowest requests (trace ids)",
        &head,
        &rows(&t.slowest),
    );
    o.push_str(&table(
        "num",
        "First failed requests (trace ids)",
        &head,
        &rows(&t.failed),
    ));
    o
}

/// The hooks a search ran: where, when, how they ended, and where their output is.
pub fn hooks(f: &FindResult) -> String {
    let rows: Vec<Vec<String>> = f
        .hooks
        .iter()
        .map(|h| {
            let ended = match (&h.error, h.timed_out, h.exit_code) {
                (Some(err), _, _) => e(err),
                (None, true, _) => "timed out, stopped".into(),
                (None, false, Some(c)) => format!("exit {c}"),
                (None, false, None) => "killed by a signal".into(),
            };
            vec![
                e(&h.hook),
                format!("<code>{}</code>", e(&h.command)),
                e(&h.step),
                format!("{:.1}s to {:.1}s", h.started_s, h.ended_s),
                ended,
                format!("<code>{}</code>", e(&h.stdout)),
            ]
        })
        .collect();
    table(
        "",
        "Hooks",
        &["hook", "command", "step", "ran", "ended", "output"],
        &rows,
    )
}

/// A WebSocket run's upgrades, messages each way and close codes, as one table.
fn websocket(w: &crate::WebSocketJson) -> String {
    let upgrade = |f: fn(&stats::LatencySummary) -> f64| {
        w.upgrade_ms
            .as_ref()
            .map_or("-".to_string(), |l| fmt_ms(f(l)))
    };
    let codes = |m: &std::collections::BTreeMap<String, u64>| {
        let pairs: Vec<String> = m
            .iter()
            .map(|(c, n)| format!("{c}: {}", fmt_count(*n)))
            .collect();
        pairs.join(", ")
    };
    let row = vec![
        fmt_count(w.upgrades),
        codes(&w.upgrades_refused),
        upgrade(|l| l.p50),
        upgrade(|l| l.p99),
        fmt_count(w.messages_sent),
        fmt_count(w.messages_received),
        fmt_count(w.pings),
        codes(&w.close_codes),
        fmt_count(w.unexpected_closes),
        w.connected_ms
            .as_ref()
            .map_or("-".to_string(), |l| fmt_ms(l.p50)),
        w.delay_ms
            .as_ref()
            .map_or("-".to_string(), |l| fmt_ms(l.p99)),
    ];
    table(
        "num",
        "WebSocket",
        &[
            "upgrades",
            "refused (status: count)",
            "upgrade p50",
            "upgrade p99",
            "sent",
            "received",
            "pings",
            "closed (code: count)",
            "ended by the server",
            "up p50",
            "delivery p99",
        ],
        &[row],
    )
}
