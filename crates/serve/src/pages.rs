//! The pages: runs (filters, trends per target and name, verdicts, change against the
//! baseline, ticks to compare two), one run (its HTML report under a bar of links), a
//! comparison (the verdict table and both runs' charts on one elapsed-time axis), and a live
//! run (charts that grow as the run records its seconds). Tables and text are rendered here,
//! every value from the history escaped; the charts are data for the report's script.

use crate::api;
use crate::reply::{html, text, Out};
use history::{History, Run, Verdict};
use hyper::StatusCode;
use model::RunStatus;
use report::html::charts::{axis, positive, series, Chart};
use report::html::{document, escape as e, slot, Extra};
use results::fmt::{fmt_count, fmt_ms, fmt_rate};
use results::SecondRow;
use std::collections::BTreeMap;
use std::fmt::Write;

const UI_CSS: &str = include_str!("../assets/ui.css");
const UI_JS: &str = include_str!("../assets/ui.js");
const LIVE_JS: &str = include_str!("../assets/live.js");

fn nav(extra: &str) -> String {
    format!("<style>{UI_CSS}</style><nav class=\"top\"><a href=\"/\">brink runs</a>{extra}</nav>\n")
}

fn page(title: &str, body: &str, charts: &[Chart], script: &str) -> Out {
    html(document(
        title,
        body,
        charts,
        &Extra {
            connect_self: true,
            script,
        },
    ))
}

fn badge(r: &Run) -> String {
    let span = |class: &str, text: &str| format!("<span class=\"badge {class}\">{text}</span>");
    match r.verdict() {
        Verdict::Running => span("live", "running"),
        Verdict::Failed => span("fail", "failed"),
        Verdict::Died => span("fail", "died"),
        Verdict::Interrupted => span("warn", "interrupted"),
        // A search's capacity, short enough for the column: the level in its title.
        Verdict::Found => match (r.capacity_rps, r.capacity()) {
            (Some(rps), Some(c)) => format!(
                "<span class=\"badge pass\" title=\"{}\">{} req/s</span>",
                e(&c),
                fmt_rate(rps)
            ),
            (_, c) => span("pass", &e(&c.unwrap_or_else(|| "found".into()))),
        },
        Verdict::NoneHeld => span("fail", "none held"),
        Verdict::Pass => span("pass", "PASS"),
        Verdict::Fail => span("fail", "FAIL"),
        Verdict::NoSlos => span("none", "no SLOs"),
    }
}

/// `p99 ▲ 12%` against the baseline, coloured by whether it is worse.
fn arrow(label: &str, now: Option<f64>, base: Option<f64>, higher_is_worse: bool) -> String {
    let (Some(n), Some(b)) = (now, base) else {
        return String::new();
    };
    if b <= 0.0 {
        return String::new();
    }
    let change = n / b - 1.0;
    let worse = (change > 0.0) == higher_is_worse;
    let (sign, class) = match change {
        c if c.abs() < 0.005 => ("=", "same"),
        c if c > 0.0 => ("▲", if worse { "worse" } else { "better" }),
        _ => ("▼", if worse { "worse" } else { "better" }),
    };
    format!(
        "<span class=\"{class}\">{label} {sign} {:.1}%</span> ",
        change.abs() * 100.0
    )
}

/// A small inline line of `values` (oldest first).
fn sparkline(values: &[f64]) -> String {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 2 {
        return String::from("<span class=\"none\">-</span>");
    }
    let (lo, hi) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
    let span = if hi > lo { hi - lo } else { 1.0 };
    let step = 118.0 / (v.len() - 1) as f64;
    let points: Vec<String> = v
        .iter()
        .enumerate()
        .map(|(i, x)| {
            format!(
                "{:.1},{:.1}",
                1.0 + i as f64 * step,
                23.0 - (x - lo) / span * 22.0
            )
        })
        .collect();
    format!(
        "<svg class=\"spark\" width=\"120\" height=\"24\" viewBox=\"0 0 120 24\" role=\"img\"><polyline fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\" points=\"{}\"/></svg>",
        points.join(" ")
    )
}

/// A URL for a table cell: escaped, and breakable only after a `/` or before a `?` (never
/// inside a host or port).
fn url_cell(url: &str) -> String {
    e(url).replace('/', "/<wbr>").replace('?', "<wbr>?")
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or("-".into(), f)
}

