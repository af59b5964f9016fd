//! Service-level objectives: one small grammar, parsed once, evaluated on the whole run and on
//! every sliding window of it. The grammar (whitespace between tokens is free):
//!
//! ```text
//! slo       := [request "."] metric op value ["over" duration] ["abort"]
//! metric    := "p" NUMBER (any quantile: p50, p95, p99.9) | "mean" | "min" | "max" (latency)
//!            | "errors"                                                           (share failed)
//!            | "rps"                                                              (attempts/s)
//!            | "complete"                    (async completion: first send to done; a duration)
//!            | "async." latency-metric       (per-request completion: send to job done)
//!            | "checks" | "check." NAME      (share of response checks passed; a percentage)
//!            | "closed"                      (share of attempts whose connection closed under them)
//!            | "dropped"                     (share of WebSocket connections the server ended)
//!            | "handshake." latency-metric   (WebSocket upgrades: request sent to 101 read)
//!            | "msg." latency-metric         (a WebSocket message's answer: the latency itself)
//!            | ("first_byte" | "first_event" | "event_gap") "." latency-metric
//!                                (answers read as events: intended start to the head, to the
//!                                 first event; the gaps between events)
//!            | ("ttft" | "itl" | "tpot") "." latency-metric
//!                                (token streams: intended start to the first token, the gaps
//!                                 between token-bearing deltas, time per output token)
//! op        := "<" | "<=" | ">" | ">="
//! value     := duration for latency ("200ms", "1.5s"; a bare number is milliseconds, as in k6)
//!            | percentage for errors ("0.1%", "1 %"; a bare number is a percentage too)
//!            | number for rps ("190", "1.5k")
//! ```
//!
//! k6's spellings are read as the same objectives: `p(95)` is `p95`, `avg` is `mean`, `med` is
//! `p50`, `http_req_failed` (or `http_req_failed.rate`) is `errors` with its value a rate
//! (`0.01` is 1%), `http_reqs` (or `http_reqs.rate`) is `rps`. Every objective is echoed in its
//! normalised form with its unit ([`Slo::text`]: `p95 < 200ms`).
//!
//! * `request.` limits the objective to one named request of a mix or flow (`list.p95 < 100ms`).
//! * `over WINDOW` evaluates it on every window of that many whole seconds that ends at each
//!   second of the run (a sliding window), not only on the totals: an error burst in the last
//!   10 s of a 10 min run fails `errors < 1% over 10s` even though the run-wide rate is tiny
//!   (k6 issue 2379). A run shorter than the window is evaluated once, on the whole run.
//! * `abort` stops the scenario as soon as the objective breaks: at the end of the first window
//!   that fails, or, without `over`, as soon as the totals so far fail.
//!
//! Latency objectives use the corrected latency (from the intended start). A window without a
//! response has no latency and passes latency objectives; its attempts still count for errors.

use crate::bucket::Bucket;
use crate::Histogram;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// What an objective measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// A latency quantile in 0..=1, or `None` for the mean; `Some(1.0)` is the max.
    Latency(Option<f64>),
    /// Failed attempts over all attempts.
    Errors,
    /// Attempts per second.
    Rps,
    /// The share of attempts whose gRPC call ended with this status code (`code.UNAVAILABLE`).
    Code(u16),
    /// The share of attempts answered with this HTTP status (`status.429`).
    Status(u16),
    /// Async completion: from the first send until the completion probe's condition held
    /// (ms). Judged once, at the end, by whoever ran the probe; never per second.
    Complete,
    /// Per-request async completion (`async.p95`): a quantile (or the mean, `None`) of the
    /// time from each request's intended send to its job's completion (ms). Judged at the end.
    Async(Option<f64>),
    /// The share of response checks that passed: all of them (`checks`), or the one in this
    /// slot (`check.NAME`).
    Check(Option<usize>),
    /// The share of attempts that failed because the connection closed under them (`closed`).
    Closed,
    /// A quantile (or the mean, `None`) of WebSocket upgrade times, ms (`handshake.p99`).
    Handshake(Option<f64>),
    /// The share of WebSocket connections opened that the server ended (a close, a drop, a
    /// broken rule) before brink closed them (`dropped`): held connections lost between
    /// messages, which `closed` (attempts only) never sees.
    Dropped,
    /// A quantile (or the mean, `None`) of one of the times of answers read as events, ms
    /// (`first_byte.p99`, `first_event.p99`, `event_gap.p99`).
    Stream(StreamTime, Option<f64>),
}

/// The names an objective's metric may start with before a `.` (`ttft.p99`): what a request
/// name that is none of the run's requests is likely a misspelling of.
pub const PREFIXES: [&str; 11] = [
    "first_byte",
    "first_event",
    "event_gap",
    "delivery",
    "ttft",
    "itl",
    "tpot",
    "msg",
    "handshake",
    "async",
    "check",
];

/// Which time of answers read as events an objective holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamTime {
    /// From the intended start to the answer's head.
    FirstByte,
    /// From the intended start to its first event.
    FirstEvent,
    /// Between consecutive events.
    EventGap,
    /// Token streams: from the intended start to the first token.
    Ttft,
    /// Token streams: between consecutive token-bearing deltas.
    Itl,
    /// Token streams: each stream's time per output token after the first.
    Tpot,
    /// From the send time an event carries (`--sent-at`) to its read.
    Delivery,
}

impl StreamTime {
    pub const ALL: [StreamTime; 7] = [
        StreamTime::FirstByte,
        StreamTime::FirstEvent,
        StreamTime::EventGap,
        StreamTime::Ttft,
        StreamTime::Itl,
        StreamTime::Tpot,
        StreamTime::Delivery,
    ];

