//! What the engine measured, as the result schema: one scenario's result from its run spec and
//! its run output (load description, schedule adherence, summary, per-request figures,
//! refusals, extraction failures, response checks, timeseries). The report crate knows the schema but not the
//! engine; this is the one place that knows both.

use engine::{Load, RunSpec};
use merge::RunOutput;
use results::{
    summary_json, AnswerFailureJson, AsyncJson, CheckJson, CompletionJson, ExtractFailureJson,
    GeneratorJson, LoadInfo, RefusedJson, RequestResult, ScenarioResult, ScheduleInfo, SecondRow,
    SetupFailureJson, SloResult, StageJson, TargetInfo, TraceJson, TracesJson,
};
use stats::traces::{TraceOutcome, TraceRow};
use stats::ErrorKind;
use std::collections::BTreeMap;

/// The result of one finished scenario run.
pub fn scenario_result(
    name: &str,
    spec: &RunSpec,
    out: &RunOutput,
    slo: Vec<SloResult>,
    aborted_by: Option<String>,
) -> ScenarioResult {
    let schedule = schedule_info(spec, out);
    let span = results::Span::of(out.duration, out.scheduled);
    let mut summary = summary_json(&out.totals, span, out.unfinished, schedule);
    if spec.tls.early_data != engine::EarlyData::Off && summary.zero_rtt.is_none() {
        // 0-RTT was asked and no connection resumed a session (keep-alive opens few): said
        // as zero, not left out.
        summary.zero_rtt = Some(results::ZeroRttJson::default());
    }
    if let (true, Some(st)) = (spec.events.hold, summary.stream.as_mut()) {
        // Held streams open at the end never ended as requests: they were held, as asked.
        st.held = Some(out.unfinished);
    }
    let requests = if out.by_request.len() > 1 {
        out.by_request
            .iter()
            .map(|(n, t)| RequestResult {
                name: n.clone(),
                summary: summary_json(t, span, 0, None),
            })
            .collect()
    } else {
        Vec::new()
    };
    let refused = out
        .by_request
        .iter()
        .filter_map(|(n, t)| {
            let r = t.all.refused.as_ref()?;
            Some(RefusedJson {
                request: n.clone(),
                count: t.all.errors_by_kind[ErrorKind::InvalidRequest.index()],
                part: r.part.clone(),
                value: r.value.clone(),
            })
        })
        .collect();
    let extract_failures = out
        .by_request
        .iter()
        .filter_map(|(n, t)| {
            let why = t.all.extract_failure.as_ref()?;
            Some(ExtractFailureJson {
                request: n.clone(),
                count: t.all.errors_by_kind[ErrorKind::Extract.index()],
                reason: why.to_string(),
            })
        })
        .collect();
    let setup_failures = out
        .by_request
        .iter()
        .filter_map(|(n, t)| {
            let (kind, why) = t.all.setup.failure.as_deref()?;
            Some(SetupFailureJson {
                request: n.clone(),
                kind: kind.name().to_string(),
                count: t.all.errors_by_kind[kind.index()],
                reason: why.clone(),
            })
        })
        .collect();
    let answer_failures = out
        .by_request
        .iter()
        .flat_map(|(n, t)| {
            t.all
                .answer_failures
                .iter()
                .map(|(kind, why)| AnswerFailureJson {
                    request: n.clone(),
                    kind: kind.name().to_string(),
                    count: t.all.errors_by_kind[kind.index()],
                    reason: why.clone(),
                })
        })
        .collect();
    ScenarioResult {
        name: name.to_string(),
        interrupted: out.interrupted,
        aborted_by,
        unreachable: false,
        target: target_info(spec),
        load: load_info(spec, out.workers),
        summary,
        requests,
        slo_passed: (!slo.is_empty()).then(|| slo.iter().all(|s| s.pass)),
        slo,
        timeseries: out.seconds.iter().map(second_row).collect(),
        observed: BTreeMap::new(),
        observed_sources: Vec::new(),
        refused,
        extract_failures,
        setup_failures,
        answer_failures,
        checks: checks(spec, &out.totals.all),
        error: None,
        ok_status: spec.ok_status.ranges().to_vec(),
        ok_codes: match spec.target.protocol {
            model::Protocol::Grpc => spec
                .ok_codes
                .iter()
                .map(|c| model::grpc::name(*c))
                .collect(),
            model::Protocol::Http1
            | model::Protocol::Http2
            | model::Protocol::Ws
            | model::Protocol::Http3 => Vec::new(),
        },
        traces: traces(spec, out),
        completion: None,
        async_jobs: async_jobs(&out.completions),
        generator: None,
        broke: None,
        workers: out.remote.clone(),
    }
}

