//! The rows of a comparison: per scenario the resampled verdict metrics, then figures for
//! context (max, connect time, server figures, each gRPC code's share), per-request rows, and for searches the maximum
//! sustainable level and the knee.

use crate::steady::{self, Figures, Indexed};
use crate::{
    Comparison, Decide, Row, Tolerances, Unit, Verdict, BLOCK, FEW_SECONDS, MIN_SECONDS, RESAMPLES,
    SEED,
};
use results::find::FindResult;
use results::{RunResult, ScenarioResult};
use stats::rng::Rng;

/// Which way is worse for a metric, and how its change is measured.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Relative change; higher is worse; changes under the histograms' resolution never count.
    Latency,
    /// Relative change; lower is worse.
    Throughput,
    /// Absolute change of a share; higher is worse.
    Errors,
}

struct Metric {
    name: &'static str,
    kind: Kind,
    get: fn(&Figures) -> f64,
    tolerance: fn(&Tolerances) -> f64,
}

const METRICS: [Metric; 8] = [
    Metric {
        name: "ok req/s",
        kind: Kind::Throughput,
        get: |f| f.ok_rps,
        tolerance: |t| t.throughput,
    },
    Metric {
        name: "error rate",
        kind: Kind::Errors,
        get: |f| f.error_rate,
        tolerance: |t| t.errors,
    },
    Metric {
        name: "p50",
        kind: Kind::Latency,
        get: |f| f.p50,
        tolerance: |t| t.p50,
    },
    Metric {
        name: "p90",
        kind: Kind::Latency,
        get: |f| f.p90,
        tolerance: |t| t.p90,
    },
    Metric {
        name: "p95",
        kind: Kind::Latency,
        get: |f| f.p95,
        tolerance: |t| t.p95,
    },
    Metric {
        name: "p99",
        kind: Kind::Latency,
        get: |f| f.p99,
        tolerance: |t| t.p99,
    },
    Metric {
        name: "p99.9",
        kind: Kind::Latency,
        get: |f| f.p999,
        tolerance: |t| t.p999,
    },
    Metric {
        name: "mean",
        kind: Kind::Latency,
        get: |f| f.mean,
        tolerance: |t| t.mean,
    },
];

/// Compares `before` with `after` (each: file name and result); `mismatches` are the
/// differences `--allow-mismatch` let through.
pub fn compare(
    before: &[(String, RunResult)],
    after: &[(String, RunResult)],
    tol: &Tolerances,
    decide: &Decide,
    mismatches: Vec<String>,
) -> Comparison {
    let mut c = Comparison {
        schema: crate::SCHEMA,
        before: before.iter().map(|(n, _)| n.clone()).collect(),
        after: after.iter().map(|(n, _)| n.clone()).collect(),
        steady_seconds: Vec::new(),
        tolerances: tol.clone(),
        rows: Vec::new(),
        mismatches,
        notes: Vec::new(),
        regressed: false,
    };
    match (before.first(), after.first()) {
        (Some((_, b)), Some((_, a))) if b.find.is_some() || a.find.is_some() => {
            if let (Some(fb), Some(fa)) = (&b.find, &a.find) {
                searches(fb, fa, &mut c);
            }
            if before.len() > 1 || after.len() > 1 {
                c.notes
                    .push("several searches on a side: the first of each is compared".into());
            }
        }
        (Some((_, b)), _) => {
            for s in &b.scenarios {
                scenario(&s.name, before, after, (tol, decide), &mut c);
            }
        }
        _ => {}
    }
    c.regressed = c
        .rows
        .iter()
        .any(|r| r.decides && r.verdict == Verdict::Regressed);
    c
}

/// Every result's scenario named `name`.
fn named<'a>(side: &'a [(String, RunResult)], name: &str) -> Vec<&'a ScenarioResult> {
    side.iter()
        .filter_map(|(_, r)| r.scenarios.iter().find(|s| s.name == name))
        .collect()
}

