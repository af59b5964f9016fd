//! The result as one self-contained HTML page that opens offline: tables rendered here (they
//! read without JavaScript), charts drawn in the page by uPlot (vendored in `assets/uplot`,
//! inlined) from the data this module embeds as JSON. Nothing on the page is fetched: the
//! page's Content-Security-Policy forbids every request, and no `src` or `href` points
//! anywhere. Every string that came from a plan, a server or a flag goes through [`escape`]
//! (text and attributes) or [`script_json`] (the embedded data), so a request named
//! `<img src=x onerror=alert(1)>` shows as text.

pub mod charts;
mod tables;

use crate::{RunResult, ScenarioResult};
pub use charts::Chart;
use std::fmt::Write;

const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
const PAGE_JS: &str = include_str!("../../assets/report.js");
const PAGE_CSS: &str = include_str!("../../assets/report.css");

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// JSON safe inside a `<script type="application/json">` element: no `<`, `>` or `&` (so no
/// `</script>` or `<!--`), and no line separators that old parsers choke on.
pub fn script_json<T: serde::Serialize>(v: &T) -> String {
    let json = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// The whole page for a result.
pub fn page(r: &RunResult) -> String {
    page_with(r, "", &Extra::default())
}

/// The page for a result with `nav` (trusted HTML, already escaped) at its top, as the web UI
/// shows it with its links, run details and script.
pub fn page_with(r: &RunResult, nav: &str, extra: &Extra) -> String {
    let mut charts: Vec<Chart> = Vec::new();
    let mut body = String::from(nav);
    body.push_str(&tables::headline(r));
    if let Some(f) = &r.find {
        body.push_str(&find_section(r, f, &mut charts));
    } else {
        let many = r.scenarios.len() > 1;
        // A suite's SLA summary comes first: the verdict of every scenario at a glance.
        if many {
            body.push_str(&tables::suite(r));
        }
        for s in &r.scenarios {
            body.push_str(&scenario_section(s, many, &mut charts));
        }
    }
    let open = r
        .scenarios
        .iter()
        .any(|s| s.load.model == model::LoadModel::Open);
    let paced = r.scenarios.iter().any(|s| s.load.every_ms.is_some());
    let timed = if paced {
        "Latency is timed from when each request was due: the open model's schedule, or a paced connection's (--every), a wait for a slow answer before it included; service time from the send."
    } else if open {
        "Latency is timed from each request's intended start (the open model's schedule), a wait for a connection included."
    } else {
        "Latency is timed from when each connection was free to send its request, the connect included when it needed one; service time from the send."
    };
    let _ = writeln!(
        body,
        "<footer>Written by brink {} from a result started at {} (seed {}). {timed}</footer>",
        escape(&r.brink_version),
        escape(&r.started_at),
        r.seed,
    );
    document(&title(r), &body, &charts, extra)
}

/// `brink report: browse-and-buy, checkout (http://127.0.0.1:8080)`: the scenarios by name
/// (a flag run's name is its method and path) and where they went, never a path template.
pub fn title(r: &RunResult) -> String {
    let names: Vec<&str> = r
        .scenarios
        .iter()
        .map(|s| s.name.as_str())
        .take(3)
        .collect();
    let more = r.scenarios.len().saturating_sub(names.len());
    let url = &r.target.url;
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let origin = url[after_scheme..]
        .find('/')
        .map_or(url.as_str(), |i| &url[..after_scheme + i]);
    if let Some(f) = &r.find {
        return format!(
            "brink report: capacity search by {} ({origin})",
            f.by.name()
        );
    }
    let mut t = format!("brink report: {}", names.join(", "));
    if more > 0 {
        let _ = write!(t, " and {more} more");
    }
    format!("{t} ({origin})")
}

/// What a page may do beyond showing itself: the web UI's live view reads a stream from its
/// own server, and brings its own script.
#[derive(Default)]
pub struct Extra<'a> {
    /// Allow requests to the page's own origin (`connect-src 'self'`).
    pub connect_self: bool,
    /// A script run after the charts are drawn (trusted, shipped with brink).
    pub script: &'a str,
}

/// A whole page: `body` (trusted HTML, already escaped), `charts` drawn into its
/// `<figure class="chart" data-chart="i">` slots.
pub fn document(title: &str, body: &str, charts: &[Chart], extra: &Extra) -> String {
    let connect = if extra.connect_self {
        " connect-src 'self';"
    } else {
        ""
    };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:;{connect}\">\
<meta name=\"generator\" content=\"brink {}\">\
<title>{}</title><style>{UPLOT_CSS}\n{PAGE_CSS}</style></head><body>\n\
<noscript><p class=\"note\">Charts need JavaScript; every table reads without it.</p></noscript>\n\
{body}\
<script type=\"application/json\" id=\"brink-charts\">{}</script>\n\
<script>{UPLOT_JS}</script>\n<script>{PAGE_JS}</script>\n<script>{}</script>\n</body></html>\n",
        env!("CARGO_PKG_VERSION"),
        escape(title),
        script_json(&charts),
        extra.script,
    )
}

/// A chart slot for chart number `i` of a page's charts.
pub fn slot(i: usize) -> String {
    format!("<figure class=\"chart\" data-chart=\"{i}\"></figure>\n")
}

