//! Turning a search's figures into short hints, each quoting the numbers behind it. The rules,
//! in the order they are reported:
//!
//! * **stuck**: a failing step after which the health probe got no answer within `--recovery`
//!   (as when a service deadlocks under load and needs a restart);
//! * **generator-bound**: brink's own worker threads were >= 90% busy during a step, so that
//!   step measured brink, not the service;
//! * **rate-limited**: >= 1% of the first failing step's responses were 429 (a gateway or the service throttling);
//! * **connections not opening**: connect failures in the first failing step while the service
//!   still answers its probe (listen backlog, accept rate, or brink's open-file limit);
//! * **slow connects**: connect p99 of 900 ms or more in the first failing step (a SYN dropped by
//!   a full listen queue is retried after 1 s, and the request waits for it);
//! * **overload errors**: 5xx responses or timeouts in the first failing step;
//! * **CPU-bound** / **not CPU-bound** (needs server CPU from `--observe`, in % of one core):
//!   at the knee, CPU at least 80% and at least 90% of the search's peak (as when a model server's pods
//!   need more CPU) versus CPU under 60% (the cause is elsewhere: pools, locks, connection
//!   handling or the network path, as when a container network bridge was the limit);
//! * **queueing**: throughput flat while latency grows, without server metrics to say why;
//! * **CPU-throttled** (cgroup `cpu.stat` or cAdvisor's CFS counters): at the knee (or the
//!   first failing step) >= 10% of the CPU periods were throttled: a CPU quota is the limit
//!   even when the CPU figure looks low;
//! * **accept queue overflow**: this host's listen queues overflowed during the first
//!   failing step (`/proc/net/netstat`);
//! * **retransmissions**: TCP retransmitted during the first failing step and p99 reached
//!   200 ms or more (the minimum retransmission timeout);
//! * **token streams** ([`crate::tokens`]): from the lowest step to the first failing one, the
//!   time to the first token grew (streams queue at the server) or the time between tokens
//!   (decoding slows with the batch).

pub use crate::facts::StepFacts;
use results::find::{Finding, KneeInfo};
use stats::ErrorKind;

const SERVER_CPU: &str = model::metrics::CPU;
/// Share of throttled CPU periods (%) that makes a CPU quota the finding.
const THROTTLED_FINDING: f64 = 10.0;
/// The minimum TCP retransmission timeout, ms.
const MIN_RTO_MS: f64 = 200.0;
/// A connect this slow (ms) waited for a retransmitted SYN (the first retry is after 1 s).
const SYN_RETRY_MS: f64 = 900.0;

/// The findings of a search whose knee (if any) is `knee`, in the order above.
pub fn diagnose(knee: Option<&KneeInfo>, steps: &[StepFacts]) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(s) = steps.iter().find(|s| s.stuck) {
        out.push(Finding::Stuck {
            level: s.row.level,
            ok: s.steady.ok,
            attempts: s.steady.requests,
        });
    }
    if let Some(s) = steps
        .iter()
        .find(|s| crate::generator_limited(s.row.generator_cpu, s.row.generator_wait))
    {
        out.push(Finding::GeneratorBound {
            level: s.row.level,
            busy_percent: s.row.generator_cpu * 100.0,
            waiting_percent: s.row.generator_wait.map(|w| w * 100.0),
        });
    }
    let first_fail = steps
        .iter()
        .filter(|s| !s.row.pass)
        .min_by(|a, b| a.row.level.total_cmp(&b.row.level));
    if let Some(s) = first_fail {
        failing_step(s, &mut out);
        out.extend(crate::tokens::token_streams(s, steps));
    }
    let judged = knee
        .and_then(|k| steps.iter().find(|s| s.row.level == k.level))
        .or(first_fail);
    let late = judged.and_then(generator_late);
    if let Some(f) = late.clone() {
        out.push(f);
    }
    if let (Some(k), None) = (knee, &late) {
        out.push(at_the_knee(k, steps));
    }
    if let Some(s) = judged {
        throttled(s, &mut out);
        starved(s, &mut out);
    }
    out
}