fn scenario(
    name: &str,
    before: &[(String, RunResult)],
    after: &[(String, RunResult)],
    (tol, decide): (&Tolerances, &Decide),
    c: &mut Comparison,
) {
    let (sb, sa) = (named(before, name), named(after, name));
    if sa.is_empty() {
        c.notes
            .push(format!("scenario {name}: not in the after results"));
        return;
    }
    let secs = |v: &[&ScenarioResult]| -> Vec<steady::Second> {
        v.iter().flat_map(|s| steady::seconds(s)).collect()
    };
    let (b, a) = (secs(&sb), secs(&sa));
    c.steady_seconds.push((name.to_string(), b.len(), a.len()));
    let idx = steady::index(&[&b, &a]);
    let mut scratch = vec![0; idx[0].values.len()];
    let all = |x: &Indexed, s: &mut Vec<u64>| {
        let picks: Vec<usize> = (0..x.requests.len()).collect();
        steady::figures(x, &picks, s)
    };
    let (fb, fa) = (all(&idx[0], &mut scratch), all(&idx[1], &mut scratch));
    let n = b.len().min(a.len());
    let enough = n >= FEW_SECONDS;
    // Few seconds: single seconds are resampled and the interval widened for so few.
    let (block, widen) = if n >= MIN_SECONDS {
        (BLOCK, 1.0)
    } else {
        (1, small_sample(n))
    };
    let draws = if enough {
        resample(&idx[0], &idx[1], block, &mut scratch)
    } else {
        Vec::new()
    };
    let limited = limited_side(&sb, &sa);
    for m in &METRICS {
        let (vb, va) = ((m.get)(&fb), (m.get)(&fa));
        let mut row = row(name, None, m.name, unit(m.kind), Some(vb), Some(va));
        row.change = change(m.kind, vb, va);
        row.change_text = words(m.kind, vb, va);
        row.decides = decide.has(m.name);
        row.verdict = if enough {
            let changes: Vec<f64> = draws
                .iter()
                .filter_map(|(xb, xa)| change(m.kind, (m.get)(xb), (m.get)(xa)))
                .collect();
            row.interval = interval(changes).map(|i| bounded(m.kind, wider(i, row.change, widen)));
            judge(
                m.kind,
                row.interval,
                (m.get)(&fb),
                (m.get)(&fa),
                (m.tolerance)(tol),
            )
        } else {
            Verdict::InsufficientData
        };
        // A generator short of CPU makes its side look worse than the service (less
        // throughput, slower), never better: only a difference in that direction may be brink's.
        let brinks = match row.verdict {
            Verdict::Regressed => limited.after.is_some(),
            Verdict::Improved => limited.before.is_some(),
            _ => false,
        };
        if brinks {
            row.verdict = Verdict::GeneratorLimited;
        }
        c.rows.push(row);
    }
    let mut max = row(name, None, "max", Unit::Ms, Some(fb.max), Some(fa.max));
    max.change_text = words(Kind::Latency, fb.max, fa.max);
    max.change = change(Kind::Latency, fb.max, fa.max);
    c.rows.push(max);
    context(name, &sb, &sa, c);
    if !enough {
        c.notes.push(format!(
            "scenario {name}: {} and {} steady seconds; a verdict needs at least {FEW_SECONDS} on each side (run longer)",
            b.len(),
            a.len()
        ));
    } else if n < MIN_SECONDS {
        c.notes.push(format!(
            "scenario {name}: {} and {} steady seconds: single seconds resampled and the interval widened {widen:.1}x for so few ({MIN_SECONDS} or more a side give a firmer verdict)",
            b.len(),
            a.len()
        ));
    }
    for (side, why, looks) in [
        ("before", &limited.before, "an improvement"),
        ("after", &limited.after, "a regression"),
    ] {
        if let Some(why) = why {
            c.notes.push(format!(
                "scenario {name}: the {side} run's generator was limited ({why}): {looks} may be brink's, so none is called the service's (give brink more CPU and run again)"
            ));
        }
    }
}

/// Each side's generator limit, in words, when its run said it had one.
struct Limited {
    before: Option<String>,
    after: Option<String>,
}