/// Each response check of the workload, with its counts from `all`.
fn checks(spec: &RunSpec, all: &stats::Bucket) -> Vec<CheckJson> {
    spec.workload
        .requests
        .iter()
        .flat_map(|r| r.checks.iter().map(move |c| (r, c)))
        .map(|(r, c)| {
            let n = all.checks.get(c.slot).cloned().unwrap_or_default();
            let runs = n.runs();
            CheckJson {
                name: c.name.clone(),
                request: r.name.clone(),
                passed: n.passed,
                failed: n.failed,
                pass_percent: (runs > 0).then(|| n.passed as f64 * 100.0 / runs as f64),
                count_only: c.count_only,
                first_failure: n.first_failure.map(String::from),
                unchecked: n.unchecked,
                first_unchecked: n.first_unchecked.map(String::from),
            }
        })
        .collect()
}

/// `--trace`: the slowest and the first failed requests over every request of the workload.
fn traces(spec: &RunSpec, out: &RunOutput) -> Option<TracesJson> {
    let t = spec.workload.trace.as_ref()?;
    let mut all: Vec<(&str, TraceRow)> = Vec::new();
    let mut failed: Vec<(&str, TraceRow)> = Vec::new();
    for (name, totals) in &out.by_request {
        if let Some(tr) = &totals.all.traces {
            all.extend(tr.slowest.iter().map(|r| (name.as_str(), *r)));
            failed.extend(tr.failed.iter().map(|r| (name.as_str(), *r)));
        }
    }
    all.sort_by_key(|r| std::cmp::Reverse(r.1.latency_us));
    all.truncate(stats::traces::KEEP);
    failed.sort_by_key(|r| r.1.at_us);
    failed.truncate(stats::traces::KEEP);
    let json = |(request, r): &(&str, TraceRow)| TraceJson {
        trace_id: engine::workload::trace::id_hex(&r.id),
        request: (*request).to_string(),
        latency_ms: r.latency_us as f64 / 1000.0,
        outcome: match r.outcome {
            TraceOutcome::Status(s) => s.to_string(),
            TraceOutcome::Grpc(c) => model::grpc::name(c),
            TraceOutcome::Error(k) => k.name().to_string(),
        },
        t_s: r.at_us as f64 / 1e6,
    };
    Some(TracesJson {
        ratio: t.ratio,
        link: t.link.clone(),
        slowest: all.iter().map(json).collect(),
        failed: failed.iter().map(json).collect(),
    })
}

