//! `brink report RESULT.json --html FILE --csv FILE`: the outputs of a finished run, from its
//! result file alone (no load, no engine).

use crate::cli::ReportArgs;
use crate::exit::Fail;
use crate::output::{write_result, Files};
use report::RunResult;

/// Reads a result file: one line naming the file and what is wrong with it.
pub(super) fn read_result(path: &std::path::Path) -> Result<RunResult, Fail> {
    let bytes = std::fs::read(path).map_err(|e| Fail::input(format!("{}: {e}", path.display())))?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| Fail::input(format!("{}: not JSON: {e}", path.display())))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(report::SCHEMA) => {}
        Some(other) => {
            return Err(Fail::input(format!(
                "{}: schema {other} is not one this brink reads ({})",
                path.display(),
                report::SCHEMA
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
    let result = read_result(&a.result)?;
    for (kind, out) in files.prepare()? {
        write_result(kind, out, &result)?;
    }
    Ok(0)
}
