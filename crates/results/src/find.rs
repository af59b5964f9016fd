//! The `find` section of a result: one row per step (the sweep table people make by hand),
//! the maximum sustainable level, the knee, the USL fit, the typed findings and why the search
//! stopped. The findings' and stop reasons' words live here too: the result stores them
//! (`diagnosis`, `stopped`), so every reader of a result reads the same sentence.

use crate::fmt::{fmt_count, fmt_ms, fmt_rate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a search steps: connections (closed model) or the request rate (open model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    Connections,
    Rate,
}

impl By {
    /// A level as a number for a table cell: `16`, `2,000/s`.
    pub fn cell(self, level: f64) -> String {
        match self {
            By::Rate => format!("{}/s", fmt_rate(level)),
            By::Connections => fmt_count(level.round() as u64),
        }
    }

    /// A level in words: `1 connection`, `16 connections`, `2,000/s`.
    pub fn describe(self, level: f64) -> String {
        match self {
            By::Rate => format!("{}/s", fmt_rate(level)),
            By::Connections => connections(level),
        }
    }

    /// The load model a search by this steps: rate is open, connections closed.
    pub fn model(self) -> model::LoadModel {
        match self {
            By::Rate => model::LoadModel::Open,
            By::Connections => model::LoadModel::Closed,
        }
    }

    /// The search a load model's level steps (the inverse of [`By::model`]).
    pub fn of(model: model::LoadModel) -> By {
        match model {
            model::LoadModel::Open => By::Rate,
            model::LoadModel::Closed => By::Connections,
        }
    }

    /// `connections` or `rate`.
    pub fn name(self) -> &'static str {
        match self {
            By::Rate => "rate",
            By::Connections => "connections",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FindResult {
    pub by: By,
    /// Steps in the order they ran.
    pub steps: Vec<StepRow>,
    pub max_sustainable: Option<Sustained>,
    pub knee: Option<KneeInfo>,
    pub usl: Option<UslInfo>,
    /// The findings in words (one line each, as printed).
    pub diagnosis: Vec<String>,
    /// The same findings as typed values with the figures they cite.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Why the search ended, in words (as printed).
    pub stopped: String,
    /// Why the search ended, typed (absent in results written before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Hooks that ran (`--at-peak`, plan `hooks:`), in the order they started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRun>,
    /// The capture steps re-run for the peak hook (at the maximum sustainable level and the
    /// first failing one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<StepRow>,
    /// Failing steps run again because brink's own workers were kept waiting for a CPU: the
    /// first attempt of each, as measured (the search believed the attempt after it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reruns: Vec<StepRow>,
    /// Paced connections (WebSocket `--every`, `--hold`): each connection sent one message or
    /// ping every this many ms, so throughput follows the pace and the capacity is in
    /// connections held, not in req/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<f64>,
    /// Held event streams (`--hold` on an http(s) URL): each connection held one stream for
    /// the step, so its requests are only reconnects and the capacity is in streams held.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_streams: bool,
}

/// How a search's connections send, which says what their throughput means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Each sends its next request when its answer comes: throughput is the service's.
    Free,
    /// Each sends every this long (held WebSocket connections): throughput is the pace.
    Every(std::time::Duration),
    /// Each holds an event stream for the step (`--hold`): its requests are reconnects.
    Held,
}

/// One hook that ran: when (seconds from the start of the command), where, and how it ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookRun {
    /// peak, each_step, on_fail or after.
    pub hook: String,
    pub command: String,
    /// The step it ran in or after (`peak`, `first fail`, `step 16 connections`, `search`).
    pub step: String,
    pub level: f64,
    pub started_s: f64,
    pub ended_s: f64,
    /// `null` when it did not start or was killed by a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Files with its output.
    pub stdout: String,
    pub stderr: String,
    pub required: bool,
}

/// Why a search is over. Levels are in the search's unit (connections or req/s).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Stop {
    /// Interrupted (a signal).
    Interrupted,
    /// The service stopped answering at `level` and did not recover.
    Stuck { level: f64 },
    /// brink's workers were the limit at `level` (`busy_percent`, 0-100); `passed` says whether
    /// the step still held its objectives (higher levels would then measure brink, not the
    /// service).
    GeneratorBound {
        level: f64,
        busy_percent: f64,
        /// Share (0-100) of the workers' time spent waiting for a CPU others held.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waiting_percent: Option<f64>,
        passed: bool,
    },
    /// Every level up to `to` passed.
    AllPassed { to: f64 },
    /// Not even the first level passed.
    FirstFailed { from: f64 },
    /// The last pass and the first fail are as close as asked (or no whole level is between).
    Bisected { pass: f64, fail: f64 },
    /// A step could not run (`why`).
    StepFailed { why: String },
}

