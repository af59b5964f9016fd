//! The `find` section's terminal form: the step table (live and by level), and the capacity
//! answer in the order it is read (capacity, throughput around the knee, how the search ended,
//! the USL fit, the diagnosis, the plain reading).

use results::find::{By, FindResult, KneeInfo, StepRow, Stop, FALL_PERCENT, GENERATOR_WAITED};
use results::fmt::{fmt_count, fmt_ms, fmt_period, fmt_rate, observed_value};
use std::fmt::Write;

/// The table header, printed before the first step (`held`: the levels are held event
/// streams, whose events get columns of their own).
pub fn step_header(by: By, observed: &[String], held: bool) -> String {
    let mut o = format!(
        "\n {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>5}",
        if by == By::Rate { "rate" } else { "conns" },
        "p50",
        "p75",
        "p90",
        "p99",
        // Successful answers a second, as the capacity and the throughput lines count them.
        "ok/s",
        "errors",
        "gen"
    );
    if held {
        let _ = write!(o, " {:>9} {:>8} {:>8}", "events/s", "gap p99", "dlv p99");
    }
    for name in observed {
        let _ = write!(o, " {:>9}", short(name));
    }
    o.push_str("  verdict\n");
    o
}

/// Column label, at most 9 characters: a known figure by its own short name (the host's
/// counters would all read `host list`), any other without its `srv ` or `host ` prefix.
fn short(name: &str) -> String {
    use model::metrics::{
        CPU_WAIT, CTX_INVOL, CTX_VOL, LISTEN_DROPS, LISTEN_OVERFLOWS, RETRANSMITS,
    };
    let known = [
        (LISTEN_OVERFLOWS, "ovflows/s"),
        (LISTEN_DROPS, "drops/s"),
        (RETRANSMITS, "retrans/s"),
        (CTX_VOL, "ctx vol/s"),
        (CTX_INVOL, "ctx inv/s"),
        (CPU_WAIT, "cpu wait"),
    ];
    if let Some((_, label)) = known.iter().find(|(n, _)| *n == name) {
        return (*label).to_string();
    }
    name.trim_start_matches("srv ")
        .trim_start_matches("host ")
        .chars()
        .take(9)
        .collect()
}

/// One table row, printed as soon as the step ends.
pub fn step_line(by: By, s: &StepRow, observed: &[String], knee: Option<&str>) -> String {
    // No answer at all: no latency to show (not 0 ms).
    let ms = |v: f64| {
        if s.p99 == 0.0 && s.mean == 0.0 {
            "-".to_string()
        } else {
            fmt_ms(v)
        }
    };
    let mut o = format!(
        " {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>4.0}%",
        by.cell(s.level),
        ms(s.p50),
        ms(s.p75),
        ms(s.p90),
        ms(s.p99),
        fmt_rate(s.ok_rps),
        fmt_count(s.errors),
        s.generator_cpu * 100.0
    );
    if let Some(h) = &s.held {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), fmt_ms);
        let _ = write!(
            o,
            " {:>9} {:>8} {:>8}",
            fmt_rate(h.events_per_s),
            opt(h.gap_p99_ms),
            opt(h.delivery_p99_ms)
        );
    }
    for name in observed {
        let v = s
            .observed
            .get(name)
            .map_or("-".to_string(), |v| observed_value(name, v.peak));
        let _ = write!(o, " {v:>9}");
    }
    // A partial step is neither: it was cut short and judged by no one.
    let verdict = match (s.pass, s.interrupted) {
        (true, _) => "pass".to_string(),
        (false, true) => format!("cut {}", s.reason),
        (false, false) => format!("FAIL {}", s.reason),
    };
    let _ = write!(o, "  {verdict}");
    if let Some(k) = knee {
        let _ = write!(o, "  <- knee: {k}");
    }
    o.push('\n');
    if let Some(g) = &s.little {
        let _ = writeln!(o, "          ^ {}", g.describe());
    }
    o
}

