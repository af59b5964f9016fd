//! Where a run broke ([`results::BrokeJson`]), read from a finished scenario: the objective
//! whose first failing window came first, the schedule's level and the successes over that
//! window, and the server's CPU at its highest then, judged by the same rule as a search's
//! knee.

use results::find::By;
use results::{BrokeJson, ScenarioResult, SecondRow};

/// The first failing window of a windowed objective, if one failed.
pub fn broke(sc: &ScenarioResult) -> Option<BrokeJson> {
    let (slo, at_s, window_s) = sc
        .slo
        .iter()
        .filter(|s| !s.pass)
        .filter_map(|s| Some((s, s.first_failed_s?, s.window_s?)))
        .min_by_key(|(_, at, _)| *at)?;
    // The tracker's n-th second is the row at t = n - 1: the window ending at second `at_s`
    // holds the rows from t = at_s - window_s up to t = at_s - 1.
    let rows: Vec<&SecondRow> = sc
        .timeseries
        .iter()
        .filter(|r| r.t + window_s >= at_s && r.t < at_s)
        .collect();
    let level = mean(rows.iter().filter_map(|r| r.target))?;
    // The CPU at its highest in the window: a service that saturated as the window ended
    // shows it there, and one that never came near stays low throughout.
    let highest = |name: &str| {
        rows.iter()
            .filter_map(|r| r.observed.get(name).copied())
            .reduce(f64::max)
    };
    let cpu = highest(model::metrics::CPU);
    let peak = sc.observed.get(model::metrics::CPU).map(|o| o.peak);
    Some(BrokeJson {
        slo: slo.slo.clone(),
        at_s,
        window_s,
        level,
        by: if sc.load.model == model::LoadModel::Open {
            By::Rate
        } else {
            By::Connections
        },
        ok_rps: rows.iter().map(|r| r.ok).sum::<u64>() as f64 / window_s.max(1) as f64,
        cpu_percent: cpu,
        cpu_bound: cpu.zip(peak).and_then(|(c, p)| search::cpu_bound(c, p)),
        cpu_wait_percent: highest(model::metrics::CPU_WAIT),
    })
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}
