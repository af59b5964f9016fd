//! A [`Bucket`] is one second of one worker: corrected and service-time histograms plus exact
//! counters. Workers fill buckets without locks; the aggregator merges them.

use crate::hist::{new_histogram, Histogram, HIST_MAX_US};
use crate::kind::ErrorKind;

/// Counts per HTTP status code. Runs see few distinct codes, so a short list searched linearly
/// beats a map on the hot path and allocates only when a new code first appears.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusCounts(Vec<(u16, u64)>);

impl StatusCounts {
    /// Adds `n` responses with `status`.
    pub fn add(&mut self, status: u16, n: u64) {
        match self.0.iter_mut().find(|(s, _)| *s == status) {
            Some((_, c)) => *c += n,
            None => self.0.push((status, n)),
        }
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &StatusCounts) {
        for &(s, n) in &other.0 {
            self.add(s, n);
        }
    }

    /// `(status, count)` pairs sorted by status.
    pub fn sorted(&self) -> Vec<(u16, u64)> {
        let mut v = self.0.clone();
        v.sort_unstable();
        v
    }

    /// Count for one status.
    pub fn get(&self, status: u16) -> u64 {
        self.0
            .iter()
            .find(|(s, _)| *s == status)
            .map_or(0, |(_, n)| *n)
    }
}

/// Distinct error codes one bucket keeps (see [`Bucket::codes`]).
pub const MOST_CODES: usize = 32;
/// The longest code name kept.
pub const MOST_CODE_LEN: usize = 64;

/// What was refused before sending and why: the first refused attempt of a request, kept so
/// the summary can say which part held which value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// `path`, or `header NAME`.
    pub part: String,
    /// The offending rendered value, escaped (`\r\n` shown as such) and cut to a readable length.
    pub value: String,
}

/// Longest escaped value kept in a [`Refusal`].
const SHOWN: usize = 120;

impl Refusal {
    /// A refusal of `part` holding `value`, the value escaped so it prints on one line:
    /// control bytes, bytes beyond ASCII and backslashes as escapes, quotes as they are.
    pub fn new(part: impl Into<String>, value: &[u8]) -> Refusal {
        Refusal {
            part: part.into(),
            value: model::guard::escaped(value, SHOWN),
        }
    }
}

/// One second of measurements from one worker.
#[derive(Clone, Debug)]
pub struct Bucket {
    /// Second index since the run started.
    pub second: u64,
    /// Latency from the intended start (coordinated-omission corrected), µs, responses only.
    pub corrected: Histogram,
    /// Latency from the actual send, µs, responses only.
    pub service: Histogram,
    /// Attempts finished in this second (responses + errors).
    pub requests: u64,
    /// Responses whose status counts as success.
    pub ok: u64,
    /// Responses by status code.
    pub status: StatusCounts,
    /// gRPC calls by status code (a call counts here instead of in `status`).
    pub grpc: StatusCounts,
    /// Transport failures by kind, indexed by [`ErrorKind::index`].
    pub errors_by_kind: [u64; ErrorKind::COUNT],
    /// Response bytes read (head and body).
    pub bytes_in: u64,
    /// Request bytes written.
    pub bytes_out: u64,
    /// Open model: requests sent more than the lateness threshold after their intended time.
    pub late: u64,
    /// Open model: the largest lag between intended and actual send, µs.
    pub max_lag_us: u64,
    /// Requests in flight when the second ended: a gauge, so merging adds the parts'. A
    /// worker counts its requests together and puts the count on its first request's bucket:
    /// read it from a merged whole second, not per request.
    pub in_flight: u64,
    /// The first attempt refused before sending (see [`ErrorKind::InvalidRequest`]).
    pub refused: Option<Box<Refusal>>,
    /// Why the first failed extraction ([`ErrorKind::Extract`]) found nothing.
    pub extract_failure: Option<Box<String>>,
    /// Why answers failed, the first of each kind that said why (the rule a `protocol`
    /// error's answer broke, how a `closed` one ended, why a `not_stream` one was no stream).
    pub answer_failures: Vec<(ErrorKind, String)>,
    /// Response checks, by the check's slot among the scenario's checks (empty when none ran).
    pub checks: Vec<Checked>,
    /// Connection setup, kept apart from request latency: connections opened, TCP connect
    /// times, TLS handshake times, and (without keep-alive) connect plus request, in µs. The
    /// histograms exist only in seconds that opened connections.
    pub setup: Setup,
    /// Streaming gRPC calls: messages each way and the time to the first message received;
    /// only in seconds that finished streaming calls.
    pub stream: Option<Box<Streamed>>,
    /// WebSocket connections: messages each way, pings, close codes; only in seconds whose
    /// connections carried any.
    pub ws: Option<Box<WsCounts>>,
    /// Answers read as events (Server-Sent Events); only in seconds that read any.
    pub events: Option<Box<crate::events::EventCounts>>,
    /// Errors by the code the server or the transport gave, as `kind:CODE`
    /// (`reset:H3_EXCESSIVE_LOAD`), at most [`MOST_CODES`] of them; only in seconds with any.
    pub codes: Vec<(String, u64)>,
    /// `--trace`: the slowest and the first failed requests of this second, by trace id.
    pub traces: Option<Box<crate::traces::Traces>>,
}

