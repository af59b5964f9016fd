//! One worker per core, each owning its connections and its recorder; the only thing that
//! leaves a worker thread is one [`Bucket`] per second. Two kinds of loop implement it:
//!
//! * the epoll loops ([`driver`], raw system calls in [`sys`]), one state machine per
//!   connection and no futures, wakers or task queues on the hot path: this is what makes
//!   brink cheaper per request than wrk, h2load and a bare WebSocket loop. [`epoll`] runs
//!   plain HTTP/1.1, [`h2poll`] plain h2c, [`wspoll`] plain `ws://` messages.
//! * [`tasks`]: everything else (TLS, gRPC, paced and held WebSocket connections), one tokio
//!   task per connection on a current-thread runtime.
//!
//! All follow the same rules, which live here: how connections are shared out, when a closed
//! slot may send, when an open-model request is due and how late it is, how an outcome is
//! recorded, and how long to back off after a failed connect.

mod alarm;
mod driver;
mod epoll;
mod h2poll;
mod pool;
mod sys;
mod tasks;
mod wspoll;

#[cfg(test)]
mod driver_tests;
#[cfg(test)]
mod pace_tests;

use crate::net::conn::Connector;
use crate::proto::reply::{Outcome, Unopened};
use model::{Load, Protocol, StatusSet};
use observe::procfs::Sched;
use stats::traces::{TraceOutcome, TraceRow};
use stats::{Bucket, ErrorKind, Refusal};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use workload::Vu;

/// The loop a run's requests take: the protocol's choice, made here alone.
enum Loop {
    /// Plain HTTP/1.1: the epoll loop (`epoll.rs`).
    H1,
    /// Plain HTTP/2 (h2c), kept alive, no gRPC, nothing extracted: the epoll loop over brink's
    /// own HTTP/2 client (`h2poll.rs`).
    H2c,
    /// Plain `ws://` messages and pings, kept alive and unpaced: the epoll loop over the
    /// WebSocket machine (`wspoll.rs`).
    Ws,
    /// Everything else (TLS, gRPC, extraction, paced and held WebSocket connections,
    /// subscriptions): tokio and hyper (`tasks.rs`).
    Tokio,
}

impl Loop {
    fn of(shared: &Shared) -> Loop {
        let c = &shared.connector;
        if c.tls.is_none() && c.protocol == Protocol::Http1 {
            Loop::H1
        } else if h2poll::fits(shared) {
            Loop::H2c
        } else if wspoll::fits(shared) {
            Loop::Ws
        } else {
            Loop::Tokio
        }
    }
}

/// State shared (read-only or atomic) by all workers.
pub struct Shared {
    pub connector: Connector,
    pub load: Load,
    /// `-n`, for the whole run (a part takes its share of the attempts, and of the open
    /// model's arrivals those numbered below it).
    pub max_requests: Option<u64>,
    /// The part of a distributed run this process generates (the whole run otherwise).
    pub part: model::Part,
    pub timeout: Duration,
    pub keepalive: bool,
    pub ok_status: StatusSet,
    /// gRPC codes that count as success.
    pub ok_codes: Vec<u16>,
    /// HTTP/2: the connections all slots share (`--connections`); `None`: one per slot.
    pub connections: Option<usize>,
    pub start: Instant,
    pub end: Option<Instant>,
    pub grace: Duration,
    /// Closed model: the least time between the starts of a connection's requests.
    pub every: Option<Duration>,
    pub workers: usize,
    /// Set when the run must end now (an interrupt, or an observer's abort).
    pub stop: AtomicBool,
    pub(crate) tickets: AtomicU64,
    /// Steps with `complete:`: their jobs are followed here, apart from the load.
    pub tracker: Option<observe::tracker::Tracker>,
    /// The run's target, for completion URLs that are paths.
    pub target: model::Target,
}

impl Shared {
    /// Closed model: takes one of the `-n` attempts; false once all are taken.
    pub fn take_ticket(&self) -> bool {
        match self.max_requests {
            None => true,
            Some(n) => self.tickets.fetch_add(1, Ordering::Relaxed) < self.part.share(n),
        }
    }

    /// Thread `id`'s share of `total` (connections, pool slots): this part's share of the run's
    /// `total`, split again over its threads.
    pub fn share_of(&self, total: usize, id: usize) -> usize {
        share(self.part.share(total as u64) as usize, id, self.workers)
    }

