//! The result file, schema `brink.result/v1`. Keys are a contract (`summary.requests`,
//! `summary.latency_ms.p50`, `summary.status["503"]`, `summary.errors_by_kind.timeout`): add
//! freely, never rename without bumping the version. `schemas/brink.result.v1.json` describes it
//! and a test validates real output against it.

use serde::{Deserialize, Serialize};
use stats::slo::{Tracker, Verdict};
use stats::{ErrorKind, Histogram, LatencySummary, Totals};
use std::collections::BTreeMap;

/// The schema identifier written in every result.
pub const SCHEMA: &str = "brink.result/v1";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub brink_version: String,
    pub started_at: String,
    /// Seed of the template random values (`--seed` reproduces them).
    pub seed: u64,
    pub interrupted: bool,
    /// The first scenario's target and load (each scenario has its own in `scenarios`).
    pub target: TargetInfo,
    pub load: LoadInfo,
    /// All scenarios together (for a single URL run: that run).
    pub summary: SummaryJson,
    /// All scenarios' seconds, one after the other (`t` counts from the first scenario's start).
    pub timeseries: Vec<SecondRow>,
    /// Whether every SLO of every scenario passed; `null` when there were none.
    pub slo_passed: Option<bool>,
    pub scenarios: Vec<ScenarioResult>,
    /// `brink find`: the capacity search (its steps are the scenarios).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find: Option<crate::find::FindResult>,
}

/// One scenario of a plan (or the single run of `brink run URL`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub name: String,
    pub interrupted: bool,
    /// The SLO (with `abort`) that stopped this scenario early.
    pub aborted_by: Option<String>,
    /// Stopped early because nothing could connect: every connect of the first seconds was
    /// refused and none ever succeeded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreachable: bool,
    pub target: TargetInfo,
    pub load: LoadInfo,
    pub summary: SummaryJson,
    /// Per request name of a mix or flow.
    pub requests: Vec<RequestResult>,
    pub slo: Vec<SloResult>,
    pub slo_passed: Option<bool>,
    pub timeseries: Vec<SecondRow>,
    /// Server figures observed during the scenario (`--observe`): name -> peak and mean.
    pub observed: BTreeMap<String, crate::find::Observed>,
    /// What was observed, in words: `pid 812 (nginx) and 2 descendants (nginx x2)`, `cgroup
    /// /sys/fs/cgroup/system.slice/app.service`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed_sources: Vec<String>,
    /// Requests refused before sending (`errors_by_kind.invalid_request`): per request name,
    /// the first refused part and value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<RefusedJson>,
    /// Extractions that found nothing (`errors_by_kind.extract`): per request name, how many
    /// and why the first one failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extract_failures: Vec<ExtractFailureJson>,
    /// Connections that did not open (`connect`, `connect_timeout`, `tls`, `handshake`): per
    /// request name, the first one's kind, how many of that kind, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup_failures: Vec<SetupFailureJson>,
    /// Answers that failed saying why (`protocol`: the rule the answer broke; `closed`: how
    /// it ended; `not_stream`: why it was no event stream): per request name and kind, how
    /// many of that kind and the first one's reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer_failures: Vec<AnswerFailureJson>,
    /// Response checks (`check:`), in the plan's order: how often each passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckJson>,
    /// Why the scenario could not run (the run stopped there; earlier scenarios are kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The status codes that counted as success, as inclusive ranges (`[[100, 399]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ok_status: Vec<(u16, u16)>,
    /// gRPC runs: the status code names that counted as success.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ok_codes: Vec<String>,
    /// `--trace`: the requests to open in a tracing system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<TracesJson>,
    /// Async completion (`complete_when`): when the work the load started was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion: Option<CompletionJson>,
    /// Steps with `complete:`: how their jobs ended and how long they took.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "async")]
    pub async_jobs: Option<AsyncJson>,
    /// How busy brink itself was, and whether it, not the service, limited the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<GeneratorJson>,
    /// A windowed objective failed: where the run broke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broke: Option<crate::BrokeJson>,
    /// A distributed run: each worker, how it started and how it ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<model::WorkerReport>,
}