pub(crate) fn schedule_info(spec: &RunSpec, out: &RunOutput) -> Option<ScheduleInfo> {
    let (rate, pool) = match (&spec.load, spec.every) {
        (Load::Open { rate, pool }, _) => (rate, pool),
        (Load::Closed { connections }, Some(every)) => {
            return Some(paced_schedule(spec, out, connections, every))
        }
        (Load::Closed { .. }, None) => return None,
    };
    let ran = rate.truncated(out.duration);
    let mut intended = ran.total().ceil() as u64;
    if let Some(n) = spec.max_requests {
        intended = intended.min(n);
    }
    let all = &out.totals.all;
    // A flow's schedule starts iterations: each begins with one attempt of its first step
    // (repeated `weight` times in a row when it succeeds).
    let flow = spec.workload.flow;
    let (starts, per) = match (flow, out.by_request.first()) {
        (true, Some((_, t))) => (t, u64::from(spec.workload.requests[0].weight.max(1))),
        _ => (&out.totals, 1),
    };
    let sent = if flow {
        starts.all.requests.div_ceil(per)
    } else {
        all.requests + out.unfinished
    };
    // The rate asked is over the schedule's span: a run that went on after it (requests still
    // being started late) did not ask for less.
    let span = ran
        .end()
        .unwrap_or(out.duration)
        .min(out.duration)
        .as_secs_f64();
    let asked_rps = if span > 0.0 { ran.total() / span } else { 0.0 };
    let mut info = ScheduleInfo {
        intended,
        intended_rps: asked_rps,
        late: all.late,
        max_lag_ms: all.max_lag_us as f64 / 1000.0,
        not_sent: intended.saturating_sub(sent),
        iterations: flow,
        shortfall: None,
    };
    // What completed over the schedule, as the summary's rate says (iterations started, for
    // a flow).
    let achieved_rps = starts.rates(out.scheduled.as_secs_f64()).0 / per as f64;
    // Nothing answered: no service time to tell the limits apart (the errors say why).
    let answered = !all.service.is_empty();
    if answered && achieved_rps < 0.95 * asked_rps && info.late * 100 > intended.max(1) {
        let service_ms = all.service.mean() / 1000.0;
        let unloaded_ms = all.service.min() as f64 / 1000.0;
        let pool_carries_rps = if service_ms > 0.0 {
            *pool as f64 * 1000.0 / service_ms
        } else {
            0.0
        };
        // A full pool is the limit while the service answers each request about as fast as
        // it did unloaded; when its time per request grew threefold or more it queues work
        // inside, and more connections would only queue more.
        let queues =
            all.service.value_at_quantile(0.5) as f64 / 1000.0 >= 3.0 * unloaded_ms.max(0.05);
        info.shortfall = Some(results::Shortfall {
            asked_rps,
            achieved_rps,
            limit: if queues { "service" } else { "pool" }.into(),
            pool: *pool as u64,
            service_ms,
            unloaded_ms,
            pool_carries_rps,
        });
    }
    Some(info)
}

/// Paced connections (each sends at most every `every`): what their pace asked for, and
/// whether it was kept. A connection sends again only once its answer came, so answers
/// slower than the period leave sends due and never made: that is a shortfall of the pace,
/// said as such, never a quiet lower rate. `intended` counts whole periods only (each
/// connection's first send, as it opens, is a bonus), so a kept pace never shows as short.
fn paced_schedule(
    spec: &RunSpec,
    out: &RunOutput,
    connections: &model::Curve,
    every: std::time::Duration,
) -> ScheduleInfo {
    let ran = connections.truncated(out.duration);
    let period = every.as_secs_f64().max(1e-6);
    let mut intended = (ran.total() / period).floor() as u64;
    if let Some(n) = spec.max_requests {
        intended = intended.min(n);
    }
    let all = &out.totals.all;
    let sent = all.requests + out.unfinished;
    let span = ran
        .end()
        .unwrap_or(out.duration)
        .min(out.duration)
        .as_secs_f64();
    let asked_rps = if span > 0.0 {
        ran.total() / period / span
    } else {
        0.0
    };
    let mut info = ScheduleInfo {
        intended,
        intended_rps: asked_rps,
        late: all.late,
        max_lag_ms: all.max_lag_us as f64 / 1000.0,
        not_sent: intended.saturating_sub(sent),
        iterations: false,
        shortfall: None,
    };
    let achieved_rps = out.totals.rates(out.scheduled.as_secs_f64()).0;
    let answered = !all.service.is_empty();
    if answered && achieved_rps < 0.95 * asked_rps && info.late * 100 > intended.max(1) {
        let service_ms = all.service.mean() / 1000.0;
        let peak = connections.peak().round().max(1.0);
        info.shortfall = Some(results::Shortfall {
            asked_rps,
            achieved_rps,
            limit: "pace".into(),
            pool: peak as u64,
            service_ms,
            unloaded_ms: all.service.min() as f64 / 1000.0,
            pool_carries_rps: if service_ms > 0.0 {
                peak * 1000.0 / service_ms.max(period * 1000.0)
            } else {
                0.0
            },
        });
    }
    info
}