/// The runs page.
pub fn runs(h: &History, q: &[(String, String)]) -> Out {
    let filter = api::filter(q);
    let runs = match h.list(&filter) {
        Ok(r) => r,
        Err(err) => return text(StatusCode::INTERNAL_SERVER_ERROR, &err.0),
    };
    let mut body = nav("");
    let _ = write!(
        body,
        "<header><h1>Runs</h1><p class=\"sub\">{} · {} shown, newest first</p></header>\n\
<form method=\"get\" action=\"/\" class=\"filters\">\
<label>target <input name=\"target\" value=\"{}\"></label> \
<label>name <input name=\"name\" value=\"{}\"></label> \
<label>tag <input name=\"tag\" placeholder=\"env=ci\" value=\"{}\"></label> \
<button type=\"submit\">filter</button> <a href=\"/\">clear</a></form>\n",
        e(&h.path().display().to_string()),
        runs.len(),
        e(filter.target.as_deref().unwrap_or("")),
        e(filter.name.as_deref().unwrap_or("")),
        e(&filter
            .tags
            .first()
            .map_or(String::new(), |(k, v)| format!("{k}={v}"))),
    );
    body.push_str(&trends(h, &runs));
    body.push_str(&capacity(&runs));
    body.push_str(&table(h, &runs));
    page("brink runs", &body, &[], UI_JS)
}

/// Per load shape (target, name and load) with two runs or more: how p99 and throughput
/// moved over the listed runs. Runs at another load are another trend: a sparkline across
/// 8 and 64 connections would show the load, not the service.
fn trends(h: &History, runs: &[Run]) -> String {
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&Run>> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.status == RunStatus::Done) {
        groups
            .entry((&r.target, &r.name, &r.load_level))
            .or_default()
            .push(r);
    }
    // A trend needs two runs.
    groups.retain(|_, list| list.len() >= 2);
    if groups.is_empty() {
        return String::new();
    }
    let mut o = String::from("<h2>Trends</h2><div class=\"scroll\"><table class=\"trends\"><thead><tr><th>name</th><th>target</th><th>load</th><th>runs</th><th>p99</th><th>ok req/s</th><th>latest p99</th><th>latest ok req/s</th><th>baseline</th></tr></thead><tbody>\n");
    for ((target, name, load), mut list) in groups {
        list.reverse(); // oldest first
        let p99: Vec<f64> = list.iter().filter_map(|r| r.p99_ms).collect();
        let rps: Vec<f64> = list.iter().filter_map(|r| r.ok_rps).collect();
        let latest = list.last().copied();
        let base = latest
            .and_then(|l| h.baseline_of(l.id).ok().flatten())
            .map_or("-".to_string(), |b| {
                format!("<a href=\"/run/{b}\">run {b}</a>")
            });
        let _ = writeln!(
            o,
            "<tr><td class=\"wrap\">{}</td><td class=\"url\">{}</td><td class=\"wrap\">{}</td><td>{}</td><td class=\"c1\">{}</td><td class=\"c2\">{}</td><td>{}</td><td>{}</td><td>{base}</td></tr>",
            e(name),
            url_cell(target),
            e(load),
            list.len(),
            sparkline(&p99),
            sparkline(&rps),
            opt(latest.and_then(|l| l.p99_ms), fmt_ms),
            opt(latest.and_then(|l| l.ok_rps), fmt_rate),
        );
    }
    o.push_str("</tbody></table></div>\n");
    o
}

/// The listed searches' capacities by tag: one service searched under several settings, its
/// capacity under each, side by side.
fn capacity(runs: &[Run]) -> String {
    let found = history::capacity_by_tag(runs.to_vec());
    if found.is_empty() {
        return String::new();
    }
    let mut o = String::from("<h2>Capacity by tag</h2><div class=\"scroll\"><table class=\"capacity\"><thead><tr><th>tags</th><th>capacity</th><th>at</th><th>run</th><th>started</th><th>name</th><th>target</th></tr></thead><tbody>\n");
    for r in &found {
        let _ = writeln!(
            o,
            "<tr><td class=\"wrap\">{}</td><td>{}</td><td>{}</td><td><a href=\"/run/{id}\">{id}</a></td><td>{}</td><td class=\"wrap\">{}</td><td class=\"url\">{}</td></tr>",
            e(&r.tags_text()),
            e(&r.capacity_cell()),
            e(&r.sustainable_level().unwrap_or_else(|| "-".into())),
            e(&r.started_at),
            e(&r.name),
            url_cell(&r.target),
            id = r.id,
        );
    }
    o.push_str("</tbody></table></div>\n");
    o
}