/// What one run of a response check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckOutcome {
    Passed,
    /// The answer failed it, and why.
    Failed(String),
    /// It could not look: brink did not keep what it reads (the capture budget was full).
    /// Brink's limit, not the service's failure: neither passed nor failed.
    Unchecked(String),
}

/// How often one response check passed and failed, and could not run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    pub passed: u64,
    pub failed: u64,
    /// Why it first failed.
    pub first_failure: Option<Box<str>>,
    /// Answers it could not look at, and why the first time.
    pub unchecked: u64,
    pub first_unchecked: Option<Box<str>>,
}

impl Checked {
    fn merge(&mut self, other: &Checked) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.unchecked += other.unchecked;
        if self.first_failure.is_none() {
            self.first_failure.clone_from(&other.first_failure);
        }
        if self.first_unchecked.is_none() {
            self.first_unchecked.clone_from(&other.first_unchecked);
        }
    }

    /// Runs counted.
    pub fn runs(&self) -> u64 {
        self.passed + self.failed
    }
}

/// What WebSocket connections carried, apart from the answers counted as requests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WsCounts {
    /// Data messages sent.
    pub sent: u64,
    /// Data messages received.
    pub received: u64,
    /// Pings the server sent (each answered with a pong).
    pub pings: u64,
    /// Connections closed, by the server's close code (1005: its close frame had none; 1006:
    /// the connection ended without one).
    pub closes: StatusCounts,
    /// Connections the server closed (or that dropped) before brink closed them.
    pub unexpected: u64,
    /// How long each connection that ended stayed up (upgrade to close), µs.
    pub up: Option<Box<Histogram>>,
    /// Subscriptions: each pushed message's delivery delay (from the send time it carries to
    /// its arrival), µs.
    pub delay: Option<Box<Histogram>>,
    /// Subscriptions: pushed messages whose send time could not be read.
    pub undated: u64,
    /// Upgrades the server refused, by the status it answered with (101: an answer that was
    /// not a WebSocket upgrade for this key).
    pub refused: StatusCounts,
}

impl WsCounts {
    pub fn merge(&mut self, other: &WsCounts) {
        self.sent += other.sent;
        self.received += other.received;
        self.pings += other.pings;
        self.closes.merge(&other.closes);
        self.unexpected += other.unexpected;
        merge_in(&mut self.up, &other.up);
        merge_in(&mut self.delay, &other.delay);
        self.undated += other.undated;
        self.refused.merge(&other.refused);
    }

    /// A pushed message that arrived `us` after the send time it carries.
    pub fn record_delay(&mut self, us: u64) {
        record_in(&mut self.delay, us);
    }

    /// A connection that ended after `us` up.
    pub fn record_up(&mut self, us: u64) {
        record_in(&mut self.up, us);
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == WsCounts::default()
    }
}