    /// Whether the worker must stop now: an interrupt, or the grace after the schedule is over.
    fn past_end(&self, now: Instant) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Relaxed)
            || self.end.is_some_and(|end| now >= end + self.grace)
    }

    /// Whether a flow iteration may go on at `now`: no interrupt, the schedule not over.
    fn running(&self, now: Instant) -> bool {
        !self.stop.load(std::sync::atomic::Ordering::Relaxed)
            && self.end.is_none_or(|end| now < end)
    }

    /// Whether every `-n` attempt has been taken.
    pub fn tickets_exhausted(&self) -> bool {
        self.max_requests
            .is_some_and(|n| self.tickets.load(Ordering::Relaxed) >= self.part.share(n))
    }
}

/// What workers send to the aggregator.
pub enum Msg {
    /// One second of one worker: a bucket per request of the workload.
    Buckets(usize, Vec<Bucket>),
    /// A worker finished: its requests still in flight when it stopped, and its scheduler
    /// figures over the run (where the kernel keeps them), and when its load was over if it
    /// then spent time closing connections (a WebSocket's close handshakes): the run's
    /// duration ends there, not after the closes.
    Done(usize, u64, Option<Sched>, Option<Instant>),
    Failed(String),
}

/// Waits shorter than this (the timer's resolution) are pacing noise, not queueing: a request
/// sent within it of its intended time is on time and its latency is taken from the send.
pub const LATE_THRESHOLD: Duration = Duration::from_millis(1);

/// Runs worker `id` to the end of the schedule (or a stop) and reports to `tx`.
pub fn run(shared: Arc<Shared>, id: usize, tx: Sender<Msg>) {
    let sched0 = observe::procfs::thread_sched();
    let outcome = match Loop::of(&shared) {
        Loop::H1 => epoll::run(&shared, id, &tx).map(|(b, u)| (b, u, None)),
        Loop::H2c => h2poll::run(&shared, id, &tx).map(|(b, u)| (b, u, None)),
        Loop::Ws => wspoll::run(&shared, id, &tx),
        Loop::Tokio => tasks::run(&shared, id, &tx),
    };
    match outcome {
        Ok((last, unfinished, over)) => {
            let _ = tx.send(Msg::Buckets(id, last));
            let sched = sched0.zip(observe::procfs::thread_sched());
            let sched = sched.map(|(before, after)| after.since(before));
            let _ = tx.send(Msg::Done(id, unfinished, sched, over));
        }
        Err(e) => {
            let _ = tx.send(Msg::Failed(format!("worker {id}: {e}")));
        }
    }
}

/// This worker's share of `total` when it is spread over `workers`.
pub fn share(total: usize, id: usize, workers: usize) -> usize {
    total / workers + usize::from(id < total % workers)
}

/// Closed model: may `slot` (of `target` wanted) start another attempt now? Takes a `-n`
/// ticket when it may.
fn closed_may_send(shared: &Shared, slot: usize, target: usize, now: Instant) -> bool {
    slot < target && shared.end.is_none_or(|end| now < end) && shared.take_ticket()
}

/// Open model: when this process's arrival `k` is due (the run's arrival `part.global(k)`:
/// the parts of a distributed run stripe the one schedule), `None` once the schedule (or
/// `-n`) is exhausted.
fn open_due(shared: &Shared, k: u64) -> Option<Instant> {
    let model::Load::Open { rate, .. } = &shared.load else {
        return None;
    };
    let i = shared.part.global(k);
    if shared.max_requests.is_some_and(|n| i >= n) {
        return None;
    }
    rate.time_of(i).map(|t| shared.start + t)
}

/// Open model: a request due at `due` starts at `now`. Returns the instant its latency is
/// measured from and records how late it is: within [`LATE_THRESHOLD`] it is on time (latency
/// from the send); later, no connection was free, and the wait counts in its latency.
fn pace(rec: &mut Bucket, due: Instant, now: Instant) -> Instant {
    pace_within(rec, due, now, LATE_THRESHOLD)
}

/// How late tokio's own timer (whole milliseconds, rounded up, on a busy loop) may wake a
/// paced connection without the wait counting as the server's: paced connections rest on it,
/// not on the precise alarm, which would cost one timer per connection.
const TIMER_SLACK: Duration = Duration::from_millis(3);

/// [`pace`] with `on_time` as the lateness that still counts as on time.
fn pace_within(rec: &mut Bucket, due: Instant, now: Instant, on_time: Duration) -> Instant {
    let lag = now.saturating_duration_since(due);
    let late = lag > on_time;
    rec.record_lag(micros(lag), late);
    if late {
        due
    } else {
        now
    }
}

