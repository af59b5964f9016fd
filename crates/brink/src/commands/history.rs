//! `brink history` (list, `rm`, `baseline`) and `brink show`: the recorded runs, newest first,
//! and one run's terminal summary again (or its stored result with `--json`).

use crate::cli::{HistoryAction, HistoryArgs, ShowArgs};
use crate::emitln;
use crate::exit::Fail;
use history::{Filter, History, Run, Verdict};
use results::fmt::{fmt_count, fmt_ms, fmt_rate};
use std::path::Path;

/// Opens the history at `path` (or the default place) for reading or changing it.
pub fn open(path: Option<&Path>) -> Result<History, Fail> {
    let path = path
        .map(Path::to_path_buf)
        .or_else(history::default_path)
        .ok_or_else(|| Fail::input("no history: set --history PATH or BRINK_HISTORY"))?;
    History::open(&path).map_err(|e| Fail::input(format!("history: {e}")))
}

fn fail(e: history::Error) -> Fail {
    Fail::input(format!("history: {e}"))
}

pub fn history_cmd(a: &HistoryArgs) -> Result<i32, Fail> {
    let h = open(a.history.as_deref())?;
    match &a.action {
        Some(HistoryAction::Rm { run }) => {
            let id = h.resolve(run).map_err(fail)?;
            h.remove(id).map_err(fail)?;
            emitln!("removed run {id}");
            Ok(0)
        }
        Some(HistoryAction::Baseline { run }) => {
            let id = h.resolve(run).map_err(fail)?;
            h.set_baseline(id).map_err(fail)?;
            let r = h.run(id).map_err(fail)?.unwrap_or_default();
            emitln!("run {id} is the baseline of {} ({})", r.target, r.name);
            Ok(0)
        }
        Some(HistoryAction::Capacity) => capacity(&h, a),
        None => list(&h, a),
    }
}

/// The runs the filters pick, newest first.
fn picked(h: &History, a: &HistoryArgs) -> Result<Vec<Run>, Fail> {
    let tags = a
        .tags
        .iter()
        .map(|t| {
            t.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| Fail::input(format!("--tag '{t}': expected KEY=VALUE")))
        })
        .collect::<Result<_, _>>()?;
    if a.limit == 0 {
        return Err(Fail::input("--limit 0: list at least 1 run"));
    }
    h.list(&Filter {
        target: a.target.clone(),
        name: a.name.clone(),
        tags,
        limit: a.limit,
    })
    .map_err(fail)
}

/// Every finished search's capacity, by its tags (tags in order, then newest first).
fn capacity(h: &History, a: &HistoryArgs) -> Result<i32, Fail> {
    let runs = history::capacity_by_tag(picked(h, a)?);
    if a.json {
        let rows: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "started_at": r.started_at, "tags": r.tags, "target": r.target,
                    "name": r.name, "capacity_rps": r.capacity_rps,
                    "max_sustainable": r.max_sustainable, "by": r.load_model.map(|m| results::find::By::of(m).name()),
                    "disturbed": r.disturbed, "at_least": r.floor,
                })
            })
            .collect();
        emitln!("{}", serde_json::Value::Array(rows));
        return Ok(0);
    }
    if runs.is_empty() {
        emitln!("no searches recorded in {}", h.path().display());
        return Ok(0);
    }
    emitln!(
        "{:<40} {:>15}  {:<22} {:<11} {:<9}  {:>5}  {:<20} target",
        "tags",
        "capacity",
        "at",
        "by",
        "host",
        "id",
        "started"
    );
    for r in &runs {
        let at = r.sustainable_level().unwrap_or_else(|| "-".into());
        // Searches by connections and by rate answer different questions: said on each row.
        let by = r
            .load_model
            .map_or("-", |m| results::find::By::of(m).name());
        // A search that kept a step its own host disturbed may measure the host: marked.
        let host = if r.disturbed { "DISTURBED" } else { "-" };
        emitln!(
            "{:<40} {:>15}  {:<22} {:<11} {:<9}  {:>5}  {:<20} {}",
            cut(&r.tags_text(), 40),
            r.capacity_cell(),
            at,
            by,
            host,
            r.id,
            cut(&r.started_at, 20),
            r.target
        );
    }
    Ok(0)
}