/// What streaming calls carried.
#[derive(Clone, Debug)]
pub struct Streamed {
    /// Streaming calls answered.
    pub calls: u64,
    pub sent: u64,
    pub received: u64,
    /// From the intended start to the first complete message received, µs; calls that
    /// received none are not in it.
    pub first_message: Histogram,
}

impl Streamed {
    fn merge(&mut self, other: &Streamed) {
        self.calls += other.calls;
        self.sent += other.sent;
        self.received += other.received;
        // Same bounds on both sides, so `add` cannot fail.
        let _ = self.first_message.add(&other.first_message);
    }
}

/// How long connections took to open, per second.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// Connections opened (TCP connect completed).
    pub opened: u64,
    pub connect: Option<Box<Histogram>>,
    pub tls: Option<Box<Histogram>>,
    /// WebSocket upgrades: from the request sent to the 101 read.
    pub upgrade: Option<Box<Histogram>>,
    /// `--no-keepalive`: from the start of the connect to the end of the response.
    pub with_connect: Option<Box<Histogram>>,
    /// The first connection that did not open: the error it counted as and why (`tls`:
    /// `received corrupt message of type InvalidContentType`; `handshake`: `answered 403
    /// instead of 101`).
    pub failure: Option<Box<(ErrorKind, String)>>,
    /// HTTP/3 with `--0rtt`: what went as early data.
    pub zero_rtt: Option<Box<ZeroRtt>>,
}

/// HTTP/3 with `--0rtt`: connections that resumed a session and sent requests before their
/// handshake ended, the requests that went so, and those the server refused to take early
/// (sent again once the handshake ended, counted once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZeroRtt {
    pub connections: u64,
    pub requests: u64,
    pub refused: u64,
}

impl ZeroRtt {
    fn add(&mut self, o: &ZeroRtt) {
        self.connections += o.connections;
        self.requests += o.requests;
        self.refused += o.refused;
    }
}

impl Setup {
    /// A completed TCP connect that took `us`.
    pub fn record_connect(&mut self, us: u64) {
        self.opened += 1;
        record_in(&mut self.connect, us);
    }

    /// A completed TLS handshake that took `us`.
    pub fn record_tls(&mut self, us: u64) {
        record_in(&mut self.tls, us);
    }

    /// A completed WebSocket upgrade that took `us`.
    pub fn record_upgrade(&mut self, us: u64) {
        record_in(&mut self.upgrade, us);
    }

    /// Connect plus request, `us`, for a request on a connection opened for it.
    pub fn record_with_connect(&mut self, us: u64) {
        record_in(&mut self.with_connect, us);
    }

    /// Keeps why a connection did not open, the first time.
    pub fn note_failure(&mut self, kind: ErrorKind, why: String) {
        if self.failure.is_none() {
            self.failure = Some(Box::new((kind, why)));
        }
    }

    /// Adds `more` to what went as early data.
    pub fn record_zero_rtt(&mut self, more: &ZeroRtt) {
        if *more != ZeroRtt::default() {
            self.zero_rtt.get_or_insert_with(Box::default).add(more);
        }
    }

    /// Adds `other`'s WebSocket upgrade times alone.
    pub fn merge_upgrades(&mut self, other: &Setup) {
        merge_in(&mut self.upgrade, &other.upgrade);
    }

    fn merge(&mut self, other: &Setup) {
        self.opened += other.opened;
        merge_in(&mut self.connect, &other.connect);
        merge_in(&mut self.tls, &other.tls);
        merge_in(&mut self.upgrade, &other.upgrade);
        merge_in(&mut self.with_connect, &other.with_connect);
        if let Some(z) = &other.zero_rtt {
            self.record_zero_rtt(z);
        }
        if self.failure.is_none() {
            self.failure.clone_from(&other.failure);
        }
    }
}

fn record_in(h: &mut Option<Box<Histogram>>, us: u64) {
    h.get_or_insert_with(|| Box::new(new_histogram()))
        .saturating_record(us.clamp(1, HIST_MAX_US));
}