/// Which sides' generators said they limited their runs, and why.
fn limited_side(sb: &[&ScenarioResult], sa: &[&ScenarioResult]) -> Limited {
    let why = |v: &[&ScenarioResult]| {
        v.iter()
            .filter_map(|s| s.generator.as_ref())
            .find(|g| g.limited)
            .map(|g| g.why.clone().unwrap_or_default())
    };
    Limited {
        before: why(sb),
        after: why(sa),
    }
}

/// How much wider a 95% interval from `n` resampled seconds is made: the Student t quantile
/// over the normal one, and the bootstrap's n/(n-1) variance bias; 1 from [`MIN_SECONDS`].
fn small_sample(n: usize) -> f64 {
    // t(0.975, df) for df = 1..=30.
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if !(2..MIN_SECONDS).contains(&n) {
        return 1.0;
    }
    let t = T.get(n - 2).copied().unwrap_or(2.03);
    t / 1.96 * (n as f64 / (n - 1) as f64).sqrt()
}

/// An interval of a change kept to what the change can be: a latency or a throughput cannot
/// fall by more than 100% (widening for few seconds can reach past it), a share moves by at
/// most 100 points either way.
fn bounded(kind: Kind, (lo, hi): (f64, f64)) -> (f64, f64) {
    match kind {
        Kind::Latency | Kind::Throughput => (lo.max(-1.0), hi.max(-1.0)),
        Kind::Errors => (lo.clamp(-1.0, 1.0), hi.clamp(-1.0, 1.0)),
    }
}

/// `interval` widened `by` around the change itself.
fn wider((lo, hi): (f64, f64), change: Option<f64>, by: f64) -> (f64, f64) {
    let mid = change.unwrap_or((lo + hi) / 2.0);
    (
        mid - (mid - lo).max(0.0) * by,
        mid + (hi - mid).max(0.0) * by,
    )
}

/// Reads one figure of a request's summary.
type Pick = fn(&results::SummaryJson) -> f64;
type MaybePick = fn(&results::SummaryJson) -> Option<f64>;

/// Connection figures shown for context, when both sides measured them: connect time, and a
/// WebSocket's upgrade time, the share of its connections the server ended, its delivery
/// delay.
const CONNECTIONS: [(&str, Unit, MaybePick); 4] = [
    ("connect p99", Unit::Ms, |s| {
        s.connect_ms.as_ref().map(|c| c.p99)
    }),
    ("upgrade p99", Unit::Ms, |s| {
        s.websocket.as_ref()?.upgrade_ms.as_ref().map(|u| u.p99)
    }),
    ("ended by the server", Unit::Share, |s| {
        let w = s.websocket.as_ref()?;
        (w.upgrades > 0).then(|| w.unexpected_closes as f64 / w.upgrades as f64)
    }),
    ("delivery p99", Unit::Ms, |s| {
        s.websocket.as_ref()?.delay_ms.as_ref().map(|d| d.p99)
    }),
];

/// Figures shown for context: connections, server figures, and per request.
fn context(name: &str, sb: &[&ScenarioResult], sa: &[&ScenarioResult], c: &mut Comparison) {
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    for (metric, unit, pick) in CONNECTIONS {
        let side =
            |v: &[&ScenarioResult]| mean(v.iter().filter_map(|s| pick(&s.summary)).collect());
        if let (Some(b), Some(a)) = (side(sb), side(sa)) {
            c.rows.push(info(name, None, metric, unit, b, a));
        }
    }
    let first = sb
        .first()
        .map(|s| s.observed.keys().cloned().collect::<Vec<_>>());
    for key in first.unwrap_or_default() {
        let peak = |v: &[&ScenarioResult]| {
            mean(
                v.iter()
                    .filter_map(|s| s.observed.get(&key).map(|o| o.peak))
                    .collect(),
            )
        };
        if let (Some(b), Some(a)) = (peak(sb), peak(sa)) {
            c.rows.push(info(
                name,
                None,
                &format!("{key} peak"),
                Unit::Observed,
                b,
                a,
            ));
        }
    }
    codes(name, sb, sa, c);
    let Some(first) = sb.first() else {
        return;
    };
    for q in &first.requests {
        let pick = |v: &[&ScenarioResult], f: Pick| {
            mean(
                v.iter()
                    .filter_map(|s| s.requests.iter().find(|r| r.name == q.name))
                    .map(|r| f(&r.summary))
                    .collect(),
            )
        };
        let figures: [(&str, Unit, Pick); 4] = [
            ("ok req/s", Unit::PerSecond, |s| s.ok_rps),
            ("error rate", Unit::Share, |s| 1.0 - s.success_rate),
            ("p50", Unit::Ms, |s| s.latency_ms.p50),
            ("p99", Unit::Ms, |s| s.latency_ms.p99),
        ];
        for (metric, unit, f) in figures {
            if let (Some(b), Some(a)) = (pick(sb, f), pick(sa, f)) {
                c.rows.push(info(name, Some(&q.name), metric, unit, b, a));
            }
        }
    }
}

