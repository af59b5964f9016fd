//! Token streams: the answers of OpenAI-compatible servers (`/v1/chat/completions` and
//! `/v1/completions` with `stream: true`), read event by event as they arrive. Each event's
//! data is a JSON chunk; a chunk whose first choice carries text (`delta.content`,
//! `delta.reasoning_content` or `delta.reasoning` for chat, `text` for completions) is a
//! token-bearing delta; `usage.completion_tokens` (sent with `stream_options.include_usage`)
//! is the server's own count; `[DONE]` ends the stream. What a user of such a stream waits
//! for is its first token and then each next one, so this is where they are told apart and
//! stamped; a stream that breaks the rules (a chunk that is not JSON, an error object, no
//! `[DONE]`) is an error of its own kind, never an answer counted as ok.

use serde::de::IgnoredAny;
use serde::Deserialize;
use stats::ErrorKind;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::time::Instant;

/// Most gaps one stream holds until it ends (only a stream that ends well has its gaps
/// recorded): past it the oldest are dropped and counted. 128 KiB a stream at most.
const MOST_PENDING: usize = 32 * 1024;
/// The most output tokens a server may say one stream carried (2^32).
const MOST_TOKENS: u64 = u32::MAX as u64;

/// One token stream so far.
#[derive(Debug, Default)]
pub struct Tokens {
    /// When the first token-bearing delta was read.
    pub first: Option<Instant>,
    /// When the last one was read.
    pub last: Option<Instant>,
    /// Token-bearing deltas read.
    pub deltas: u64,
    /// The server's `usage.completion_tokens`, the last it sent.
    pub usage: Option<u64>,
    /// `[DONE]` was read.
    pub done: bool,
    /// The first rule the stream broke.
    pub fault: Option<ErrorKind>,
    /// Gaps between token-bearing deltas not yet drained, µs.
    itl_us: VecDeque<u32>,
    /// Gaps dropped because nobody drained them.
    pub dropped: u64,
    /// The bytes of the events' data read so far: the most tokens the stream can carry.
    bytes: u64,
}

/// What one chunk says (unknown fields are passed over; a top-level value that is not an
/// object, or a field of the wrong type, is not a chunk).
#[derive(Deserialize)]
struct Chunk<'a> {
    /// The first choice only: the rest are passed over unbuilt (a hostile chunk of a
    /// million empty choices costs its bytes, not ~100 bytes an element).
    #[serde(default, borrow, deserialize_with = "first_choice")]
    choices: Option<Choice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// `choices`: `null`, or an array of which the first element is read.
fn first_choice<'de, D>(d: D) -> Result<Option<Choice<'de>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct First;
    impl<'de> serde::de::Visitor<'de> for First {
        type Value = Option<Choice<'de>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of choices or null")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(First)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let first = seq.next_element::<Choice<'de>>()?;
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    d.deserialize_option(First)
}

impl Choice<'_> {
    fn carries_text(&self) -> bool {
        let some = |t: &Option<Cow<str>>| t.as_deref().is_some_and(|t| !t.is_empty());
        some(&self.text)
            || self.delta.as_ref().is_some_and(|d| {
                some(&d.content) || some(&d.reasoning_content) || some(&d.reasoning)
            })
    }
}

impl Tokens {
    /// One event of the stream, of type `kind` with `data`, read at `now`.
    pub fn event(&mut self, kind: &[u8], data: &[u8], now: Instant) {
        if self.done || self.fault.is_some() {
            // What follows `[DONE]` or a broken rule changes nothing.
            return;
        }
        self.bytes = self.bytes.saturating_add(data.len() as u64);
        if data == b"[DONE]" {
            self.done = true;
            return;
        }
        if kind == b"error" {
            self.fault = Some(ErrorKind::StreamError);
            return;
        }
        let chunk = match serde_json::from_slice::<Chunk>(data) {
            Ok(c) => c,
            Err(_) => {
                self.fault = Some(ErrorKind::BadDelta);
                return;
            }
        };
        if chunk.error.is_some() {
            self.fault = Some(ErrorKind::StreamError);
            return;
        }
        if let Some(n) = chunk.usage.and_then(|u| u.completion_tokens) {
            // A token is at least a byte of the stream: a count past the bytes read (or
            // past 2^32) is one no stream could carry, and the stream breaks a rule.
            if n > self.bytes || n > MOST_TOKENS {
                self.fault = Some(ErrorKind::BadDelta);
                return;
            }
            self.usage = Some(n);
        }
        if chunk.choices.as_ref().is_some_and(Choice::carries_text) {
            self.token_at(now);
        }
    }