/// A fresh set of per-request buckets for `second`.
fn buckets(shared: &Shared, second: u64) -> Vec<Bucket> {
    vec![Bucket::new(second); shared.connector.workload.requests.len().max(1)]
}

/// Records one finished attempt of `vu`'s current request (after its extractions, which may
/// turn a response into [`ErrorKind::Extract`]); returns whether the connection may be reused.
#[allow(clippy::too_many_arguments)]
fn record(
    rec: &mut [Bucket],
    shared: &Shared,
    vu: &mut Vu,
    outcome: Outcome,
    bytes_out: u64,
    base: Instant,
    sent: Instant,
    done: Instant,
) -> bool {
    let (result, captured) = match outcome {
        Ok((reply, captured)) => (Ok(reply), captured),
        Err(kind) => (Err(kind), None),
    };
    let workload = &shared.connector.workload;
    let answered_ok = result.as_ref().map(|r| match r.call {
        Some(g) => shared.ok_codes.contains(&g.code),
        None => shared.ok_status.contains(r.status),
    });
    let answer = match (&result, answered_ok) {
        (Ok(r), Ok(ok)) => Ok(workload::Answer {
            status: r.status,
            ok,
            kept: captured.as_ref(),
            fault: r.fault,
        }),
        (Err(kind), _) | (_, Err(kind)) => Err(*kind),
    };
    let mut extracted = vu.complete(workload, answer, &mut rec[vu.current]);
    if result.as_ref().is_ok_and(|r| r.stray) && extracted.is_ok() {
        // Bytes past its end broke the answer's framing: answered, and a `protocol` error
        // (never a second, unasked answer).
        extracted = Err(crate::why::protocol(
            "bytes came past the answer's end (its length or chunks do not frame it)",
        ));
    }
    if answered_ok == Ok(true) && extracted.is_ok() {
        follow_completion(shared, vu, base);
    }
    if let Some(id) = vu.trace_id.take() {
        let outcome = match (&result, extracted) {
            (Ok(r), Ok(())) => match r.call {
                Some(g) => TraceOutcome::Grpc(g.code),
                None => TraceOutcome::Status(r.status),
            },
            (Ok(_), Err(kind)) => TraceOutcome::Error(kind),
            (Err(kind), _) => TraceOutcome::Error(*kind),
        };
        let row = TraceRow {
            id,
            latency_us: micros(done - base),
            outcome,
            at_us: micros(done.saturating_duration_since(shared.start)),
        };
        let ok = answered_ok == Ok(true) && extracted.is_ok();
        rec[vu.current].record_trace(row, result.is_ok(), ok);
    }
    let rec = &mut rec[vu.current];
    rec.bytes_out += bytes_out;
    match (result, extracted) {
        (Ok(reply), Ok(())) => {
            let (corrected, service) = (micros(done - base), micros(done - sent));
            let ok = answered_ok == Ok(true);
            match reply.call {
                Some(g) => {
                    rec.record_grpc(g.code, ok, corrected, service);
                    let stream = workload.requests[vu.current]
                        .message
                        .as_ref()
                        .and_then(|m| m.stream);
                    if let Some(s) = stream {
                        let first = g
                            .first_message
                            .map(|t| micros(t.saturating_duration_since(base)));
                        rec.record_stream(u64::from(s.sent()), g.messages, first);
                    }
                }
                None => rec.record_response(reply.status, ok, corrected, service),
            }
            rec.bytes_in += reply.bytes_in;
            reply.keep_alive && shared.keepalive
        }
        (Ok(reply), Err(kind)) => {
            // An answer that failed its extraction or checks: counted as answered, not ok.
            let (corrected, service) = (micros(done - base), micros(done - sent));
            let grpc = reply.call.map(|g| g.code);
            rec.record_failed_answer(reply.status, grpc, kind, corrected, service);
            crate::why::keep(rec, kind);
            if kind == ErrorKind::Extract {
                rec.note_extract_failure(vu.extract_failure.take());
            }
            rec.bytes_in += reply.bytes_in;
            reply.keep_alive && shared.keepalive
        }
        (Err(ErrorKind::InvalidRequest), _) => {
            record_refused(rec, vu);
            // Nothing was sent: the connection is as good as before.
            true
        }
        (Err(kind), _) => {
            rec.record_error(kind);
            crate::why::keep(rec, kind);
            false
        }
    }
}