    /// The name objectives use: `first_byte`, `first_event`, `event_gap`.
    pub fn name(self) -> &'static str {
        match self {
            StreamTime::FirstByte => "first_byte",
            StreamTime::FirstEvent => "first_event",
            StreamTime::EventGap => "event_gap",
            StreamTime::Ttft => "ttft",
            StreamTime::Itl => "itl",
            StreamTime::Tpot => "tpot",
            StreamTime::Delivery => "delivery",
        }
    }

    /// Its histogram in `e`; `None` for a token stream's time where `e` read none.
    pub fn of(self, e: &crate::events::EventCounts) -> Option<&Histogram> {
        let llm = || e.llm.as_deref();
        Some(match self {
            StreamTime::FirstByte => &e.first_byte,
            StreamTime::FirstEvent => &e.first_event,
            StreamTime::EventGap => &e.gap,
            StreamTime::Ttft => &llm()?.ttft,
            StreamTime::Itl => &llm()?.itl,
            StreamTime::Tpot => &llm()?.tpot,
            StreamTime::Delivery => &e.channel.as_deref()?.delay,
        })
    }

    /// Its histogram in `e`, made when it is a token stream's and `e` has none yet.
    fn of_mut(self, e: &mut crate::events::EventCounts) -> &mut Histogram {
        match self {
            StreamTime::FirstByte => &mut e.first_byte,
            StreamTime::FirstEvent => &mut e.first_event,
            StreamTime::EventGap => &mut e.gap,
            StreamTime::Ttft => &mut e.llm_mut().ttft,
            StreamTime::Itl => &mut e.llm_mut().itl,
            StreamTime::Tpot => &mut e.llm_mut().tpot,
            StreamTime::Delivery => &mut e.channel_mut().delay,
        }
    }
}

/// A quantile `q` of `h` (the mean for `None`, the maximum for 1), ms; `None` when empty.
fn quantile_ms(h: &Histogram, q: Option<f64>) -> Option<f64> {
    if h.is_empty() {
        return None;
    }
    Some(match q {
        None => h.mean() / 1000.0,
        Some(q) if q >= 1.0 => h.max() as f64 / 1000.0,
        Some(q) => h.value_at_quantile(q) as f64 / 1000.0,
    })
}

/// Comparison that must hold for the objective to pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Op::Lt => value < threshold,
            Op::Le => value <= threshold,
            Op::Gt => value > threshold,
            Op::Ge => value >= threshold,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// One parsed objective.
#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    /// The objective normalised, with its unit: `p95 < 200ms over 30s abort`.
    pub text: String,
    /// Request name it applies to; `None` for all requests.
    pub request: Option<String>,
    pub metric: Metric,
    /// Canonical metric name (`p99.9`, `errors`, ...).
    pub metric_name: String,
    pub op: Op,
    /// Milliseconds for latency, a fraction (0.001 = 0.1%) for errors, req/s for rps.
    pub threshold: f64,
    /// Whole seconds of the sliding window.
    pub window: Option<u64>,
    pub abort: bool,
}

/// Why an objective could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SloError(pub String);

impl fmt::Display for SloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SloError {}

/// Metrics by name, besides quantiles (`p` and a number).
const METRICS: [(&str, Metric); 8] = [
    ("closed", Metric::Closed),
    ("dropped", Metric::Dropped),
    ("complete", Metric::Complete),
    ("mean", Metric::Latency(None)),
    ("min", Metric::Latency(Some(0.0))),
    ("max", Metric::Latency(Some(1.0))),
    ("errors", Metric::Errors),
    ("rps", Metric::Rps),
];

/// A metric name (`p95`, `p(99.9)`, `avg`, `errors`, ...) as (canonical name, metric); k6's
/// spellings map to brink's.
fn named_metric(name: &str) -> Option<(String, Metric)> {
    let name = match name {
        "avg" => "mean",
        "med" => "p50",
        other => other,
    };
    if let Some((n, m)) = METRICS.iter().find(|(n, _)| *n == name) {
        return Some((n.to_string(), *m));
    }
    let digits = name.strip_prefix('p')?;
    let digits = digits
        .strip_prefix('(')
        .and_then(|d| d.strip_suffix(')'))
        .unwrap_or(digits);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let q: f64 = digits.parse().ok()?;
    if !(q > 0.0 && q <= 100.0) {
        return None;
    }
    // Rounded so `p99.9` is exactly 0.999, not 0.9990000000000001.
    let quantile = (q * 1e10).round() / 1e12;
    Some((
        format!("p{}", trim_float_to(q, 4)),
        Metric::Latency(Some(quantile)),
    ))
}

/// k6's whole-metric names: (brink's metric, whether the value is a rate rather than a
/// percentage).
fn k6_metric(left: &str) -> Option<(String, Metric, bool)> {
    match left {
        "http_req_failed" | "http_req_failed.rate" => Some(("errors".into(), Metric::Errors, true)),
        "http_reqs" | "http_reqs.rate" => Some(("rps".into(), Metric::Rps, false)),
        _ => None,
    }
}

impl Slo {
    /// Parses one objective; `parse_duration` is the project's duration parser (plan units).
    pub fn parse(
        text: &str,
        parse_duration: impl Fn(&str) -> Result<Duration, String>,
    ) -> Result<Slo, SloError> {
        Slo::parse_with_checks(text, parse_duration, &[])
    }