impl FindResult {
    /// Its capacity is a floor, not the limit: every level up to `--to` passed, or the search
    /// ended (interrupted, a step that could not run) before it closed in.
    pub fn capacity_is_floor(&self) -> bool {
        self.max_sustainable.is_some()
            && matches!(
                self.stop,
                Some(Stop::AllPassed { .. } | Stop::Interrupted | Stop::StepFailed { .. })
            )
    }

    /// The step its capacity was measured on (the last one run at that level that passed).
    pub fn capacity_step(&self) -> Option<&StepRow> {
        let m = self.max_sustainable.as_ref()?;
        self.steps
            .iter()
            .rev()
            .find(|s| s.pass && s.level == m.level)
    }

    /// The measured points of the USL fit, in step order.
    pub fn usl_points(&self) -> Vec<(f64, f64)> {
        self.steps
            .iter()
            .filter_map(|s| s.usl_point(self.by))
            .collect()
    }
}

impl Stop {
    /// The reason in words; `recovery_s` is how long a failing service was given to answer.
    pub fn describe(&self, by: By, recovery_s: f64) -> String {
        let lvl = |l: f64| by.describe(l);
        match self {
            Stop::Interrupted => "interrupted".into(),
            Stop::Stuck { level } => format!(
                "service stopped responding at {} and did not recover within {recovery_s}s",
                lvl(*level)
            ),
            Stop::GeneratorBound {
                level,
                busy_percent,
                waiting_percent,
                passed: false,
            } => format!(
                "the generator, not the service, was the limit at {} ({})",
                lvl(*level),
                generator_words(*busy_percent, *waiting_percent)
            ),
            Stop::GeneratorBound {
                level,
                busy_percent,
                waiting_percent,
                ..
            } => format!(
                "the generator reached its own limit at {} ({}): higher levels would measure brink, not the service",
                lvl(*level),
                generator_words(*busy_percent, *waiting_percent)
            ),
            Stop::AllPassed { to } => format!("every level up to --to {} passed", lvl(*to)),
            Stop::FirstFailed { from } => {
                format!("the first level ({}) already failed", lvl(*from))
            }
            Stop::Bisected { pass, fail } => format!(
                "bisected between {} (pass) and {} (fail)",
                lvl(*pass),
                lvl(*fail)
            ),
            Stop::StepFailed { why } => why.clone(),
        }
    }
}