/// The summary of `totals` over `duration_s` seconds.
/// What a run's load was, as the result describes it.
/// Where the requests of `spec` go: the target, the method (`mixed` for several requests) and
/// a single request's own path.
pub fn target_info(spec: &RunSpec) -> TargetInfo {
    let requests = &spec.workload.requests;
    let single = (requests.len() == 1).then(|| &requests[0]);
    TargetInfo {
        url: spec.target.url(),
        method: single.map_or_else(|| "mixed".to_string(), |r| r.method.clone()),
        path: single
            .filter(|r| r.path_text != spec.target.path)
            .map(|r| r.path_text.clone()),
        protocol: spec.target.protocol.wire(),
        discovered: spec.discovered.clone(),
        dialled: dialled(&spec.target),
    }
}

/// `host:port` as dialled, when the URL's authority is another (`--authority`).
fn dialled(t: &engine::Target) -> Option<String> {
    let host = if t.host.contains(':') {
        format!("[{}]", t.host)
    } else {
        t.host.clone()
    };
    let at = format!("{host}:{}", t.port);
    let same = t.authority == at || t.authority == host;
    (!same).then_some(at)
}

pub fn load_info(spec: &RunSpec, threads: usize) -> LoadInfo {
    let curve = match &spec.load {
        Load::Closed { connections } => connections,
        Load::Open { rate, .. } => rate,
    };
    let segs = curve.segments();
    let flat = segs.len() == 1 && segs[0].from == segs[0].to;
    let rate = match &spec.load {
        Load::Open { .. } if flat => Some(segs[0].from),
        _ => None,
    };
    let stages = if flat {
        Vec::new()
    } else {
        segs.iter()
            .map(|s| StageJson {
                duration_s: s.secs,
                target: s.to,
            })
            .collect()
    };
    LoadInfo {
        model: spec.load.model(),
        connections: spec.load.max_connections(),
        rate,
        stages,
        duration_s: spec.load.end().map(|d| d.as_secs_f64()),
        requests: spec.max_requests,
        threads,
        timeout_s: spec.timeout.as_secs_f64(),
        over_connections: spec.target.protocol.multiplexed().then(|| {
            spec.connections
                .unwrap_or(spec.load.max_connections())
                .min(spec.load.max_connections())
        }),
        flow_steps: spec
            .workload
            .requests_per_iteration()
            .map(|n| n as usize)
            .filter(|&n| n > 1),
        every_ms: spec.every.map(|e| e.as_secs_f64() * 1000.0),
    }
}

/// One second of a run as the result stores it.
pub fn second_row(x: &merge::Second) -> SecondRow {
    SecondRow {
        t: x.t,
        requests: x.requests,
        ok: x.ok,
        errors: x.errors,
        p50: x.latency.p50,
        p90: x.latency.p90,
        p99: x.latency.p99,
        max: x.latency.max,
        target: x.target,
        connects: x.connects,
        connect_p99: x.connect.map(|c| c.p99),
        tls_p99: x.tls.map(|c| c.p99),
        upgrade_p99: x.upgrade.map(|c| c.p99),
        latency_hdr: x.latency_hdr.clone(),
        service_hdr: x.service_hdr.clone(),
        observed: BTreeMap::new(),
        status: x.status.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
        grpc_status: x
            .grpc
            .iter()
            .map(|(c, n)| (model::grpc::name(*c), *n))
            .collect(),
        errors_by_kind: x
            .errors_by_kind
            .iter()
            .map(|(k, n)| (k.to_string(), *n))
            .collect(),
    }
}

/// CPU seconds this process has used so far.
pub fn own_cpu() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct; RUSAGE_SELF is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
    if rc != 0 {
        return 0.0;
    }
    // SAFETY: initialised by the successful call above.
    let u = unsafe { u.assume_init() };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Share of late requests (open model) that counts as noticeable.