/// Whether the live table, in the order the steps ran, needs repeating by level: some step
/// ran below an earlier one (a bisection), or a step was run again; else it is the same
/// table and the knee is said below it.
pub fn needs_by_level(f: &FindResult) -> bool {
    !f.reruns.is_empty() || f.steps.windows(2).any(|w| w[1].level < w[0].level)
}

/// The steps again, by level, with the knee marked (the live table is in the order they ran).
pub fn by_level(f: &FindResult, observed: &[String]) -> String {
    let mut rows: Vec<&StepRow> = f.steps.iter().collect();
    rows.sort_by(|a, b| a.level.total_cmp(&b.level));
    let mut o = format!(
        "\n by level:{}",
        step_header(f.by, observed, f.held_streams)
    );
    for r in rows {
        let knee = f
            .knee
            .as_ref()
            .filter(|k| k.level == r.level)
            .map(|k| k.reason.as_str());
        o.push_str(&step_line(f.by, r, observed, knee));
    }
    o
}

/// A search whose first level (one connection, nothing queued) already broke a latency
/// objective: the service's own time per request, not load, is the limit, and no level can
/// meet it.
fn unloaded_hint(f: &FindResult) -> Option<String> {
    let Some(Stop::FirstFailed { from }) = &f.stop else {
        return None;
    };
    let from = *from;
    let first = f.steps.iter().find(|s| s.level == from && !s.interrupted)?;
    let latency = first.reason.split(", ").find(|r| {
        let r = r.trim_start();
        r.starts_with('p') || r.starts_with("mean")
    })?;
    (f.by == By::Connections && from <= 1.0 && first.ok_rps > 0.0).then(|| {
        format!(
            "at {}, with nothing queued, the service already broke {latency} (p50 {}): its own time per request is above the objective, so no level can meet it; look at the unloaded request itself (a profile, a trace) or the objective",
            f.by.describe(from),
            fmt_ms(first.p50)
        )
    })
}

/// What the host did to the search: failing steps run again because brink's workers waited
/// for a CPU others held, and a step it kept though that happened twice.
fn disturbed_lines(f: &FindResult) -> Vec<String> {
    let mut lines: Vec<String> = f
        .reruns
        .iter()
        .map(|r| {
            let wait = r.generator_wait.unwrap_or(0.0) * 100.0;
            format!(
                "Run again: {} failed while brink waited for a CPU {wait:.0}% of the step (other processes on this host held it); the search believed the second attempt",
                f.by.describe(r.level)
            )
        })
        .collect();
    for r in f.steps.iter().filter(|r| r.disturbed) {
        lines.push(format!(
            "DISTURBED: {} failed twice while brink waited for a CPU: this capacity may be the host's, not the service's (run the search on a quieter machine; compare refuses it without --allow-disturbed)",
            f.by.describe(r.level)
        ));
    }
    lines
}

/// Everything after the table, in the order a capacity answer is read: the capacity (the
/// throughput at the maximum sustainable level), how throughput behaved around the knee and
/// why it differs from the capacity, what more load only bought (queueing), how the search
/// ended, the USL fit (by connections only) and the diagnosis.
pub fn render_summary(f: &FindResult) -> String {
    let mut o = String::new();
    let _ = writeln!(o);
    for line in capacity_lines(f) {
        let _ = writeln!(o, " {line}");
    }
    let _ = writeln!(o, " Search ended: {}", f.stopped);
    if let Some(hint) = unloaded_hint(f) {
        let _ = writeln!(o, " Hint: {hint}");
    }
    for line in disturbed_lines(f) {
        let _ = writeln!(o, " {line}");
    }
    if let Some(w) = generator_waited(f) {
        let _ = writeln!(o, " Generator: WARNING {w}");
    }
    if let (None, By::Connections) = (&f.usl, f.by) {
        let levels = f.usl_points().len();
        let why = if let Some(every) = f.every_ms {
            format!(
                "each connection sends every {}, so throughput follows the pace, not the service",
                fmt_period(every)
            )
        } else if f.held_streams {
            "each connection holds a stream, so its requests are reconnects, not the service's throughput".to_string()
        } else if levels < 3 {
            format!("it needs steps with answers at 3 or more levels, and this search has {levels}")
        } else {
            "no curve of the law, with contention and coherency at 0 or more, follows the measured throughput better than its mean does".to_string()
        };
        let _ = writeln!(o, " USL fit: none ({why})");
    }
    if let (Some(u), By::Connections) = (&f.usl, f.by) {
        let peak = match (u.peak_concurrency, u.peak_rps) {
            (Some(n), Some(x)) => format!(
                "predicted peak N* = {n:.1} connections at {} req/s",
                fmt_rate(x)
            ),
            _ if u.plateau => "no peak: throughput held flat past where the curve would put one (a fixed limit such as a pool or a slot count, not crosstalk)".to_string(),
            _ => "no predicted peak (no coherency cost measured)".to_string(),
        };
        let _ = writeln!(
            o,
            " USL fit: sigma {:.4}, kappa {:.6}, {peak}, R^2 {:.3}{}",
            u.sigma,
            u.kappa,
            u.r2,
            if u.poor_fit {
                " (poor fit: read it with care)"
            } else {
                ""
            }
        );
    }
    if !f.diagnosis.is_empty() {
        let _ = writeln!(o, " Diagnosis:");
        for d in &f.diagnosis {
            let _ = writeln!(o, "   - {d}");
        }
    }
    if let Some(r) = reading(f) {
        let _ = writeln!(o, "\nreading it: {r}");
    }
    o
}