/// One thing the search found about the service (or about brink), with its figures. Levels are
/// in the search's unit (connections or req/s); percentages are 0-100.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Finding {
    /// After the step at `level` the service no longer answered its health probe.
    Stuck { level: f64, ok: u64, attempts: u64 },
    /// brink's workers were `busy_percent` busy at `level`: from there on brink was measured.
    GeneratorBound {
        level: f64,
        busy_percent: f64,
        /// Share (0-100) of the workers' time spent waiting for a CPU others held.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waiting_percent: Option<f64>,
    },
    /// A rate step at `level` where brink itself sent `late_percent` of its requests late
    /// (worst by `max_lag_ms`) while its workers were busy or kept from a CPU: the lateness,
    /// and the latency it added, are brink's, not the service's queue.
    GeneratorLate {
        level: f64,
        late_percent: f64,
        max_lag_ms: f64,
        busy_percent: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waiting_percent: Option<f64>,
    },
    /// `throttled` of `attempts` responses at `level` were 429.
    RateLimited {
        level: f64,
        throttled: u64,
        attempts: u64,
    },
    /// Connects failed at `level` while the service still answered its probe.
    ConnectionsNotOpening { level: f64, failed_connects: u64 },
    /// Connects at the first failing `level` waited for SYN retransmissions (p99 of
    /// `connect_p99_ms` over `connects` connects): the listen queue was full.
    SlowConnects {
        level: f64,
        connect_p99_ms: f64,
        connects: u64,
    },
    /// 5xx responses and timeouts at the first failing `level`.
    OverloadErrors {
        level: f64,
        server_errors: u64,
        timeouts: u64,
        attempts: u64,
    },
    /// At the knee the server's CPU was at its highest of the search.
    CpuBound {
        level: f64,
        cpu_percent: f64,
        knee: String,
    },
    /// At the knee the server's CPU was low: the limit is elsewhere.
    NotCpuBound {
        level: f64,
        cpu_percent: f64,
        knee: String,
    },
    /// A knee without server metrics to say what ran out.
    Queueing {
        level: f64,
        ok_rps: f64,
        knee: String,
        /// The server was observed (`--observe`), but gave no CPU figure at the knee.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        observed: bool,
    },
    /// At `level` the server's cgroup was throttled in `throttled_percent` of its CPU periods
    /// while it used `cpu_cores` cores on average: its CPU limit, not the host, was the limit.
    CpuThrottled {
        level: f64,
        throttled_percent: f64,
        cpu_cores: f64,
    },
    /// At `level` the server's threads spent `waiting_percent` (of one core's time) ready to
    /// run but waiting for a CPU, while using `cpu_percent`: the host is short of CPU.
    CpuStarved {
        level: f64,
        waiting_percent: f64,
        cpu_percent: f64,
    },
    /// This host's TCP listen queues overflowed during the failing step at `level`.
    AcceptQueueOverflow {
        level: f64,
        peak_per_s: f64,
        mean_per_s: f64,
    },
    /// TCP retransmitted during the failing step at `level` while p99 reached `p99_ms`.
    Retransmits {
        level: f64,
        peak_per_s: f64,
        p99_ms: f64,
    },
    /// Token streams from the lowest step (`from`) to the first failing one (`level`): the
    /// time to the first token grew far more than the time between tokens (`queued`: the
    /// streams waited for the server to admit them), or the time between tokens grew (the
    /// server decodes a larger batch more slowly).
    TokenStreams {
        level: f64,
        from: f64,
        ttft_from_ms: f64,
        ttft_to_ms: f64,
        itl_from_ms: f64,
        itl_to_ms: f64,
        queued: bool,
    },
}

/// A share of brink's workers' time waiting for a CPU from which a run's or step's figures may
/// be brink's (0..1).
pub const GENERATOR_WAITED: f64 = 0.15;

/// Throughput this far (%) below its peak has fallen, not held.
pub const FALL_PERCENT: f64 = 10.0;

/// A share of the workers' time (0-100) spent waiting for a CPU from which the wait, not the
/// work, is why the generator could not keep up.
pub const STARVED_PERCENT: f64 = 10.0;

/// How busy brink's workers were, in words: "brink's workers were 95% busy", and when they
/// also waited for a CPU a noticeable share of the time, how much.
pub fn generator_words(busy_percent: f64, waiting_percent: Option<f64>) -> String {
    match waiting_percent.filter(|w| *w >= STARVED_PERCENT) {
        Some(w) => format!(
            "brink's workers were {busy_percent:.0}% busy and {w:.0}% waiting for a CPU other processes held"
        ),
        None => format!("brink's workers were {busy_percent:.0}% busy"),
    }
}

/// What to do about a generator-bound run: more CPU for brink, or a machine not shared with
/// what took it.
pub fn generator_remedy(waiting_percent: Option<f64>) -> &'static str {
    if waiting_percent.is_some_and(|w| w >= STARVED_PERCENT) {
        "this machine is short of CPU: run brink on cores or a machine the service and other work do not use"
    } else {
        "give brink more --threads or CPU"
    }
}