    /// [`Slo::parse`] for a workload whose response checks are named `checks` (by slot).
    pub fn parse_with_checks(
        text: &str,
        parse_duration: impl Fn(&str) -> Result<Duration, String>,
        checks: &[String],
    ) -> Result<Slo, SloError> {
        let bad = |why: String| SloError(format!("invalid SLO '{text}': {why}"));
        let at = text.find(['<', '>']).ok_or_else(|| {
            bad("expected a comparison such as 'p99 < 200ms' or 'errors < 1%'".into())
        })?;
        let (left, rest) = (text[..at].trim(), &text[at..]);
        let (op, rest) = match (rest.as_bytes()[0], rest.as_bytes().get(1)) {
            (b'<', Some(b'=')) => (Op::Le, &rest[2..]),
            (b'>', Some(b'=')) => (Op::Ge, &rest[2..]),
            (b'<', _) => (Op::Lt, &rest[1..]),
            _ => (Op::Gt, &rest[1..]),
        };
        let k6 = k6_metric(left);
        let rate = k6.as_ref().is_some_and(|k| k.2);
        let checked = check_metric(left, checks).map_err(bad)?;
        let (request, metric_name, metric) = k6
            .map(|(n, m, _)| (None, n, m))
            .or(checked)
            .or_else(|| async_metric(left))
            .or_else(|| message_metric(left))
            .or_else(|| stream_metric(left))
            .or_else(|| split_metric(left))
            .or_else(|| share_metric(left))
            .ok_or_else(|| {
                bad(format!(
                    "unknown metric '{left}' (expected [request.]p50|p95|p99|p99.9|pN|mean|min|max|errors|closed|dropped|rps|status.CODE|code.NAME|checks, check.NAME, complete, handshake.pN, msg.pN, first_byte.pN, first_event.pN, event_gap.pN, ttft.pN, itl.pN, tpot.pN, or k6's p(N)|avg|med|http_req_failed)"
                ))
            })?;
        let mut words = rest.split_whitespace().peekable();
        let mut value = words
            .next()
            .ok_or_else(|| bad("missing the value after the comparison".into()))?
            .to_string();
        // A unit written apart from its number: `1 %`, `200 ms`.
        if let Some(unit) = words.next_if(|w| is_unit(w) && value.parse::<f64>().is_ok()) {
            value.push_str(unit);
        }
        let value = value.as_str();
        if matches!(metric, Metric::Complete | Metric::Async(_)) && request.is_some() {
            return Err(bad(
                "'complete' is the whole scenario's; it takes no request name".into(),
            ));
        }
        let threshold = match metric {
            // A bare number is milliseconds, as k6 reads it.
            Metric::Latency(_)
            | Metric::Complete
            | Metric::Async(_)
            | Metric::Handshake(_)
            | Metric::Stream(..) => match value.parse::<f64>() {
                Ok(ms) if ms.is_finite() && ms >= 0.0 => ms,
                _ => {
                    parse_duration(value)
                        .map_err(|e| bad(format!("'{value}' is not a duration: {e}")))?
                        .as_secs_f64()
                        * 1000.0
                }
            },
            Metric::Errors if rate && !value.ends_with('%') => value
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| bad(format!("'{value}' is not a rate from 0 to 1 (e.g. 0.01)")))?,
            Metric::Errors
            | Metric::Closed
            | Metric::Dropped
            | Metric::Code(_)
            | Metric::Status(_)
            | Metric::Check(_) => parse_percent(value)
                .ok_or_else(|| bad(format!("'{value}' is not a percentage (e.g. 0.1%)")))?,
            Metric::Rps => parse_number(value)
                .ok_or_else(|| bad(format!("'{value}' is not a number of requests per second")))?,
        };
        let (mut window, mut abort) = (None, false);
        while let Some(w) = words.next() {
            match w {
                "over" if window.is_none() => {
                    let d = words
                        .next()
                        .ok_or_else(|| bad("'over' needs a window such as 10s".into()))?;
                    let d = parse_duration(d)
                        .map_err(|e| bad(format!("'{d}' is not a window duration: {e}")))?;
                    if d < Duration::from_secs(1) || d.subsec_nanos() != 0 {
                        return Err(bad(format!(
                            "window '{}' must be whole seconds, at least 1s",
                            fmt_secs(d)
                        )));
                    }
                    window = Some(d.as_secs());
                }
                "abort" if !abort => abort = true,
                other => {
                    return Err(bad(format!(
                        "unexpected '{other}' (expected 'over DURATION' and/or 'abort')"
                    )))
                }
            }
        }
        if matches!(metric, Metric::Complete | Metric::Async(_)) && (window.is_some() || abort) {
            return Err(bad(
                "'complete' is judged once, when the probe ends: no 'over' or 'abort'".into(),
            ));
        }
        let mut slo = Slo {
            text: String::new(),
            request,
            metric,
            metric_name,
            op,
            threshold,
            window,
            abort,
        };
        slo.text = slo.normalised();
        Ok(slo)
    }

    /// The objective as brink reads it, with its unit: `list.p95 < 200ms over 30s abort`.
    fn normalised(&self) -> String {
        let name = match &self.request {
            Some(r) => format!("{r}.{}", self.metric_name),
            None => self.metric_name.clone(),
        };
        let mut s = format!("{name} {}", self.target_text());
        if let Some(w) = self.window {
            s.push_str(&format!(" over {w}s"));
        }
        if self.abort {
            s.push_str(" abort");
        }
        s
    }

    /// The target as written back: `< 200ms`, `< 0.1%`, `>= 190 req/s`.
    pub fn target_text(&self) -> String {
        format!("{} {}", self.op.symbol(), self.fmt_value(self.threshold))
    }

    /// A measured value in this objective's unit.
    pub fn fmt_value(&self, v: f64) -> String {
        match self.metric {
            Metric::Latency(_)
            | Metric::Complete
            | Metric::Async(_)
            | Metric::Handshake(_)
            | Metric::Stream(..) => fmt_ms(v),
            Metric::Errors
            | Metric::Closed
            | Metric::Dropped
            | Metric::Code(_)
            | Metric::Status(_)
            | Metric::Check(_) => format!("{}%", trim_float(v * 100.0)),
            Metric::Rps => format!("{} req/s", trim_float_to(v, 1)),
        }
    }

    /// The metric label for tables: `list.p95`, `errors over 10s`.
    pub fn label(&self) -> String {
        let mut s = match &self.request {
            Some(r) => format!("{r}.{}", self.metric_name),
            None => self.metric_name.to_string(),
        };
        if let Some(w) = self.window {
            s.push_str(&format!(" over {w}s"));
        }
        s
    }

    /// The measured value on `w`, `None` when there is nothing to measure (no response for a
    /// latency objective, no attempt at all for the others).
    pub fn measure(&self, w: &Bucket, seconds: f64) -> Option<f64> {
        match self.metric {
            Metric::Latency(q) => quantile_ms(&w.corrected, q),
            Metric::Errors => (w.requests > 0).then(|| w.errors() as f64 / w.requests as f64),
            Metric::Closed => (w.requests > 0).then(|| {
                w.errors_by_kind[crate::ErrorKind::Closed.index()] as f64 / w.requests as f64
            }),
            Metric::Dropped => {
                // Every connection the server ended was opened (here or before the window):
                // at least as many as it ended.
                let opened = w.setup.upgrade.as_deref().map_or(0, |h| h.len());
                let dropped = w.ws.as_deref().map_or(0, |ws| ws.unexpected);
                (w.requests > 0 || opened > 0)
                    .then(|| dropped as f64 / opened.max(dropped).max(1) as f64)
            }
            Metric::Handshake(q) => quantile_ms(w.setup.upgrade.as_deref()?, q),
            Metric::Stream(t, q) => quantile_ms(t.of(w.events.as_deref()?)?, q),
            Metric::Code(c) => (w.requests > 0).then(|| w.grpc.get(c) as f64 / w.requests as f64),
            Metric::Status(c) => {
                (w.requests > 0).then(|| w.status.get(c) as f64 / w.requests as f64)
            }
            Metric::Rps => (seconds > 0.0).then(|| w.requests as f64 / seconds),
            Metric::Check(slot) => {
                let (passed, runs) = match slot {
                    Some(i) => w.checks.get(i).map_or((0, 0), |c| (c.passed, c.runs())),
                    None => w
                        .checks
                        .iter()
                        .fold((0, 0), |(p, r), c| (p + c.passed, r + c.runs())),
                };
                (runs > 0).then(|| passed as f64 / runs as f64)
            }
            Metric::Complete | Metric::Async(_) => None,
        }
    }

    /// Whether `value` meets the objective.
    pub fn holds(&self, value: f64) -> bool {
        self.op.holds(value, self.threshold)
    }

    /// Headroom as a fraction of the target: positive when passing (0.61 = 61% margin),
    /// negative when failing.
    pub fn margin(&self, value: f64) -> f64 {
        if self.threshold == 0.0 {
            return if self.holds(value) { 0.0 } else { -1.0 };
        }
        match self.op {
            Op::Lt | Op::Le => (self.threshold - value) / self.threshold,
            Op::Gt | Op::Ge => (value - self.threshold) / self.threshold,
        }
    }
}