fn table(h: &History, runs: &[Run]) -> String {
    if runs.is_empty() {
        return "<p class=\"note\">No runs recorded yet: every <code>brink run</code> and <code>brink find</code> is recorded here.</p>\n".into();
    }
    let mut o = String::from("<h2>All runs</h2><form method=\"get\" action=\"/compare\" id=\"compare-form\">\
<p><button type=\"submit\" id=\"compare-button\">Compare the two ticked runs</button> <span class=\"note\">tick two runs (the older is the before side)</span></p>\
<div class=\"scroll\"><table class=\"runs\"><thead><tr><th></th><th>id</th><th>started</th><th>cmd</th><th>name</th><th>target</th><th>load</th><th>requests</th><th>ok req/s</th><th>p99</th><th>errors</th><th class=\"verdict\">verdict</th><th class=\"against\">against the baseline</th><th>tags, note</th></tr></thead><tbody>\n");
    let mut baselines: BTreeMap<(String, String), Option<Run>> = BTreeMap::new();
    for r in runs {
        let base = baselines
            .entry((r.target.clone(), r.name.clone()))
            .or_insert_with(|| {
                h.baseline_of(r.id)
                    .ok()
                    .flatten()
                    .and_then(|b| h.run(b).ok().flatten())
            });
        let against = match base {
            Some(b) if b.id == r.id => "<span class=\"badge base\">baseline</span>".to_string(),
            Some(b) if r.status == RunStatus::Done => format!(
                "{}{}<a href=\"/compare?a={}&amp;b={}\">compare</a>",
                arrow("p99", r.p99_ms, b.p99_ms, true),
                arrow("req/s", r.ok_rps, b.ok_rps, false),
                b.id,
                r.id
            ),
            _ => String::new(),
        };
        let link = if r.status == RunStatus::Running {
            "live"
        } else {
            "run"
        };
        let tags: Vec<String> = r
            .tags
            .iter()
            .map(|(k, v)| format!("<span class=\"tag\">{}={}</span>", e(k), e(v)))
            .collect();
        let _ = writeln!(
            o,
            "<tr><td><input type=\"checkbox\" name=\"run\" value=\"{id}\"{dis}></td><td><a href=\"/{link}/{id}\">{id}</a></td><td class=\"wrap\">{}</td><td>{}</td><td class=\"wrap\">{}</td><td class=\"url\">{}</td><td class=\"wrap\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{against}</td><td class=\"wrap\">{} {}</td></tr>",
            e(&r.started_at),
            r.command,
            e(&r.name),
            url_cell(&r.target),
            e(&r.load_level),
            r.requests.map_or("-".into(), |n| fmt_count(n.max(0) as u64)),
            opt(r.ok_rps, fmt_rate),
            opt(r.p99_ms, fmt_ms),
            opt(r.error_rate, |x| format!("{:.2}%", x * 100.0)),
            badge(r),
            tags.join(" "),
            e(r.note.as_deref().unwrap_or("")),
            id = r.id,
            dis = if r.status == RunStatus::Done { "" } else { " disabled" },
        );
    }
    o.push_str("</tbody></table></div></form>\n");
    o
}

/// One run: its report, or its live view while it has no result.
pub fn run(h: &History, id: i64) -> Out {
    let meta = match h.run(id) {
        Ok(Some(r)) => r,
        Ok(None) => return text(StatusCode::NOT_FOUND, &format!("no run {id}")),
        Err(err) => return text(StatusCode::INTERNAL_SERVER_ERROR, &err.0),
    };
    let result = match h.result(id) {
        Ok(Some(r)) => r,
        Ok(None) => return live(h, id),
        Err(err) => return text(StatusCode::INTERNAL_SERVER_ERROR, &err.0),
    };
    let mut bar = format!(
        " · run {id} · <a href=\"/api/run/{id}?download=1\">download JSON</a> · <a href=\"/compare?a=baseline&amp;b={id}\">against the baseline</a> · <button type=\"button\" data-baseline=\"{id}\">make this the baseline</button> <span id=\"ui-status\" class=\"note\"></span>"
    );
    if meta.baseline {
        bar.push_str(" <span class=\"badge base\">baseline</span>");
    }
    let mut top = nav(&bar);
    let tags: Vec<String> = meta
        .tags
        .iter()
        .map(|(k, v)| format!("<span class=\"tag\">{}={}</span>", e(k), e(v)))
        .collect();
    let _ = writeln!(
        top,
        "<p class=\"meta\">{} {}{}{}{}</p>",
        tags.join(" "),
        meta.note.as_deref().map_or(String::new(), |n| format!(
            "<span class=\"note-text\">{}</span>",
            e(n)
        )),
        meta.git_commit
            .as_deref()
            .map_or(String::new(), |c| format!(
                " · commit <code>{}</code>",
                e(&c.chars().take(12).collect::<String>())
            )),
        meta.git_branch
            .as_deref()
            .map_or(String::new(), |b| format!(" on <code>{}</code>", e(b))),
        format_args!(" · host {}", e(&meta.host)),
    );
    html(report::html::page_with(
        &result,
        &top,
        &Extra {
            connect_self: true,
            script: UI_JS,
        },
    ))
}