impl Finding {
    /// The finding in words, levels in `by`'s unit.
    pub fn describe(&self, by: By) -> String {
        let lvl = |l: f64| by.describe(l);
        match self {
            Finding::Stuck { level, ok, attempts } => format!(
                "stuck: after {} the service stopped answering its health probe ({ok} ok of {attempts} attempts in the step's steady part); it needs a restart: look for deadlocks, exhausted pools or a hung dependency",
                lvl(*level)
            ),
            Finding::GeneratorBound {
                level,
                busy_percent,
                waiting_percent,
            } => format!(
                "generator-bound: {} at {}: from there on the limit measured is brink's, not the service's ({})",
                generator_words(*busy_percent, *waiting_percent),
                lvl(*level),
                generator_remedy(*waiting_percent)
            ),
            Finding::GeneratorLate { level, late_percent, max_lag_ms, busy_percent, waiting_percent } => format!(
                "generator fell behind at {}: brink sent {late_percent:.1}% of requests late (worst by {}) while {}: that lateness is in the step's latency, so the step measured brink, not a queue in the service ({})",
                lvl(*level),
                fmt_ms(*max_lag_ms),
                generator_words(*busy_percent, *waiting_percent),
                generator_remedy(*waiting_percent)
            ),
            Finding::RateLimited { level, throttled, attempts } => format!(
                "rate-limited: {:.1}% of responses at {} were 429 ({} of {}): the service (or a proxy) is throttling, not failing",
                *throttled as f64 / (*attempts).max(1) as f64 * 100.0,
                lvl(*level),
                fmt_count(*throttled),
                fmt_count(*attempts)
            ),
            Finding::ConnectionsNotOpening { level, failed_connects } => format!(
                "connections did not open at {}: {} failed connects while the service still answered its health probe: check the server's listen backlog and accept rate, and brink's open-file limit (ulimit -n)",
                lvl(*level),
                fmt_count(*failed_connects)
            ),
            Finding::SlowConnects { level, connect_p99_ms, connects } => format!(
                "connects waited at {}: p99 {} over {} connects, the 1 s retry of a SYN a full listen queue dropped, and each of those requests waited for it: raise the service's listen backlog (and net.core.somaxconn), accept faster, or keep connections alive",
                lvl(*level),
                fmt_ms(*connect_p99_ms),
                fmt_count(*connects)
            ),
            Finding::OverloadErrors { level, server_errors, timeouts, attempts } => format!(
                "overload errors at {}: {} 5xx responses and {} timeouts out of {} attempts ({:.1}%)",
                lvl(*level),
                fmt_count(*server_errors),
                fmt_count(*timeouts),
                fmt_count(*attempts),
                (server_errors + timeouts) as f64 / (*attempts).max(1) as f64 * 100.0
            ),
            Finding::CpuBound { level, cpu_percent, knee } => format!(
                "CPU-bound: at the knee ({}, {knee}) the server used {cpu_percent:.0}% CPU, its highest of the search: more CPU (or less work per request) moves the limit",
                lvl(*level)
            ),
            Finding::NotCpuBound { level, cpu_percent, knee } => format!(
                "not CPU-bound: at the knee ({}: {knee}) server CPU was only {cpu_percent:.0}%: the limit is elsewhere: pools, locks, connection handling or the network path (a container network bridge or a proxy in front of the service can be the limit, not the service)",
                lvl(*level)
            ),
            Finding::Queueing { level, ok_rps, knee, observed } => format!(
                "queueing at ~{} req/s: the knee is at {} ({knee}); requests wait for something the service has a fixed amount of (workers, pool slots, CPU). {}",
                fmt_rate(*ok_rps),
                lvl(*level),
                if *observed {
                    "The server was observed, but no CPU figure of it held at the knee to say which"
                } else {
                    "Add --observe to see which"
                }
            ),
            Finding::CpuThrottled { level, throttled_percent, cpu_cores } => format!(
                "CPU-throttled: {throttled_percent:.0}% of periods throttled at {} while CPU averaged {cpu_cores:.1} core(s): the container's CPU limit (quota), not the host, is the limit: raise the limit or remove it",
                lvl(*level)
            ),
            Finding::CpuStarved { level, waiting_percent, cpu_percent } => format!(
                "CPU-starved: at {} the service's threads waited for a CPU {waiting_percent:.0}% of a core's time while using {cpu_percent:.0}%: other processes on this host (brink too, if it runs here) took the cores it needed: give it cores of its own or run brink on another machine",
                lvl(*level)
            ),
            Finding::AcceptQueueOverflow { level, peak_per_s, mean_per_s } => format!(
                "accept queue overflowed during the failing step at {} (up to {peak_per_s:.0}/s, {mean_per_s:.1}/s on average): connections arrived faster than the service accepted them: raise its listen backlog (and net.core.somaxconn) or accept faster",
                lvl(*level)
            ),
            Finding::TokenStreams { level, from, ttft_from_ms, ttft_to_ms, itl_from_ms, itl_to_ms, queued: true } => format!(
                "token streams queue at the server: from {} to {} the time to first token (p99) grew {} -> {} while the time between tokens stayed {} -> {}: the server admits fewer streams at once than were offered (its batch, KV-cache or slot limit), and each new stream waits for a place before its first token",
                lvl(*from),
                lvl(*level),
                fmt_ms(*ttft_from_ms),
                fmt_ms(*ttft_to_ms),
                fmt_ms(*itl_from_ms),
                fmt_ms(*itl_to_ms)
            ),
            Finding::TokenStreams { level, from, ttft_from_ms, ttft_to_ms, itl_from_ms, itl_to_ms, queued: false } => format!(
                "token streams decode more slowly in a larger batch: from {} to {} the time between tokens (p99) grew {} -> {} (time to first token {} -> {}): each added stream slows every other stream's tokens; the server's decode step is the limit (more compute, or a smaller batch to keep ITL)",
                lvl(*from),
                lvl(*level),
                fmt_ms(*itl_from_ms),
                fmt_ms(*itl_to_ms),
                fmt_ms(*ttft_from_ms),
                fmt_ms(*ttft_to_ms)
            ),
            Finding::Retransmits { level, peak_per_s, p99_ms } => format!(
                "this host's TCP retransmissions (all its connections, not only the service's) during the failing step at {} (up to {peak_per_s:.0}/s) with p99 at {p99_ms:.0} ms: latency clusters at retransmission timeouts (200 ms minimum RTO, 1 s for a lost SYN): look for drops on the path (queues, conntrack, a proxy)",
                lvl(*level)
            ),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StepRow {
    pub level: f64,
    /// Latency after the warm-up (ms), the slow answers of the grace after the step
    /// included (they count against its objectives).
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    /// The mean latency of the answers within the step's window (after the warm-up, before
    /// the grace), ms: the window `rps` is over, so connections / rps = mean holds on it.
    pub mean: f64,
    /// Attempts per second completed in the step's window (after the warm-up, not in the
    /// grace after it).
    pub rps: f64,
    pub ok_rps: f64,
    pub requests: u64,
    pub errors: u64,
    pub timeouts: u64,
    /// Share of brink's worker threads' CPU used during the step (1.0 = all busy).
    pub generator_cpu: f64,
    /// Share of the workers' time spent ready to run but waiting for a CPU that other
    /// processes held; `None` where the kernel does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_wait: Option<f64>,
    /// Open model: share of requests that started more than 1 ms late, and the worst lag (ms).
    /// With brink's CPU free, lateness means no connection of the pool was free (the service
    /// was slow), not that brink fell behind.
    pub late_share: f64,
    pub max_lag_ms: f64,
    /// Observed server figures: name -> (peak, mean) over the step.
    pub observed: BTreeMap<String, Observed>,
    pub pass: bool,
    /// Why it failed (empty when it passed).
    pub reason: String,
    /// Cut short by an interrupt: listed, never judged or fitted.
    #[serde(default)]
    pub interrupted: bool,
    /// Closed model: the mean latency disagreed with Little's law (connections / throughput),
    /// and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub little: Option<LittleGap>,
    /// Held event streams (`find --hold`): what the level's streams carried, which its
    /// objectives judge (their requests are only reconnects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<HeldStep>,
    /// It failed while brink's own workers waited for a CPU others held (see
    /// [`FindResult::reruns`]), run again, and was disturbed again: the search kept it, but it
    /// may measure the host, not the service.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disturbed: bool,
}

impl StepRow {
    /// The share of the step brink's workers waited for a CPU past which a failing step is
    /// not believed at once: [`DISTURBED_WAIT`].
    pub fn disturbed_by_host(&self) -> bool {
        self.generator_wait.is_some_and(|w| w >= DISTURBED_WAIT)
    }
}

/// A failing step during which brink's workers waited for a CPU other processes held at least
/// this share of the time (a build, another test, a noisy neighbour) is run again before the
/// search believes it: one such step made a search say 109 req/s of a service that gives 391.
pub const DISTURBED_WAIT: f64 = 0.1;

/// A level of held event streams, over the steady part of its step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldStep {
    /// Events read per second.
    pub events_per_s: f64,
    /// Gaps between consecutive events, p99; `null` when no stream had two.
    pub gap_p99_ms: Option<f64>,
    /// Delivery delay from the send time each event carries (`--sent-at`), p99; `null`
    /// without one.
    pub delivery_p99_ms: Option<f64>,
    /// Held streams reopened.
    pub reconnects: u64,
}

/// A closed-model step whose mean latency strayed from connections / throughput.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LittleGap {
    /// Connections / attempts per second, ms: what an attempt took on average.
    pub expected_ms: f64,
    /// The mean latency of the answered requests, ms.
    pub mean_ms: f64,
    pub cause: LittleCause,
}

/// Why a step's mean latency and its throughput disagree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LittleCause {
    /// Requests still waiting for an answer when the judged window ended (answered in the
    /// grace after it, or never), having waited up to `waited_s` in all: in no latency of
    /// the step.
    InFlight {
        requests: u64,
        waited_s: f64,
    },
    /// Attempts that failed without an answer (and the pause after a failed connect).
    Failed {
        attempts: u64,
    },
    /// brink's workers were this busy: connections waited for brink.
    Generator {
        busy_percent: f64,
    },
    /// Requests in flight across the judged window's edges count whole or not at all; with
    /// answers this slow against a window this short, that moves the mean.
    Edges {
        longest_ms: f64,
        window_s: f64,
    },
    Unexplained,
}