/// `[request.]metric`: the metric is the longest tail after a dot that names one, so dotted
/// request names and `p99.9` both read right (`api.v2.mean`, `list.p99.9`).
fn split_metric(left: &str) -> Option<(Option<String>, String, Metric)> {
    if let Some((n, m)) = named_metric(left) {
        return Some((None, n, m));
    }
    left.match_indices('.').find_map(|(at, _)| {
        let (req, name) = (&left[..at], &left[at + 1..]);
        if req.is_empty() || req.contains(char::is_whitespace) {
            return None;
        }
        named_metric(name).map(|(n, m)| (Some(req.to_string()), n, m))
    })
}

/// `checks`, `REQUEST.checks` (every check, or a request's) or `check.NAME` (one check, by its
/// name among `checks`); `Ok(None)` for another metric.
fn check_metric(
    left: &str,
    checks: &[String],
) -> Result<Option<(Option<String>, String, Metric)>, String> {
    let none =
        || "no response check is written (a plan's request sets them under 'check:')".to_string();
    if let Some(name) = left.strip_prefix("check.") {
        let slot = checks
            .iter()
            .position(|c| c == name.trim())
            .ok_or_else(|| {
                if checks.is_empty() {
                    return none();
                }
                let mut names: Vec<&str> = Vec::new();
                for c in checks {
                    if !names.contains(&c.as_str()) {
                        names.push(c);
                    }
                }
                format!(
                    "no check named '{}' (the checks: {})",
                    name.trim(),
                    names.join(", ")
                )
            })?;
        return Ok(Some((
            None,
            format!("check.{}", name.trim()),
            Metric::Check(Some(slot)),
        )));
    }
    let request = match left.strip_suffix(".checks") {
        Some(r) if !r.is_empty() && !r.contains(char::is_whitespace) => Some(r.to_string()),
        _ if left == "checks" => None,
        _ => return Ok(None),
    };
    if checks.is_empty() {
        return Err(none());
    }
    Ok(Some((request, "checks".into(), Metric::Check(None))))
}

/// `async.p95`, `async.mean`, ...: per-request async completion times.
fn async_metric(left: &str) -> Option<(Option<String>, String, Metric)> {
    match named_metric(left.strip_prefix("async.")?)? {
        (name, Metric::Latency(q)) => Some((None, format!("async.{name}"), Metric::Async(q))),
        _ => None,
    }
}

/// `handshake.p99` (WebSocket upgrade times) and `msg.p99` (a WebSocket message's answer: the
/// latency, named as WebSocket users name it).
fn message_metric(left: &str) -> Option<(Option<String>, String, Metric)> {
    if let Some(rest) = left.strip_prefix("handshake.") {
        return match named_metric(rest)? {
            (name, Metric::Latency(q)) => {
                Some((None, format!("handshake.{name}"), Metric::Handshake(q)))
            }
            _ => None,
        };
    }
    match named_metric(left.strip_prefix("msg.")?)? {
        (name, m @ Metric::Latency(_)) => Some((None, format!("msg.{name}"), m)),
        _ => None,
    }
}

/// `first_byte.p99`, `first_event.p50`, `event_gap.max`: the times of answers read as events.
fn stream_metric(left: &str) -> Option<(Option<String>, String, Metric)> {
    let (t, rest) = StreamTime::ALL
        .into_iter()
        .find_map(|t| Some((t, left.strip_prefix(t.name())?.strip_prefix('.')?)))?;
    match named_metric(rest)? {
        (name, Metric::Latency(q)) => {
            Some((None, format!("{}.{name}", t.name()), Metric::Stream(t, q)))
        }
        _ => None,
    }
}

/// A unit that may be written apart from its number.
fn is_unit(w: &str) -> bool {
    matches!(
        w,
        "%" | "ms" | "s" | "us" | "µs" | "m" | "min" | "h" | "k" | "/s"
    )
}

/// `[request.]code.NAME` (a gRPC status code by name or number) or `[request.]status.NNN`.
fn share_metric(left: &str) -> Option<(Option<String>, String, Metric)> {
    for prefix in ["code.", "status."] {
        let (request, rest) = match left.strip_prefix(prefix) {
            Some(rest) => (None, rest),
            None => {
                let Some(at) = left.find(&format!(".{prefix}")) else {
                    continue;
                };
                let req = &left[..at];
                if req.is_empty() || req.contains(char::is_whitespace) {
                    continue;
                }
                (Some(req.to_string()), &left[at + 1 + prefix.len()..])
            }
        };
        let metric = if prefix == "code." {
            Metric::Code(model::grpc::parse(rest)?)
        } else {
            Metric::Status(rest.parse().ok().filter(|s| (100..=599).contains(s))?)
        };
        let name = match metric {
            Metric::Code(c) => format!("code.{}", model::grpc::name(c)),
            _ => format!("status.{rest}"),
        };
        return Some((request, name, metric));
    }
    None
}