const LATE_NOTICEABLE: f64 = 0.01;
/// Worker time (on a CPU or waiting for one) above which late requests are the generator's
/// doing (it had no time to spare).
const NO_CPU_TO_SPARE: f64 = 0.75;
/// A share of the workers' time spent ready but waiting for a CPU from which a run's figures
/// may be brink's: it saw answers late and sent late for that long.
const SHORT_OF_CPU: f64 = results::find::GENERATOR_WAITED;

/// brink's workers over `wall` seconds: the share of their time on a CPU (0..1; from the
/// kernel's per-thread figures, else the process CPU `cpu`) and the share spent ready to run
/// but waiting for a CPU (where the kernel says).
pub fn generator_load(cpu: f64, wall: f64, out: &RunOutput) -> (f64, Option<f64>) {
    let capacity = wall * out.workers.max(1) as f64;
    if capacity <= 0.0 {
        return (0.0, None);
    }
    let share = |ns: u64| ns as f64 / 1e9 / capacity;
    match out.sched {
        Some(s) => (share(s.on_cpu_ns), Some(share(s.waiting_ns))),
        None => (cpu / capacity, None),
    }
}

/// A wait for a CPU, per wake-up, from which it is worth saying (ms) ...
const WAKE_DELAY_NOTICEABLE_MS: f64 = 0.1;
/// ... when it is also at least this share of the median latency.
const WAKE_DELAY_SHARE_OF_P50: f64 = 0.1;

/// The note for workers that had CPU to spare but waited `delay_ms` for one on average each
/// time they woke: a response that arrived meanwhile was seen that much late.
fn late_responses(delay_ms: f64, waiting_percent: Option<f64>, p50_ms: f64) -> Option<String> {
    (delay_ms >= WAKE_DELAY_NOTICEABLE_MS && delay_ms >= WAKE_DELAY_SHARE_OF_P50 * p50_ms).then(|| {
        format!(
            "brink's workers waited {delay_ms:.2} ms on average for a CPU each time they woke ({:.0}% of their time): a response could be seen up to about that much late, against a p50 of {p50_ms:.2} ms (run brink on cores the service and other work do not use)",
            waiting_percent.unwrap_or(0.0)
        )
    })
}

/// A share of scheduling periods throttled by a cgroup's CPU limit from which the limit, not
/// the service, may have set the pace.
const THROTTLED: f64 = 0.10;

/// What this process used over a run: CPU seconds over `wall` seconds, and the share of
/// periods its cgroup's CPU limit throttled it (`None` without a limit).
pub struct Used {
    pub cpu: f64,
    pub wall: f64,
    pub throttled: Option<f64>,
}