impl LittleGap {
    /// `Little's law: 400 connections at 1,737 req/s is 230ms a request, but answered
    /// requests averaged 52.8ms: 317 requests were still unanswered when the step ended`.
    pub fn describe(&self) -> String {
        let why = match &self.cause {
            LittleCause::InFlight { requests, waited_s } => format!(
                "{} requests were still waiting for an answer when the step ended ({waited_s:.0} s of waiting between them), and that wait is in no latency figure of the step",
                fmt_count(*requests)
            ),
            LittleCause::Failed { attempts } => format!(
                "{} attempts failed without an answer, and their time (with the pause after a failed connect) is in no latency figure",
                fmt_count(*attempts)
            ),
            LittleCause::Generator { busy_percent } => format!(
                "brink's workers were {busy_percent:.0}% busy, so connections waited for brink"
            ),
            LittleCause::Edges { longest_ms, window_s } => format!(
                "answers took up to {} against {window_s:.0}s judged, so requests in flight at its start and end move the mean (a longer --step narrows it)",
                fmt_ms(*longest_ms)
            ),
            LittleCause::Unexplained => "no cause brink can see".to_string(),
        };
        format!(
            "Little's law: connections / throughput is {} a request, but answered requests averaged {}: {why}",
            fmt_ms(self.expected_ms),
            fmt_ms(self.mean_ms)
        )
    }
}