/// When the work the load started was done, by the completion probe.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CompletionJson {
    /// The condition, as written (`$.sold >= 1000`), and the URL polled.
    pub until: String,
    pub url: String,
    /// First send to the last response.
    pub responses_done_s: f64,
    /// First send to the condition holding (to within one poll interval); `null` when it
    /// never held within the time allowed.
    pub complete_s: Option<f64>,
    /// `complete_s - responses_done_s`: how long the work went on after the last response.
    pub drain_s: Option<f64>,
    pub complete: bool,
    /// The condition's value at the last poll (JSON text).
    pub last_value: Option<String>,
    pub polls: u64,
    pub failed_polls: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// (seconds from the first send, progress value) per poll.
    pub timeline: Vec<(f64, f64)>,
}

/// Per-request async completion: the jobs answered attempts started, followed apart from
/// the load.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AsyncJson {
    pub completed: u64,
    pub failed: u64,
    pub timed_out: u64,
    /// From each request's intended send to its job's completion.
    pub latency_ms: Option<LatencySummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
}

/// brink's own load during a scenario.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GeneratorJson {
    /// Worker CPU: the worker threads' time on a CPU over wall time and worker threads.
    pub busy_percent: f64,
    /// The worker threads' time ready to run but waiting for a CPU other processes held, over
    /// the same; absent where the kernel does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_percent: Option<f64>,
    /// How long, on average, a worker waited for a CPU each time it was given one (ms): about
    /// how late a response could be seen because others held the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_delay_ms: Option<f64>,
    /// Share (0-100) of the scheduling periods in which the CPU limit of brink's cgroup (a
    /// container's, a pod's) throttled it; absent without a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_percent: Option<f64>,
    /// Open model: share of requests started late, and the worst lag.
    pub late_share: f64,
    pub max_lag_ms: f64,
    /// The generator limited the run (then `why` says how).
    pub limited: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Not limited, but its workers waited for a CPU long enough, each time they woke, to
    /// matter against the latencies measured: what that means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The slowest answered requests and the first failed ones, by W3C trace id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TracesJson {
    /// Share of requests sent with the sampled flag.
    pub ratio: f64,
    /// `--trace-link`: where a trace opens, `{trace_id}` standing for the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    pub slowest: Vec<TraceJson>,
    pub failed: Vec<TraceJson>,
}

/// One traced request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TraceJson {
    pub trace_id: String,
    pub request: String,
    /// From the intended start.
    pub latency_ms: f64,
    /// The HTTP status, the gRPC code name, or the error kind.
    pub outcome: String,
    /// When it ended, seconds into the scenario.
    pub t_s: f64,
}

impl TracesJson {
    /// The link to the trace `id`, when a link template was given.
    pub fn link_to(&self, id: &str) -> Option<String> {
        self.link.as_ref().map(|l| l.replace("{trace_id}", id))
    }
}

impl ScenarioResult {
    /// Whether responses with `status` counted as success (below 400 when the result does not
    /// say).
    pub fn counts_as_ok(&self, status: u16) -> bool {
        if self.ok_status.is_empty() {
            return (100..400).contains(&status);
        }
        self.ok_status
            .iter()
            .any(|&(a, b)| (a..=b).contains(&status))
    }

    /// Whether gRPC calls ending with the code `name` counted as success (OK alone when the
    /// result does not say).
    pub fn code_counts_as_ok(&self, name: &str) -> bool {
        if self.ok_codes.is_empty() {
            return name == "OK";
        }
        self.ok_codes.iter().any(|c| c == name)
    }
}