/// The service kept waiting for a CPU at `s`: the host is oversubscribed.
fn starved(s: &StepFacts, out: &mut Vec<Finding>) {
    let Some(w) = s.row.observed.get(model::metrics::CPU_WAIT) else {
        return;
    };
    if w.mean >= results::STARVED_WAIT_PERCENT {
        out.push(Finding::CpuStarved {
            level: s.row.level,
            waiting_percent: w.mean,
            cpu_percent: s.row.observed.get(SERVER_CPU).map_or(0.0, |c| c.mean),
        });
    }
}

/// A CPU quota throttling the service at `s`.
fn throttled(s: &StepFacts, out: &mut Vec<Finding>) {
    let Some(t) = s.row.observed.get(model::metrics::THROTTLED) else {
        return;
    };
    if t.mean >= THROTTLED_FINDING {
        out.push(Finding::CpuThrottled {
            level: s.row.level,
            throttled_percent: t.mean,
            cpu_cores: s
                .row
                .observed
                .get(SERVER_CPU)
                .map_or(0.0, |c| c.mean / 100.0),
        });
    }
}

/// What the first failing step's errors say.
fn failing_step(s: &StepFacts, out: &mut Vec<Finding>) {
    let b = &s.steady;
    let level = s.row.level;
    let n429 = b.status.get(429);
    if n429 as f64 / b.requests.max(1) as f64 >= 0.01 {
        out.push(Finding::RateLimited {
            level,
            throttled: n429,
            attempts: b.requests,
        });
    }
    let connect = b.errors_by_kind[ErrorKind::Connect.index()]
        + b.errors_by_kind[ErrorKind::ConnectTimeout.index()];
    if connect > 0 && !s.stuck {
        out.push(Finding::ConnectionsNotOpening {
            level,
            failed_connects: connect,
        });
    }
    // A connect that took a second or more waited for a SYN retransmission: the listen queue
    // was full. Those requests waited for it too (it is in their latency).
    if let Some(c) = b.setup.connect.as_deref().filter(|c| !c.is_empty()) {
        let p99_ms = c.value_at_quantile(0.99) as f64 / 1000.0;
        if p99_ms >= SYN_RETRY_MS {
            out.push(Finding::SlowConnects {
                level,
                connect_p99_ms: p99_ms,
                connects: c.len(),
            });
        }
    }
    let n5xx: u64 = b
        .status
        .sorted()
        .iter()
        .filter(|(c, _)| *c >= 500)
        .map(|(_, n)| n)
        .sum();
    let timeouts = b.errors_by_kind[ErrorKind::Timeout.index()];
    if n5xx + timeouts > 0 {
        out.push(Finding::OverloadErrors {
            level,
            server_errors: n5xx,
            timeouts,
            attempts: b.requests,
        });
    }
    let host = |name: &str| s.row.observed.get(name).filter(|o| o.peak > 0.0);
    if let Some(o) = host(model::metrics::LISTEN_OVERFLOWS) {
        out.push(Finding::AcceptQueueOverflow {
            level,
            peak_per_s: o.peak,
            mean_per_s: o.mean,
        });
    }
    if let Some(o) = host(model::metrics::RETRANSMITS) {
        if s.row.p99 >= MIN_RTO_MS {
            out.push(Finding::Retransmits {
                level,
                peak_per_s: o.peak,
                p99_ms: s.row.p99,
            });
        }
    }
}

/// Whether a service whose CPU was `at` percent where it stopped keeping up (the run's peak
/// being `peak`) was CPU-bound: yes at 80% or more and near its peak, no under 60%, and no
/// call between.
pub fn cpu_bound(at: f64, peak: f64) -> Option<bool> {
    if at >= 80.0 && at >= 0.9 * peak {
        Some(true)
    } else if at < 60.0 {
        Some(false)
    } else {
        None
    }
}

/// Requests brink started late on a step where its workers were busy (or kept from a CPU)
/// half the time or more: the lateness is brink's. With brink's CPU free, lateness means the
/// pool had no free connection (the service was slow), which the other findings say.
fn generator_late(s: &StepFacts) -> Option<Finding> {
    let r = &s.row;
    let load = r.generator_cpu + r.generator_wait.unwrap_or(0.0);
    (r.late_share >= LATE_SHARE && load >= LATE_BUSY).then(|| Finding::GeneratorLate {
        level: r.level,
        late_percent: r.late_share * 100.0,
        max_lag_ms: r.max_lag_ms,
        busy_percent: r.generator_cpu * 100.0,
        waiting_percent: r.generator_wait.map(|w| w * 100.0),
    })
}

