//! The `find` section of a result and its terminal form: one row per step (the sweep table
//! people make by hand), the maximum sustainable level, the knee, the USL fit and the diagnosis.

use crate::fmt::{fmt_count, fmt_ms, fmt_rate, observed_value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

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
}

/// A share of brink's workers' time waiting for a CPU from which a run's or step's figures may
/// be brink's (0..1).
pub const GENERATOR_WAITED: f64 = 0.15;

/// Throughput this far (%) below its peak has fallen, not held.
const FALL_PERCENT: f64 = 10.0;

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
            Finding::Queueing { level, ok_rps, knee } => format!(
                "queueing at ~{} req/s: the knee is at {} ({knee}); requests wait for something the service has a fixed amount of (workers, pool slots, CPU). Add --observe to see which",
                fmt_rate(*ok_rps),
                lvl(*level)
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
            Finding::Retransmits { level, peak_per_s, p99_ms } => format!(
                "TCP retransmissions during the failing step at {} (up to {peak_per_s:.0}/s) with p99 at {p99_ms:.0} ms: latency clusters at retransmission timeouts (200 ms minimum RTO, 1 s for a lost SYN): look for drops on the path (queues, conntrack, a proxy)",
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

/// The table header, printed before the first step.
pub fn step_header(by: By, observed: &[String]) -> String {
    let mut o = format!(
        "\n {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>5}",
        if by == By::Rate { "rate" } else { "conns" },
        "p50",
        "p75",
        "p90",
        "p99",
        "req/s",
        "errors",
        "gen"
    );
    for name in observed {
        let _ = write!(o, " {:>9}", short(name));
    }
    o.push_str("  verdict\n");
    o
}

/// Column label: without the `srv ` prefix, at most 9 characters.
fn short(name: &str) -> String {
    name.trim_start_matches("srv ").chars().take(9).collect()
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
        fmt_rate(s.rps),
        fmt_count(s.errors),
        s.generator_cpu * 100.0
    );
    for name in observed {
        let v = s
            .observed
            .get(name)
            .map_or("-".to_string(), |v| observed_value(name, v.peak));
        let _ = write!(o, " {v:>9}");
    }
    let verdict = if s.pass {
        "pass".to_string()
    } else {
        format!("FAIL {}", s.reason)
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

/// The steps again, by level, with the knee marked (the live table is in the order they ran).
pub fn by_level(f: &FindResult, observed: &[String]) -> String {
    let mut rows: Vec<&StepRow> = f.steps.iter().collect();
    rows.sort_by(|a, b| a.level.total_cmp(&b.level));
    let mut o = format!("\n by level:{}", step_header(f.by, observed));
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

/// Everything after the table, in the order a capacity answer is read: the capacity (the
/// throughput at the maximum sustainable level), how throughput behaved around the knee and
/// why it differs from the capacity, what more load only bought (queueing), how the search
/// ended, the USL fit (by connections only) and the diagnosis.
pub fn render_summary(f: &FindResult) -> String {
    let mut o = String::new();
    let _ = writeln!(o);
    for line in f.capacity_lines() {
        let _ = writeln!(o, " {line}");
    }
    let _ = writeln!(o, " Search ended: {}", f.stopped);
    if let Some(w) = f.generator_waited() {
        let _ = writeln!(o, " Generator: WARNING {w}");
    }
    if let (None, By::Connections) = (&f.usl, f.by) {
        let levels = f.usl_points().len();
        let why = if levels < 3 {
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
    if let Some(r) = f.reading() {
        let _ = writeln!(o, "\nreading it: {r}");
    }
    o
}

impl FindResult {
    /// The steps whose brink waited for a CPU [`GENERATOR_WAITED`] of its time or more, in
    /// words; their figures may be brink's.
    pub fn generator_waited(&self) -> Option<String> {
        let short: Vec<&StepRow> = self
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
            self.steps.len(),
            worst.generator_wait.unwrap_or(0.0) * 100.0,
            self.by.describe(worst.level)
        ))
    }

    /// Whole steps with successful responses, in level order.
    fn measured(&self) -> Vec<&StepRow> {
        let mut v: Vec<&StepRow> = self
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
    pub fn capacity_lines(&self) -> Vec<String> {
        let steps = self.measured();
        let mut out = vec![self.capacity_line()];
        let Some(peak) = steps
            .iter()
            .copied()
            .max_by(|a, b| a.ok_rps.total_cmp(&b.ok_rps))
        else {
            return out;
        };
        let top = steps.last().copied().unwrap_or(peak);
        let Some(k) = &self.knee else {
            out.push(format!(
                "Throughput: still growing at {}, the highest level run ({} req/s): the service's limit is further on",
                self.by.describe(top.level),
                fmt_rate(top.ok_rps)
            ));
            return out;
        };
        let knee = steps
            .iter()
            .copied()
            .find(|x| x.level == k.level)
            .unwrap_or(peak);
        out.push(self.throughput_line(peak, knee, top, k));
        if top.level > knee.level {
            let queues = if k.reason.starts_with("throughput stops growing") {
                "More load only queues"
            } else {
                "More load"
            };
            out.push(format!(
                "{queues}: at {} p99 is {} ({} at the knee) for {} req/s",
                self.by.describe(top.level),
                fmt_ms(top.p99),
                fmt_ms(knee.p99),
                fmt_rate(top.ok_rps)
            ));
        }
        out
    }

    /// `Capacity: 1,905 req/s (maximum sustainable: 29 connections with p99 < 50ms, bisected
    /// to +-3%)`: the one figure to act on.
    fn capacity_line(&self) -> String {
        let Some(m) = &self.max_sustainable else {
            return "Capacity: none within the objectives (no level met them)".to_string();
        };
        let res = m.resolution.map_or(String::new(), |r| {
            format!(", bisected to +-{:.0}%", r * 100.0)
        });
        format!(
            "Capacity: {} req/s (maximum sustainable: {} with {}{res})",
            fmt_rate(m.rps),
            self.by.describe(m.level),
            m.slo.join(", ")
        )
    }

    /// How throughput behaved at the knee and past it, and why the capacity differs from the
    /// peak when it does.
    fn throughput_line(
        &self,
        peak: &StepRow,
        knee: &StepRow,
        top: &StepRow,
        k: &KneeInfo,
    ) -> String {
        let lvl = |l: f64| self.by.describe(l);
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
        let Some(m) = &self.max_sustainable else {
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
    pub fn reading(&self) -> Option<String> {
        let k = self.knee.as_ref()?;
        if !k.reason.starts_with("throughput stops growing") {
            return None;
        }
        let steps = self.measured();
        let top = steps.last().filter(|t| t.level > k.level)?;
        let peak = steps.iter().map(|x| x.ok_rps).fold(0.0, f64::max);
        let unit = match self.by {
            By::Connections => "connections",
            By::Rate => "req/s asked",
        };
        let fell = (1.0 - top.ok_rps / peak) * 100.0;
        let held = if fell >= FALL_PERCENT {
            format!(
                "throughput fell from {} to {} req/s ({fell:.0}% less) by {}: past the knee the extra work costs the service throughput as well (contention for locks or CPU, connection handling, a full accept queue)",
                fmt_rate(peak),
                fmt_rate(top.ok_rps),
                self.by.describe(top.level)
            )
        } else {
            format!("throughput stays near {} req/s", fmt_rate(peak))
        };
        Some(format!(
            "past ~{} the service takes no more work at once, so extra requests only queue: {held}, while latency grows with the queue (Little's law: latency = {unit} in flight / throughput). The maximum sustainable level is the longest queue the objectives allow.",
            self.by.describe(k.level)
        ))
    }
}
