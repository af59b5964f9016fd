//! One second of one worker on the wire: a distributed run's workers send their buckets to
//! the coordinator in this form, and the coordinator merges them as if its own threads had
//! filled them. Nothing is rounded on the way: histograms travel in the result's compressed
//! HDR form ([`encode`](crate::encode)), every counter as it is, so a merged percentile equals
//! the one a single process would have measured (the test below proves the round trip exact).

use crate::bucket::{Bucket, Checked, Refusal, Setup, StatusCounts, Streamed, WsCounts};
use crate::hist::{decode, encode, encode_plain, Histogram};
use crate::kind::ErrorKind;
use crate::sparse::Sparse;
use crate::traces::{TraceOutcome, TraceRow, Traces};
use serde::{Deserialize, Serialize};

/// A [`Bucket`] as it travels.
/// A second's WebSocket counts on the wire.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WireWs {
    pub sent: u64,
    pub received: u64,
    pub pings: u64,
    pub closes: Vec<(u16, u64)>,
    pub unexpected: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    #[serde(default)]
    pub undated: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<(u16, u64)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireBucket {
    pub second: u64,
    pub corrected: String,
    pub service: String,
    pub requests: u64,
    pub ok: u64,
    pub status: Vec<(u16, u64)>,
    pub grpc: Vec<(u16, u64)>,
    /// By [`ErrorKind::index`]; a worker of another version with other kinds is refused at
    /// its hello, and a length that does not match is an error here too.
    pub errors_by_kind: Vec<u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub late: u64,
    pub max_lag_us: u64,
    #[serde(default)]
    pub in_flight: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_failure: Option<String>,
    /// Why answers failed, the first of each kind: (error kind's name, why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer_failures: Vec<(String, String)>,
    pub opened: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_connect: Option<String>,
    /// The first connection that did not open: (error kind's name, why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_failure: Option<(String, String)>,
    /// HTTP/3 early data: (connections, requests, refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_rtt: Option<(u64, u64, u64)>,
    /// Streaming calls: (calls, sent, received, time to the first message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<(u64, u64, u64, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws: Option<WireWs>,
    /// Errors by code (`kind:CODE`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<(String, u64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<(Vec<WireTrace>, Vec<WireTrace>)>,
    /// Response checks by slot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<WireChecked>,
    /// Answers read as events: (streams, events read, events of the answers that ended,
    /// first byte, first event, gaps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<(u64, u64, u64, String, String, String)>,
    /// Token streams (`--llm`), beside the events that carried them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<crate::llm::WireLlm>,
    /// A notification channel's reconnects and delivery delays, beside its events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<WireChannel>,
}

/// [`crate::events::Channel`] as it travels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireChannel {
    pub reconnects: u64,
    pub resumed: u64,
    pub undated: u64,
    pub delay: String,
}

/// One check's counts as they travel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireChecked {
    pub passed: u64,
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    #[serde(default)]
    pub unchecked: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_unchecked: Option<String>,
}

/// A traced request: id in hex, latency, outcome ("s200", "g14", "e<kind>"), end time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireTrace(pub String, pub u64, pub String, pub u64);