/// Steps with `complete:`: hands the answered attempt's job to the tracker (its URL rendered
/// with this iteration's variables; a path is on the run's target).
fn follow_completion(shared: &Shared, vu: &mut Vu, since: Instant) {
    let Some(tracker) = &shared.tracker else {
        return;
    };
    let workload = &shared.connector.workload;
    let Some(c) = workload.requests[vu.current].complete.as_ref() else {
        return;
    };
    let Some(url) = vu.completion_url(workload) else {
        return;
    };
    let target = if url.starts_with('/') {
        shared.target.with_path(url)
    } else {
        model::Target::parse(&url)
    };
    match target {
        Ok(target) => tracker.submit(observe::tracker::Job {
            target,
            until: c.until.clone(),
            every: c.every,
            within: c.within,
            since,
            request: vu.current,
        }),
        // A URL that breaks the wire rules is never fetched: the job fails, saying why.
        Err(e) => tracker.fail(vu.current, format!("refused: {e}")),
    }
}

/// An answer read as events ended at `done`: how many events it carried, and what was read
/// and not yet drained (its head and first event timed from the intended start `base`). A token stream with a
/// successful status is timed too when it ended well, or else marks `reply` with the rule it
/// broke.
fn record_events(
    rec: &mut Bucket,
    shared: &Shared,
    e: &mut crate::proto::events::Events,
    base: Instant,
    done: Instant,
    reply: &mut crate::proto::reply::Reply,
) {
    let since = |t: Instant| micros(t.saturating_duration_since(base));
    e.drain_into(rec, base);
    // Its body bytes are in already, as they were read.
    reply.bytes_in = reply.bytes_in.saturating_sub(e.drained_bytes);
    let counts = rec.events_mut();
    counts.record_answer(e.count);
    let (Some(tokens), Some(rule)) = (e.tokens.as_deref_mut(), shared.connector.events.llm) else {
        return coded_is_not_a_stream(shared, e, reply);
    };
    // A run of token streams says so even when none ended well.
    let llm = counts.llm_mut();
    if reply.call.is_some() || !shared.ok_status.contains(reply.status) {
        return;
    }
    if e.encoded {
        reply.fault = Some(coded());
        return;
    }
    if !e.said_stream && e.count == 0 {
        reply.fault = Some(crate::why::failed(
            ErrorKind::NotStream,
            "the answer is no event stream (not text/event-stream, and no event in it)",
        ));
        return;
    }
    if let Some(fault) = tokens.end_fault() {
        reply.fault = Some(fault);
        return;
    }
    tokens.drain_itl(|g| llm.record_itl(g));
    let (n, estimated) = tokens.output_tokens();
    let (ttft_us, tpot_us, life_us) = (tokens.first.map(since), tokens.tpot_us(), since(done));
    llm.record_stream(stats::llm::Streamed {
        ttft_us,
        tpot_us,
        tokens: n,
        estimated,
        judged: rule.any(),
        good: rule.met(ttft_us, tpot_us, life_us),
        life_us,
    });
}

/// A successful answer read as events whose body was coded (`Content-Encoding: gzip`, asked
/// for by a header of the user's or sent unasked) carried no events brink could read as they
/// came: it is `not_stream`, never an answer counted as ok with no events.
fn coded_is_not_a_stream(
    shared: &Shared,
    e: &crate::proto::events::Events,
    reply: &mut crate::proto::reply::Reply,
) {
    if e.encoded && reply.call.is_none() && shared.ok_status.contains(reply.status) {
        reply.fault = Some(coded());
    }
}

/// `not_stream`, because the stream's body was coded.
fn coded() -> ErrorKind {
    crate::why::failed(
        ErrorKind::NotStream,
        "the event stream is compressed (Content-Encoding), so no event can be read as it comes (send no Accept-Encoding)",
    )
}

/// A held stream on `vu` ended at `done` (`e`: its events, when its head came): the last
/// event ID it confirmed and the reconnection time it set are kept, as a browser's
/// `EventSource` keeps them. Returns when the next stream opens.
fn held_stream_ended(
    vu: &mut Vu,
    e: Option<&crate::proto::events::Events>,
    done: Instant,
) -> Instant {
    if let Some(r) = e.map(|e| e.reader()) {
        if let Some(id) = r.confirmed_id() {
            vu.resume.confirm(id);
        }
        if let Some(ms) = r.retry_ms() {
            vu.resume.retry = Some(Duration::from_millis(ms));
        }
    }
    done + vu.resume.delay()
}