fn merge_in(h: &mut Option<Box<Histogram>>, other: &Option<Box<Histogram>>) {
    if let Some(o) = other {
        // Same bounds on both sides, so `add` cannot fail.
        let _ = h
            .get_or_insert_with(|| Box::new(new_histogram()))
            .add(o.as_ref());
    }
}

impl Bucket {
    /// An empty bucket for `second`.
    pub fn new(second: u64) -> Bucket {
        Bucket {
            second,
            corrected: new_histogram(),
            service: new_histogram(),
            requests: 0,
            ok: 0,
            status: StatusCounts::default(),
            grpc: StatusCounts::default(),
            errors_by_kind: [0; ErrorKind::COUNT],
            bytes_in: 0,
            bytes_out: 0,
            late: 0,
            max_lag_us: 0,
            in_flight: 0,
            refused: None,
            extract_failure: None,
            answer_failures: Vec::new(),
            checks: Vec::new(),
            setup: Setup::default(),
            stream: None,
            ws: None,
            events: None,
            codes: Vec::new(),
            traces: None,
        }
    }

    /// The streamed answers of this second, made on first use.
    pub fn events_mut(&mut self) -> &mut crate::events::EventCounts {
        self.events.get_or_insert_with(Box::default)
    }

    /// Records a traced request (see [`crate::traces::Traces::record`]).
    pub fn record_trace(&mut self, row: crate::traces::TraceRow, answered: bool, ok: bool) {
        self.traces
            .get_or_insert_with(Box::default)
            .record(row, answered, ok);
    }

    /// Records what an answered streaming call carried: messages sent and received, and the
    /// time to its first message (µs from the intended start), if one came.
    pub fn record_stream(&mut self, sent: u64, received: u64, first_us: Option<u64>) {
        let s = self.stream.get_or_insert_with(|| {
            Box::new(Streamed {
                calls: 0,
                sent: 0,
                received: 0,
                first_message: new_histogram(),
            })
        });
        s.calls += 1;
        s.sent += sent;
        s.received += received;
        if let Some(us) = first_us {
            s.first_message.saturating_record(us.clamp(1, HIST_MAX_US));
        }
    }

    /// Counts `n` errors that came with `code` (`kind:CODE`); past [`MOST_CODES`] distinct
    /// codes (a server making up a new one per stream), as `kind:other`.
    pub fn record_code(&mut self, code: &str, n: u64) {
        if let Some((_, c)) = self.codes.iter_mut().find(|(k, _)| k == code) {
            *c += n;
            return;
        }
        let name = if self.codes.len() + 1 < MOST_CODES {
            code.chars().take(MOST_CODE_LEN).collect()
        } else {
            format!("{}:other", code.split(':').next().unwrap_or_default())
        };
        match self.codes.iter_mut().find(|(k, _)| *k == name) {
            Some((_, c)) => *c += n,
            None => self.codes.push((name, n)),
        }
    }

    /// Adds what WebSocket connections carried.
    pub fn record_ws(&mut self, counts: &WsCounts) {
        if !counts.is_empty() {
            self.ws.get_or_insert_with(Box::default).merge(counts);
        }
    }

    /// Records a response: status, whether it counts as success, both latencies in µs.
    pub fn record_response(&mut self, status: u16, ok: bool, corrected_us: u64, service_us: u64) {
        self.status.add(status, 1);
        self.answered(ok, corrected_us, service_us);
    }

    /// Records a gRPC call that ended with status `code`: whether it counts as success, both
    /// latencies in µs.
    pub fn record_grpc(&mut self, code: u16, ok: bool, corrected_us: u64, service_us: u64) {
        self.grpc.add(code, 1);
        self.answered(ok, corrected_us, service_us);
    }

    /// An attempt that got an answer: counted, and its latencies recorded.
    fn answered(&mut self, ok: bool, corrected_us: u64, service_us: u64) {
        self.requests += 1;
        self.ok += u64::from(ok);
        self.corrected
            .saturating_record(corrected_us.clamp(1, HIST_MAX_US));
        self.service
            .saturating_record(service_us.clamp(1, HIST_MAX_US));
    }