fn list(h: &History, a: &HistoryArgs) -> Result<i32, Fail> {
    let runs = picked(h, a)?;
    if a.json {
        emitln!(
            "{}",
            serde_json::to_string_pretty(&runs).unwrap_or_else(|_| "[]".into())
        );
        return Ok(0);
    }
    if runs.is_empty() {
        emitln!("no runs recorded in {}", h.path().display());
        return Ok(0);
    }
    emitln!(
        "{:>5}  {:<20} {:<7} {:<24} {:<32} {:<24} {:>10} {:>9} {:>9} {:>7}  verdict",
        "id",
        "started",
        "cmd",
        "name",
        "target",
        "load",
        "requests",
        "ok req/s",
        "p99",
        "errors"
    );
    for r in &runs {
        emitln!("{}", line(r));
    }
    Ok(0)
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// One run as a table line.
fn line(r: &Run) -> String {
    let verdict = match r.verdict() {
        Verdict::Running => "running",
        Verdict::Failed => "failed",
        Verdict::Died => "died",
        Verdict::Interrupted => "interrupted",
        Verdict::Found => "found",
        Verdict::NoneHeld => "none held",
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
        Verdict::NoSlos => "-",
    };
    let extra = match (r.capacity(), r.baseline) {
        (Some(c), b) => format!(" {c}{}", if b { " baseline" } else { "" }),
        (None, true) => " baseline".to_string(),
        (None, false) => String::new(),
    };
    format!(
        "{:>5}  {:<20} {:<7} {:<24} {:<32} {:<24} {:>10} {:>9} {:>9} {:>7}  {verdict}{extra}{}",
        r.id,
        cut(&r.started_at, 20),
        // Padded as text (`k8s run` too): the command's own Display ignores the width.
        r.command.as_str(),
        cut(&r.name, 24),
        cut(&r.target, 32),
        cut(load_text(&r.load_level), 24),
        r.requests
            .map_or("-".into(), |n| fmt_count(n.max(0) as u64)),
        r.ok_rps.map_or("-".into(), fmt_rate),
        r.p99_ms.map_or("-".into(), fmt_ms),
        r.error_rate
            .map_or("-".into(), |e| format!("{:.2}%", e * 100.0)),
        labels(r),
    )
}

/// The load without its model's name (the level says it: connections or req/s).
fn load_text(level: &str) -> &str {
    ["closed model: ", "open model: "]
        .iter()
        .find_map(|p| level.strip_prefix(p))
        .unwrap_or(level)
}

/// A run's tags and note, as they follow its line: `  env=staging team=x  "pool 20 -> 40"`.
fn labels(r: &Run) -> String {
    let mut s = String::new();
    if !r.tags.is_empty() {
        let tags: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push_str(&format!("  {}", tags.join(" ")));
    }
    if let Some(n) = r.note.as_deref().filter(|n| !n.is_empty()) {
        s.push_str(&format!("  \"{}\"", cut(n, 60)));
    }
    s
}

pub fn show_cmd(a: &ShowArgs) -> Result<i32, Fail> {
    let h = open(a.history.as_deref())?;
    let id = h.resolve(&a.run).map_err(fail)?;
    let Some(result) = h.result(id).map_err(fail)? else {
        let r = h.run(id).map_err(fail)?.unwrap_or_default();
        return Err(Fail::input(format!(
            "run {id} has no result ({}): it is still running or ended without one",
            r.status
        )));
    };
    if a.json {
        emitln!(
            "{}",
            serde_json::to_string_pretty(&result).unwrap_or_else(|_| "{}".into())
        );
    } else {
        let r = h.run(id).map_err(fail)?.unwrap_or_default();
        emitln!(
            "run {id} · {} {} · started {}{}",
            r.command,
            r.name,
            r.started_at,
            labels(&r)
        );
        crate::sinks::print_result(&result);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_that_found_its_limit_is_not_listed_as_failed() {
        let run = |max| Run {
            command: model::RunCommand::Find,
            status: model::RunStatus::Done,
            slo_passed: Some(false),
            max_sustainable: max,
            ..Run::default()
        };
        assert!(
            line(&run(Some(22.0))).contains("  found max 22 connections"),
            "{}",
            line(&run(Some(22.0)))
        );
        let with_rps = Run {
            capacity_rps: Some(1905.4),
            ..run(Some(22.0))
        };
        assert!(
            line(&with_rps).ends_with("  found capacity 1,905 req/s at 22 connections"),
            "{}",
            line(&with_rps)
        );
        let disturbed = Run {
            disturbed: true,
            ..with_rps.clone()
        };
        assert!(
            line(&disturbed).contains("at 22 connections DISTURBED (brink's host was busy)"),
            "{}",
            line(&disturbed)
        );
        assert!(line(&run(None)).contains("  none held"));
        let plain = Run {
            command: model::RunCommand::Run,
            ..run(None)
        };
        assert!(line(&plain).ends_with("  FAIL"), "{}", line(&plain));
        let tagged = Run {
            tags: vec![("env".into(), "staging".into())],
            note: Some("pool 20 -> 40".into()),
            load_level: "50 connections".into(),
            ..plain
        };
        let l = line(&tagged);
        assert!(l.ends_with("FAIL  env=staging  \"pool 20 -> 40\""), "{l}");
        assert!(l.contains("50 connections"), "{l}");
    }
}