/// gRPC: each status code other than OK seen on either side, as its share of the calls.
fn codes(name: &str, sb: &[&ScenarioResult], sa: &[&ScenarioResult], c: &mut Comparison) {
    let seen: std::collections::BTreeSet<&String> = sb
        .iter()
        .chain(sa)
        .flat_map(|s| s.summary.grpc_status.keys())
        .filter(|code| code.as_str() != "OK")
        .collect();
    let share = |v: &[&ScenarioResult], code: &str| {
        let shares: Vec<f64> = v
            .iter()
            .filter(|s| s.summary.requests > 0)
            .map(|s| {
                s.summary.grpc_status.get(code).copied().unwrap_or(0) as f64
                    / s.summary.requests as f64
            })
            .collect();
        (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64)
    };
    for code in seen {
        if let (Some(b), Some(a)) = (share(sb, code), share(sa, code)) {
            c.rows
                .push(info(name, None, &format!("code {code}"), Unit::Share, b, a));
        }
    }
}

fn unit(k: Kind) -> Unit {
    match k {
        Kind::Latency => Unit::Ms,
        Kind::Throughput => Unit::PerSecond,
        Kind::Errors => Unit::Share,
    }
}

fn row(
    scenario: &str,
    request: Option<&str>,
    metric: &str,
    unit: Unit,
    before: Option<f64>,
    after: Option<f64>,
) -> Row {
    Row {
        scenario: scenario.to_string(),
        request: request.map(str::to_string),
        metric: metric.to_string(),
        unit,
        before,
        after,
        change: None,
        change_text: String::new(),
        interval: None,
        verdict: Verdict::Info,
        decides: false,
    }
}

/// A row for context: before, after and the change, no verdict.
fn info(scenario: &str, request: Option<&str>, metric: &str, unit: Unit, b: f64, a: f64) -> Row {
    let kind = match unit {
        Unit::Share => Kind::Errors,
        Unit::PerSecond => Kind::Throughput,
        _ => Kind::Latency,
    };
    let mut r = row(scenario, request, metric, unit, Some(b), Some(a));
    r.change = change(kind, b, a);
    r.change_text = match unit {
        Unit::Observed | Unit::Count | Unit::Level => relative_words(b, a),
        _ => words(kind, b, a),
    };
    r
}

/// The change of a metric: relative for latency and throughput, absolute for the error rate.
fn change(kind: Kind, before: f64, after: f64) -> Option<f64> {
    match kind {
        Kind::Errors => Some(after - before),
        _ if before > 0.0 => Some(after / before - 1.0),
        _ => None,
    }
}

fn relative_words(before: f64, after: f64) -> String {
    if before <= 0.0 {
        return String::new();
    }
    let r = after / before - 1.0;
    if r == 0.0 {
        "same".into()
    } else {
        format!("{:+.1}%", r * 100.0)
    }
}