    fn token_at(&mut self, now: Instant) {
        self.deltas += 1;
        match self.last {
            None => self.first = Some(now),
            Some(prev) => {
                if self.itl_us.len() >= MOST_PENDING {
                    self.itl_us.pop_front();
                    self.dropped += 1;
                }
                let us = now.saturating_duration_since(prev).as_micros();
                self.itl_us.push_back(u32::try_from(us).unwrap_or(u32::MAX));
            }
        }
        self.last = Some(now);
    }

    /// Hands over the gaps between token-bearing deltas since the last drain, µs.
    pub fn drain_itl(&mut self, mut each: impl FnMut(u64)) {
        for g in self.itl_us.drain(..) {
            each(u64::from(g));
        }
    }

    /// The output tokens: the server's count when it sent one, otherwise the deltas counted
    /// (then `true`: estimated).
    pub fn output_tokens(&self) -> (u64, bool) {
        match self.usage {
            Some(n) => (n, false),
            None => (self.deltas, true),
        }
    }

    /// Time per output token after the first, µs: (last token − first token) / (tokens − 1);
    /// `None` with fewer than two.
    pub fn tpot_us(&self) -> Option<u64> {
        let (n, _) = self.output_tokens();
        let (first, last) = (self.first?, self.last?);
        (n > 1).then(|| last.saturating_duration_since(first).as_micros() as u64 / (n - 1))
    }

