//! A comparison as a terminal table, a Markdown table for a pull-request comment, or JSON.

use crate::{Comparison, Row, Unit, Verdict};
use results::fmt::{fmt_count, fmt_ms, fmt_rate};
use std::fmt::Write;

/// How `brink compare` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Json,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "table" => Some(Format::Table),
            "md" | "markdown" => Some(Format::Markdown),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

fn value(r: &Row, v: Option<f64>) -> String {
    let Some(v) = v else {
        return "-".into();
    };
    match r.unit {
        Unit::Ms => fmt_ms(v),
        Unit::PerSecond => format!("{}/s", fmt_rate(v)),
        Unit::Share => format!("{:.2}%", v * 100.0),
        Unit::Count => fmt_count(v.round() as u64),
        Unit::Observed => {
            // `srv rss peak` reads as `srv rss`: memory in MB, CPU in %, as the summary shows.
            let name = r.metric.strip_suffix(" peak").unwrap_or(&r.metric);
            results::fmt::observed_value(name, v)
        }
        Unit::Level => {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                fmt_count(v as u64)
            } else {
                format!("{v:.1}")
            }
        }
    }
}

fn interval(r: &Row) -> String {
    let Some((lo, hi)) = r.interval else {
        return String::new();
    };
    if r.unit == Unit::Share {
        format!("{:+.2} to {:+.2} pp", lo * 100.0, hi * 100.0)
    } else {
        format!("{:+.1}% to {:+.1}%", lo * 100.0, hi * 100.0)
    }
}

fn label(r: &Row) -> String {
    match &r.request {
        Some(q) => format!("{} / {q}", r.scenario),
        None => r.scenario.clone(),
    }
}

fn verdict(r: &Row) -> String {
    let w = r.verdict.word();
    if r.decides && r.verdict != Verdict::Info {
        format!("{w} *")
    } else {
        w.to_string()
    }
}

/// The cells of every row: what, metric, before, after, change, interval, verdict.
fn cells(c: &Comparison) -> Vec<[String; 7]> {
    c.rows
        .iter()
        .map(|r| {
            [
                label(r),
                r.metric.clone(),
                value(r, r.before),
                value(r, r.after),
                r.change_text.clone(),
                interval(r),
                verdict(r),
            ]
        })
        .collect()
}

const HEAD: [&str; 7] = [
    "scenario",
    "metric",
    "before",
    "after",
    "change",
    "95% interval",
    "verdict",
];

fn outcome(c: &Comparison) -> String {
    if c.regressed {
        "REGRESSED: a deciding metric (*) is worse beyond its tolerance".into()
    } else {
        "no regression in the deciding metrics (*)".into()
    }
}

/// `c` in `format`.
pub fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(c).unwrap_or_else(|_| "{}".into()) + "\n",
        Format::Table => table(c),
        Format::Markdown => markdown(c),
    }
}

fn table(c: &Comparison) -> String {
    let rows = cells(c);
    let mut w = HEAD.map(str::len);
    for r in &rows {
        for (i, cell) in r.iter().enumerate() {
            w[i] = w[i].max(cell.chars().count());
        }
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "compare: before {} | after {}",
        c.before.join(", "),
        c.after.join(", ")
    );
    for (name, b, a) in &c.steady_seconds {
        let _ = writeln!(o, "  {name}: {b} steady seconds before, {a} after");
    }
    for m in &c.mismatches {
        let _ = writeln!(o, "  mismatch (allowed): {m}");
    }
    let line = |o: &mut String, r: &[String]| {
        let _ = writeln!(
            o,
            "  {:<a$}  {:<b$}  {:>c$}  {:>d$}  {:<e$}  {:<f$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            a = w[0],
            b = w[1],
            c = w[2],
            d = w[3],
            e = w[4],
            f = w[5]
        );
    };
    o.push('\n');
    line(&mut o, &HEAD.map(String::from));
    for r in &rows {
        line(&mut o, r);
    }
    o.push('\n');
    for n in &c.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    let _ = writeln!(o, "  {}", outcome(c));
    o
}

/// A Markdown cell: no line breaks; pipes and emphasis marks escaped.
fn md(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
        .replace('|', "\\|")
        .replace('*', "\\*")
        .replace('_', "\\_")
}

fn markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "**brink compare**: before {} · after {}\n",
        md(&c.before.join(", ")),
        md(&c.after.join(", "))
    );
    let _ = writeln!(o, "| {} |", HEAD.join(" | "));
    let _ = writeln!(o, "|---|---|--:|--:|---|---|---|");
    for r in cells(c) {
        let r = r.map(|x| md(&x));
        let verdict = if r[6].starts_with("regressed") {
            format!("**{}**", r[6])
        } else {
            r[6].clone()
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r[0], r[1], r[2], r[3], r[4], r[5], verdict
        );
    }
    o.push('\n');
    for m in &c.mismatches {
        let _ = writeln!(o, "- mismatch (allowed): {}", md(m));
    }
    for n in &c.notes {
        let _ = writeln!(o, "- {}", md(n));
    }
    let _ = writeln!(
        o,
        "\n{} (95% intervals by block bootstrap over steady seconds).",
        outcome(c)
    );
    o
}