/// The change in words: `27.5% slower`, `1.8x throughput`, `+0.30 pp errors`.
fn words(kind: Kind, before: f64, after: f64) -> String {
    match kind {
        Kind::Errors => {
            let pp = (after - before) * 100.0;
            if pp.abs() < 0.005 {
                "same".into()
            } else {
                format!("{pp:+.2} pp errors")
            }
        }
        _ if before <= 0.0 => String::new(),
        Kind::Latency => {
            let ratio = after / before;
            let r = (ratio - 1.0) * 100.0;
            if ratio >= 2.0 {
                format!("{ratio:.1}x slower")
            } else if ratio > 0.0 && ratio <= 0.5 {
                format!("{:.1}x faster", 1.0 / ratio)
            } else if r.abs() < 0.05 {
                "same".into()
            } else if r > 0.0 {
                format!("{r:.1}% slower")
            } else {
                format!("{:.1}% faster", -r)
            }
        }
        Kind::Throughput => {
            let ratio = after / before;
            if ratio >= 1.5 {
                format!("{ratio:.1}x throughput")
            } else if ratio > 0.0 && ratio <= 1.0 / 1.5 {
                format!("{:.1}x less throughput", 1.0 / ratio)
            } else if (ratio - 1.0).abs() < 0.0005 {
                "same".into()
            } else {
                format!("{:+.1}% throughput", (ratio - 1.0) * 100.0)
            }
        }
    }
}

/// `RESAMPLES` pairs of resampled figures (before, after).
fn resample(
    b: &Indexed,
    a: &Indexed,
    block: usize,
    scratch: &mut [u64],
) -> Vec<(Figures, Figures)> {
    let mut rng = Rng::new(SEED);
    let mut picks = Vec::new();
    (0..RESAMPLES)
        .map(|_| {
            blocks(b.requests.len(), block, &mut rng, &mut picks);
            let fb = steady::figures(b, &picks, scratch);
            blocks(a.requests.len(), block, &mut rng, &mut picks);
            let fa = steady::figures(a, &picks, scratch);
            (fb, fa)
        })
        .collect()
}

/// A circular block resample of `n` seconds into `picks`: blocks of `block` consecutive
/// seconds (wrapping around) at random starts, until `n` seconds are drawn.
fn blocks(n: usize, block: usize, rng: &mut Rng, picks: &mut Vec<usize>) {
    picks.clear();
    while picks.len() < n {
        let start = rng.below(n as u64) as usize;
        for j in 0..block {
            if picks.len() == n {
                break;
            }
            picks.push((start + j) % n);
        }
    }
}

/// The 2.5% and 97.5% quantiles of `changes`.
fn interval(mut changes: Vec<f64>) -> Option<(f64, f64)> {
    if changes.is_empty() {
        return None;
    }
    changes.sort_by(f64::total_cmp);
    let at = |q: f64| changes[((q * changes.len() as f64) as usize).min(changes.len() - 1)];
    Some((at(0.025), at(0.975)))
}

/// The verdict from the interval of the change, turned so that positive is worse.
fn judge(kind: Kind, interval: Option<(f64, f64)>, before: f64, after: f64, t: f64) -> Verdict {
    let Some((lo, hi)) = interval else {
        return Verdict::Inconclusive;
    };
    let (worse_lo, worse_hi) = match kind {
        Kind::Throughput => (-hi, -lo),
        _ => (lo, hi),
    };
    let v = if worse_lo > t {
        Verdict::Regressed
    } else if worse_hi < -t {
        Verdict::Improved
    } else if worse_lo >= -t && worse_hi <= t {
        Verdict::Unchanged
    } else {
        Verdict::Inconclusive
    };
    let untold = kind == Kind::Latency && (after - before).abs() < resolution(before, after);
    if untold && v != Verdict::Inconclusive {
        return Verdict::Unchanged;
    }
    v
}

/// The smallest latency change (ms) that can be told at all: two steps of the histograms'
/// resolution (three significant digits, whole microseconds) at the larger figure. It scales
/// with the figures, so a service answering in 0.07 ms can regress to 0.8 ms.
fn resolution(before: f64, after: f64) -> f64 {
    (before.max(after) * 0.002).max(0.002)
}

