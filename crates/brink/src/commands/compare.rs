//! `brink compare BEFORE AFTER` (or `--before A --before B --after C ...`): reads the
//! results, refuses runs that are not comparable (unless `--allow-mismatch`), and prints the
//! comparison; exit 1 when a deciding metric regressed.

use super::report::load;
use crate::cli::CompareArgs;
use crate::emitln;
use crate::exit::{Fail, REGRESSED};
use compare::{Format, Tolerances};
use results::RunResult;

/// The two sides from the arguments: two positional results, or `--before`/`--after` lists.
fn sides(a: &CompareArgs) -> Result<(Vec<String>, Vec<String>), Fail> {
    match (a.files.len(), a.before.is_empty() && a.after.is_empty()) {
        (2, true) => Ok((vec![a.files[0].clone()], vec![a.files[1].clone()])),
        (0, false) if !a.before.is_empty() && !a.after.is_empty() => {
            Ok((a.before.clone(), a.after.clone()))
        }
        (0, false) => Err(Fail::input(
            "give at least one --before and one --after result",
        )),
        (n, true) => Err(Fail::input(format!(
            "give two results (BEFORE AFTER), not {n}, or --before/--after lists"
        ))),
        _ => Err(Fail::input(
            "give two results (BEFORE AFTER) or --before/--after lists, not both",
        )),
    }
}

/// One side of a comparison: each result with the name it is shown by.
type Side = Vec<(String, RunResult)>;

/// Loads both sides; `baseline` on one side is the baseline of the first history run on the
/// other.
fn load_sides(a: &CompareArgs, before: &[String], after: &[String]) -> Result<(Side, Side), Fail> {
    let h = a.history.as_deref();
    let first_id = |side: &[String]| -> Result<Option<i64>, Fail> {
        for spec in side.iter().filter(|s| *s != "baseline") {
            if let (_, _, Some(id)) = load(spec, h, None)? {
                return Ok(Some(id));
            }
        }
        Ok(None)
    };
    let (b_id, a_id) = (first_id(before)?, first_id(after)?);
    let side = |specs: &[String], other: Option<i64>| -> Result<Side, Fail> {
        specs
            .iter()
            .map(|s| load(s, h, other).map(|(name, r, _)| (name, r)))
            .collect()
    };
    Ok((side(before, a_id)?, side(after, b_id)?))
}

/// Why a search result cannot be judged as it is: a failing step it kept though brink's own
/// workers were kept waiting for a CPU twice.
fn disturbed(name: &str, r: &results::RunResult) -> Option<String> {
    let f = r.find.as_ref()?;
    let s = f.steps.iter().find(|s| s.disturbed)?;
    Some(format!(
        "{name} kept a step at {} that brink's host disturbed twice",
        f.by.describe(s.level)
    ))
}

/// Searches that stepped by different things (a rate, connections) found levels in different
/// units: no change between them means anything, whatever `--allow-mismatch` says.
fn unlike_searches(before: &Side, after: &Side) -> Option<String> {
    let by = |side: &Side| {
        side.iter()
            .find_map(|(name, r)| r.find.as_ref().map(|f| (name.clone(), f.by)))
    };
    let ((b_name, b_by), (a_name, a_by)) = (by(before)?, by(after)?);
    (b_by != a_by).then(|| {
        format!(
            "{b_name} searched by {}, {a_name} by {}: their capacities are in different units (compare two searches by the same)",
            b_by.name(),
            a_by.name()
        )
    })
}

pub fn compare_cmd(a: &CompareArgs) -> Result<i32, Fail> {
    let (before, after) = sides(a)?;
    let mut tol = Tolerances::default();
    for t in &a.tolerance {
        tol.set(t).map_err(Fail::input)?;
    }
    let decide = match &a.decide {
        Some(spec) => compare::Decide::parse(spec).map_err(Fail::input)?,
        None => compare::Decide::default(),
    };
    let format = Format::parse(&a.format)
        .ok_or_else(|| Fail::input(format!("--format {}: use table, md or json", a.format)))?;
    let (before, after) = load_sides(a, &before, &after)?;
    if !a.allow_disturbed {
        for (side, runs) in [("before", &before), ("after", &after)] {
            if let Some(why) = runs.iter().find_map(|(name, r)| disturbed(name, r)) {
                return Err(Fail::input(format!(
                    "the {side} search {why}: its capacity may be the host's, not the service's (run it again on a quieter machine, or --allow-disturbed)"
                )));
            }
        }
    }
    if let Some(why) = unlike_searches(&before, &after) {
        return Err(Fail::input(format!("not comparable: {why}")));
    }
    let mismatches = compare::check(&before, &after);
    if !mismatches.is_empty() && !a.allow_mismatch {
        return Err(Fail::input(format!(
            "not comparable: {} (--allow-mismatch compares anyway)",
            mismatches.join("; ")
        )));
    }
    let c = compare::compare(&before, &after, &tol, &decide, mismatches);
    emitln!("{}", compare::render(&c, format).trim_end());
    Ok(if c.regressed { REGRESSED } else { 0 })
}