    /// Records an attempt that ended without a response.
    pub fn record_error(&mut self, kind: ErrorKind) {
        self.requests += 1;
        self.errors_by_kind[kind.index()] += 1;
    }

    /// Records an attempt refused before sending; the first refusal's details are kept.
    pub fn record_refusal(&mut self, refusal: Refusal) {
        self.record_error(ErrorKind::InvalidRequest);
        if self.refused.is_none() {
            self.refused = Some(Box::new(refusal));
        }
    }

    /// Records an answer that failed its extraction or checks (`kind`, one that
    /// [`ErrorKind::answered`]): its HTTP status, or gRPC code, and both latencies in µs as for
    /// any answer, never a success, and counted under `kind`.
    pub fn record_failed_answer(
        &mut self,
        status: u16,
        grpc: Option<u16>,
        kind: ErrorKind,
        corrected_us: u64,
        service_us: u64,
    ) {
        match grpc {
            Some(code) => self.record_grpc(code, false, corrected_us, service_us),
            None => self.record_response(status, false, corrected_us, service_us),
        }
        self.errors_by_kind[kind.index()] += 1;
    }

    /// Keeps why an answer failed as `kind`, the first time for that kind.
    pub fn note_answer_failure(&mut self, kind: ErrorKind, why: &str) {
        if !self.answer_failures.iter().any(|(k, _)| *k == kind) {
            self.answer_failures.push((kind, why.to_string()));
        }
    }

    /// Keeps why an extraction failed, the first time.
    pub fn note_extract_failure(&mut self, why: Option<String>) {
        if self.extract_failure.is_none() {
            self.extract_failure = why.map(Box::new);
        }
    }

    /// Attempts that failed without an answer.
    pub fn unanswered(&self) -> u64 {
        ErrorKind::ALL
            .iter()
            .filter(|k| !k.answered())
            .map(|k| self.errors_by_kind[k.index()])
            .sum()
    }

    /// Records one run of the check in `slot` (the first reason of each kind is kept).
    pub fn record_check(&mut self, slot: usize, outcome: CheckOutcome) {
        if self.checks.len() <= slot {
            self.checks.resize_with(slot + 1, Checked::default);
        }
        let c = &mut self.checks[slot];
        match outcome {
            CheckOutcome::Passed => c.passed += 1,
            CheckOutcome::Failed(why) => {
                c.failed += 1;
                c.first_failure.get_or_insert(why.into_boxed_str());
            }
            CheckOutcome::Unchecked(why) => {
                c.unchecked += 1;
                c.first_unchecked.get_or_insert(why.into_boxed_str());
            }
        }
    }

    /// Adds check counts, slot by slot.
    pub fn merge_checks(&mut self, checks: &[Checked]) {
        if self.checks.len() < checks.len() {
            self.checks.resize_with(checks.len(), Checked::default);
        }
        for (a, b) in self.checks.iter_mut().zip(checks) {
            a.merge(b);
        }
    }

    /// Records a send that happened `lag_us` after its intended time.
    pub fn record_lag(&mut self, lag_us: u64, late: bool) {
        self.late += u64::from(late);
        self.max_lag_us = self.max_lag_us.max(lag_us);
    }

    /// Attempts that did not succeed: no answer, a failing status, or an answer that failed
    /// its extraction or checks.
    pub fn errors(&self) -> u64 {
        self.requests - self.ok
    }