/// Whether brink itself limited the run: its workers' load ([`generator_load`] of the CPU
/// it used), its cgroup's CPU limit, and in the open model the share started late and the
/// worst lag.
pub fn generator_check(
    used: Used,
    out: &RunOutput,
    summary: &results::SummaryJson,
) -> GeneratorJson {
    let Used {
        cpu,
        wall,
        throttled,
    } = used;
    let (busy, waiting) = generator_load(cpu, wall, out);
    let (late_share, max_lag_ms) = summary.schedule.as_ref().map_or((0.0, 0.0), |s| {
        (s.late as f64 / s.intended.max(1) as f64, s.max_lag_ms)
    });
    let waiting_percent = waiting.map(|w| w * 100.0);
    let words = results::find::generator_words(busy * 100.0, waiting_percent);
    let wake_delay_ms = out
        .sched
        .filter(|s| s.slices > 0)
        .map(|s| s.waiting_ns as f64 / s.slices as f64 / 1e6);
    let why = if let Some(w) = limited_worker(&out.remote) {
        Some(w)
    } else if let Some(t) = throttled.filter(|t| *t >= THROTTLED) {
        Some(format!(
            "the CPU limit of brink's cgroup (its container's or pod's) throttled it in {:.0}% of its scheduling periods: the limit, not the service, may have set the pace (give brink more CPU: a larger limit, --cpu on pods)",
            t * 100.0
        ))
    } else if search::generator_limited(busy, waiting) {
        // An open-model run that kept its schedule was not held back by brink: its sends were
        // on time, but with no CPU to spare the answers may have been read late.
        let kept = summary
            .schedule
            .as_ref()
            .is_some_and(|s| s.shortfall.is_none() && late_share < LATE_NOTICEABLE);
        Some(if kept {
            format!(
                "{words}: it kept the schedule ({:.1}% of requests late), but with no CPU to spare it may have read answers late, adding to their latency ({})",
                late_share * 100.0,
                results::find::generator_remedy(waiting_percent)
            )
        } else {
            format!(
                "{words}: the generator, not the service, limited this run ({})",
                results::find::generator_remedy(waiting_percent)
            )
        })
    } else if waiting.is_some_and(|w| w >= SHORT_OF_CPU) {
        let woke = wake_delay_ms.map_or(String::new(), |d| {
            format!(", {d:.2} ms on average each time they woke, so answers were seen and requests sent up to that much late")
        });
        Some(format!(
            "{words}{woke}: other processes held the CPUs brink needed, and the service may give more throughput and less latency than these figures (run brink on cores the service and other work do not use)"
        ))
    } else if late_share >= LATE_NOTICEABLE && busy + waiting.unwrap_or(0.0) >= NO_CPU_TO_SPARE {
        Some(format!(
            "{:.1}% of requests started late (worst {max_lag_ms:.1} ms) while {words}: the generator could not keep the schedule",
            late_share * 100.0,
        ))
    } else {
        None
    };
    let note = wake_delay_ms
        .filter(|_| why.is_none())
        .and_then(|d| late_responses(d, waiting_percent, summary.latency_ms.p50));
    GeneratorJson {
        busy_percent: busy * 100.0,
        waiting_percent,
        throttled_percent: throttled.map(|t| t * 100.0),
        wake_delay_ms,
        late_share,
        max_lag_ms,
        limited: why.is_some(),
        why,
        note,
    }
}

/// A distributed run: the worker that had no time to spare (the busiest, if several), named,
/// with what to do. The run's own figures average the workers and would hide one.
fn limited_worker(workers: &[model::WorkerReport]) -> Option<String> {
    throttled_worker(workers).or_else(|| busy_worker(workers))
}

/// The worker its cgroup's CPU limit (a pod's) throttled most, when that was often enough to
/// set the pace.
fn throttled_worker(workers: &[model::WorkerReport]) -> Option<String> {
    let w = workers
        .iter()
        .filter(|w| w.throttled_percent.is_some_and(|t| t >= THROTTLED * 100.0))
        .max_by(|a, b| {
            let t = |w: &model::WorkerReport| w.throttled_percent.unwrap_or(0.0);
            t(a).total_cmp(&t(b))
        })?;
    Some(format!(
        "worker {} ({} of {}): its CPU limit throttled it in {:.0}% of its scheduling periods: the limit, not the service, may have set the pace (give the workers more CPU: --cpu on pods)",
        w.name,
        w.index + 1,
        w.count,
        w.throttled_percent.unwrap_or(0.0)
    ))
}

/// The worker that had no time to spare (the busiest, if several).
fn busy_worker(workers: &[model::WorkerReport]) -> Option<String> {
    let ready = |w: &model::WorkerReport| {
        let busy = w.busy_percent? / 100.0;
        let waiting = w.waiting_percent.map(|x| x / 100.0);
        search::generator_limited(busy, waiting).then_some((busy, waiting))
    };
    let (w, (busy, waiting)) = workers
        .iter()
        .filter_map(|w| ready(w).map(|r| (w, r)))
        .max_by(|a, b| {
            (a.1 .0 + a.1 .1.unwrap_or(0.0)).total_cmp(&(b.1 .0 + b.1 .1.unwrap_or(0.0)))
        })?;
    let waiting_percent = waiting.map(|x| x * 100.0);
    let limited = workers.iter().filter(|w| ready(w).is_some()).count();
    Some(format!(
        "worker {} ({} of {}{}): {}: the generator, not the service, limited this run ({})",
        w.name,
        w.index + 1,
        w.count,
        if limited > 1 {
            format!("; {limited} workers had no time to spare")
        } else {
            String::new()
        },
        results::find::generator_words(busy * 100.0, waiting_percent),
        results::find::generator_remedy(waiting_percent)
    ))
}