fn parse_percent(s: &str) -> Option<f64> {
    let n: f64 = s.strip_suffix('%').unwrap_or(s).parse().ok()?;
    (n.is_finite() && (0.0..=100.0).contains(&n)).then_some(n / 100.0)
}

fn parse_number(s: &str) -> Option<f64> {
    let s = s.strip_suffix("/s").unwrap_or(s);
    let (num, mult) = match s.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1000.0),
        None => (s, 1.0),
    };
    let n: f64 = num.parse().ok()?;
    (n.is_finite() && n >= 0.0).then_some(n * mult)
}

fn trim_float(v: f64) -> String {
    trim_float_to(v, 3)
}

/// Three significant figures, like the rest of the report (`43.2ms`, `1.25s`).
fn fmt_ms(ms: f64) -> String {
    let sig3 = |v: f64| {
        let decimals = if v >= 100.0 {
            0
        } else if v >= 10.0 {
            1
        } else {
            2
        };
        trim_float_to(v, decimals)
    };
    if ms >= 1000.0 {
        format!("{}s", sig3(ms / 1000.0))
    } else {
        format!("{}ms", sig3(ms))
    }
}

fn trim_float_to(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn fmt_secs(d: Duration) -> String {
    trim_float(d.as_secs_f64()) + "s"
}

/// The verdict of one objective on a finished run.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub pass: bool,
    /// Whole-run value, or the worst window's for `over`; `None` when nothing was measured.
    pub value: Option<f64>,
    /// For `over`: the second (from the start) at which the worst window ended ...
    pub worst_window_end: Option<u64>,
    /// ... and the one at which the first failing window ended (where the run broke).
    pub first_failed_window_end: Option<u64>,
    /// Windows evaluated and how many failed.
    pub windows: u64,
    pub failed_windows: u64,
}

/// One second kept for a window: counts and the recorded latencies in compact form (value,
/// count) pairs, a few hundred entries instead of a full histogram's ~190 KB, so a 5-minute
/// window costs kilobytes, not 100 MB. Statuses, gRPC codes and checks are small and kept
/// whole, so share objectives (`status.503`, `checks`) are judged per window too.
struct Kept {
    requests: u64,
    ok: u64,
    latencies: Vec<(u64, u64)>,
    status: crate::StatusCounts,
    grpc: crate::StatusCounts,
    checks: Vec<crate::Checked>,
    /// Attempts that failed as `closed` (for `closed`).
    closed: u64,
    /// WebSocket upgrade times, (value, count) (for `handshake.pN` and `dropped`).
    upgrades: Vec<(u64, u64)>,
    /// WebSocket connections the server ended (for `dropped`).
    dropped: u64,
    /// Answers read as events: their times, (value, count), in [`StreamTime::ALL`]'s order
    /// (for `first_byte.pN` and the others).
    events: Option<Box<[Pairs; 7]>>,
}

/// A histogram's recorded values as (value, count).
type Pairs = Vec<(u64, u64)>;