    /// Adds `other` into `self` (the second index of `self` is kept).
    pub fn merge(&mut self, other: &Bucket) {
        // Same bounds on both sides, so `add` cannot fail.
        let _ = self.corrected.add(&other.corrected);
        let _ = self.service.add(&other.service);
        self.requests += other.requests;
        self.ok += other.ok;
        self.status.merge(&other.status);
        self.grpc.merge(&other.grpc);
        for (a, b) in self.errors_by_kind.iter_mut().zip(other.errors_by_kind) {
            *a += b;
        }
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        self.late += other.late;
        self.max_lag_us = self.max_lag_us.max(other.max_lag_us);
        self.in_flight += other.in_flight;
        if self.refused.is_none() {
            self.refused.clone_from(&other.refused);
        }
        if self.extract_failure.is_none() {
            self.extract_failure.clone_from(&other.extract_failure);
        }
        for (kind, why) in &other.answer_failures {
            self.note_answer_failure(*kind, why);
        }
        self.merge_checks(&other.checks);
        self.setup.merge(&other.setup);
        match (&mut self.stream, &other.stream) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.stream = Some(b.clone()),
            _ => {}
        }
        if let Some(w) = &other.ws {
            self.record_ws(w);
        }
        if let Some(e) = &other.events {
            self.events_mut().merge(e);
        }
        for (code, n) in &other.codes {
            self.record_code(code, *n);
        }
        if let Some(t) = &other.traces {
            self.traces.get_or_insert_with(Box::default).merge(t);
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn codes_are_counted_merged_and_bounded() {
        let mut a = Bucket::new(1);
        a.record_code("reset:H3_EXCESSIVE_LOAD", 2);
        a.record_code("reset:H3_EXCESSIVE_LOAD", 1);
        let mut b = Bucket::new(1);
        b.record_code("closed:H3_NO_ERROR", 1);
        b.record_code("reset:H3_EXCESSIVE_LOAD", 4);
        a.merge(&b);
        assert_eq!(
            a.codes,
            vec![
                ("reset:H3_EXCESSIVE_LOAD".to_string(), 7),
                ("closed:H3_NO_ERROR".to_string(), 1)
            ]
        );
        // A server making up a code per stream: the kinds stay, the list does not grow.
        let mut c = Bucket::new(1);
        for i in 0..1000 {
            c.record_code(&format!("reset:0x{i:x}"), 1);
        }
        assert_eq!(c.codes.len(), MOST_CODES);
        assert_eq!(c.codes.iter().map(|(_, n)| n).sum::<u64>(), 1000);
        assert_eq!(
            c.codes.last(),
            Some(&("reset:other".to_string(), 1000 - 31))
        );
    }

    use super::*;

    #[test]
    fn merge_adds_every_counter_exactly() {
        let mut a = Bucket::new(3);
        a.record_response(200, true, 1000, 900);
        a.record_error(ErrorKind::Timeout);
        let mut b = Bucket::new(3);
        b.record_response(503, false, 5000, 5000);
        b.record_response(200, true, 2000, 2000);
        b.record_lag(7000, true);
        a.merge(&b);
        assert_eq!(a.requests, 4);
        assert_eq!(a.ok, 2);
        assert_eq!(a.errors(), 2);
        assert_eq!(a.status.get(200), 2);
        assert_eq!(a.status.get(503), 1);
        assert_eq!(a.errors_by_kind[ErrorKind::Timeout.index()], 1);
        assert_eq!(a.corrected.len(), 3);
        assert_eq!(a.late, 1);
        assert_eq!(a.max_lag_us, 7000);
        assert!(a.stream.is_none(), "no streaming call, no stream figures");
        b.record_stream(3, 10, Some(1500));
        b.record_stream(3, 0, None);
        a.merge(&b);
        a.merge(&b);
        let s = a.stream.as_deref().unwrap();
        assert_eq!((s.calls, s.sent, s.received), (4, 12, 20));
        assert_eq!(s.first_message.len(), 2);
    }

    #[test]
    fn refusals_are_escaped_and_short() {
        let r = Refusal::new("header Authorization", b"abc\r\nX-Injected: yes");
        assert_eq!(r.value, "abc\\r\\nX-Injected: yes");
        let long = Refusal::new("path", &[b'a'; 500]);
        assert!(long.value.len() <= SHOWN + 3 && long.value.ends_with("..."));
    }

    #[test]
    fn values_outside_bounds_are_clamped_not_lost() {
        let mut a = Bucket::new(0);
        a.record_response(200, true, 0, u64::MAX);
        assert_eq!(a.corrected.len(), 1);
        assert_eq!(a.service.len(), 1);
        assert!(a.service.max() >= HIST_MAX_US - HIST_MAX_US / 1000);
    }
}