/// The result's completion section from what the probe saw; the responses ended `responses`
/// after the first send.
pub fn completion_json(
    p: &observe::completion::Probe,
    seen: &observe::completion::Outcome,
    responses: std::time::Duration,
) -> CompletionJson {
    let done = responses.as_secs_f64();
    let complete = seen.complete_at.map(|d| d.as_secs_f64());
    CompletionJson {
        until: p.until.text.clone(),
        url: p.target.url(),
        responses_done_s: done,
        complete_s: complete,
        drain_s: complete.map(|c| (c - done).max(0.0)),
        complete: complete.is_some(),
        last_value: seen.last_value.clone(),
        polls: seen.polls,
        failed_polls: seen.failed_polls,
        first_failure: seen.first_failure.clone(),
        timeline: seen.timeline.clone(),
    }
}

/// Judges `complete < 30s` objectives on the probe's outcome (they cannot be judged per
/// second): incomplete fails, with the last value.
pub fn judge_completion(slos: &[stats::slo::Slo], c: &CompletionJson, results: &mut [SloResult]) {
    for (slo, r) in slos.iter().zip(results.iter_mut()) {
        if slo.metric != stats::slo::Metric::Complete {
            continue;
        }
        match c.complete_s {
            Some(s) => {
                let ms = s * 1000.0;
                r.value = Some(ms);
                r.result = slo.fmt_value(ms);
                r.margin = Some(slo.margin(ms));
                r.pass = slo.holds(ms);
            }
            None => {
                r.value = None;
                r.result = format!(
                    "incomplete (last value {})",
                    c.last_value.as_deref().unwrap_or("none")
                );
                r.margin = None;
                r.pass = false;
            }
        }
    }
}

/// The jobs of every step with `complete:`, together.
fn async_jobs(per_request: &[observe::tracker::Counts]) -> Option<AsyncJson> {
    if per_request.is_empty() {
        return None;
    }
    let mut all = observe::tracker::Counts::default();
    for c in per_request {
        all.merge(c);
    }
    Some(AsyncJson {
        completed: all.completed,
        failed: all.failed,
        timed_out: all.timed_out,
        latency_ms: (!all.latency.is_empty()).then(|| stats::LatencySummary::of(&all.latency)),
        first_failure: all.first_failure,
    })
}

/// Judges `async.p95 < 5s` objectives on the jobs' completion times; with no completed job
/// there is nothing that held, and the objective fails.
pub fn judge_async(slos: &[stats::slo::Slo], jobs: Option<&AsyncJson>, results: &mut [SloResult]) {
    for (slo, r) in slos.iter().zip(results.iter_mut()) {
        let stats::slo::Metric::Async(q) = slo.metric else {
            continue;
        };
        let value = jobs
            .and_then(|j| j.latency_ms.as_ref())
            .map(|l| at_quantile(l, q));
        r.value = value;
        r.result = value.map_or("no completed job".to_string(), |v| slo.fmt_value(v));
        r.margin = value.map(|v| slo.margin(v));
        r.pass = value.is_some_and(|v| slo.holds(v));
    }
}

/// The figure of `l` an objective's quantile names (`None`: the mean; the SLO grammar only
/// has these quantiles).
fn at_quantile(l: &stats::LatencySummary, q: Option<f64>) -> f64 {
    match q.map(|q| (q * 1000.0).round() as u32) {
        None => l.mean,
        Some(500) => l.p50,
        Some(750) => l.p75,
        Some(900) => l.p90,
        Some(950) => l.p95,
        Some(999) => l.p999,
        Some(1000..) => l.max,
        Some(_) => l.p99,
    }
}