/// The steps whose brink waited for a CPU [`GENERATOR_WAITED`] of its time or more, in
/// words; their figures may be brink's.
pub fn generator_waited(f: &FindResult) -> Option<String> {
    let short: Vec<&StepRow> = f
        .steps
        .iter()
        .filter(|s| s.generator_wait.is_some_and(|w| w >= GENERATOR_WAITED))
        .collect();
    let worst = short.iter().max_by(|a, b| {
        let w = |x: &StepRow| x.generator_wait.unwrap_or(0.0);
        w(a).total_cmp(&w(b))
    })?;
    Some(format!(
        "brink's workers waited for a CPU other processes held in {} of {} steps, up to {:.0}% of their time (at {}): those steps' throughput may be lower and latency higher than the service's (run brink on cores the service and other work do not use)",
        short.len(),
        f.steps.len(),
        worst.generator_wait.unwrap_or(0.0) * 100.0,
        f.by.describe(worst.level)
    ))
}

/// Whole steps with successful responses, in level order.
fn measured(f: &FindResult) -> Vec<&StepRow> {
    let mut v: Vec<&StepRow> = f
        .steps
        .iter()
        .filter(|x| !x.interrupted && x.ok_rps > 0.0)
        .collect();
    v.sort_by(|a, b| a.level.total_cmp(&b.level));
    v
}

/// The capacity answer's first lines: one capacity (the throughput at the maximum
/// sustainable level), then how throughput behaved at and past the knee, in words that
/// agree with it, then what more load only bought.
pub fn capacity_lines(f: &FindResult) -> Vec<String> {
    let steps = measured(f);
    let mut out = vec![capacity_line(f)];
    let Some(peak) = steps
        .iter()
        .copied()
        .max_by(|a, b| a.ok_rps.total_cmp(&b.ok_rps))
    else {
        return out;
    };
    let top = steps.last().copied().unwrap_or(peak);
    if let Some(every) = f.every_ms {
        // Quoted where the capacity is (else the highest level run): a failing level's
        // throughput would read as one the service kept.
        let at = f
            .max_sustainable
            .as_ref()
            .and_then(|m| steps.iter().copied().find(|x| x.level == m.level))
            .unwrap_or(top);
        out.push(format!(
            "Throughput: each connection sends every {}, so throughput follows the connections held ({} req/s at {}): the objectives, not the throughput, find the limit",
            fmt_period(every),
            fmt_rate(at.ok_rps),
            f.by.describe(at.level)
        ));
        return out;
    }
    if f.held_streams {
        out.push(
            "Throughput: each connection holds one event stream, so requests/s counts only reconnects: the objectives on its events, not the throughput, find the limit".to_string(),
        );
        return out;
    }
    let Some(k) = &f.knee else {
        // Growing only when it was seen to grow: two levels or more, the highest passing
        // with throughput near its asked share (a failing top level says nothing of growth).
        let (at, rps) = (f.by.describe(top.level), fmt_rate(top.ok_rps));
        out.push(match (steps.len(), top.pass) {
            (0 | 1, _) => format!(
                "Throughput: {rps} req/s at {at}, the one level run: nothing yet says how it grows"
            ),
            (_, true) => format!(
                "Throughput: still growing at {at}, the highest level run ({rps} req/s): the service's limit is further on"
            ),
            (_, false) => format!(
                "Throughput: {rps} req/s at {at}, the highest level run, which failed its objectives: no knee among the levels run"
            ),
        });
        return out;
    };
    let knee = steps
        .iter()
        .copied()
        .find(|x| x.level == k.level)
        .unwrap_or(peak);
    out.push(throughput_line(f, peak, knee, top, k));
    if top.level > knee.level {
        let queues = if k.reason.starts_with("throughput stops growing") {
            "More load only queues"
        } else {
            "More load"
        };
        out.push(format!(
            "{queues}: at {} p99 is {} ({} at the knee) for {} req/s",
            f.by.describe(top.level),
            fmt_ms(top.p99),
            fmt_ms(knee.p99),
            fmt_rate(top.ok_rps)
        ));
    }
    out
}