/// Extractions of one request that found nothing.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExtractFailureJson {
    pub request: String,
    pub count: u64,
    /// Why the first one failed (`JSONPath $.token matched nothing`, `response too large ...`).
    pub reason: String,
}

/// Answers of one request that failed as one kind, with why the first did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AnswerFailureJson {
    pub request: String,
    /// The error kind (`protocol`, `closed`, `not_stream`).
    pub kind: String,
    /// Errors of that kind.
    pub count: u64,
    /// Why the first one failed (`its Content-Length is not a number`).
    pub reason: String,
}

/// The first connection of one request that did not open.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SetupFailureJson {
    pub request: String,
    /// Its error kind (`tls`, `handshake`, ...).
    pub kind: String,
    /// Attempts that failed as that kind.
    pub count: u64,
    /// Why the first one failed (`received corrupt message of type InvalidContentType`,
    /// `answered 403 instead of 101 Switching Protocols`).
    pub reason: String,
}

/// One response check over a scenario.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckJson {
    pub name: String,
    /// The request whose answers it checks.
    pub request: String,
    /// Answers it passed and failed (it runs on every answer, whatever the status).
    pub passed: u64,
    pub failed: u64,
    /// `passed` over all its runs, in percent; `null` when it never ran.
    pub pass_percent: Option<f64>,
    /// A failure only counts here; the request still counted as a success.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub count_only: bool,
    /// Why it first failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// Answers it could not look at because brink did not keep their body (the capture
    /// budget was full): neither passed nor failed, and why the first time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unchecked: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_unchecked: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CheckJson {
    /// Checks' total (passed, runs).
    pub fn total(checks: &[CheckJson]) -> (u64, u64) {
        checks
            .iter()
            .fold((0, 0), |(p, r), c| (p + c.passed, r + c.passed + c.failed))
    }
}

/// Attempts of one request that were never sent because a rendered value broke the wire rules.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RefusedJson {
    pub request: String,
    /// How many attempts were refused.
    pub count: u64,
    /// `path`, `header NAME` or (gRPC) `message` of the first refusal.
    pub part: String,
    /// The first refused value, escaped (`\r\n` as text) and shortened.
    pub value: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestResult {
    pub name: String,
    pub summary: SummaryJson,
}

/// The verdict of one SLO.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SloResult {
    /// As written: `list.p95 < 100ms over 10s`.
    pub slo: String,
    /// `list.p95 over 10s`
    pub metric: String,
    /// `< 100ms`
    pub target: String,
    /// Measured: whole run, or the worst window; ms, a fraction, or req/s by metric.
    pub value: Option<f64>,
    /// The value as shown (`59.4ms`, `0.02%`).
    pub result: String,
    /// Headroom as a fraction of the target (negative when failing).
    pub margin: Option<f64>,
    pub pass: bool,
    pub window_s: Option<u64>,
    pub windows: u64,
    pub failed_windows: u64,
    /// Second (from the scenario start) at which the worst window ended ...
    pub worst_window_end_s: Option<u64>,
    /// ... and the first failing one (where the run broke).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failed_s: Option<u64>,
    pub abort: bool,
}