impl StepRow {
    /// The point this step gives the USL fit: (concurrency, ok req/s); `None` for a step
    /// with no successful response or one cut short. For rate steps the concurrency actually
    /// in the system is throughput x mean latency (Little's law).
    pub fn usl_point(&self, by: By) -> Option<(f64, f64)> {
        if self.ok_rps <= 0.0 || self.interrupted {
            return None;
        }
        let n = match by {
            By::Rate => self.ok_rps * self.mean / 1000.0,
            By::Connections => self.level,
        };
        Some((n, self.ok_rps))
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Observed {
    pub peak: f64,
    pub mean: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sustained {
    pub level: f64,
    pub rps: f64,
    /// The objectives it met.
    pub slo: Vec<String>,
    /// Relative distance to the first failing level (the bisection's resolution), if one failed.
    pub resolution: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KneeInfo {
    pub level: f64,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UslInfo {
    pub lambda: f64,
    pub sigma: f64,
    pub kappa: f64,
    pub peak_concurrency: Option<f64>,
    pub peak_rps: Option<f64>,
    pub r2: f64,
    /// R² below 0.8: the curve does not describe these points well.
    pub poor_fit: bool,
    /// The curve put a peak where the measured throughput did not fall past it (a flat
    /// plateau: a fixed limit, not crosstalk): its peak is left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plateau: bool,
}

/// `1 connection`, `16 connections`.
pub fn connections(level: f64) -> String {
    let n = level.round() as u64;
    format!(
        "{} connection{}",
        fmt_count(n),
        if n == 1 { "" } else { "s" }
    )
}