/// A placeholder the page's script fills with chart `i`.
fn chart_slot(charts: &mut Vec<Chart>, c: Chart) -> String {
    charts.push(c);
    slot(charts.len() - 1)
}

/// One scenario: its figures, charts and tables.
fn scenario_section(s: &ScenarioResult, titled: bool, charts: &mut Vec<Chart>) -> String {
    let mut o = String::from("<section class=\"scenario\">\n");
    // A single run's figures are the headline's; a suite's scenarios each get their own.
    if titled {
        let _ = writeln!(o, "<h2>Scenario {}</h2>", escape(&s.name));
        o.push_str(&tables::scenario_figures(s));
    }
    if let Some(c) = &s.completion {
        let class = if c.complete { "" } else { " class=\"bad\"" };
        let _ = writeln!(
            o,
            "<p{class}>Completion: {}</p>",
            escape(&crate::terminal::completion_text(c))
        );
    }
    if let Some(j) = &s.async_jobs {
        let class = if j.failed + j.timed_out > 0 {
            " class=\"bad\""
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "<p{class}>Async jobs: {}</p>",
            escape(&crate::terminal::async_text(j))
        );
    }
    if let Some(short) = s.summary.schedule.as_ref().and_then(|x| x.shortfall_text()) {
        let _ = writeln!(o, "<p class=\"bad\">Shortfall: {}</p>", escape(&short));
    }
    if let Some(b) = &s.broke {
        let _ = writeln!(o, "<p class=\"bad\">Broke: {}</p>", escape(&b.describe()));
    }
    if let Some(g) = &s.generator {
        if let Some(why) = &g.why {
            let _ = writeln!(o, "<p class=\"bad\">{}</p>", escape(why));
        } else if let Some(note) = &g.note {
            let _ = writeln!(o, "<p class=\"note\">{}</p>", escape(note));
        }
    }
    if let Some(why) = &s.error {
        let _ = writeln!(
            o,
            "<p class=\"bad\">This scenario could not run: {}</p>",
            escape(why)
        );
    }
    let rows = charts::whole_seconds(&s.timeseries, s.summary.duration_s);
    if !rows.is_empty() {
        o.push_str("<div class=\"grid\">\n");
        let mut latency = charts::latency(rows, s.load.model, s.load.flow_steps.is_some());
        charts::slo_lines(&mut latency, s);
        o.push_str(&chart_slot(charts, latency));
        o.push_str(&chart_slot(charts, charts::throughput(rows)));
        if let Some(c) = charts::errors(rows, s) {
            o.push_str(&chart_slot(charts, c));
        }
        if let Some(c) = charts::completion(s) {
            o.push_str(&chart_slot(charts, c));
        }
        if let Some(c) = charts::setup(rows) {
            o.push_str(&chart_slot(charts, c));
        }
        if let Some(c) = charts::distribution(s) {
            o.push_str(&chart_slot(charts, c));
        }
        for c in charts::observed(rows) {
            o.push_str(&chart_slot(charts, c));
        }
        o.push_str("</div>\n");
    }
    o.push_str(&tables::latency(s));
    o.push_str(&tables::requests(s));
    o.push_str(&tables::sla(s));
    o.push_str(&tables::errors(s));
    o.push_str(&tables::traces(s));
    o.push_str(&tables::observed(s));
    o.push_str(&tables::workers(s));
    o.push_str("</section>\n");
    o
}

/// A capacity search: the search's conclusions, its charts, its step table, and the whole
/// timeline of the steps one after another.
fn find_section(r: &RunResult, f: &results::find::FindResult, charts: &mut Vec<Chart>) -> String {
    let mut o = String::from("<section class=\"find\">\n<h2>Capacity search</h2>\n");
    o.push_str(&tables::find_summary(f));
    o.push_str("<div class=\"grid\">\n");
    o.push_str(&chart_slot(charts, charts::find_levels(f)));
    if let Some(c) = charts::usl(f) {
        o.push_str(&chart_slot(charts, c));
    }
    o.push_str("</div>\n");
    o.push_str(&tables::steps(f));
    o.push_str(&tables::hooks(f));
    o.push_str("</section>\n<section class=\"scenario\">\n<h2>All steps, one after another</h2>\n<div class=\"grid\">\n");
    let model = r
        .scenarios
        .first()
        .map_or(model::LoadModel::Closed, |s| s.load.model);
    o.push_str(&chart_slot(
        charts,
        charts::latency(&r.timeseries, model, false),
    ));
    o.push_str(&chart_slot(charts, charts::throughput(&r.timeseries)));
    for c in charts::observed(&r.timeseries) {
        o.push_str(&chart_slot(charts, c));
    }
    o.push_str("</div>\n</section>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_data_cannot_become_markup() {
        let hostile = "<img src=x onerror=alert(1)> & \"quoted\" 'single'";
        assert_eq!(
            escape(hostile),
            "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quoted&quot; &#39;single&#39;"
        );
        let json = script_json(&vec![
            "</script><script>alert(1)</script>",
            "<!--",
            "\u{2028}",
        ]);
        assert!(!json.contains('<') && !json.contains('>'), "{json}");
        let back: Vec<String> = serde_json::from_str(&json).expect("still JSON");
        assert_eq!(back[0], "</script><script>alert(1)</script>");
    }
}
