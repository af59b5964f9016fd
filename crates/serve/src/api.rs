//! The JSON API (`/api/runs`, `/api/run/ID`, `/api/compare?a=ID&b=ID`), the two changes the UI
//! can make (mark a baseline, delete a run), and the live stream of a run's seconds
//! (`/api/live/ID`, Server-Sent Events: one `data:` line per recorded second, then `event: end`
//! once the run is no longer running).

use crate::query;
use crate::reply::{json, text, Out};
use crate::Ctx;
use bytes::Bytes;
use history::{Filter, History};
use hyper::StatusCode;
use results::RunResult;
use std::sync::Arc;
use std::time::Duration;

/// The list filters from a query: `target`, `name`, `tag=K=V` (repeatable), `limit`.
pub fn filter(q: &[(String, String)]) -> Filter {
    Filter {
        target: query::get(q, "target").map(str::to_string),
        name: query::get(q, "name").map(str::to_string),
        tags: query::all(q, "tag")
            .into_iter()
            .filter_map(|t| t.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        limit: query::get(q, "limit")
            .and_then(|l| l.parse().ok())
            .unwrap_or(200),
    }
}

pub fn runs(h: &History, q: &[(String, String)]) -> Out {
    match h.list(&filter(q)) {
        Ok(runs) => json(&runs),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.0),
    }
}

pub fn run(h: &History, id: i64, download: bool) -> Out {
    match h.result(id) {
        Ok(Some(r)) => {
            let mut out = json(&r);
            if download {
                if let Ok(v) = format!("attachment; filename=\"brink-run-{id}.json\"").parse() {
                    out.headers_mut()
                        .insert(hyper::header::CONTENT_DISPOSITION, v);
                }
            }
            out
        }
        Ok(None) => text(
            StatusCode::NOT_FOUND,
            &format!("run {id} has no result (yet)"),
        ),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.0),
    }
}

/// The two runs a comparison names: `a` and `b`, or two `run` values (ticked boxes), in id
/// order; `baseline` on one side is the baseline of the other run's target and name.
pub fn pair(h: &History, q: &[(String, String)]) -> Result<(i64, i64), String> {
    let ticked = query::all(q, "run");
    let (a, b) = match (query::get(q, "a"), query::get(q, "b"), ticked.as_slice()) {
        (Some(a), Some(b), _) => (a, b),
        (_, _, [x, y]) => (*x, *y),
        _ => return Err("tick two runs to compare (or give a=ID&b=ID)".into()),
    };
    let id = |s: &str| h.resolve(s).map_err(|e| e.0);
    let base = |other: i64| {
        h.baseline_of(other)
            .map_err(|e| e.0)?
            .ok_or_else(|| format!("run {other}'s target and name have no baseline yet"))
    };
    let (a, b) = match (a, b) {
        ("baseline", "baseline") => return Err("only one side can be the baseline".into()),
        ("baseline", b) => {
            let b = id(b)?;
            (base(b)?, b)
        }
        (a, "baseline") => {
            let a = id(a)?;
            (a, base(a)?)
        }
        (a, b) => (id(a)?, id(b)?),
    };
    Ok(if ticked.len() == 2 && a > b {
        (b, a)
    } else {
        (a, b)
    })
}

/// The comparison of two runs (mismatches are listed, not refused: the page shows them).
pub fn comparison(h: &History, a: i64, b: i64) -> Result<compare::Comparison, String> {
    let load = |id: i64| -> Result<(String, RunResult), String> {
        h.result(id)
            .map_err(|e| e.0)?
            .map(|r| (format!("run {id}"), r))
            .ok_or_else(|| format!("run {id} has no result (yet)"))
    };
    let (before, after) = ([load(a)?], [load(b)?]);
    let mismatches = compare::check(&before, &after);
    Ok(compare::compare(
        &before,
        &after,
        &compare::Tolerances::default(),
        &compare::Decide::default(),
        mismatches,
    ))
}

pub fn compare(h: &History, q: &[(String, String)]) -> Out {
    match pair(h, q).and_then(|(a, b)| comparison(h, a, b)) {
        Ok(c) => json(&c),
        Err(e) => text(StatusCode::BAD_REQUEST, &e),
    }
}

pub fn baseline(h: &History, id: i64) -> Out {
    match h.set_baseline(id) {
        Ok(()) => text(StatusCode::OK, &format!("run {id} is the baseline")),
        Err(e) => text(StatusCode::NOT_FOUND, &e.0),
    }
}

pub fn delete(h: &History, id: i64) -> Out {
    match h.remove(id) {
        Ok(true) => text(StatusCode::OK, &format!("run {id} removed")),
        Ok(false) => text(StatusCode::NOT_FOUND, &format!("no run {id}")),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.0),
    }
}

/// One recorded second as the live page reads it.
#[derive(serde::Serialize)]
struct LiveSecond<'a> {
    seq: i64,
    part: i64,
    name: &'a str,
    t: u64,
    requests: u64,
    ok: u64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    target: Option<f64>,
}

/// The Server-Sent Events stream of run `id`'s seconds after `after` (a `seq`).
pub fn live(ctx: Arc<Ctx>, id: i64, q: &[(String, String)]) -> Out {
    let after = query::get(q, "after")
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    let path = ctx.history.clone();
    tokio::task::spawn_blocking(move || follow(&path, id, after, &tx));
    let mut r = hyper::Response::new(http_body_util::BodyExt::boxed(accept::ChannelBody(rx)));
    let h = r.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    r
}

/// Sends the new seconds of run `id` every half second until it is no longer running or the
/// page has gone.
fn follow(path: &std::path::Path, id: i64, mut after: i64, tx: &tokio::sync::mpsc::Sender<Bytes>) {
    let Ok(h) = History::open(path) else {
        return;
    };
    let mut quiet = 0;
    loop {
        let status = match h.run(id) {
            Ok(Some(r)) => r.status.as_str(),
            _ => "gone",
        };
        let running = status == model::RunStatus::Running.as_str();
        let Ok(rows) = h.seconds(id, after) else {
            return;
        };
        for (seq, part, name, row) in &rows {
            let event = LiveSecond {
                seq: *seq,
                part: *part,
                name,
                t: row.t,
                requests: row.requests,
                ok: row.ok,
                p50: row.p50,
                p90: row.p90,
                p99: row.p99,
                max: row.max,
                target: row.target,
            };
            let line = format!(
                "id: {seq}\ndata: {}\n\n",
                serde_json::to_string(&event).unwrap_or_default()
            );
            if tx.blocking_send(Bytes::from(line)).is_err() {
                return;
            }
            after = *seq;
        }
        if !running {
            let end = serde_json::json!({ "status": status });
            let _ = tx.blocking_send(Bytes::from(format!("event: end\ndata: {end}\n\n")));
            return;
        }
        quiet = if rows.is_empty() { quiet + 1 } else { 0 };
        // A comment now and then tells whether the page is still there.
        if quiet % 20 == 19
            && tx
                .blocking_send(Bytes::from_static(b": waiting\n\n"))
                .is_err()
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