/// `h` as (value, count) pairs of its recorded values.
fn pairs(h: &Histogram) -> Pairs {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

impl Kept {
    fn of(b: &Bucket) -> Kept {
        Kept {
            requests: b.requests,
            ok: b.ok,
            latencies: b
                .corrected
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
            status: b.status.clone(),
            grpc: b.grpc.clone(),
            checks: b.checks.clone(),
            closed: b.errors_by_kind[crate::ErrorKind::Closed.index()],
            upgrades: b.setup.upgrade.as_deref().map_or_else(Vec::new, |h| {
                h.iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect()
            }),
            dropped: b.ws.as_deref().map_or(0, |ws| ws.unexpected),
            events: b
                .events
                .as_deref()
                .map(|e| Box::new(StreamTime::ALL.map(|t| t.of(e).map_or_else(Vec::new, pairs)))),
        }
    }

    /// Adds this second into a window's bucket.
    fn add_to(&self, w: &mut Bucket) {
        w.requests += self.requests;
        w.ok += self.ok;
        for &(v, n) in &self.latencies {
            let _ = w.corrected.record_n(v, n);
        }
        w.status.merge(&self.status);
        w.grpc.merge(&self.grpc);
        w.merge_checks(&self.checks);
        w.errors_by_kind[crate::ErrorKind::Closed.index()] += self.closed;
        if self.dropped > 0 {
            w.ws.get_or_insert_with(Box::default).unexpected += self.dropped;
        }
        if let Some(times) = &self.events {
            let e = w.events_mut();
            for (t, kept) in StreamTime::ALL.into_iter().zip(times.iter()) {
                if kept.is_empty() {
                    continue;
                }
                let h = t.of_mut(e);
                for &(v, n) in kept {
                    let _ = h.record_n(v, n);
                }
            }
        }
        if !self.upgrades.is_empty() {
            let h = w
                .setup
                .upgrade
                .get_or_insert_with(|| Box::new(crate::new_histogram()));
            for &(v, n) in &self.upgrades {
                let _ = h.record_n(v, n);
            }
        }
    }
}

/// Follows one objective through a run, one second at a time: keeps the last `window` seconds
/// of its request's figures, evaluates each full window, and remembers the worst.
pub struct Tracker {
    pub slo: Slo,
    recent: VecDeque<Kept>,
    seconds: u64,
    worst: Option<(f64, u64)>,
    first_failed: Option<u64>,
    windows: u64,
    failed_windows: u64,
}

impl Tracker {
    pub fn new(slo: Slo) -> Tracker {
        Tracker {
            slo,
            recent: VecDeque::new(),
            seconds: 0,
            worst: None,
            first_failed: None,
            windows: 0,
            failed_windows: 0,
        }
    }

    /// Takes the next second (`b`: this objective's requests in it) and the run's totals so far
    /// (same requests). Returns true when the objective has just broken in a way that should
    /// abort the run.
    pub fn second(&mut self, b: &Bucket, so_far: &Bucket) -> bool {
        self.seconds += 1;
        let Some(w) = self.slo.window else {
            let broken = self
                .slo
                .measure(so_far, self.seconds as f64)
                .is_some_and(|v| !self.slo.holds(v));
            return self.slo.abort && broken;
        };
        self.recent.push_back(Kept::of(b));
        if self.recent.len() as u64 > w {
            self.recent.pop_front();
        }
        if (self.recent.len() as u64) < w {
            return false;
        }
        let mut merged = Bucket::new(0);
        for r in &self.recent {
            r.add_to(&mut merged);
        }
        let Some(v) = self.slo.measure(&merged, w as f64) else {
            return false;
        };
        self.windows += 1;
        let pass = self.slo.holds(v);
        if !pass {
            self.failed_windows += 1;
            self.first_failed.get_or_insert(self.seconds);
        }
        if self
            .worst
            .is_none_or(|(worst, _)| self.slo.margin(v) < self.slo.margin(worst))
        {
            self.worst = Some((v, self.seconds));
        }
        self.slo.abort && !pass
    }

    /// The verdict once the run is over; `total` is this objective's requests for the run,
    /// `duration_s` its length.
    pub fn verdict(&self, total: &Bucket, duration_s: f64) -> Verdict {
        if self.slo.window.is_some() && self.windows > 0 {
            return Verdict {
                pass: self.failed_windows == 0,
                value: self.worst.map(|(v, _)| v),
                worst_window_end: self.worst.map(|(_, t)| t),
                first_failed_window_end: self.first_failed,
                windows: self.windows,
                failed_windows: self.failed_windows,
            };
        }
        let value = self.slo.measure(total, duration_s);
        // Nothing measured (no response at all) cannot meet an objective.
        let pass = value.is_some_and(|v| self.slo.holds(v));
        Verdict {
            pass,
            value,
            worst_window_end: None,
            first_failed_window_end: None,
            windows: 0,
            failed_windows: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dur(s: &str) -> Result<Duration, String> {
        let (n, unit) = s
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or((s, "s"), |i| (&s[..i], &s[i..]));
        let n: f64 = n.parse().map_err(|_| format!("bad number in '{s}'"))?;
        let mult = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            _ => return Err(format!("bad unit in '{s}'")),
        };
        Ok(Duration::from_secs_f64(n * mult))
    }

    fn parse(s: &str) -> Result<Slo, SloError> {
        Slo::parse(s, dur)
    }

    #[test]
    fn stream_objectives_read_and_measure_whole_and_per_window() {
        let f = parse("first_event.p99 < 1s").unwrap();
        assert_eq!(f.metric, Metric::Stream(StreamTime::FirstEvent, Some(0.99)));
        assert_eq!(
            (f.text.as_str(), f.threshold),
            ("first_event.p99 < 1s", 1000.0)
        );
        let g = parse("event_gap.p90<50ms over 1s").unwrap();
        assert_eq!(g.metric, Metric::Stream(StreamTime::EventGap, Some(0.9)));
        let b0 = parse("first_byte.mean < 300").unwrap();
        assert_eq!(
            (b0.metric, b0.threshold),
            (Metric::Stream(StreamTime::FirstByte, None), 300.0)
        );
        assert_eq!(
            f.request, None,
            "a stream time, not a request named first_event"
        );
        let mut b = Bucket::new(0);
        b.requests = 3;
        assert_eq!(f.measure(&b, 1.0), None, "no stream, nothing to judge");
        for first in [1_500_000, 200_000] {
            let e = b.events_mut();
            e.record_answer(3);
            e.record_first_byte(2_000);
            e.record_first_event(first);
        }
        for us in [10_000, 20_000, 90_000, 95_000] {
            b.events_mut().record_gap(us);
        }
        let p99 = f.measure(&b, 1.0).unwrap();
        assert!((1499.0..=1501.0).contains(&p99) && !f.holds(p99), "{p99}");
        let p90 = g.measure(&b, 1.0).unwrap();
        assert!((94.9..=95.1).contains(&p90), "{p90}");
        let mean = b0.measure(&b, 1.0).unwrap();
        assert!((1.99..=2.01).contains(&mean), "{mean}");
        // Judged per window too: a window keeps the seconds' stream times.
        let mut t = Tracker::new(g);
        t.second(&b, &b);
        t.second(&Bucket::new(1), &Bucket::new(1));
        let v = t.verdict(&b, 2.0);
        assert_eq!(
            (v.windows, v.failed_windows),
            (1, 1),
            "a second without events has nothing to judge"
        );
    }

    #[test]
    fn websocket_objectives_read_and_measure() {
        let h = parse("handshake.p99 < 200ms").unwrap();
        assert_eq!(h.metric, Metric::Handshake(Some(0.99)));
        assert_eq!(h.text, "handshake.p99 < 200ms");
        let m = parse("msg.p99<50ms over 10s").unwrap();
        assert_eq!(
            (m.metric, m.text.as_str()),
            (Metric::Latency(Some(0.99)), "msg.p99 < 50ms over 10s")
        );
        let c = parse("closed < 0.1%").unwrap();
        assert_eq!((c.metric, c.threshold), (Metric::Closed, 0.001));
        let mut b = Bucket::new(0);
        assert_eq!(h.measure(&b, 1.0), None, "no upgrade, nothing to judge");
        for us in [1_000, 2_000, 300_000] {
            b.setup.record_upgrade(us);
        }
        b.requests = 1000;
        b.errors_by_kind[crate::ErrorKind::Closed.index()] = 2;
        let p99 = h.measure(&b, 1.0).unwrap();
        assert!((299.0..=301.0).contains(&p99), "{p99}");
        assert!(!h.holds(p99));
        assert_eq!(c.measure(&b, 1.0), Some(0.002));
        // Judged per window too: a window keeps the upgrades and the closes.
        let mut t = Tracker::new(parse("handshake.max < 100ms over 1s").unwrap());
        t.second(&b, &b);
        assert_eq!(t.verdict(&b, 1.0).failed_windows, 1);
        // One of the three connections opened was ended by the server.
        let d = parse("dropped < 1%").unwrap();
        assert_eq!(
            (d.metric, d.text.as_str()),
            (Metric::Dropped, "dropped < 1%")
        );
        assert_eq!(d.measure(&b, 1.0), Some(0.0));
        b.record_ws(&crate::WsCounts {
            unexpected: 1,
            ..Default::default()
        });
        assert_eq!(d.measure(&b, 1.0), Some(1.0 / 3.0));
        let mut t = Tracker::new(parse("dropped < 1% over 1s").unwrap());
        t.second(&b, &b);
        assert_eq!(t.verdict(&b, 1.0).failed_windows, 1);
    }

    #[test]
    fn grammar_cases() {
        // Plain latency objective.
        let s = parse("p95<100ms").unwrap();
        assert_eq!(
            (s.request.as_deref(), s.metric_name.as_str(), s.op),
            (None, "p95", Op::Lt)
        );
        assert_eq!(s.threshold, 100.0);
        // Request prefix, p99.9 (contains a dot), window and abort.
        let s = parse("list.p99.9 <= 1.5s over 10s abort").unwrap();
        assert_eq!(s.request.as_deref(), Some("list"));
        assert_eq!(s.metric, Metric::Latency(Some(0.999)));
        assert_eq!(
            (s.op, s.threshold, s.window, s.abort),
            (Op::Le, 1500.0, Some(10), true)
        );
        // Errors as a percentage, with or without '%'.
        assert_eq!(parse("errors < 0.1%").unwrap().threshold, 0.001);
        assert_eq!(parse("errors<1").unwrap().threshold, 0.01);
        // Throughput floor.
        let s = parse("rps >= 190").unwrap();
        assert_eq!((s.metric, s.op, s.threshold), (Metric::Rps, Op::Ge, 190.0));
        assert_eq!(parse("rps > 1.5k").unwrap().threshold, 1500.0);
        // Dotted request names keep everything before the metric.
        assert_eq!(
            parse("api.v2.mean < 5ms").unwrap().request.as_deref(),
            Some("api.v2")
        );
        // The share of one gRPC code (by name, any case, or number) or one HTTP status.
        let s = parse("code.unavailable < 0.1%").unwrap();
        assert_eq!((s.metric, s.threshold), (Metric::Code(14), 0.001));
        assert_eq!(s.label(), "code.UNAVAILABLE");
        assert_eq!(parse("code.14 < 1%").unwrap().metric, Metric::Code(14));
        let s = parse("login.status.429 <= 2% over 10s").unwrap();
        assert_eq!(s.request.as_deref(), Some("login"));
        assert_eq!(s.metric, Metric::Status(429));
        assert_eq!(s.label(), "login.status.429 over 10s");
        assert!(parse("code.FINE < 1%").is_err());
        assert!(parse("status.999 < 1%").is_err());
    }

    #[test]
    fn k6_forms_and_bare_numbers_read_as_k6_means_them() {
        let cases = [
            ("p99<200", "p99 < 200ms", 200.0),
            ("p(95)<200", "p95 < 200ms", 200.0),
            ("p(99.9) < 1.5s", "p99.9 < 1.5s", 1500.0),
            ("p(97.5)<80", "p97.5 < 80ms", 80.0),
            ("avg<50", "mean < 50ms", 50.0),
            ("med <= 20", "p50 <= 20ms", 20.0),
            ("max < 2s", "max < 2s", 2000.0),
            ("min < 1", "min < 1ms", 1.0),
            ("errors < 1 %", "errors < 1%", 0.01),
            (
                "p95 < 200 ms over 10s abort",
                "p95 < 200ms over 10s abort",
                200.0,
            ),
            ("http_req_failed < 0.01", "errors < 1%", 0.01),
            ("http_req_failed.rate<0.1%", "errors < 0.1%", 0.001),
            ("http_reqs > 100", "rps > 100 req/s", 100.0),
            ("list.p(95) < 100", "list.p95 < 100ms", 100.0),
            ("async.p(90) < 2s", "async.p90 < 2s", 2000.0),
        ];
        for (text, shown, threshold) in cases {
            let s = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!((s.text.as_str(), s.threshold), (shown, threshold), "{text}");
        }
        assert_eq!(
            parse("p(95)<200").unwrap().metric,
            Metric::Latency(Some(0.95))
        );
        assert_eq!(parse("med<1").unwrap().metric, Metric::Latency(Some(0.5)));
    }

    #[test]
    fn code_and_status_shares_are_measured_per_attempt() {
        let mut b = Bucket::new(0);
        for i in 0..100u16 {
            match i % 10 {
                0 => b.record_grpc(14, false, 1000, 1000),
                1 => b.record_error(crate::ErrorKind::Timeout),
                _ => b.record_grpc(0, true, 1000, 1000),
            }
        }
        b.record_response(429, false, 1000, 1000);
        let share = |t: &str| parse(t).unwrap().measure(&b, 1.0).unwrap();
        assert!((share("code.UNAVAILABLE < 1%") - 10.0 / 101.0).abs() < 1e-12);
        assert!((share("code.OK < 1%") - 80.0 / 101.0).abs() < 1e-12);
        assert!((share("status.429 < 1%") - 1.0 / 101.0).abs() < 1e-12);
        assert_eq!(
            parse("code.UNAVAILABLE < 5%").unwrap().fmt_value(0.1),
            "10%"
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let cases = [
            ("p95 100ms", "expected a comparison"),
            ("p101 < 100ms", "unknown metric 'p101'"),
            ("q95 < 100ms", "unknown metric 'q95'"),
            ("http_req_failed < 2", "not a rate from 0 to 1"),
            ("p95 < fast", "'fast' is not a duration"),
            ("errors < 2x", "'2x' is not a percentage"),
            ("errors < 150%", "not a percentage"),
            ("p99 < 1s over", "'over' needs a window"),
            ("p99 < 1s over 1.5s", "whole seconds"),
            ("p99 < 1s please", "unexpected 'please'"),
            ("p99 <", "missing the value"),
        ];
        for (text, want) in cases {
            let e = parse(text).unwrap_err().0;
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    /// Each comparison as written, at its threshold and either side of it: `<` fails at the
    /// threshold and `<=` holds there, `>` fails and `>=` holds. Kills a `<` read as `<=`
    /// (or the reverse), in the parser or in the comparison, and the same for `>`.
    #[test]
    fn each_comparison_holds_at_its_boundary_as_written() {
        // (objective, holds at 20, at 19.999, at 20.001)
        let cases = [
            ("p99 < 20ms", [false, true, false]),
            ("p99 <= 20ms", [true, true, false]),
            ("rps > 20", [false, false, true]),
            ("rps >= 20", [true, false, true]),
        ];
        for (text, want) in cases {
            let s = parse(text).unwrap();
            assert_eq!(s.threshold, 20.0, "{text}");
            let got = [s.holds(20.0), s.holds(19.999), s.holds(20.001)];
            assert_eq!(got, want, "{text}");
            // At the threshold the margin is nil, whichever side passes.
            assert_eq!(s.margin(20.0), 0.0, "{text}");
        }
    }

    #[test]
    fn margins_match_a_hand_made_sla_table() {
        // p50 19.49ms against < 50ms: 61% margin.
        let s = parse("p50 < 50ms").unwrap();
        assert!((s.margin(19.49) - 0.61).abs() < 0.005);
        assert!(s.holds(19.49) && !s.holds(50.0));
        let r = parse("rps >= 100").unwrap();
        assert!((r.margin(76.0) + 0.24).abs() < 1e-9 && !r.holds(76.0));
    }

    fn second(ok: u64, failed: u64, ms: u64) -> Bucket {
        let mut b = Bucket::new(0);
        for _ in 0..ok {
            b.record_response(200, true, ms * 1000, ms * 1000);
        }
        for _ in 0..failed {
            b.record_response(503, false, ms * 1000, ms * 1000);
        }
        b
    }

    fn run(t: &mut Tracker, seconds: &[Bucket]) -> (Bucket, Vec<bool>) {
        let mut total = Bucket::new(0);
        let mut aborts = Vec::new();
        for b in seconds {
            total.merge(b);
            aborts.push(t.second(b, &total));
        }
        (total, aborts)
    }

    #[test]
    fn share_and_check_objectives_are_judged_per_window_too() {
        // 20 clean seconds, then 3 s where every answer is a 503 failing its check.
        let mut secs: Vec<Bucket> = (0..20)
            .map(|_| {
                let mut b = second(100, 0, 5);
                (0..100).for_each(|_| b.record_check(0, crate::CheckOutcome::Passed));
                b
            })
            .collect();
        secs.extend((0..3).map(|_| {
            let mut b = second(0, 100, 5);
            (0..100).for_each(|_| b.record_check(0, crate::CheckOutcome::Failed("no".into())));
            b
        }));
        let names = ["state ok".to_string()];
        let slo = |t: &str| Slo::parse_with_checks(t, dur, &names).unwrap();
        for text in [
            "status.503 < 10% over 5s",
            "check.state ok > 90% over 5s",
            "checks > 90% over 5s",
        ] {
            let mut t = Tracker::new(slo(text));
            let (total, _) = run(&mut t, &secs);
            let v = t.verdict(&total, 23.0);
            assert!(!v.pass, "{text}: a window of 60% failures fails it");
            assert_eq!(v.first_failed_window_end, Some(21), "{text}");
        }
        let mut whole = Tracker::new(slo("checks > 85%"));
        let (total, _) = run(&mut whole, &secs);
        let v = whole.verdict(&total, 23.0);
        assert!(
            v.pass && (v.value.unwrap() - 2000.0 / 2300.0).abs() < 1e-9,
            "{v:?}"
        );
        assert!(parse("checks > 99%")
            .unwrap_err()
            .0
            .contains("no response check is written"));
    }

    #[test]
    fn a_burst_at_the_end_fails_a_window_but_not_the_totals() {
        // 60 clean seconds, then 5 s at 50% errors: 2.3% overall, 25% in the last 10 s.
        let mut secs: Vec<Bucket> = (0..60).map(|_| second(100, 0, 5)).collect();
        secs.extend((0..5).map(|_| second(50, 50, 5)));
        let mut whole = Tracker::new(parse("errors < 5%").unwrap());
        let (total, _) = run(&mut whole, &secs);
        assert!(whole.verdict(&total, 65.0).pass);
        let mut windowed = Tracker::new(parse("errors < 5% over 10s").unwrap());
        let (total, aborts) = run(&mut windowed, &secs);
        let v = windowed.verdict(&total, 65.0);
        assert!(!v.pass);
        assert_eq!(v.worst_window_end, Some(65));
        assert_eq!(v.first_failed_window_end, Some(61));
        assert_eq!(v.value, Some(0.25));
        assert_eq!(v.windows, 56);
        assert_eq!(
            v.failed_windows, 5,
            "windows ending at 61..=65 hold the burst"
        );
        assert!(aborts.iter().all(|a| !a), "no abort without 'abort'");
    }

    #[test]
    fn abort_fires_at_the_first_failing_window() {
        let mut secs: Vec<Bucket> = (0..20).map(|_| second(100, 0, 5)).collect();
        secs.extend((0..20).map(|_| second(100, 0, 500)));
        let mut t = Tracker::new(parse("p99 < 100ms over 5s abort").unwrap());
        let (_, aborts) = run(&mut t, &secs);
        // Second 21 is the first slow one; the window ending there has 1% slow responses,
        // which moves p99 above 100 ms.
        assert_eq!(aborts.iter().position(|&a| a), Some(20));
    }

    #[test]
    fn whole_run_abort_uses_totals_so_far() {
        let secs: Vec<Bucket> = (0..3).map(|_| second(90, 10, 5)).collect();
        let mut t = Tracker::new(parse("errors < 1% abort").unwrap());
        let (_, aborts) = run(&mut t, &secs);
        assert_eq!(aborts, vec![true, true, true]);
    }

    #[test]
    fn short_runs_and_empty_runs() {
        // Shorter than the window: judged on the whole run.
        let secs = [second(10, 0, 5), second(10, 0, 5)];
        let mut t = Tracker::new(parse("p99 < 10ms over 30s").unwrap());
        let (total, _) = run(&mut t, &secs);
        let v = t.verdict(&total, 2.0);
        assert!(v.pass && v.windows == 0);
        assert!(
            v.value.is_some_and(|ms| (ms - 5.0).abs() < 0.01),
            "{:?}",
            v.value
        );
        // No response at all cannot meet a latency objective.
        let t = Tracker::new(parse("p99 < 10ms").unwrap());
        assert!(!t.verdict(&Bucket::new(0), 1.0).pass);
    }
}
