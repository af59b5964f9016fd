//! `summary.stream`: answers read as events (Server-Sent Events), in the shape of the rest of
//! a summary: counts, rates, and the three timings with the same percentiles as latency; and
//! `summary.llm`: the same answers read as token streams (`--llm`).

use serde::{Deserialize, Serialize};
use stats::events::EventCounts;
use stats::llm::LlmCounts;
use stats::LatencySummary;

/// Answers read as events.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EventStreamJson {
    /// Answers read as events that ended (and were answered).
    pub streams: u64,
    /// Events read, those of streams still open at the end (held streams) included.
    pub events: u64,
    /// Events per answer that ended.
    pub events_per_stream: f64,
    /// Events per second of the run.
    pub events_per_s: f64,
    /// From the intended start to the answer's head (each head in the second it was read);
    /// `null` when no head was read as a stream.
    pub first_byte_ms: Option<LatencySummary>,
    /// From the intended start to the first event (a held stream's too); `null` when no
    /// answer carried one.
    pub first_event_ms: Option<LatencySummary>,
    /// Between consecutive events of one answer; `null` when none had two.
    pub event_gap_ms: Option<LatencySummary>,
    /// Held streams (`--hold`) opened again after one ended, as a browser's `EventSource`
    /// reopens it.
    #[serde(default)]
    pub reconnects: u64,
    /// Of those, the ones that sent `Last-Event-ID` (the stream had confirmed an ID).
    #[serde(default)]
    pub resumed: u64,
    /// Held streams (`--hold`) still open when the run ended (not requests: they never
    /// ended); `null` when the run held none.
    #[serde(default)]
    pub held: Option<u64>,
    /// Each event's delivery delay, from the send time its data carries (`--sent-at`) to its
    /// read; `null` without `--sent-at` or when no event was dated.
    #[serde(default)]
    pub delay_ms: Option<LatencySummary>,
    /// Events whose send time could not be read, or lay ahead of this clock: never counted
    /// as a delay of zero.
    #[serde(default)]
    pub undated: u64,
}

impl EventStreamJson {
    /// The summary of `e` over a run of `secs` seconds; `None` when no answer ended, no
    /// event was read and no held stream was reopened.
    pub fn of(e: &EventCounts, secs: f64, grace: &stats::Grace) -> Option<EventStreamJson> {
        let per = |n: u64, d: f64| if d > 0.0 { n as f64 / d } else { 0.0 };
        let some = |h: &stats::Histogram| (!h.is_empty()).then(|| LatencySummary::of(h));
        (e.streams > 0 || e.events > 0 || e.channel.is_some()).then(|| EventStreamJson {
            streams: e.streams,
            events: e.events,
            events_per_stream: per(e.ended_events, e.streams as f64),
            events_per_s: per(e.events.saturating_sub(grace.events), secs),
            first_byte_ms: some(&e.first_byte),
            first_event_ms: some(&e.first_event),
            event_gap_ms: some(&e.gap),
            reconnects: e.channel.as_ref().map_or(0, |c| c.reconnects),
            resumed: e.channel.as_ref().map_or(0, |c| c.resumed),
            held: None,
            delay_ms: e.channel.as_ref().and_then(|c| some(&c.delay)),
            undated: e.channel.as_ref().map_or(0, |c| c.undated),
        })
    }
}

/// Token streams (`--llm`): what a user of a language model waits for, in the shape of the
/// rest of a summary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LlmJson {
    /// Token streams that ended well: a successful status, `[DONE]`, no broken rule.
    pub streams: u64,
    /// Time to first token: from the intended start to the first token-bearing delta;
    /// `null` when no stream carried a token.
    pub ttft_ms: Option<LatencySummary>,
    /// Inter-token latency: between consecutive token-bearing deltas, pooled over streams;
    /// `null` when none had two.
    pub itl_ms: Option<LatencySummary>,
    /// Time per output token: per stream, (last token − first token) / (output tokens − 1);
    /// `null` when no stream had two tokens.
    pub tpot_ms: Option<LatencySummary>,
    pub output_tokens: u64,
    /// Output tokens per second of the run's schedule (the grace after it left out, as for
    /// `rps`), all streams together.
    pub output_tokens_per_s: f64,
    /// Output tokens per second of one stream's life (intended start to its end).
    pub output_tokens_per_stream_s: f64,
    /// Some streams' tokens were counted from their deltas: the server sent no `usage`.
    pub tokens_estimated: bool,
    /// How many streams' tokens were counted so (absent in results written before it).
    #[serde(default)]
    pub estimated_streams: u64,
    /// Streams per second of the schedule that met every per-request objective (on `ttft`,
    /// `tpot` and latency; those that ended in the grace left out, as for `ok_rps`); `null`
    /// when the run has none.
    pub goodput_per_s: Option<f64>,
    /// How many streams met them; `null` when the run has none.
    pub good_streams: Option<u64>,
}

impl LlmJson {
    /// The summary of `l` over a run of `secs` seconds (it exists once a token stream was
    /// read, whether or not one ended well).
    pub fn of(l: &LlmCounts, secs: f64, grace: &stats::Grace) -> Option<LlmJson> {
        let per = |n: u64, d: f64| if d > 0.0 { n as f64 / d } else { 0.0 };
        let some = |h: &stats::Histogram| (!h.is_empty()).then(|| LatencySummary::of(h));
        Some(LlmJson {
            streams: l.streams,
            ttft_ms: some(&l.ttft),
            itl_ms: some(&l.itl),
            tpot_ms: some(&l.tpot),
            output_tokens: l.output_tokens,
            output_tokens_per_s: per(l.output_tokens.saturating_sub(grace.output_tokens), secs),
            output_tokens_per_stream_s: per(l.output_tokens, l.life_us as f64 / 1e6),
            tokens_estimated: l.estimated > 0,
            estimated_streams: l.estimated,
            goodput_per_s: (l.judged > 0).then(|| per(l.good.saturating_sub(grace.good), secs)),
            good_streams: (l.judged > 0).then_some(l.good),
        })
    }
}