    /// Why the stream, now ended, is not a good answer: the first rule it broke, or no
    /// `[DONE]`.
    pub fn end_fault(&self) -> Option<ErrorKind> {
        self.fault.or((!self.done).then_some(ErrorKind::Unfinished))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn chat_deltas_are_timed_and_usage_is_the_count() {
        let t0 = Instant::now();
        let mut t = Tokens::default();
        let role =
            br#"{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        t.event(b"message", role, at(t0, 5));
        assert_eq!((t.deltas, t.first), (0, None), "an empty delta is no token");
        for (ms, word) in [(100, "Hel"), (120, "lo"), (160, " w\\u00f6rld")] {
            let d = format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"{word}"}}}}]}}"#);
            t.event(b"message", d.as_bytes(), at(t0, ms));
        }
        t.event(
            b"message",
            br#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}"#,
            at(t0, 170),
        );
        assert_eq!(t.end_fault(), Some(ErrorKind::Unfinished));
        t.event(b"message", b"[DONE]", at(t0, 171));
        assert_eq!(t.end_fault(), None);
        assert_eq!(
            (t.deltas, t.first, t.last),
            (3, Some(at(t0, 100)), Some(at(t0, 160)))
        );
        assert_eq!(t.output_tokens(), (4, false));
        assert_eq!(
            t.tpot_us(),
            Some(20_000),
            "60 ms over 3 tokens after the first"
        );
        let mut gaps = Vec::new();
        t.drain_itl(|g| gaps.push(g));
        assert_eq!(gaps, [20_000, 40_000]);
    }

    #[test]
    fn completions_text_counts_and_without_usage_tokens_are_estimated() {
        let t0 = Instant::now();
        let mut t = Tokens::default();
        for ms in [10, 30] {
            t.event(
                b"message",
                br#"{"choices":[{"text":"a","index":0}]}"#,
                at(t0, ms),
            );
        }
        t.event(b"message", b"[DONE]", at(t0, 31));
        assert_eq!(t.output_tokens(), (2, true));
        assert_eq!(t.tpot_us(), Some(20_000));
    }

    #[test]
    fn broken_streams_are_faults_of_their_own_kind() {
        let t0 = Instant::now();
        let fault = |events: &[(&[u8], &[u8])]| {
            let mut t = Tokens::default();
            for (kind, data) in events {
                t.event(kind, data, t0);
            }
            t.end_fault()
        };
        let ok: &[u8] = br#"{"choices":[{"delta":{"content":"x"}}]}"#;
        assert_eq!(
            fault(&[(b"message", b"{\"choices\":[{\"delta\":")]),
            Some(ErrorKind::BadDelta)
        );
        assert_eq!(fault(&[(b"message", b"[1,2]")]), Some(ErrorKind::BadDelta));
        assert_eq!(
            fault(&[(b"message", br#"{"choices":[{"delta":{"content":7}}]}"#)]),
            Some(ErrorKind::BadDelta),
            "content that is not text"
        );
        assert_eq!(
            fault(&[
                (b"message", ok),
                (b"message", br#"{"error":{"message":"overloaded"}}"#),
                (b"message", b"[DONE]")
            ]),
            Some(ErrorKind::StreamError)
        );
        assert_eq!(
            fault(&[(b"error", b"{}"), (b"message", b"[DONE]")]),
            Some(ErrorKind::StreamError)
        );
        assert_eq!(fault(&[(b"message", ok)]), Some(ErrorKind::Unfinished));
        assert_eq!(
            fault(&[
                (b"message", ok),
                (b"message", b"[DONE]"),
                (b"message", b"junk")
            ]),
            None
        );
        assert_eq!(
            fault(&[
                (b"message", br#"{"choices":null,"error":null,"usage":null}"#),
                (b"message", b"[DONE]")
            ]),
            None,
            "nulls are absent fields"
        );
        assert_eq!(
            fault(&[(b"message", br#"{"choices":5}"#), (b"message", b"[DONE]")]),
            Some(ErrorKind::BadDelta),
            "choices that are not an array"
        );
    }

    #[test]
    fn only_the_first_choice_counts_and_the_rest_are_passed_over() {
        let t0 = Instant::now();
        let mut t = Tokens::default();
        let many = format!(r#"{{"choices":[{{"text":"a"}}{}]}}"#, ",{}".repeat(100_000));
        t.event(b"message", many.as_bytes(), t0);
        let second_only = br#"{"choices":[{},{"text":"b"}]}"#;
        t.event(b"message", second_only, t0);
        let nested = br#"{"choices":[{"text":"c"},{"delta":{"content":[1,{"x":[]}]}}]}"#;
        t.event(b"message", nested, t0);
        t.event(b"message", br#"{"choices":[]}"#, t0);
        t.event(b"message", b"[DONE]", t0);
        assert_eq!((t.deltas, t.end_fault()), (2, None), "{t:?}");
    }

    #[test]
    fn a_usage_no_stream_could_carry_is_a_bad_delta() {
        let t0 = Instant::now();
        let run = |usage: u64, pad: usize| {
            let mut t = Tokens::default();
            let text = "x".repeat(pad);
            let d = format!(r#"{{"choices":[{{"text":"{text}"}}]}}"#);
            t.event(b"message", d.as_bytes(), t0);
            let u = format!(r#"{{"choices":[],"usage":{{"completion_tokens":{usage}}}}}"#);
            t.event(b"message", u.as_bytes(), t0);
            t.event(b"message", b"[DONE]", t0);
            (t.end_fault(), t.output_tokens())
        };
        // Every byte the stream's events carried so far (the usage's own event too: a
        // two-digit count here) may be a token; one more may not.
        let carried = (r#"{"choices":[{"text":""}]}"#.len() + 5) as u64;
        let usage_len = |u: u64| {
            format!(r#"{{"choices":[],"usage":{{"completion_tokens":{u}}}}}"#).len() as u64
        };
        let most = carried + usage_len(71);
        assert_eq!(run(most, 5), (None, (most, false)));
        assert_eq!(run(most + 1, 5).0, Some(ErrorKind::BadDelta));
        assert_eq!(run(u64::MAX, 5).0, Some(ErrorKind::BadDelta));
        // Past 2^32 whatever the stream's size (a sparse check: no 4 GiB stream here).
        let mut t = Tokens {
            bytes: u64::MAX / 2,
            ..Tokens::default()
        };
        t.event(
            b"message",
            br#"{"usage":{"completion_tokens":4294967296}}"#,
            t0,
        );
        assert_eq!(t.fault, Some(ErrorKind::BadDelta));
        let mut t = Tokens {
            bytes: u64::MAX / 2,
            ..Tokens::default()
        };
        t.event(
            b"message",
            br#"{"usage":{"completion_tokens":4294967295}}"#,
            t0,
        );
        assert_eq!((t.fault, t.usage), (None, Some(u64::from(u32::MAX))));
    }
}