/// `Capacity: 1,905 req/s (maximum sustainable: 29 connections with p99 < 50ms, bisected
/// to +-3%)`: the one figure to act on.
fn capacity_line(f: &FindResult) -> String {
    let Some(m) = &f.max_sustainable else {
        return "Capacity: none within the objectives (no level met them)".to_string();
    };
    let res = m.resolution.map_or(String::new(), |r| {
        // One decimal under 10%: a 1.5% gap is not "+-2%".
        if r < 0.1 {
            format!(", bisected to +-{:.1}%", r * 100.0)
        } else {
            format!(", bisected to +-{:.0}%", r * 100.0)
        }
    });
    // Paced connections' throughput is their pace: the capacity is the connections held.
    let capacity = match f.every_ms {
        Some(every) => format!(
            "{} held, each sending every {}",
            f.by.describe(m.level),
            fmt_period(every)
        ),
        None if f.held_streams => format!("{} held", f.by.describe(m.level)),
        None => format!("{} req/s", fmt_rate(m.rps)),
    };
    if let Some(Stop::AllPassed { to }) = &f.stop {
        // The search never found where the objectives break: a floor, not the limit. When
        // throughput had already stopped growing, more load only queues: raising --to finds
        // where the objectives break, not more throughput.
        let saturated = f
            .knee
            .as_ref()
            .filter(|k| k.reason.starts_with("throughput stops growing"));
        let next = match saturated {
            Some(k) => format!(
                "throughput stopped growing at {}, so raising --to finds where the objectives break, not more throughput",
                f.by.describe(k.level)
            ),
            None => "the limit is further on; raise --to to find it".to_string(),
        };
        return format!(
            "Capacity: at least {capacity} (every level up to --to {} met {}: {next})",
            f.by.describe(*to),
            m.slo.join(", ")
        );
    }
    if f.capacity_is_floor() {
        // The search was cut before it closed in: what passed is a floor.
        let failed = f
            .steps
            .iter()
            .filter(|s| !s.pass && !s.interrupted && s.level > m.level)
            .map(|s| s.level)
            .reduce(f64::min);
        let below = failed.map_or(String::new(), |l| {
            format!(", below {} which failed", f.by.describe(l))
        });
        return format!(
            "Capacity: at least {capacity} ({} met {}{below}; the search ended before it found the limit)",
            f.by.describe(m.level),
            m.slo.join(", ")
        );
    }
    match f.every_ms.map(|_| ()).or(f.held_streams.then_some(())) {
        Some(()) => format!(
            "Capacity: {capacity} (maximum sustainable with {}{res})",
            m.slo.join(", ")
        ),
        None => format!(
            "Capacity: {capacity} (maximum sustainable: {} with {}{res})",
            f.by.describe(m.level),
            m.slo.join(", ")
        ),
    }
}

