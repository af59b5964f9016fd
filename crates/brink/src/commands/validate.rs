//! `brink validate`: check a plan (syntax, keys, durations, rates, templates, JSONPaths, SLOs,
//! literal values that could never be sent) and run nothing.

use crate::cli::ValidateArgs;
use crate::emitln;
use crate::exit::Fail;

pub fn validate_cmd(a: &ValidateArgs) -> Result<i32, Fail> {
    let plan = plan::load_file(&a.plan, 0).map_err(|e| Fail::input(e.to_string()))?;
    emitln!("{}: ok, {} scenario(s)", plan.file, plan.scenarios.len());
    for s in &plan.scenarios {
        let kind = if s.workload.flow { "flow" } else { "mix" };
        let steps: Vec<&str> = s
            .workload
            .requests
            .iter()
            .map(|x| x.name.as_str())
            .collect();
        emitln!(
            "  {}: {} {} of {} ({}), {} SLO(s)",
            s.name,
            s.target.url(),
            kind,
            steps.len(),
            steps.join(", "),
            s.slos.len()
        );
    }
    Ok(0)
}
