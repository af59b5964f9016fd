//! A delivery delay (a WebSocket subscription's messages, a notification channel's events):
//! a pushed JSON message says when it was sent (a number
//! at a JSON path, in epoch seconds, milliseconds, microseconds or nanoseconds, told apart by
//! size, or such a number in a string), and the delay is its arrival minus that. A message
//! that is not JSON, has no number there, or says it was sent in the future (a clock ahead
//! of this one) has no delay to trust: it is counted as undated, never as zero.

use serde_json::Value;
use serde_json_path::JsonPath;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where events carry their send time (`--sent-at` on an event stream), as the run's
/// [`EventRule`](super::events::EventRule) holds it: a reference, so the rule stays `Copy`
/// (it is copied into each answer's reader on the hot path, where a shared count would be
/// contended between threads). Made once per run and kept for the process's life.
#[derive(Clone, Copy, Debug)]
pub struct SentAt(&'static JsonPath);

impl SentAt {
    pub fn new(path: JsonPath) -> SentAt {
        SentAt(Box::leak(Box::new(path)))
    }

    pub fn path(self) -> &'static JsonPath {
        self.0
    }
}

impl PartialEq for SentAt {
    fn eq(&self, other: &SentAt) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for SentAt {}

/// How long after the send time at `path` in `data` the message arrived at `now`, in µs.
pub fn delay_us(path: &JsonPath, data: &[u8], now: SystemTime) -> Option<u64> {
    let v: Value = serde_json::from_slice(data).ok()?;
    let t = match path.query(&v).first()? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    if !t.is_finite() || t <= 0.0 {
        return None;
    }
    let sent_us = if t < 1e11 {
        t * 1e6
    } else if t < 1e14 {
        t * 1e3
    } else if t < 1e17 {
        t
    } else {
        t / 1e3
    };
    let now_us = now.duration_since(UNIX_EPOCH).ok()?.as_micros() as f64;
    let d = now_us - sent_us;
    (d >= 0.0).then_some(d as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_unit_reads_as_the_same_instant() {
        let path = JsonPath::parse("$.ts").unwrap();
        let sent = UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
        let now = sent + Duration::from_millis(25);
        for doc in [
            r#"{"ts": 1700000000.123456}"#,
            r#"{"ts": 1700000000123.456}"#,
            r#"{"ts": 1700000000123456}"#,
            r#"{"ts": 1700000000123456000}"#,
            r#"{"ts": "1700000000123.456"}"#,
        ] {
            let d = delay_us(&path, doc.as_bytes(), now).unwrap();
            assert!((24_990..=25_010).contains(&d), "{doc}: {d}");
        }
    }

    #[test]
    fn what_cannot_be_trusted_is_undated() {
        let path = JsonPath::parse("$.ts").unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for doc in [
            "not json",
            r#"{"other": 1}"#,
            r#"{"ts": "soon"}"#,
            r#"{"ts": 1800000000}"#,
            r#"{"ts": -5}"#,
        ] {
            assert_eq!(delay_us(&path, doc.as_bytes(), now), None, "{doc}");
        }
    }
}