impl From<&Bucket> for WireBucket {
    fn from(b: &Bucket) -> WireBucket {
        let opt = |h: &Option<Box<Histogram>>| h.as_deref().map(encode);
        WireBucket {
            second: b.second,
            // Plain: the coordinator reads them sparse, with no inflating.
            corrected: encode_plain(&b.corrected),
            service: encode_plain(&b.service),
            requests: b.requests,
            ok: b.ok,
            status: b.status.sorted(),
            grpc: b.grpc.sorted(),
            errors_by_kind: b.errors_by_kind.to_vec(),
            bytes_in: b.bytes_in,
            bytes_out: b.bytes_out,
            late: b.late,
            max_lag_us: b.max_lag_us,
            in_flight: b.in_flight,
            refused: b
                .refused
                .as_ref()
                .map(|r| (r.part.clone(), r.value.clone())),
            extract_failure: b.extract_failure.as_deref().cloned(),
            answer_failures: b
                .answer_failures
                .iter()
                .map(|(k, why)| (k.name().to_string(), why.clone()))
                .collect(),
            opened: b.setup.opened,
            connect: opt(&b.setup.connect),
            tls: opt(&b.setup.tls),
            upgrade: opt(&b.setup.upgrade),
            with_connect: opt(&b.setup.with_connect),
            setup_failure: b
                .setup
                .failure
                .as_ref()
                .map(|f| (f.0.name().to_string(), f.1.clone())),
            zero_rtt: b
                .setup
                .zero_rtt
                .as_deref()
                .map(|z| (z.connections, z.requests, z.refused)),
            stream: b
                .stream
                .as_ref()
                .map(|s| (s.calls, s.sent, s.received, encode(&s.first_message))),
            codes: b.codes.clone(),
            ws: b.ws.as_ref().map(|w| WireWs {
                sent: w.sent,
                received: w.received,
                pings: w.pings,
                closes: w.closes.sorted(),
                unexpected: w.unexpected,
                up: opt(&w.up),
                delay: opt(&w.delay),
                undated: w.undated,
                refused: w.refused.sorted(),
            }),
            traces: b.traces.as_ref().map(|t| {
                let rows = |v: &[TraceRow]| v.iter().map(trace_out).collect();
                (rows(&t.slowest), rows(&t.failed))
            }),
            events: b.events.as_ref().map(|e| {
                (
                    e.streams,
                    e.events,
                    e.ended_events,
                    encode(&e.first_byte),
                    encode(&e.first_event),
                    encode(&e.gap),
                )
            }),
            llm: b
                .events
                .as_ref()
                .and_then(|e| e.llm.as_deref())
                .map(crate::llm::WireLlm::from),
            channel: b
                .events
                .as_ref()
                .and_then(|e| e.channel.as_deref())
                .map(|c| WireChannel {
                    reconnects: c.reconnects,
                    resumed: c.resumed,
                    undated: c.undated,
                    delay: encode(&c.delay),
                }),
            checks: b
                .checks
                .iter()
                .map(|c| WireChecked {
                    passed: c.passed,
                    failed: c.failed,
                    first_failure: c.first_failure.as_deref().map(String::from),
                    unchecked: c.unchecked,
                    first_unchecked: c.first_unchecked.as_deref().map(String::from),
                })
                .collect(),
        }
    }
}

impl TryFrom<WireBucket> for Bucket {
    type Error = String;

    fn try_from(w: WireBucket) -> Result<Bucket, String> {
        let d = Decoded::try_from(w)?;
        let mut b = Bucket::new(d.rest.second);
        b.merge_decoded(&d);
        Ok(b)
    }
}

/// A second as a worker sent it, checked whole and ready to merge: its two latency
/// histograms as their non-zero buckets ([`Sparse`]), the rest as a bucket whose own two
/// histograms are empty and tiny. Merging it costs what was measured, not the histograms'
/// range.
pub struct Decoded {
    corrected: Sparse,
    service: Sparse,
    rest: Bucket,
}

impl Decoded {
    /// The second it belongs to.
    pub fn second(&self) -> u64 {
        self.rest.second
    }

    /// Adds it to `into`, its two latency histograms to the counters `counts` (latency,
    /// service time) when their bounds allow, else to `into`'s histograms.
    pub fn merge_counted(&self, into: &mut Bucket, counts: &mut [Vec<u32>; 2]) {
        if !self
            .corrected
            .add_to_counts(&mut counts[0], &mut into.corrected)
        {
            self.corrected.add_to(&mut into.corrected);
        }
        if !self
            .service
            .add_to_counts(&mut counts[1], &mut into.service)
        {
            self.service.add_to(&mut into.service);
        }
        into.merge(&self.rest);
    }
}

impl Bucket {
    /// Adds a checked wire second to this one.
    pub fn merge_decoded(&mut self, d: &Decoded) {
        d.corrected.add_to(&mut self.corrected);
        d.service.add_to(&mut self.service);
        self.merge(&d.rest);
    }
}

impl TryFrom<WireBucket> for Decoded {
    type Error = String;