/// How throughput behaved at the knee and past it, and why the capacity differs from the
/// peak when it does.
fn throughput_line(
    f: &FindResult,
    peak: &StepRow,
    knee: &StepRow,
    top: &StepRow,
    k: &KneeInfo,
) -> String {
    let lvl = |l: f64| f.by.describe(l);
    let fell = |x: &StepRow| (1.0 - x.ok_rps / peak.ok_rps) * 100.0;
    let mut line = if !k.reason.starts_with("throughput stops growing") {
        // A knee of latency: throughput may still have grown past it.
        format!(
            "Throughput: {} req/s at its highest ({}); latency's knee is at {} ({}).",
            fmt_rate(peak.ok_rps),
            lvl(peak.level),
            lvl(knee.level),
            k.reason
        )
    } else if top.level > knee.level && fell(top) >= FALL_PERCENT {
        let at = if peak.level == knee.level {
            format!("at {} (the knee: {})", lvl(knee.level), k.reason)
        } else {
            format!(
                "at {} (the knee is {}: {})",
                lvl(peak.level),
                lvl(knee.level),
                k.reason
            )
        };
        format!(
            "Throughput: peaks at {} req/s {at}, then falls: {} req/s at {} ({:.0}% less): past the knee more load costs throughput, not only latency.",
            fmt_rate(peak.ok_rps),
            fmt_rate(top.ok_rps),
            lvl(top.level),
            fell(top)
        )
    } else {
        format!(
            "Throughput: saturates at {} req/s at {} (the knee: {}); past it, it stays within {FALL_PERCENT:.0}% of its peak while latency grows.",
            fmt_rate(knee.ok_rps),
            lvl(knee.level),
            k.reason
        )
    };
    let Some(m) = &f.max_sustainable else {
        line.push_str(" No level met the objectives, so none of it is capacity.");
        return line;
    };
    if (1.0 - m.rps / peak.ok_rps) * 100.0 < FALL_PERCENT {
        return line;
    }
    let why = if m.level < peak.level {
        format!(
            "the peak comes only at {}, where the objectives no longer held",
            lvl(peak.level)
        )
    } else {
        format!(
            "the peak holds only near the knee, and throughput had fallen to it by {}, the most load that met the objectives",
            lvl(m.level)
        )
    };
    line.push_str(&format!(
        " The capacity is {} req/s, not the {} peak: {why}.",
        fmt_rate(m.rps),
        fmt_rate(peak.ok_rps)
    ));
    line
}

