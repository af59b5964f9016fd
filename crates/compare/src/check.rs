//! Whether runs can be compared at all: the same target, method, load model and level, and
//! durations within 10% (or, for runs bounded by a request count, the same count). Each difference is one line naming the files and the values.

use results::{LoadInfo, RunResult, ScenarioResult};

/// Every difference between the first before-result and each other result (both sides).
pub fn check(before: &[(String, RunResult)], after: &[(String, RunResult)]) -> Vec<String> {
    let Some((base_name, base)) = before.first() else {
        return vec!["no result on the before side".into()];
    };
    if after.is_empty() {
        return vec!["no result on the after side".into()];
    }
    let mut out = Vec::new();
    for (name, other) in before.iter().skip(1).chain(after) {
        differences(base, other, &mut |what| {
            out.push(format!("{base_name} and {name}: {what}"));
        });
    }
    out
}

fn differences(a: &RunResult, b: &RunResult, say: &mut dyn FnMut(String)) {
    match (&a.find, &b.find) {
        (Some(fa), Some(fb)) => {
            if fa.by != fb.by {
                say(format!(
                    "searched by {} vs by {}",
                    fa.by.name(),
                    fb.by.name()
                ));
            }
            same_target(&a.scenarios[..1.min(a.scenarios.len())], &b.scenarios, say);
            return;
        }
        (Some(_), None) | (None, Some(_)) => {
            say("a capacity search vs a run".into());
            return;
        }
        (None, None) => {}
    }
    let names =
        |r: &RunResult| -> Vec<String> { r.scenarios.iter().map(|s| s.name.clone()).collect() };
    if names(a) != names(b) {
        say(format!(
            "scenarios {} vs {}",
            names(a).join(", "),
            names(b).join(", ")
        ));
        return;
    }
    for (x, y) in a.scenarios.iter().zip(&b.scenarios) {
        let mut scoped = |what: String| {
            if a.scenarios.len() > 1 {
                say(format!("scenario {}: {what}", x.name));
            } else {
                say(what);
            }
        };
        same_target(
            std::slice::from_ref(x),
            std::slice::from_ref(y),
            &mut scoped,
        );
        same_load(&x.load, &y.load, &mut scoped);
        // A run bounded by a request count (-n) takes what it takes: the counts must match.
        if x.load.requests.is_some() || y.load.requests.is_some() {
            if x.load.requests != y.load.requests {
                let n = |v: Option<u64>| v.map_or("no limit".to_string(), |n| n.to_string());
                scoped(format!(
                    "request counts {} vs {}",
                    n(x.load.requests),
                    n(y.load.requests)
                ));
            }
            continue;
        }
        let (dx, dy) = (x.summary.duration_s, y.summary.duration_s);
        if dx.max(dy) > 0.0 && (dx - dy).abs() / dx.max(dy) > 0.10 {
            scoped(format!(
                "durations {dx:.1}s vs {dy:.1}s differ by more than 10%"
            ));
        }
    }
}

fn same_target(a: &[ScenarioResult], b: &[ScenarioResult], say: &mut dyn FnMut(String)) {
    let (Some(x), Some(y)) = (a.first(), b.first()) else {
        return;
    };
    let (tx, ty) = (x.target.shown(), y.target.shown());
    if tx != ty {
        say(format!("targets {tx} vs {ty}"));
    }
    if x.target.method != y.target.method {
        say(format!(
            "methods {} vs {}",
            x.target.method, y.target.method
        ));
    }
}

fn same_load(a: &LoadInfo, b: &LoadInfo, say: &mut dyn FnMut(String)) {
    if a.model != b.model {
        say(format!("load models {} vs {}", a.model, b.model));
        return;
    }
    let stages = |l: &LoadInfo| -> Vec<String> {
        l.stages
            .iter()
            .map(|s| format!("{}s:{}", s.duration_s, s.target))
            .collect()
    };
    if stages(a) != stages(b) {
        say(format!(
            "stages {} vs {}",
            stages(a).join(","),
            stages(b).join(",")
        ));
    } else if a.model == model::LoadModel::Open && a.rate != b.rate {
        let r = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v}/s"));
        say(format!("rates {} vs {}", r(a.rate), r(b.rate)));
    } else if a.model == model::LoadModel::Closed
        && a.stages.is_empty()
        && a.connections != b.connections
    {
        say(format!(
            "connections {} vs {}",
            a.connections, b.connections
        ));
    }
}