    fn try_from(w: WireBucket) -> Result<Decoded, String> {
        within_bounds(&w)?;
        let sparse = |what: &str, s: &str| {
            let h = Sparse::read(s).map_err(|e| format!("{what}: {e}"))?;
            crate::bounds::check_values(what, &h).map(|()| h)
        };
        let corrected = sparse("latency", &w.corrected)?;
        let service = sparse("service time", &w.service)?;
        // Empty: `merge` adds nothing from them, and they cost next to nothing to make.
        let tiny = || Histogram::new_with_bounds(1, 2, 1).map_err(|e| format!("{e:?}"));
        Ok(Decoded {
            corrected,
            service,
            rest: rest_of(w, tiny()?, tiny()?)?,
        })
    }
}

/// Everything of a wire second but its two latency histograms, given as `corrected` and
/// `service`.
fn rest_of(w: WireBucket, corrected: Histogram, service: Histogram) -> Result<Bucket, String> {
    let hist = |what: &str, s: &str| {
        let h = decode(s).map_err(|e| format!("{what}: {e}"))?;
        match h.len() {
            n if n > crate::bounds::MOST_PER_SECOND => {
                Err(format!("{what}: {n} values in one second"))
            }
            _ => Ok(h),
        }
    };
    let opt = |what: &str, s: &Option<String>| -> Result<Option<Box<Histogram>>, String> {
        s.as_deref()
            .map(|s| hist(what, s).map(Box::new))
            .transpose()
    };
    let errors_by_kind: [u64; ErrorKind::COUNT] =
        w.errors_by_kind.as_slice().try_into().map_err(|_| {
            format!(
                "{} error kinds where this version has {}",
                w.errors_by_kind.len(),
                ErrorKind::COUNT
            )
        })?;
    let mut status = StatusCounts::default();
    for (s, n) in &w.status {
        status.add(*s, *n);
    }
    let mut grpc = StatusCounts::default();
    for (s, n) in &w.grpc {
        grpc.add(*s, *n);
    }
    let stream = match &w.stream {
        Some((calls, sent, received, first)) => Some(Box::new(Streamed {
            calls: *calls,
            sent: *sent,
            received: *received,
            first_message: hist("first message", first)?,
        })),
        None => None,
    };
    let ws = match &w.ws {
        Some(x) => {
            let counts = |pairs: &[(u16, u64)]| {
                let mut c = StatusCounts::default();
                for (s, n) in pairs {
                    c.add(*s, *n);
                }
                c
            };
            Some(Box::new(WsCounts {
                sent: x.sent,
                received: x.received,
                pings: x.pings,
                closes: counts(&x.closes),
                unexpected: x.unexpected,
                up: opt("up", &x.up)?,
                delay: opt("delay", &x.delay)?,
                undated: x.undated,
                refused: counts(&x.refused),
            }))
        }
        None => None,
    };
    let traces = match &w.traces {
        Some((slowest, failed)) => {
            let rows = |v: &[WireTrace]| v.iter().map(trace_in).collect::<Result<_, _>>();
            Some(Box::new(Traces {
                slowest: rows(slowest)?,
                failed: rows(failed)?,
            }))
        }
        None => None,
    };
    let events = match &w.events {
        Some((streams, events, ended_events, first_byte, first_event, gap)) => {
            Some(Box::new(crate::events::EventCounts {
                streams: *streams,
                events: *events,
                ended_events: *ended_events,
                first_byte: hist("first byte", first_byte)?,
                first_event: hist("first event", first_event)?,
                gap: hist("event gap", gap)?,
                llm: None,
                channel: None,
            }))
        }
        None => None,
    };
    let mut events = events;
    if let Some(l) = &w.llm {
        let counts = l.decode(hist)?;
        events.get_or_insert_with(Box::default).llm = Some(Box::new(counts));
    }
    if let Some(c) = &w.channel {
        events.get_or_insert_with(Box::default).channel = Some(Box::new(crate::events::Channel {
            reconnects: c.reconnects,
            resumed: c.resumed,
            undated: c.undated,
            delay: hist("delivery delay", &c.delay)?,
        }));
    }
    Ok(Bucket {
        events,
        second: w.second,
        corrected,
        service,
        requests: w.requests,
        ok: w.ok,
        status,
        grpc,
        errors_by_kind,
        bytes_in: w.bytes_in,
        bytes_out: w.bytes_out,
        late: w.late,
        max_lag_us: w.max_lag_us,
        in_flight: w.in_flight,
        refused: w
            .refused
            .map(|(part, value)| Box::new(Refusal { part, value })),
        extract_failure: w.extract_failure.map(Box::new),
        answer_failures: w
            .answer_failures
            .into_iter()
            .map(|(k, why)| kind_named(&k).map(|k| (k, why)))
            .collect::<Result<_, _>>()?,
        checks: w
            .checks
            .into_iter()
            .map(|c| Checked {
                passed: c.passed,
                failed: c.failed,
                first_failure: c.first_failure.map(String::into_boxed_str),
                unchecked: c.unchecked,
                first_unchecked: c.first_unchecked.map(String::into_boxed_str),
            })
            .collect(),
        setup: Setup {
            opened: w.opened,
            connect: opt("connect", &w.connect)?,
            tls: opt("tls", &w.tls)?,
            upgrade: opt("upgrade", &w.upgrade)?,
            with_connect: opt("with connect", &w.with_connect)?,
            failure: match w.setup_failure {
                Some((kind, why)) => Some(Box::new((kind_named(&kind)?, why))),
                None => None,
            },
            zero_rtt: w.zero_rtt.map(|(connections, requests, refused)| {
                Box::new(crate::bucket::ZeroRtt {
                    connections,
                    requests,
                    refused,
                })
            }),
        },
        stream,
        ws,
        codes: w.codes,
        traces,
    })
}