/// A step with this share of its requests late ...
const LATE_SHARE: f64 = 0.05;
/// ... while brink's workers were at least this busy or kept waiting (0..1): brink's lateness.
const LATE_BUSY: f64 = 0.5;

/// What the server's CPU at the knee says (queueing when it was not observed).
fn at_the_knee(k: &KneeInfo, steps: &[StepFacts]) -> Finding {
    let at = steps.iter().find(|s| s.row.level == k.level);
    let cpu = at
        .and_then(|s| s.row.observed.get(SERVER_CPU))
        .map(|o| o.peak);
    let peak_cpu = steps
        .iter()
        .filter_map(|s| s.row.observed.get(SERVER_CPU).map(|o| o.peak))
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let (level, knee) = (k.level, k.reason.clone());
    match cpu
        .zip(peak_cpu)
        .and_then(|(c, p)| cpu_bound(c, p).map(|b| (c, b)))
    {
        Some((c, true)) => Finding::CpuBound {
            level,
            cpu_percent: c,
            knee,
        },
        Some((c, false)) => Finding::NotCpuBound {
            level,
            cpu_percent: c,
            knee,
        },
        None => Finding::Queueing {
            level,
            ok_rps: at.map_or(0.0, |s| s.row.ok_rps),
            knee,
            observed: steps.iter().any(|s| !s.row.observed.is_empty()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::find::{Observed, StepRow};
    use stats::Bucket;

    /// A step at `level` with its verdict, server CPU (if observed) and steady counts.
    struct S {
        row: StepRow,
        steady: Bucket,
        stuck: bool,
    }

    fn step(level: f64, pass: bool, cpu: Option<f64>) -> S {
        let mut row = StepRow {
            level,
            pass,
            ok_rps: level * 10.0,
            generator_cpu: 0.2,
            ..StepRow::default()
        };
        if let Some(c) = cpu {
            row.observed
                .insert(SERVER_CPU.into(), Observed { peak: c, mean: c });
        }
        S {
            row,
            steady: Bucket::new(0),
            stuck: false,
        }
    }

    #[test]
    fn lateness_brink_caused_is_brink_s_not_the_service_s_queue() {
        let late = |busy: f64, late_share: f64| {
            let mut s = step(8.0, true, None);
            s.row.generator_cpu = busy;
            s.row.late_share = late_share;
            s.row.max_lag_ms = 85.7;
            run(Some(8.0), &[s, step(16.0, true, None)])
        };
        // 16.6% late while brink's workers were 60% busy: brink's, and no "queueing".
        let f = late(0.6, 0.166);
        assert!(
            matches!(f.as_slice(), [Finding::GeneratorLate { level, late_percent, .. }] if *level == 8.0 && (late_percent - 16.6).abs() < 1e-9),
            "{f:?}"
        );
        // At the bounds: 5% late at 50% busy is brink's; a hair under either is not.
        assert!(matches!(
            late(0.5, 0.05).as_slice(),
            [Finding::GeneratorLate { .. }]
        ));
        assert!(matches!(
            late(0.49, 0.5).as_slice(),
            [Finding::Queueing { .. }]
        ));
        assert!(matches!(
            late(0.9 - 1e-9, 0.049).as_slice(),
            [Finding::Queueing { .. }]
        ));
    }

    fn run(knee: Option<f64>, steps: &[S]) -> Vec<Finding> {
        let facts: Vec<StepFacts> = steps
            .iter()
            .map(|s| StepFacts {
                row: &s.row,
                stuck: s.stuck,
                interrupted: false,
                steady: &s.steady,
            })
            .collect();
        let knee = knee.map(|level| KneeInfo {
            level,
            reason: "throughput flat".into(),
        });
        diagnose(knee.as_ref(), &facts)
    }

    fn answers(b: &mut Bucket, status: u16, ok: bool, n: usize) {
        for _ in 0..n {
            b.record_response(status, ok, 1000, 1000);
        }
    }

    #[test]
    fn nothing_failed_and_no_knee_finds_nothing() {
        let steps = [step(1.0, true, None), step(2.0, true, None)];
        assert_eq!(run(None, &steps), []);
    }

    #[test]
    fn a_stuck_service_is_reported_with_its_counts() {
        let mut s = step(8.0, false, None);
        s.stuck = true;
        answers(&mut s.steady, 200, true, 3);
        s.steady.record_error(ErrorKind::Timeout);
        let f = run(None, &[step(4.0, true, None), s]);
        assert_eq!(
            f[0],
            Finding::Stuck {
                level: 8.0,
                ok: 3,
                attempts: 4
            }
        );
        // Timeouts at the first failing step are overload errors too; a stuck service's failed
        // connects are not "connections not opening".
        assert_eq!(
            f[1],
            Finding::OverloadErrors {
                level: 8.0,
                server_errors: 0,
                timeouts: 1,
                attempts: 4
            }
        );
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn busy_workers_make_the_generator_the_finding() {
        let mut s = step(64.0, true, None);
        s.row.generator_cpu = 0.95;
        let f = run(None, &[s]);
        assert!(matches!(
            f[..],
            [Finding::GeneratorBound { level, busy_percent, waiting_percent: None }] if level == 64.0 && (busy_percent - 95.0).abs() < 1e-9
        ));
        // On a shared machine: half busy, the rest of the time waiting for a CPU.
        let mut light = step(32.0, true, None);
        light.row.generator_cpu = 0.3;
        light.row.generator_wait = Some(0.3);
        let mut s = step(64.0, true, None);
        s.row.generator_cpu = 0.5;
        s.row.generator_wait = Some(0.45);
        let f = run(None, &[light, s]);
        assert!(
            matches!(
                f[..],
                [Finding::GeneratorBound { level, waiting_percent: Some(w), .. }] if level == 64.0 && (w - 45.0).abs() < 1e-9
            ),
            "{f:?}"
        );
        assert_eq!(
            f[0].describe(results::find::By::Connections),
            "generator-bound: brink's workers were 50% busy and 45% waiting for a CPU other processes held at 64 connections: from there on the limit measured is brink's, not the service's (this machine is short of CPU: run brink on cores or a machine the service and other work do not use)"
        );
    }

    #[test]
    fn the_first_failing_step_says_which_errors() {
        // 429s at 1% or more are throttling; connect failures while the service answers its
        // probe; 5xx counted as overload. The lowest failing level is the one read.
        let mut low = step(20.0, false, None);
        answers(&mut low.steady, 200, true, 97);
        answers(&mut low.steady, 429, false, 1);
        answers(&mut low.steady, 503, false, 1);
        low.steady.record_error(ErrorKind::Connect);
        let mut high = step(40.0, false, None);
        answers(&mut high.steady, 500, false, 50);
        let f = run(None, &[step(10.0, true, None), high, low]);
        assert_eq!(
            f,
            [
                Finding::RateLimited {
                    level: 20.0,
                    throttled: 1,
                    attempts: 100
                },
                Finding::ConnectionsNotOpening {
                    level: 20.0,
                    failed_connects: 1
                },
                Finding::OverloadErrors {
                    level: 20.0,
                    server_errors: 1,
                    timeouts: 0,
                    attempts: 100
                },
            ]
        );
    }

    #[test]
    fn throttling_under_one_percent_is_not_a_finding() {
        let mut s = step(20.0, false, None);
        answers(&mut s.steady, 200, true, 200);
        answers(&mut s.steady, 429, false, 1);
        assert_eq!(run(None, &[s]), []);
    }

    #[test]
    fn server_cpu_at_the_knee_decides_the_bottleneck() {
        let knee = "throughput flat".to_string();
        // (cpu at the knee, peak cpu elsewhere) -> finding
        let cases: [(Option<f64>, Option<f64>, Finding); 5] = [
            (
                Some(95.0),
                Some(100.0),
                Finding::CpuBound {
                    level: 8.0,
                    cpu_percent: 95.0,
                    knee: knee.clone(),
                },
            ),
            (
                Some(40.0),
                Some(45.0),
                Finding::NotCpuBound {
                    level: 8.0,
                    cpu_percent: 40.0,
                    knee: knee.clone(),
                },
            ),
            // 85% is busy, but well under the 150% seen later: not where CPU ran out.
            (
                Some(85.0),
                Some(150.0),
                Finding::Queueing {
                    level: 8.0,
                    ok_rps: 80.0,
                    knee: knee.clone(),
                    observed: true,
                },
            ),
            // Between 60% and 80%: no verdict on CPU.
            (
                Some(70.0),
                Some(70.0),
                Finding::Queueing {
                    level: 8.0,
                    ok_rps: 80.0,
                    knee: knee.clone(),
                    observed: true,
                },
            ),
            (
                None,
                None,
                Finding::Queueing {
                    level: 8.0,
                    ok_rps: 80.0,
                    knee: knee.clone(),
                    observed: false,
                },
            ),
        ];
        for (at, peak, want) in cases {
            let steps = [step(8.0, true, at), step(16.0, true, peak)];
            assert_eq!(run(Some(8.0), &steps), [want], "{at:?} {peak:?}");
        }
    }

    #[test]
    fn throttling_overflows_and_retransmits_are_quoted() {
        let obs = |row: &mut StepRow, name: &str, peak: f64, mean: f64| {
            row.observed.insert(name.into(), Observed { peak, mean });
        };
        // The knee step: 41% of periods throttled at 0.1 core; the failing step: the accept
        // queue overflowed and segments were retransmitted while p99 reached 212 ms.
        let mut knee = step(4.0, true, Some(10.0));
        obs(&mut knee.row, model::metrics::THROTTLED, 55.0, 41.0);
        obs(&mut knee.row, model::metrics::CPU_WAIT, 60.0, 35.0);
        let mut fail = step(8.0, false, Some(12.0));
        fail.row.p99 = 212.0;
        obs(&mut fail.row, model::metrics::LISTEN_OVERFLOWS, 312.0, 40.0);
        obs(&mut fail.row, model::metrics::RETRANSMITS, 9.0, 3.0);
        let f = run(Some(4.0), &[knee, fail]);
        assert!(
            f.contains(&Finding::AcceptQueueOverflow {
                level: 8.0,
                peak_per_s: 312.0,
                mean_per_s: 40.0
            }),
            "{f:?}"
        );
        assert!(
            f.contains(&Finding::Retransmits {
                level: 8.0,
                peak_per_s: 9.0,
                p99_ms: 212.0
            }),
            "{f:?}"
        );
        assert!(
            f.contains(&Finding::CpuThrottled {
                level: 4.0,
                throttled_percent: 41.0,
                cpu_cores: 0.1
            }),
            "{f:?}"
        );
        let text = f
            .iter()
            .map(|x| x.describe(results::find::By::Connections))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            text.contains("CPU-throttled: 41% of periods throttled"),
            "{text}"
        );
        assert!(
            f.contains(&Finding::CpuStarved {
                level: 4.0,
                waiting_percent: 35.0,
                cpu_percent: 10.0
            }),
            "{f:?}"
        );
        assert!(
            text.contains("CPU-starved: at 4 connections the service's threads waited for a CPU 35% of a core's time while using 10%"),
            "{text}"
        );
        assert!(text.contains("accept queue overflowed"), "{text}");

        // Below the thresholds: no such findings.
        let mut quiet = step(4.0, true, Some(10.0));
        obs(&mut quiet.row, model::metrics::THROTTLED, 5.0, 2.0);
        obs(&mut quiet.row, model::metrics::CPU_WAIT, 30.0, 5.0);
        let mut fail = step(8.0, false, None);
        fail.row.p99 = 20.0;
        obs(&mut fail.row, model::metrics::RETRANSMITS, 2.0, 1.0);
        obs(&mut fail.row, model::metrics::LISTEN_OVERFLOWS, 0.0, 0.0);
        let f = run(Some(4.0), &[quiet, fail]);
        assert!(
            f.iter().all(|x| !matches!(
                x,
                Finding::CpuThrottled { .. }
                    | Finding::CpuStarved { .. }
                    | Finding::AcceptQueueOverflow { .. }
                    | Finding::Retransmits { .. }
            )),
            "{f:?}"
        );
    }
}
