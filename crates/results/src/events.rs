//! `summary.stream`: answers read as events (Server-Sent Events), in the shape of the rest of
//! a summary: counts, rates, and the three timings with the same percentiles as latency.

use serde::{Deserialize, Serialize};
use stats::events::EventCounts;
use stats::LatencySummary;

/// Answers read as events.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EventStreamJson {
    /// Answers read as events that ended (and were answered).
    pub streams: u64,
    /// Events those answers carried.
    pub events: u64,
    pub events_per_stream: f64,
    /// Events per second of the run.
    pub events_per_s: f64,
    /// From the intended start to the answer's head.
    pub first_byte_ms: LatencySummary,
    /// From the intended start to the first event; `null` when no answer carried one.
    pub first_event_ms: Option<LatencySummary>,
    /// Between consecutive events of one answer; `null` when none had two.
    pub event_gap_ms: Option<LatencySummary>,
}

impl EventStreamJson {
    /// The summary of `e` over a run of `secs` seconds; `None` when no answer ended.
    pub fn of(e: &EventCounts, secs: f64) -> Option<EventStreamJson> {
        let per = |n: u64, d: f64| if d > 0.0 { n as f64 / d } else { 0.0 };
        let some = |h: &stats::Histogram| (!h.is_empty()).then(|| LatencySummary::of(h));
        (e.streams > 0).then(|| EventStreamJson {
            streams: e.streams,
            events: e.events,
            events_per_stream: per(e.events, e.streams as f64),
            events_per_s: per(e.events, secs),
            first_byte_ms: LatencySummary::of(&e.first_byte),
            first_event_ms: some(&e.first_event),
            event_gap_ms: some(&e.gap),
        })
    }
}