impl SloResult {
    pub fn new(t: &Tracker, v: &Verdict) -> SloResult {
        let slo = &t.slo;
        SloResult {
            slo: slo.text.clone(),
            metric: slo.label(),
            target: slo.target_text(),
            value: v.value,
            result: v.value.map_or("no data".to_string(), |x| slo.fmt_value(x)),
            margin: v.value.map(|x| slo.margin(x)),
            pass: v.pass,
            window_s: slo.window,
            windows: v.windows,
            failed_windows: v.failed_windows,
            worst_window_end_s: v.worst_window_end,
            first_failed_s: v.first_failed_window_end,
            abort: slo.abort,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetInfo {
    pub url: String,
    pub method: String,
    /// A plan's single request: its path as written (`/users/{{seq}}`), when it is not the
    /// target's own; several requests have a row each in `requests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `http/1.1` or `h2`.
    pub protocol: model::Wire,
    /// `--http3=auto`: the request that asked, what its `Alt-Svc` said, what the run chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovered: Option<model::alt_svc::Discovered>,
    /// The address dialled (`host:port`), when the URL names another (`--authority`: the
    /// `Host` / `:authority` sent and the name the certificate must hold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialled: Option<String>,
}

impl TargetInfo {
    /// The URL the requests went to: the target's, with a plan's single request's own path
    /// in place of the target's path.
    pub fn shown(&self) -> String {
        let Some(path) = &self.path else {
            return self.url.clone();
        };
        let after_scheme = self.url.find("://").map_or(0, |i| i + 3);
        let origin_end = self.url[after_scheme..]
            .find('/')
            .map_or(self.url.len(), |i| after_scheme + i);
        format!("{}{path}", &self.url[..origin_end])
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoadInfo {
    /// `closed` or `open`.
    pub model: model::LoadModel,
    /// Closed: peak connections; open: connection pool (max in flight).
    pub connections: usize,
    /// Open model with a constant rate: requests per second.
    pub rate: Option<f64>,
    /// Staged profiles: each stage ramps to `target` over `duration_s`.
    pub stages: Vec<StageJson>,
    pub duration_s: Option<f64>,
    pub requests: Option<u64>,
    pub threads: usize,
    pub timeout_s: f64,
    /// HTTP/2 and gRPC: the connections that carry the requests in flight as streams (for
    /// them `connections` counts requests in flight, not connections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_connections: Option<usize>,
    /// A flow: the requests each iteration sends (its rate is iterations per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_steps: Option<usize>,
    /// Closed model, paced (WebSocket `--every`, `--hold`): each connection sends once every
    /// this many ms, and a request is measured from when it was due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageJson {
    pub duration_s: f64,
    pub target: f64,
}

/// Transport errors by kind; every kind is always present.
pub type ErrorsByKind = BTreeMap<String, u64>;

/// HTTP/3 early data (`--0rtt`): connections that resumed a session and sent requests before
/// their handshake ended, how many requests went so, and how many of those the server refused
/// to take early (each sent again after the handshake, counted once).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ZeroRttJson {
    pub connections: u64,
    pub requests: u64,
    pub refused: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SummaryJson {
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    /// The schedule's length (what ran of it): the rates are over it.
    pub duration_s: f64,
    /// How long the run went on after the schedule, for requests still in flight (`--grace`).
    #[serde(default)]
    pub grace_s: f64,
    /// Attempts that ended in that grace: counted in `requests`, not in the rates.
    #[serde(default)]
    pub in_grace: u64,
    /// What completed per second of the schedule.
    pub rps: f64,
    pub ok_rps: f64,
    pub success_rate: f64,
    /// Requests in flight when the run stopped; not counted anywhere else.
    pub unfinished: u64,
    /// From the intended start (coordinated-omission corrected), responses only.
    pub latency_ms: LatencySummary,
    /// From the actual send, responses only.
    pub service_time_ms: LatencySummary,
    /// Connections opened (each TCP connect that completed).
    #[serde(default)]
    pub connections_opened: u64,
    /// TCP connect times; `null` when no connection was opened.
    #[serde(default)]
    pub connect_ms: Option<LatencySummary>,
    /// TLS handshake times; `null` without TLS.
    #[serde(default)]
    pub tls_ms: Option<LatencySummary>,
    /// `--no-keepalive`: connect plus request, for requests sent on a connection opened for
    /// them; `null` otherwise.
    #[serde(default)]
    pub with_connect_ms: Option<LatencySummary>,
    /// HTTP/3 with `--0rtt`: what went as early data; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_rtt: Option<ZeroRttJson>,
    pub status: BTreeMap<String, u64>,
    /// gRPC calls by status code name (`OK`, `UNAVAILABLE`, ...); absent for HTTP runs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_status: BTreeMap<String, u64>,
    /// Streaming gRPC calls: messages each way, time to the first message; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_stream: Option<StreamJson>,
    /// WebSocket runs: the upgrades, messages each way, pings and close codes; absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WebSocketJson>,
    /// Answers read as events (Server-Sent Events): first byte, first event, gaps; absent
    /// when none streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<crate::events::EventStreamJson>,
    /// Token streams (`--llm`): TTFT, ITL, TPOT, output tokens, goodput; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<crate::events::LlmJson>,
    pub errors_by_kind: ErrorsByKind,
    /// Errors by the code the server or the transport gave, as `kind:CODE`
    /// (`reset:H3_EXCESSIVE_LOAD`, `closed:stateless_reset`); absent when none came with one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors_by_code: BTreeMap<String, u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Open model only: how well the generator kept to the schedule.
    pub schedule: Option<ScheduleInfo>,
    /// Corrected latency in log-spaced bins.
    pub latency_histogram: Vec<HistBin>,
    /// The whole histograms, µs, in the HdrHistogram interval-log form (V2, DEFLATE, base64):
    /// latency from the intended start, and service time. Exact; they merge with any other.
    #[serde(default)]
    pub latency_hdr: String,
    #[serde(default)]
    pub service_hdr: String,
}

impl SummaryJson {
    /// Attempts that failed as `kind`.
    pub fn errors_of(&self, kind: ErrorKind) -> u64 {
        self.errors_by_kind.get(kind.name()).copied().unwrap_or(0)
    }

    /// Attempts that failed without an answer (every kind but those that come with one).
    pub fn unanswered(&self) -> u64 {
        ErrorKind::ALL
            .iter()
            .filter(|k| !k.answered())
            .map(|&k| self.errors_of(k))
            .sum()
    }
}

/// What streaming gRPC calls carried.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StreamJson {
    pub calls: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub received_per_call: f64,
    pub received_per_s: f64,
    /// From the intended start to the first message received; `null` when none came.
    pub first_message_ms: Option<LatencySummary>,
}

/// What a WebSocket run's connections did besides the answered messages (`summary.requests`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WebSocketJson {
    /// Upgrades that succeeded (`connections_opened` counts every TCP connect).
    pub upgrades: u64,
    /// Upgrades the server refused, by the status it answered with (`101`: an answer that
    /// was not a WebSocket upgrade for this request's key).
    #[serde(default)]
    pub upgrades_refused: BTreeMap<String, u64>,
    /// From the upgrade request sent to the 101 read; `null` when none succeeded.
    pub upgrade_ms: Option<LatencySummary>,
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Pings the server sent, each answered with a pong.
    pub pings: u64,
    /// Connections closed, by the server's close code (`1006`: ended without a close frame).
    pub close_codes: BTreeMap<String, u64>,
    /// Connections the server ended (a close, a drop, a broken rule) before brink closed them.
    pub unexpected_closes: u64,
    /// How long connections stayed up, from the upgrade to their end; `null` when none ended.
    pub connected_ms: Option<LatencySummary>,
    /// Subscriptions with `--sent-at`: each pushed message's delivery delay, from the send
    /// time it carries to its arrival; `null` otherwise.
    pub delay_ms: Option<LatencySummary>,
    /// Subscriptions with `--sent-at`: pushed messages whose send time could not be read (not
    /// JSON, no number there, or a time in the future).
    pub undated: u64,
}

/// The `websocket` section, when connections upgraded or carried messages.
fn websocket(b: &stats::Bucket) -> Option<WebSocketJson> {
    let upgrade = b.setup.upgrade.as_deref();
    if upgrade.is_none() && b.ws.is_none() {
        return None;
    }
    let counts = b.ws.as_deref().cloned().unwrap_or_default();
    let by_code = |c: &stats::StatusCounts| {
        c.sorted()
            .into_iter()
            .map(|(c, n)| (c.to_string(), n))
            .collect()
    };
    Some(WebSocketJson {
        upgrades: upgrade.map_or(0, |h| h.len()),
        upgrades_refused: by_code(&counts.refused),
        upgrade_ms: upgrade.map(LatencySummary::of),
        messages_sent: counts.sent,
        messages_received: counts.received,
        pings: counts.pings,
        close_codes: by_code(&counts.closes),
        unexpected_closes: counts.unexpected,
        connected_ms: counts.up.as_deref().map(LatencySummary::of),
        delay_ms: counts.delay.as_deref().map(LatencySummary::of),
        undated: counts.undated,
    })
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScheduleInfo {
    /// Requests the schedule asked for in the time that ran.
    pub intended: u64,
    pub intended_rps: f64,
    /// Sent more than 1 ms after their intended time because no connection was free.
    pub late: u64,
    pub max_lag_ms: f64,
    /// Due before the end but never sent (no free connection in time).
    pub not_sent: u64,
    /// A flow: the schedule counts iterations (each sends `load.flow_steps` requests when
    /// whole), not requests; `intended`, `not_sent` and the rates are iterations.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub iterations: bool,
    /// The run sent clearly less than it asked for: what it achieved, and which limit held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<Shortfall>,
}

/// An open-model run that could not send at the rate asked, or paced connections that
/// could not keep their pace (`limit` "pace").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shortfall {
    /// The rate the schedule asked for (the same as `intended_rps`).
    pub asked_rps: f64,
    /// Attempts started per second over the run.
    pub achieved_rps: f64,
    /// `pool`: every connection was busy while the service answered about as fast as it did
    /// unloaded (more connections would carry more); `service`: its time per request grew
    /// threefold or more (it queues work inside: more connections would only queue more).
    pub limit: String,
    /// The connection pool (`-c`).
    pub pool: u64,
    /// Mean time per request at the service (ms), the fastest (unloaded) one, and the rate
    /// the pool carries at the mean.
    pub service_ms: f64,
    pub unloaded_ms: f64,
    pub pool_carries_rps: f64,
}

impl ScheduleInfo {
    /// The shortfall as a headline: `achieved 1,410 of 3,000 req/s asked: ...`.
    pub fn shortfall_text(&self) -> Option<String> {
        let f = self.shortfall.as_ref()?;
        let fmt = crate::fmt::fmt_rate;
        let ms = crate::fmt::fmt_ms;
        let why = match f.limit.as_str() {
            "pool" => format!(
                "the pool of {} connections was the limit ({} per request at the service, as unloaded: {} connections carry about {} req/s); raise -c",
                f.pool,
                ms(f.service_ms),
                f.pool,
                fmt(f.pool_carries_rps)
            ),
            "pace" => format!(
                "each of {} connections sends again only once its answer came, and answers took {} on average against a period of {}, so they carry about {} req/s: the service answers slower than the pace (more connections would keep it)",
                f.pool,
                ms(f.service_ms),
                ms(f.pool as f64 * 1000.0 / f.asked_rps.max(1e-9)),
                fmt(f.pool_carries_rps)
            ),
            _ => format!(
                "the service could not keep up (its time per request grew from {} to {}: it queues, and more connections would only queue more)",
                ms(f.unloaded_ms),
                ms(f.service_ms)
            ),
        };
        let unit = if self.iterations {
            "iterations/s"
        } else {
            "req/s"
        };
        Some(format!(
            "achieved {} of {} {unit} asked: {why}; {} of {} started late",
            fmt(f.achieved_rps),
            fmt(f.asked_rps),
            crate::fmt::fmt_count(self.late),
            crate::fmt::fmt_count(self.intended)
        ))
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HistBin {
    pub le_ms: f64,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SecondRow {
    pub t: u64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    /// The schedule's target level (connections or req/s) in this second.
    pub target: Option<f64>,
    /// Connections opened in this second; their TCP connect and TLS handshake p99 (ms).
    #[serde(default)]
    pub connects: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_p99: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_p99: Option<f64>,
    /// WebSocket upgrades completed in this second: their p99 (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_p99: Option<f64>,
    /// This second's latency and service-time histograms (as `summary.latency_hdr`): merging
    /// every second's gives exactly the summary's.
    #[serde(default)]
    pub latency_hdr: String,
    #[serde(default)]
    pub service_hdr: String,
    /// Server figures sampled in this second (`--observe`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub observed: BTreeMap<String, f64>,
    /// Responses in this second by status code, and transport errors by kind (only those
    /// that occurred).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub status: BTreeMap<String, u64>,
    /// gRPC calls in this second by code name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_status: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors_by_kind: BTreeMap<String, u64>,
}

impl RunResult {
    /// The file for a whole run: `runs` are the scenarios in order, each with its totals.
    pub fn new(
        started_at: String,
        seed: u64,
        runs: Vec<(ScenarioResult, Totals)>,
    ) -> Option<RunResult> {
        let (first, _) = runs.first()?;
        let mut totals = Totals::default();
        let (mut span, mut unfinished, mut offset) = (Span::default(), 0, 0);
        let mut timeseries = Vec::new();
        for (sc, t) in &runs {
            totals.add_totals(t);
            span.secs += sc.summary.duration_s;
            span.grace_secs += sc.summary.grace_s;
            unfinished += sc.summary.unfinished;
            timeseries.extend(sc.timeseries.iter().map(|row| SecondRow {
                t: row.t + offset,
                ..row.clone()
            }));
            offset += sc.timeseries.len() as u64;
        }
        let summary = if runs.len() == 1 {
            first.summary.clone()
        } else {
            summary_json(&totals, span, unfinished, None)
        };
        let verdicts: Vec<bool> = runs.iter().filter_map(|(s, _)| s.slo_passed).collect();
        Some(RunResult {
            schema: SCHEMA.to_string(),
            brink_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at,
            seed,
            interrupted: runs.iter().any(|(s, _)| s.interrupted),
            target: first.target.clone(),
            load: first.load.clone(),
            summary,
            timeseries,
            slo_passed: (!verdicts.is_empty()).then(|| verdicts.iter().all(|&p| p)),
            scenarios: runs.into_iter().map(|(s, _)| s).collect(),
            find: None,
        })
    }
}

/// How long a run took: its schedule's part (rates are over it) and the grace after it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Span {
    pub secs: f64,
    pub grace_secs: f64,
}

impl Span {
    /// A run that lasted `duration`, of which `scheduled` was its schedule.
    pub fn of(duration: std::time::Duration, scheduled: std::time::Duration) -> Span {
        Span {
            secs: scheduled.as_secs_f64(),
            grace_secs: duration.saturating_sub(scheduled).as_secs_f64(),
        }
    }
}

/// The `summary` object of `totals` over `span`.
pub fn summary_json(
    totals: &Totals,
    span: Span,
    unfinished: u64,
    schedule: Option<ScheduleInfo>,
) -> SummaryJson {
    let b = &totals.all;
    let (rps, ok_rps) = totals.rates(span.secs);
    SummaryJson {
        requests: b.requests,
        ok: b.ok,
        errors: b.errors(),
        duration_s: span.secs,
        grace_s: span.grace_secs,
        in_grace: totals.in_grace.requests,
        rps,
        ok_rps,
        success_rate: if b.requests > 0 {
            b.ok as f64 / b.requests as f64
        } else {
            0.0
        },
        unfinished,
        latency_ms: LatencySummary::of(&b.corrected),
        service_time_ms: LatencySummary::of(&b.service),
        connections_opened: totals.all.setup.opened,
        connect_ms: totals.all.setup.connect.as_deref().map(LatencySummary::of),
        tls_ms: totals.all.setup.tls.as_deref().map(LatencySummary::of),
        with_connect_ms: totals
            .all
            .setup
            .with_connect
            .as_deref()
            .map(LatencySummary::of),
        zero_rtt: totals.all.setup.zero_rtt.as_deref().map(|z| ZeroRttJson {
            connections: z.connections,
            requests: z.requests,
            refused: z.refused,
        }),
        status: b
            .status
            .sorted()
            .into_iter()
            .map(|(c, n)| (c.to_string(), n))
            .collect(),
        grpc_status: b
            .grpc
            .sorted()
            .into_iter()
            .map(|(c, n)| (model::grpc::name(c), n))
            .collect(),
        grpc_stream: b.stream.as_deref().map(|s| StreamJson {
            calls: s.calls,
            messages_sent: s.sent,
            messages_received: s.received,
            received_per_call: if s.calls > 0 {
                s.received as f64 / s.calls as f64
            } else {
                0.0
            },
            received_per_s: if span.secs > 0.0 {
                s.received as f64 / span.secs
            } else {
                0.0
            },
            first_message_ms: (!s.first_message.is_empty())
                .then(|| LatencySummary::of(&s.first_message)),
        }),
        websocket: websocket(&totals.all),
        stream: b
            .events
            .as_deref()
            .and_then(|e| crate::events::EventStreamJson::of(e, span.secs, &totals.in_grace)),
        llm: b
            .events
            .as_deref()
            .and_then(|e| e.llm.as_deref())
            .and_then(|l| crate::events::LlmJson::of(l, span.secs, &totals.in_grace)),
        errors_by_kind: ErrorKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), b.errors_by_kind[k.index()]))
            .collect(),
        errors_by_code: b.codes.iter().cloned().collect(),
        bytes_in: b.bytes_in,
        bytes_out: b.bytes_out,
        schedule,
        latency_histogram: bins(&totals.all.corrected),
        latency_hdr: stats::encode(&totals.all.corrected),
        service_hdr: stats::encode(&totals.all.service),
    }
}

/// Up to 12 log-spaced bins from the smallest to the largest value.
fn bins(h: &Histogram) -> Vec<HistBin> {
    if h.is_empty() {
        return Vec::new();
    }
    let (lo, hi) = (h.min().max(1) as f64, h.max().max(1) as f64);
    let n = if hi / lo < 1.5 { 1 } else { 12 };
    let mut out = Vec::with_capacity(n);
    let mut prev = 0u64;
    for i in 1..=n {
        let edge = lo * (hi / lo).powf(i as f64 / n as f64);
        let upper = if i == n { h.max() } else { edge as u64 };
        let below = h
            .iter_recorded()
            .filter(|v| v.value_iterated_to() <= upper)
            .map(|v| v.count_at_value())
            .sum::<u64>();
        out.push(HistBin {
            le_ms: h.highest_equivalent(upper) as f64 / 1000.0,
            count: below - prev,
        });
        prev = below;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_single_request_s_path_is_shown_on_its_target() {
        let t = |url: &str, path: Option<&str>| super::TargetInfo {
            url: url.into(),
            method: "POST".into(),
            path: path.map(str::to_string),
            protocol: model::Wire::Http1,
            discovered: None,
            dialled: None,
        };
        assert_eq!(
            t("http://127.0.0.1:8080/", None).shown(),
            "http://127.0.0.1:8080/"
        );
        assert_eq!(
            t("http://127.0.0.1:8080/", Some("/user/{{seq}}")).shown(),
            "http://127.0.0.1:8080/user/{{seq}}"
        );
        assert_eq!(
            t("https://[::1]:8443/api", Some("/api/items")).shown(),
            "https://[::1]:8443/api/items"
        );
        assert_eq!(t("http://h:1", Some("/x")).shown(), "http://h:1/x");
    }
}