/// The plain explanation of a saturation: printed when throughput stopped growing at the
/// knee and the search went past it. It says whether throughput held (the service queues
/// what it cannot take at once) or fell (more load also cost throughput).
pub fn reading(f: &FindResult) -> Option<String> {
    let k = f.knee.as_ref()?;
    if !k.reason.starts_with("throughput stops growing") {
        return None;
    }
    let steps = measured(f);
    let top = steps.last().filter(|t| t.level > k.level)?;
    let peak = steps.iter().map(|x| x.ok_rps).fold(0.0, f64::max);
    // Little's law in the search's terms: connections held, or (by rate) requests in
    // flight, which the rate asked fills.
    let unit = match f.by {
        By::Connections => "connections in flight",
        By::Rate => "requests in flight",
    };
    let fell = (1.0 - top.ok_rps / peak) * 100.0;
    let held = if fell >= FALL_PERCENT {
        format!(
            "throughput fell from {} to {} req/s ({fell:.0}% less) by {}: past the knee the extra work costs the service throughput as well (contention for locks or CPU, connection handling, a full accept queue)",
            fmt_rate(peak),
            fmt_rate(top.ok_rps),
            f.by.describe(top.level)
        )
    } else {
        // The knee's figure, as the Throughput line gives it.
        let at_knee = steps
            .iter()
            .find(|x| x.level == k.level)
            .map_or(peak, |x| x.ok_rps);
        format!("throughput stays near {} req/s", fmt_rate(at_knee))
    };
    Some(format!(
        "past ~{} the service takes no more work at once, so extra requests only queue: {held}, while latency grows with the queue (Little's law: latency = {unit} / throughput). The maximum sustainable level is the longest queue the objectives allow.",
        f.by.describe(k.level)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::find::{Sustained, UslInfo};

    fn step(level: f64, ok_rps: f64, pass: bool) -> StepRow {
        StepRow {
            level,
            ok_rps,
            rps: ok_rps,
            pass,
            p50: 10.0,
            p99: 20.0,
            mean: 10.0,
            ..StepRow::default()
        }
    }

    fn search(by: By, steps: Vec<StepRow>, stop: Stop) -> FindResult {
        FindResult {
            by,
            steps,
            max_sustainable: None,
            knee: None,
            usl: None::<UslInfo>,
            diagnosis: Vec::new(),
            findings: Vec::new(),
            stopped: String::new(),
            stop: Some(stop),
            hooks: Vec::new(),
            captures: Vec::new(),
            reruns: Vec::new(),
            every_ms: None,
            held_streams: false,
        }
    }

    #[test]
    fn one_failing_level_says_nothing_of_growth() {
        let f = search(
            By::Rate,
            vec![step(300.0, 196.0, false)],
            Stop::FirstFailed { from: 300.0 },
        );
        let lines = capacity_lines(&f);
        assert_eq!(
            lines[1],
            "Throughput: 196 req/s at 300/s, the one level run: nothing yet says how it grows"
        );
        let two = search(
            By::Rate,
            vec![step(100.0, 100.0, true), step(300.0, 196.0, false)],
            Stop::Bisected {
                pass: 100.0,
                fail: 300.0,
            },
        );
        assert!(
            capacity_lines(&two)[1].contains("which failed its objectives"),
            "{:?}",
            capacity_lines(&two)
        );
        let grew = search(
            By::Rate,
            vec![step(100.0, 100.0, true), step(200.0, 200.0, true)],
            Stop::AllPassed { to: 200.0 },
        );
        assert!(capacity_lines(&grew)[1].starts_with("Throughput: still growing at 200/s"));
    }

    #[test]
    fn a_floor_past_a_saturated_knee_does_not_promise_more_throughput() {
        let mut f = search(
            By::Connections,
            vec![
                step(4.0, 192.0, true),
                step(8.0, 195.0, true),
                step(16.0, 196.0, true),
            ],
            Stop::AllPassed { to: 16.0 },
        );
        f.max_sustainable = Some(Sustained {
            level: 16.0,
            rps: 196.0,
            slo: vec!["p99 < 1s".into()],
            resolution: None,
        });
        f.knee = Some(KneeInfo {
            level: 4.0,
            reason: "throughput stops growing here".into(),
        });
        let line = capacity_line(&f);
        assert!(
            line.contains("throughput stopped growing at 4 connections"),
            "{line}"
        );
        assert!(!line.contains("raise --to to find it"), "{line}");
        // A rate search's reading speaks of requests in flight, never "req/s asked in flight".
        f.by = By::Rate;
        let read = reading(&f).expect("a reading");
        assert!(
            read.contains("latency = requests in flight / throughput"),
            "{read}"
        );
        f.by = By::Connections;
        let read = reading(&f).expect("a reading");
        assert!(
            read.contains("latency = connections in flight / throughput"),
            "{read}"
        );
    }

    #[test]
    fn a_fine_bisection_keeps_its_decimal() {
        let mut f = search(
            By::Rate,
            vec![step(197.0, 197.0, true)],
            Stop::Bisected {
                pass: 197.0,
                fail: 200.0,
            },
        );
        f.max_sustainable = Some(Sustained {
            level: 197.0,
            rps: 197.0,
            slo: vec!["p99 < 1s".into()],
            resolution: Some(0.015),
        });
        assert!(
            capacity_line(&f).ends_with(", bisected to +-1.5%)"),
            "{}",
            capacity_line(&f)
        );
        f.max_sustainable.as_mut().unwrap().resolution = Some(0.25);
        assert!(
            capacity_line(&f).ends_with(", bisected to +-25%)"),
            "{}",
            capacity_line(&f)
        );
    }
}
