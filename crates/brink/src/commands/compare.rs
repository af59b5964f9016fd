//! `brink compare BEFORE AFTER` (or `--before A --before B --after C ...`): reads the
//! results, refuses runs that are not comparable (unless `--allow-mismatch`), and prints the
//! comparison; exit 1 when a deciding metric regressed.

use super::report::read_result;
use crate::cli::CompareArgs;
use crate::emitln;
use crate::exit::{Fail, REGRESSED};
use compare::{Format, Tolerances};
use report::RunResult;
use std::path::PathBuf;

/// The two sides from the arguments: two positional files, or `--before`/`--after` lists.
fn sides(a: &CompareArgs) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Fail> {
    match (a.files.len(), a.before.is_empty() && a.after.is_empty()) {
        (2, true) => Ok((vec![a.files[0].clone()], vec![a.files[1].clone()])),
        (0, false) if !a.before.is_empty() && !a.after.is_empty() => {
            Ok((a.before.clone(), a.after.clone()))
        }
        (0, false) => Err(Fail::input(
            "give at least one --before and one --after result",
        )),
        _ => Err(Fail::input(
            "give two results (BEFORE AFTER) or --before/--after lists, not both",
        )),
    }
}

fn load(paths: &[PathBuf]) -> Result<Vec<(String, RunResult)>, Fail> {
    paths
        .iter()
        .map(|p| Ok((p.display().to_string(), read_result(p)?)))
        .collect()
}

pub fn compare_cmd(a: &CompareArgs) -> Result<i32, Fail> {
    let (before, after) = sides(a)?;
    let mut tol = Tolerances::default();
    for t in &a.tolerance {
        tol.set(t).map_err(Fail::input)?;
    }
    let format = Format::parse(&a.format)
        .ok_or_else(|| Fail::input(format!("--format {}: use table, md or json", a.format)))?;
    let (before, after) = (load(&before)?, load(&after)?);
    let mismatches = compare::check(&before, &after);
    if !mismatches.is_empty() && !a.allow_mismatch {
        return Err(Fail::input(format!(
            "not comparable: {} (--allow-mismatch compares anyway)",
            mismatches.join("; ")
        )));
    }
    let c = compare::compare(&before, &after, &tol, mismatches);
    emitln!("{}", compare::render(&c, format).trim_end());
    Ok(if c.regressed { REGRESSED } else { 0 })
}