/// Two searches: the maximum sustainable level (deciding), its throughput, and the knee.
fn searches(b: &FindResult, a: &FindResult, c: &mut Comparison) {
    let name = "search";
    let level = |f: &FindResult| f.max_sustainable.as_ref().map(|m| m.level);
    let mut r = row(
        name,
        None,
        "max sustainable",
        Unit::Level,
        level(b),
        level(a),
    );
    if let (Some(x), Some(y)) = (level(b), level(a)) {
        r.change = Some(y / x - 1.0);
        r.change_text = relative_words(x, y);
    }
    r.verdict = search_verdict(b, a);
    r.decides = true;
    c.rows.push(r);
    let rps = |f: &FindResult| f.max_sustainable.as_ref().map(|m| m.rps);
    if let (Some(x), Some(y)) = (rps(b), rps(a)) {
        c.rows
            .push(info(name, None, "ok req/s at max", Unit::PerSecond, x, y));
    }
    let knee = |f: &FindResult| f.knee.as_ref().map(|k| k.level);
    if let (Some(x), Some(y)) = (knee(b), knee(a)) {
        c.rows.push(info(name, None, "knee", Unit::Level, x, y));
    }
}

/// A search knows its capacity between its last pass and its first failure above it.
fn search_verdict(b: &FindResult, a: &FindResult) -> Verdict {
    let known = |f: &FindResult| {
        f.max_sustainable.as_ref().map(|m| {
            let fail = m.resolution.map_or(f64::INFINITY, |r| m.level * (1.0 + r));
            (m.level, fail)
        })
    };
    match (known(b), known(a)) {
        (Some((pass_b, _)), Some((_, fail_a))) if fail_a <= pass_b => Verdict::Regressed,
        (Some((_, fail_b)), Some((pass_a, _))) if pass_a >= fail_b => Verdict::Improved,
        (Some(_), Some(_)) => Verdict::Unchanged,
        (Some(_), None) => Verdict::Regressed,
        (None, Some(_)) => Verdict::Improved,
        (None, None) => Verdict::Unchanged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_interval_and_the_tolerance() {
        let t = 0.05;
        let v = |kind, lo, hi, b, a| judge(kind, Some((lo, hi)), b, a, t);
        assert_eq!(v(Kind::Latency, 0.10, 0.30, 10.0, 12.0), Verdict::Regressed);
        assert_eq!(
            v(Kind::Latency, -0.30, -0.10, 12.0, 10.0),
            Verdict::Improved
        );
        assert_eq!(
            v(Kind::Latency, -0.04, 0.04, 10.0, 10.1),
            Verdict::Unchanged
        );
        assert_eq!(
            v(Kind::Latency, 0.02, 0.09, 10.0, 10.5),
            Verdict::Inconclusive
        );
        // Under a millisecond a clear change is still a change: 0.07 ms to 0.8 ms regressed.
        assert_eq!(v(Kind::Latency, 0.50, 0.70, 1.0, 1.6), Verdict::Regressed);
        assert_eq!(
            v(Kind::Latency, 7.69, 12.34, 0.075, 0.80),
            Verdict::Regressed
        );
        assert_eq!(
            v(Kind::Latency, -0.92, -0.88, 0.80, 0.075),
            Verdict::Improved
        );
        // Below the histograms' resolution nothing is told, however the interval reads.
        assert_eq!(
            v(Kind::Latency, 0.5, 0.7, 0.001, 0.0015),
            Verdict::Unchanged
        );
        // Throughput: less is worse.
        assert_eq!(
            v(Kind::Throughput, -0.30, -0.10, 100.0, 80.0),
            Verdict::Regressed
        );
        assert_eq!(
            v(Kind::Throughput, 0.10, 0.30, 80.0, 100.0),
            Verdict::Improved
        );
        // Error rate in absolute share: +0.2 to +0.4 pp against a 0.1 pp tolerance.
        assert_eq!(
            judge(Kind::Errors, Some((0.002, 0.004)), 0.0, 0.003, 0.001),
            Verdict::Regressed
        );
    }

    #[test]
    fn changes_read_as_words() {
        assert_eq!(words(Kind::Latency, 40.0, 51.0), "27.5% slower");
        assert_eq!(words(Kind::Latency, 51.0, 40.0), "21.6% faster");
        assert_eq!(words(Kind::Latency, 0.07, 0.80), "11.4x slower");
        assert_eq!(words(Kind::Latency, 0.80, 0.07), "11.4x faster");
        assert_eq!(words(Kind::Throughput, 100.0, 180.0), "1.8x throughput");
        assert_eq!(words(Kind::Throughput, 100.0, 50.0), "2.0x less throughput");
        assert_eq!(words(Kind::Throughput, 100.0, 97.0), "-3.0% throughput");
        assert_eq!(words(Kind::Errors, 0.001, 0.004), "+0.30 pp errors");
        assert_eq!(words(Kind::Errors, 0.0, 0.0), "same");
    }

    #[test]
    fn block_resamples_have_the_side_s_length_and_runs_of_five() {
        let mut rng = Rng::new(1);
        let mut picks = Vec::new();
        blocks(42, BLOCK, &mut rng, &mut picks);
        assert_eq!(picks.len(), 42);
        for chunk in picks.chunks(BLOCK).filter(|c| c.len() == BLOCK) {
            for w in chunk.windows(2) {
                assert_eq!(w[1], (w[0] + 1) % 42);
            }
        }
    }

    fn search(level: Option<f64>, resolution: Option<f64>) -> FindResult {
        FindResult {
            by: results::find::By::Connections,
            steps: Vec::new(),
            max_sustainable: level.map(|level| results::find::Sustained {
                level,
                rps: level * 100.0,
                slo: Vec::new(),
                resolution,
            }),
            knee: None,
            usl: None,
            diagnosis: Vec::new(),
            findings: Vec::new(),
            stopped: String::new(),
            stop: None,
            hooks: Vec::new(),
            captures: Vec::new(),
            reruns: Vec::new(),
            every_ms: None,
            held_streams: false,
        }
    }

    #[test]
    fn a_search_regresses_only_beyond_what_it_could_resolve() {
        let v = |b: (Option<f64>, Option<f64>), a: (Option<f64>, Option<f64>)| {
            search_verdict(&search(b.0, b.1), &search(a.0, a.1))
        };
        // Before: passes 20, fails 21. After: passes 16, fails 18 (<= 20): regressed.
        let r = |l: f64, fail: f64| (Some(l), Some(fail / l - 1.0));
        assert_eq!(v(r(20.0, 21.0), r(16.0, 18.0)), Verdict::Regressed);
        // After passes 19, fails 21: within what the searches resolve.
        assert_eq!(v(r(20.0, 21.0), r(19.0, 21.0)), Verdict::Unchanged);
        assert_eq!(v(r(16.0, 18.0), r(20.0, 21.0)), Verdict::Improved);
        // Nothing passes any more.
        assert_eq!(v(r(20.0, 21.0), (None, None)), Verdict::Regressed);
        // Every level passed before (no failure seen): the after search cannot beat it.
        assert_eq!(
            v((Some(64.0), None), (Some(64.0), None)),
            Verdict::Unchanged
        );
    }

    #[test]
    fn few_seconds_widen_the_interval_by_the_small_sample_factor() {
        // Nine seconds a side: t(0.975, 8) / 1.96 x sqrt(9/8).
        assert!((small_sample(9) - 2.306 / 1.96 * (9.0f64 / 8.0).sqrt()).abs() < 1e-9);
        assert!(small_sample(3) > small_sample(9) && small_sample(9) > 1.0);
        assert_eq!(small_sample(MIN_SECONDS), 1.0);
        // Around the change itself, each side by the factor.
        let (lo, hi) = wider((0.1, 0.3), Some(0.2), 2.0);
        assert!(lo.abs() < 1e-12 && (hi - 0.4).abs() < 1e-12, "{lo} {hi}");
        let (lo, hi) = wider((0.1, 0.3), Some(0.2), 1.0);
        assert!(
            (lo - 0.1).abs() < 1e-12 && (hi - 0.3).abs() < 1e-12,
            "{lo} {hi}"
        );
    }

    #[test]
    fn the_interval_holds_the_middle_95_percent() {
        let v: Vec<f64> = (0..1000).map(|i| i as f64).collect();
        assert_eq!(interval(v), Some((25.0, 975.0)));
        assert_eq!(interval(Vec::new()), None);
    }
}