/// Two runs compared: the verdict table and their charts on one elapsed-time axis.
pub fn compare(h: &History, q: &[(String, String)]) -> Out {
    let (a, b) = match api::pair(h, q) {
        Ok(p) => p,
        Err(err) => return text(StatusCode::BAD_REQUEST, &err),
    };
    let c = match api::comparison(h, a, b) {
        Ok(c) => c,
        Err(err) => return text(StatusCode::BAD_REQUEST, &err),
    };
    let mut body = nav(&format!(
        " · <a href=\"/run/{a}\">run {a}</a> against <a href=\"/run/{b}\">run {b}</a> · <a href=\"/api/compare?a={a}&amp;b={b}\">JSON</a>"
    ));
    let _ = writeln!(
        body,
        "<header><h1>Run {a} (before) against run {b} (after)</h1></header>"
    );
    for m in &c.mismatches {
        let _ = writeln!(
            body,
            "<p class=\"bad\">Not comparable as they are: {}</p>",
            e(m)
        );
    }
    for (name, before, after) in &c.steady_seconds {
        let _ = writeln!(
            body,
            "<p class=\"sub\">{}: {before} steady seconds before, {after} after</p>",
            e(name)
        );
    }
    body.push_str("<table class=\"num compare\"><thead><tr><th>scenario</th><th>metric</th><th>before</th><th>after</th><th>change</th><th>95% interval</th><th>verdict</th></tr></thead><tbody>\n");
    for r in &c.rows {
        let value = |v: Option<f64>| match (r.unit, v) {
            (_, None) => "-".to_string(),
            (compare::Unit::Ms, Some(x)) => fmt_ms(x),
            (compare::Unit::PerSecond, Some(x)) => format!("{}/s", fmt_rate(x)),
            (compare::Unit::Share, Some(x)) => format!("{:.2}%", x * 100.0),
            (_, Some(x)) => format!("{x:.1}"),
        };
        let interval = r.interval.map_or(String::new(), |(lo, hi)| {
            if r.unit == compare::Unit::Share {
                format!("{:+.2} to {:+.2} pp", lo * 100.0, hi * 100.0)
            } else {
                format!("{:+.1}% to {:+.1}%", lo * 100.0, hi * 100.0)
            }
        });
        let what = match &r.request {
            Some(q) => format!("{} / {}", e(&r.scenario), e(q)),
            None => e(&r.scenario),
        };
        let _ = writeln!(
            body,
            "<tr class=\"v-{:?}\"><td>{what}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{interval}</td><td>{}{}</td></tr>",
            r.verdict,
            e(&r.metric),
            value(r.before),
            value(r.after),
            e(&r.change_text),
            e(r.verdict.word()),
            if r.decides { " *" } else { "" },
        );
    }
    let verdict = if c.regressed {
        "<p class=\"bad\">REGRESSED: a deciding metric (*) is worse beyond its tolerance.</p>"
    } else {
        "<p class=\"pass\">No regression in the deciding metrics (*).</p>"
    };
    let _ = writeln!(body, "</tbody></table>{verdict}");
    for n in &c.notes {
        let _ = writeln!(body, "<p class=\"note\">{}</p>", e(n));
    }
    let results = (h.result(a).ok().flatten(), h.result(b).ok().flatten());
    let mut charts = Vec::new();
    if let (Some(ra), Some(rb)) = results {
        charts = overlay(a, &ra.timeseries, b, &rb.timeseries);
        body.push_str("<div class=\"grid\">");
        for i in 0..charts.len() {
            body.push_str(&slot(i));
        }
        body.push_str("</div>");
    }
    page(
        &format!("brink: run {a} against run {b}"),
        &body,
        &charts,
        UI_JS,
    )
}