/// The error kind named `name`, as [`ErrorKind::name`] writes it.
fn kind_named(name: &str) -> Result<ErrorKind, String> {
    ErrorKind::ALL
        .into_iter()
        .find(|k| k.name() == name)
        .ok_or_else(|| format!("unknown error kind '{name}'"))
}

fn trace_out(r: &TraceRow) -> WireTrace {
    let outcome = match r.outcome {
        TraceOutcome::Status(s) => format!("s{s}"),
        TraceOutcome::Grpc(c) => format!("g{c}"),
        TraceOutcome::Error(k) => format!("e{}", k.name()),
    };
    let id = r.id.iter().map(|b| format!("{b:02x}")).collect();
    WireTrace(id, r.latency_us, outcome, r.at_us)
}

fn trace_in(w: &WireTrace) -> Result<TraceRow, String> {
    let bad = || format!("bad trace row {w:?}");
    let mut id = [0u8; 16];
    if w.0.len() != 32 || !w.0.is_ascii() {
        return Err(bad());
    }
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(&w.0[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    let (tag, rest) = w.2.split_at(w.2.len().min(1));
    let outcome = match tag {
        "s" => TraceOutcome::Status(rest.parse().map_err(|_| bad())?),
        "g" => TraceOutcome::Grpc(rest.parse().map_err(|_| bad())?),
        "e" => TraceOutcome::Error(kind_named(rest).map_err(|_| bad())?),
        _ => return Err(bad()),
    };
    Ok(TraceRow {
        id,
        latency_us: w.1,
        outcome,
        at_us: w.3,
    })
}

/// `Err` naming the first count of `w` past its bound ([`crate::bounds`]).
fn within_bounds(w: &WireBucket) -> Result<(), String> {
    let mut counts: Vec<(&str, u64)> = vec![
        ("requests", w.requests),
        ("ok", w.ok),
        ("late", w.late),
        ("in_flight", w.in_flight),
        ("opened", w.opened),
    ];
    counts.extend(w.status.iter().map(|&(_, n)| ("status", n)));
    counts.extend(w.grpc.iter().map(|&(_, n)| ("grpc", n)));
    counts.extend(w.errors_by_kind.iter().map(|&n| ("errors_by_kind", n)));
    if w.codes.len() > crate::bucket::MOST_CODES
        || w.codes
            .iter()
            .any(|(c, _)| c.len() > 4 * crate::bucket::MOST_CODE_LEN)
    {
        return Err(format!("{} error codes", w.codes.len()));
    }
    counts.extend(w.codes.iter().map(|&(_, n)| ("codes", n)));
    if let Some((c, r, x)) = w.zero_rtt {
        counts.extend([("zero_rtt", c), ("zero_rtt", r), ("zero_rtt", x)]);
    }
    if let Some((calls, sent, received, _)) = &w.stream {
        counts.extend([("stream", *calls), ("stream", *sent), ("stream", *received)]);
    }
    if let Some(x) = &w.ws {
        counts.extend([
            ("ws", x.sent),
            ("ws", x.received),
            ("ws", x.pings),
            ("ws", x.unexpected),
            ("ws", x.undated),
        ]);
        counts.extend(x.closes.iter().chain(&x.refused).map(|&(_, n)| ("ws", n)));
    }
    if let Some((streams, events, ended, ..)) = &w.events {
        counts.extend([
            ("streams", *streams),
            ("events", *events),
            ("events", *ended),
        ]);
    }
    if let Some(c) = &w.channel {
        counts.extend([
            ("streams", c.reconnects),
            ("streams", c.resumed),
            ("events", c.undated),
        ]);
    }
    for c in &w.checks {
        counts.extend([
            ("checks", c.passed),
            ("checks", c.failed),
            ("checks", c.unchecked),
        ]);
    }
    if let Some((what, n)) = counts
        .into_iter()
        .find(|&(_, n)| n > crate::bounds::MOST_PER_SECOND)
    {
        return Err(format!("{what} {n} in one second"));
    }
    if let Some(n) = [w.bytes_in, w.bytes_out]
        .into_iter()
        .find(|&n| n > crate::bounds::MOST_BYTES_PER_SECOND)
    {
        return Err(format!("{n} bytes in one second"));
    }
    if w.ok > w.requests {
        return Err(format!("{} answered of {} requests", w.ok, w.requests));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Bucket {
        let mut b = Bucket::new(7);
        for us in [90, 1_000, 25_000, 3_000_000] {
            b.corrected.saturating_record(us);
            b.service.saturating_record(us / 2);
        }
        b.requests = 9;
        b.ok = 4;
        b.status.add(200, 4);
        b.status.add(503, 2);
        b.grpc.add(14, 1);
        b.errors_by_kind[ErrorKind::Timeout.index()] = 2;
        (b.bytes_in, b.bytes_out, b.late, b.max_lag_us) = (1234, 567, 3, 4_500);
        b.refused = Some(Box::new(Refusal::new("header X", b"a\r\nb")));
        b.extract_failure = Some(Box::new("$.token: no match".into()));
        b.note_answer_failure(ErrorKind::Protocol, "its Content-Length is not a number");
        b.note_answer_failure(ErrorKind::Closed, "closed after 5 of 100 body bytes");
        b.record_check(
            1,
            crate::CheckOutcome::Failed("the body does not contain \"ok\"".into()),
        );
        b.record_check(1, crate::CheckOutcome::Passed);
        b.record_check(0, crate::CheckOutcome::Unchecked("too large".into()));
        b.setup.record_connect(150);
        b.setup.record_tls(2_000);
        b.setup.record_upgrade(3_000);
        b.setup
            .note_failure(ErrorKind::Tls, "received corrupt message".into());
        b.setup.record_with_connect(9_000);
        b.stream = Some(Box::new(Streamed {
            calls: 1,
            sent: 5,
            received: 6,
            first_message: {
                let mut h = crate::new_histogram();
                h.saturating_record(777);
                h
            },
        }));
        let mut closes = StatusCounts::default();
        closes.add(1006, 2);
        let mut ws = WsCounts {
            sent: 7,
            received: 8,
            pings: 1,
            closes,
            unexpected: 1,
            up: None,
            delay: None,
            undated: 3,
            refused: StatusCounts::default(),
        };
        ws.refused.add(403, 2);
        ws.record_up(4_000_000);
        ws.record_delay(2_500);
        b.record_ws(&ws);
        let mut t = Traces::default();
        let row = |o| TraceRow {
            id: [0xab; 16],
            latency_us: 42,
            outcome: o,
            at_us: 9,
        };
        t.record(row(TraceOutcome::Status(200)), true, true);
        t.record(row(TraceOutcome::Error(ErrorKind::Timeout)), false, false);
        t.record(row(TraceOutcome::Grpc(14)), true, false);
        b.traces = Some(Box::new(t));
        b.events_mut().record_answer(9);
        b.events_mut().record_first_byte(1_500);
        b.events_mut().record_first_event(40_000);
        let ch = b.events_mut().channel_mut();
        (ch.reconnects, ch.resumed, ch.undated) = (4, 3, 2);
        ch.record_delay(7_000);
        b.events_mut().record_events(9);
        b.events_mut().record_gap(20_000);
        let llm = b.events_mut().llm_mut();
        llm.record_stream(crate::llm::Streamed {
            ttft_us: Some(40_000),
            tpot_us: Some(12_000),
            tokens: 9,
            estimated: false,
            judged: true,
            good: true,
            life_us: 140_000,
        });
        llm.record_itl(11_000);
        b.record_code("reset:H3_EXCESSIVE_LOAD", 2);
        b.record_code("closed:stateless_reset", 1);
        b.setup.record_zero_rtt(&crate::bucket::ZeroRtt {
            connections: 3,
            requests: 7,
            refused: 2,
        });
        b
    }

    #[test]
    fn a_bucket_crosses_the_wire_exactly() {
        let b = full();
        let w = WireBucket::from(&b);
        let text = serde_json::to_string(&w).expect("serialises");
        let back: WireBucket = serde_json::from_str(&text).expect("parses");
        let b2 = Bucket::try_from(back).expect("decodes");
        assert_eq!(b2.corrected, b.corrected);
        assert_eq!(b2.service, b.service);
        assert_eq!(b2.setup.connect, b.setup.connect);
        assert_eq!(b2.setup.tls, b.setup.tls);
        assert_eq!(b2.setup.upgrade, b.setup.upgrade);
        assert_eq!(b2.setup.failure, b.setup.failure);
        assert_eq!(b2.ws, b.ws);
        assert_eq!(b2.codes, b.codes);
        assert_eq!(b2.setup.zero_rtt, b.setup.zero_rtt);
        assert_eq!(b2.setup.with_connect, b.setup.with_connect);
        assert_eq!(b2.traces, b.traces);
        assert_eq!(b2.refused, b.refused);
        assert_eq!(b2.answer_failures, b.answer_failures);
        assert_eq!(b2.checks, b.checks);
        let (e, e2) = (b.events.as_deref().unwrap(), b2.events.as_deref().unwrap());
        assert_eq!((e2.streams, e2.events, e2.ended_events), (1, 9, 9));
        assert_eq!(
            (&e2.first_byte, &e2.first_event, &e2.gap),
            (&e.first_byte, &e.first_event, &e.gap)
        );
        let (l, l2) = (e.llm.as_deref().unwrap(), e2.llm.as_deref().unwrap());
        assert_eq!(
            (l2.streams, l2.output_tokens, l2.judged, l2.good, l2.life_us),
            (1, 9, 1, 1, 140_000)
        );
        assert_eq!((&l2.ttft, &l2.itl, &l2.tpot), (&l.ttft, &l.itl, &l.tpot));
        // Every other field: the wire form of the decoded bucket is the same as the original's.
        assert_eq!(WireBucket::from(&b2), w);
        let empty = Bucket::try_from(WireBucket::from(&Bucket::new(0))).expect("decodes");
        assert!(empty.setup.connect.is_none() && empty.stream.is_none() && empty.events.is_none());
    }

    #[test]
    fn a_bucket_from_another_version_or_garbage_is_an_error() {
        let mut w = WireBucket::from(&full());
        w.errors_by_kind.push(1);
        let e = Bucket::try_from(w).expect_err("refused");
        assert!(e.contains("error kinds"), "{e}");
        let mut w = WireBucket::from(&full());
        w.corrected = "not a histogram".into();
        assert!(Bucket::try_from(w).is_err());
        let mut w = WireBucket::from(&full());
        w.traces = Some((vec![WireTrace("zz".into(), 1, "s200".into(), 0)], vec![]));
        assert!(Bucket::try_from(w).is_err());
    }
}
