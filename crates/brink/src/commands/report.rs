//! `brink report RESULT.json --html FILE --csv FILE`: the outputs of a finished run, from its
//! result file alone (no load, no engine).

use crate::cli::ReportArgs;
use crate::exit::Fail;
use crate::output::{write_result, Files};
use results::RunResult;
use std::path::Path;

/// Reads a result file: one line naming the file and what is wrong with it.
pub(super) fn read_result(path: &std::path::Path) -> Result<RunResult, Fail> {
    // A regular file within the input limit: never a device or a FIFO read without end.
    let bytes = model::input::read(path).map_err(Fail::input)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| Fail::input(format!("{}: not JSON: {e}", path.display())))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(results::SCHEMA) => {}
        Some(other) => {
            return Err(Fail::input(format!(
                "{}: schema {other} is not one this brink reads ({})",
                path.display(),
                results::SCHEMA
            )))
        }
        None => {
            return Err(Fail::input(format!(
                "{}: not a brink result (no \"schema\" key)",
                path.display()
            )))
        }
    }
    serde_json::from_value(value)
        .map_err(|e| Fail::input(format!("{}: not a brink result: {e}", path.display())))
}

/// Whether `spec` names a history run rather than a file: an id, `latest`, `latest~N` or
/// `baseline`, and no such file.
fn is_run(spec: &str) -> bool {
    !Path::new(spec).exists()
        && (spec.parse::<i64>().is_ok() || spec.starts_with("latest") || spec == "baseline")
}

/// A result from a file or the history; `other` is the run `baseline` is the baseline of.
pub(super) fn load(
    spec: &str,
    history: Option<&Path>,
    other: Option<i64>,
) -> Result<(String, RunResult, Option<i64>), Fail> {
    if !is_run(spec) {
        return Ok((spec.to_string(), read_result(Path::new(spec))?, None));
    }
    let h = super::history::open(history)?;
    let fail = |e: history::Error| Fail::input(format!("history: {e}"));
    let id = if spec == "baseline" {
        let of = other.ok_or_else(|| {
            Fail::input(
                "baseline: compare it with a run from the history (brink compare baseline latest)",
            )
        })?;
        h.baseline_of(of).map_err(fail)?.ok_or_else(|| {
            Fail::input(format!(
                "baseline: run {of}'s target and name have no baseline (brink history baseline ID)"
            ))
        })?
    } else {
        h.resolve(spec).map_err(fail)?
    };
    let result = h.result(id).map_err(fail)?.ok_or_else(|| {
        Fail::input(format!(
            "run {id} has no result: it is still running or ended without one"
        ))
    })?;
    Ok((format!("run {id}"), result, Some(id)))
}

pub fn report_cmd(a: &ReportArgs) -> Result<i32, Fail> {
    let files = Files {
        json: None,
        html: a.html.clone(),
        csv: a.csv.clone(),
    };
    if files.each().next().is_none() {
        return Err(Fail::input(
            "nothing to write: give --html FILE and/or --csv FILE",
        ));
    }
    let (_, result, _) = load(&a.result, a.history.as_deref(), None)?;
    for (kind, out) in files.prepare()? {
        write_result(kind, out, &result)?;
    }
    Ok(0)
}