/// p99 and successful throughput of two runs on one elapsed-time axis.
fn overlay(a: i64, ra: &[SecondRow], b: i64, rb: &[SecondRow]) -> Vec<Chart> {
    let n = ra.len().max(rb.len());
    let pick = |rows: &[SecondRow], f: fn(&SecondRow) -> Option<f64>| -> Vec<Option<f64>> {
        (0..n).map(|i| rows.get(i).and_then(f)).collect()
    };
    let chart = |title: &str,
                 label: &str,
                 scale: &'static str,
                 log: bool,
                 f: fn(&SecondRow) -> Option<f64>| Chart {
        title: title.to_string(),
        x_label: "seconds from the start".into(),
        x_log: false,
        x_percentile: false,
        x: (0..n).map(|i| i as f64).collect(),
        axes: vec![axis(scale, label, log, 0)],
        series: vec![
            series(&format!("run {a} (before)"), scale, pick(ra, f)),
            series(&format!("run {b} (after)"), scale, pick(rb, f)),
        ],
        marks: Vec::new(),
        note: None,
    };
    vec![
        chart("p99 over time", "p99 (ms)", "ms", true, |r| positive(r.p99)),
        chart(
            "Successful requests per second",
            "ok req/s",
            "rps",
            false,
            |r| Some(r.ok as f64),
        ),
    ]
}

/// A run as it goes: its charts so far, growing with every second it records.
pub fn live(h: &History, id: i64) -> Out {
    let meta = match h.run(id) {
        Ok(Some(r)) => r,
        Ok(None) => return text(StatusCode::NOT_FOUND, &format!("no run {id}")),
        Err(err) => return text(StatusCode::INTERNAL_SERVER_ERROR, &err.0),
    };
    let rows = h.seconds(id, 0).unwrap_or_default();
    let after = rows.last().map_or(0, |r| r.0);
    let x: Vec<f64> = (0..rows.len()).map(|i| i as f64).collect();
    let col = |f: fn(&SecondRow) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter().map(|r| f(&r.3)).collect()
    };
    let latency = Chart {
        title: "Latency (live)".into(),
        x_label: "seconds".into(),
        x_log: false,
        x_percentile: false,
        x: x.clone(),
        axes: vec![axis("ms", "latency (ms)", true, 0)],
        series: vec![
            series("p50", "ms", col(|r| positive(r.p50))),
            series("p90", "ms", col(|r| positive(r.p90))),
            series("p99", "ms", col(|r| positive(r.p99))),
        ],
        marks: Vec::new(),
        note: None,
    };
    let throughput = Chart {
        title: "Throughput (live)".into(),
        x_label: "seconds".into(),
        x_log: false,
        x_percentile: false,
        x,
        axes: vec![axis("rps", "requests per second", false, 0)],
        series: vec![
            series("ok/s", "rps", col(|r| Some(r.ok as f64))),
            series(
                "failed/s",
                "rps",
                col(|r| Some(r.requests.saturating_sub(r.ok) as f64)),
            ),
        ],
        marks: Vec::new(),
        note: None,
    };
    let mut body = nav(&format!(" · run {id} (live)"));
    let _ = write!(
        body,
        "<header><h1>{} {}</h1><p class=\"sub\">{} · {} · started {} · <span id=\"live-status\">{}</span></p></header>\n<div class=\"grid\">{}{}</div>\n<script type=\"application/json\" id=\"brink-live\">{}</script>\n",
        e(&meta.name),
        // A run from flags is named by its method and path already: the method once.
        if meta.name.starts_with(&format!("{} ", meta.method)) {
            e(&meta.target)
        } else {
            format!(
                "<span class=\"method\">{}</span> {}",
                e(&meta.method),
                e(&meta.target)
            )
        },
        meta.command,
        e(&meta.load_level),
        e(&meta.started_at),
        match meta.status {
            RunStatus::Running => "running",
            RunStatus::Died => "died: the process recording it is gone; what it recorded is shown",
            RunStatus::Done | RunStatus::Failed => "finished",
        },
        slot(0),
        slot(1),
        report::html::script_json(&serde_json::json!({ "id": id, "after": after, "seconds": rows.len() })),
    );
    page(
        &format!("brink: run {id} (live)"),
        &body,
        &[latency, throughput],
        LIVE_JS,
    )
}