/// A held stream opens on `vu`: every one after its first is a reconnect, counted, and
/// counted as resumed when it says where (`resumed`: it carries `Last-Event-ID`).
fn held_stream_opens(rec: &mut Bucket, vu: &mut Vu, resumed: bool) {
    if vu.resume.opened > 0 {
        let ch = rec.events_mut().channel_mut();
        ch.reconnects += 1;
        ch.resumed += u64::from(resumed);
    }
    vu.resume.opened += 1;
}

/// Bytes a server sent on an idle connection, with no request outstanding, count as one
/// `protocol` error of their own (the connection is closed), never as the next request's
/// answer.
fn record_stray(rec: &mut Bucket) {
    rec.record_error(ErrorKind::Protocol);
    rec.note_answer_failure(
        ErrorKind::Protocol,
        "the server sent bytes on an idle connection, with no request asked",
    );
}

/// Counts `vu`'s refused attempt once, keeping the first refusal's details.
fn record_refused(rec: &mut Bucket, vu: &mut Vu) {
    let refusal = vu.refused.take().unwrap_or_else(|| Refusal {
        part: "request".into(),
        value: String::new(),
    });
    rec.record_refusal(refusal);
}

/// Records an attempt refused before sending ([`ErrorKind::InvalidRequest`]): its flow
/// iteration ends, as after any failed step.
fn record_refusal(rec: &mut [Bucket], shared: &Shared, vu: &mut Vu) {
    let workload = &shared.connector.workload;
    let _ = vu.complete(
        workload,
        Err(ErrorKind::InvalidRequest),
        &mut rec[vu.current],
    );
    vu.trace_id = None;
    record_refused(&mut rec[vu.current], vu);
}

/// Records a connect failure for `vu`'s current request (its flow iteration ends).
fn record_connect_error(rec: &mut [Bucket], shared: &Shared, vu: &mut Vu, failed: Unopened) {
    let workload = &shared.connector.workload;
    let _ = vu.complete(workload, Err(failed.kind), &mut rec[vu.current]);
    // Never sent: its trace id names nothing a server saw.
    vu.trace_id = None;
    let rec = &mut rec[vu.current];
    rec.record_error(failed.kind);
    if let Some(why) = failed.why {
        rec.setup.note_failure(failed.kind, why);
    }
    rec.bytes_in += failed.bytes_in;
    rec.bytes_out += failed.bytes_out;
    if let Some(status) = failed.refused {
        let mut refused = stats::WsCounts::default();
        refused.refused.add(status, 1);
        rec.record_ws(&refused);
    }
}

/// How long a connection's close handshake (a WebSocket's) may take when brink is done
/// with it.
const CLOSE_WITHIN: Duration = Duration::from_secs(1);

/// How long a slot rests after a refused attempt: a data set full of bad values must not spin
/// the generator (the refused attempts never reach the network, so they cost nothing else).
const REFUSED_REST: Duration = Duration::from_millis(10);

/// Sends `rec`, the bucket of second `*second`, and a fresh one for each whole second passed
/// by `now` (the epoll loops' clock).
fn send_seconds(
    shared: &Shared,
    id: usize,
    tx: &Sender<Msg>,
    second: &mut u64,
    rec: &mut Vec<Bucket>,
    (now, in_flight): (Instant, u64),
) {
    while now >= shared.start + Duration::from_secs(*second + 1) {
        *second += 1;
        let full = full_second(shared, *second, rec, in_flight);
        let _ = tx.send(Msg::Buckets(id, full));
    }
}

/// The worker's buckets of the second that just ended, with the requests still in flight;
/// `rec` starts `second`.
fn full_second(shared: &Shared, second: u64, rec: &mut Vec<Bucket>, in_flight: u64) -> Vec<Bucket> {
    let mut full = std::mem::replace(rec, buckets(shared, second));
    if let Some(first) = full.first_mut() {
        first.in_flight = in_flight;
    }
    full
}

/// The epoll loops' housekeeping period: timeouts, targets, backoff restarts, stop checks.
const TICK: Duration = Duration::from_millis(10);
/// Token of the open model's precise wake-up timer in an epoll loop (connections use their
/// indices).
const ALARM: usize = usize::MAX;
/// Most `recv` calls for one connection per turn of an epoll loop. A server that sends faster
/// than brink reads never lets a socket run dry: past this, the connection is served again on
/// the next turn, after the clock, the deadlines and the stop flag have been looked at.
const READS_PER_TURN: usize = 16;

/// Delay before connect attempt number `failures + 1`: 10 ms doubling to 1 s, so an
/// unreachable target is retried steadily without spinning.
fn backoff_delay(failures: u32) -> Duration {
    Duration::from_millis(10u64 << failures.min(7)).min(Duration::from_secs(1))
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}
