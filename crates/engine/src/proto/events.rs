//! A streamed answer timed by its events, whatever carried it (an HTTP/1.1 body, chunked or
//! not; HTTP/2 DATA frames): its body bytes go through the [`sse`](super::sse) reader as they
//! arrive, and each event is stamped with the time its bytes were read. What a user of a
//! stream waits for is the first event and then each next one, not the end of the response.

use super::llm::Tokens;
use super::sent_at::SentAt;
use super::sse;
use std::collections::VecDeque;
use std::time::{Instant, SystemTime};

/// Whether a `Content-Type` value names Server-Sent Events (`text/event-stream`, any case,
/// parameters aside): the one test every protocol's head reader makes.
pub fn is_event_stream(content_type: &[u8]) -> bool {
    // Every answer's head passes here: the first differing byte ends it.
    const MEDIA: &[u8] = b"text/event-stream";
    let v = content_type.trim_ascii_start();
    v.len() >= MEDIA.len()
        && v[..MEDIA.len()].eq_ignore_ascii_case(MEDIA)
        && v[MEDIA.len()..]
            .first()
            .is_none_or(|&b| b == b';' || b.is_ascii_whitespace())
}

/// Whether a `Content-Encoding` value says the body is coded (gzip, br, ...): such a body
/// cannot be read as events as it comes, and an answer read as events that is coded is not
/// an event stream brink can time.
pub fn is_encoded(content_encoding: &[u8]) -> bool {
    let v = content_encoding.trim_ascii();
    !v.is_empty() && !v.eq_ignore_ascii_case(b"identity")
}

/// The largest event read unless told otherwise: 1 MiB.
pub const MAX_EVENT: usize = 1 << 20;

/// Which answers are read as events, and how large an event may be: answers whose head says
/// `text/event-stream`, or every answer with `force` (`--stream`); `max` bytes each
/// (`--max-event-size`); with `llm`, each answer as a token stream too (`--llm`), judged
/// against its per-request objectives; `idle`: how long one may go without a byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRule {
    pub force: bool,
    pub max: usize,
    pub llm: Option<PerRequest>,
    /// A streamed answer that sends nothing for this long ends as a `timeout`
    /// (`--idle-timeout`); `None`: only the request's `--timeout` bounds it.
    pub idle: Option<std::time::Duration>,
    /// Each event's delivery delay, from the send time its data carries here (`--sent-at`).
    pub sent_at: Option<SentAt>,
    /// Streams are held for the run and reopened when they end, as a browser's
    /// `EventSource` does (`--hold`): a held stream is bounded by `idle` alone.
    pub hold: bool,
}

/// The objectives one token stream is judged against (goodput: streams that met all of
/// them), µs; `None` where the run has no such objective. Each is the threshold of the run's
/// objective on the same time (`ttft.p99 < 1s`: a stream's TTFT under 1 s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerRequest {
    pub ttft_us: Option<u64>,
    pub tpot_us: Option<u64>,
    /// The whole answer (end-to-end latency).
    pub latency_us: Option<u64>,
}

impl PerRequest {
    /// Whether any objective is set: goodput is only counted then.
    pub fn any(&self) -> bool {
        self.ttft_us.is_some() || self.tpot_us.is_some() || self.latency_us.is_some()
    }

    /// Whether a stream with these times met every objective (a time it lacks meets none).
    pub fn met(&self, ttft_us: Option<u64>, tpot_us: Option<u64>, latency_us: u64) -> bool {
        let within =
            |limit: Option<u64>, v: Option<u64>| limit.is_none_or(|l| v.is_some_and(|v| v < l));
        within(self.ttft_us, ttft_us)
            && within(self.latency_us, Some(latency_us))
            && self.tpot_us.is_none_or(|l| tpot_us.is_none_or(|v| v < l))
    }
}

impl Default for EventRule {
    fn default() -> EventRule {
        EventRule {
            force: false,
            max: MAX_EVENT,
            llm: None,
            idle: None,
            sent_at: None,
            hold: false,
        }
    }
}

impl EventRule {
    /// Whether an answer is read as events (`event_stream`: its head said
    /// `text/event-stream`): the test a head reader makes before it reads the clock.
    pub fn reads(self, event_stream: bool) -> bool {
        self.force || self.llm.is_some() || event_stream
    }

    /// The events of an answer whose head was read at `now` (`event_stream`: it said
    /// `text/event-stream`); `None` when it is not read as events.
    pub fn events_for(
        self,
        event_stream: bool,
        encoded: bool,
        now: Instant,
    ) -> Option<Box<Events>> {
        self.reads(event_stream).then(|| {
            let keep_data = self.llm.is_some() || self.sent_at.is_some();
            let mut e = Box::new(Events::new(self.max, keep_data));
            e.sent_at = self.sent_at;
            e.first_byte = Some(now);
            e.said_stream = event_stream;
            e.encoded = encoded;
            e.last_read = now;
            if self.llm.is_some() {
                e.tokens = Some(Box::default());
            }
            e
        })
    }
}

/// Most gaps held between two drains: a read of a whole buffer of tiny events makes at most a
/// few thousand; past this the oldest are dropped (and counted) rather than memory grow.
const MOST_PENDING: usize = 16 * 1024;

/// The events of one streamed answer so far.
#[derive(Debug)]
pub struct Events {
    sse: sse::Reader,
    /// When the answer's head was read.
    pub first_byte: Option<Instant>,
    /// When the first event was complete.
    pub first_event: Option<Instant>,
    last: Option<Instant>,
    /// Events dispatched.
    pub count: u64,
    /// Gaps between consecutive events not yet drained, µs (0 µs gaps aside).
    gaps_us: VecDeque<u64>,
    /// Gaps of 0 µs (events completed by one read) not yet drained.
    zero_gaps: u64,
    /// Events read since the last drain.
    undrained: u64,
    /// Gaps and delays dropped because nobody drained them.
    pub dropped: u64,
    /// The answer read as a token stream too (`--llm`).
    pub tokens: Option<Box<Tokens>>,
    /// When its bytes last came (the head, or the last body bytes): what an idle timeout
    /// counts from.
    pub last_read: Instant,
    /// Its head said `text/event-stream` (it was not only read as events because asked).
    pub said_stream: bool,
    /// Its head said its body is coded (`Content-Encoding: gzip`, ...): its bytes are not
    /// events as they come.
    pub encoded: bool,
    /// Where its events carry their send time.
    sent_at: Option<SentAt>,
    /// Delivery delays not yet drained, µs.
    delays_us: Vec<u64>,
    /// Events whose send time could not be read, not yet drained.
    undated: u64,
    /// Its first byte, and first event, were drained.
    told: (bool, bool),
    /// Body bytes read since the last drain.
    fed: u64,
    /// Body bytes drained (counted in the run's bytes in as they were read).
    pub drained_bytes: u64,
}

impl Events {
    /// Events of at most `max_event` bytes (a line being read plus the event gathered);
    /// their data is copied out only for a reader of it (`keep_data`: a token stream).
    pub fn new(max_event: usize, keep_data: bool) -> Events {
        let sse = sse::Reader::new(max_event);
        Events {
            sse: if keep_data { sse.keeping_data() } else { sse },
            first_byte: None,
            first_event: None,
            last: None,
            count: 0,
            gaps_us: VecDeque::new(),
            zero_gaps: 0,
            undrained: 0,
            dropped: 0,
            tokens: None,
            last_read: Instant::now(),
            said_stream: false,
            encoded: false,
            sent_at: None,
            delays_us: Vec::new(),
            undated: 0,
            told: (false, false),
            fed: 0,
            drained_bytes: 0,
        }
    }

    /// Reads `payload`, body bytes read at `now`.
    pub fn feed(&mut self, payload: &[u8], now: Instant) -> Result<(), sse::Fault> {
        self.last_read = now;
        self.fed += payload.len() as u64;
        let mut n = 0u64;
        if self.tokens.is_none() && self.sent_at.is_none() {
            // Events only counted and timed (every plain stream): a callback small enough
            // to melt into the reader's loop.
            self.sse.feed(payload, &mut |_| n += 1)?;
        } else {
            let tokens = &mut self.tokens;
            let (sent_at, delays) = (self.sent_at, &mut self.delays_us);
            let (undated, dropped) = (&mut self.undated, &mut self.dropped);
            // The wall clock is read once per read that completes a dated event.
            let mut wall = None;
            self.sse.feed(payload, &mut |ev| {
                n += 1;
                if let Some(t) = tokens.as_deref_mut() {
                    t.event(ev.kind, ev.data, now);
                }
                if let Some(at) = sent_at {
                    let wall = *wall.get_or_insert_with(SystemTime::now);
                    match super::sent_at::delay_us(at.path(), ev.data, wall) {
                        Some(d) if delays.len() < MOST_PENDING => delays.push(d),
                        Some(_) => *dropped += 1,
                        None => *undated += 1,
                    }
                }
            })?;
        }
        self.events_at(n, now);
        Ok(())
    }

    /// `n` events completed by one read at `now`: all but the first are 0 µs after the one
    /// before, and are counted as such, not stored one by one.
    fn events_at(&mut self, n: u64, now: Instant) {
        if n == 0 {
            return;
        }
        self.count += n;
        self.undrained += n;
        self.zero_gaps += n - 1;
        match self.last {
            None => self.first_event = Some(now),
            Some(prev) => {
                let gap = now.saturating_duration_since(prev).as_micros() as u64;
                if gap == 0 {
                    self.zero_gaps += 1;
                } else {
                    if self.gaps_us.len() >= MOST_PENDING {
                        self.gaps_us.pop_front();
                        self.dropped += 1;
                    }
                    self.gaps_us.push_back(gap);
                }
            }
        }
        self.last = Some(now);
    }

    /// Whether it has sent nothing for `idle` (`None`: never idle) at `now`.
    pub fn idle_at(&self, idle: Option<std::time::Duration>, now: Instant) -> bool {
        idle.is_some_and(|d| now >= self.last_read + d)
    }

    /// Hands over the gaps between events since the last drain, µs, as (gap, how many): those
    /// of 0 µs (events read together) first, then the others, oldest first.
    pub fn drain_gaps(&mut self, mut each: impl FnMut(u64, u64)) {
        if self.zero_gaps > 0 {
            each(0, std::mem::take(&mut self.zero_gaps));
        }
        for g in self.gaps_us.drain(..) {
            each(g, 1);
        }
    }

    /// Records what was read since the last drain in `rec`: the body bytes (a stream that
    /// never ends, or ends in an error, still read them), the head and first event (from
    /// `base`, the intended start) once each, the events, the gaps between them and their
    /// delivery delays. A token stream's gaps wait for its end (only a stream that ends well
    /// has them recorded).
    pub fn drain_into(&mut self, rec: &mut stats::Bucket, base: Instant) {
        let fed = std::mem::take(&mut self.fed);
        rec.bytes_in += fed;
        self.drained_bytes += fed;
        let counts = rec.events_mut();
        let since = |t: Instant| t.saturating_duration_since(base).as_micros() as u64;
        if !self.told.0 {
            if let Some(t) = self.first_byte {
                self.told.0 = true;
                counts.record_first_byte(since(t));
            }
        }
        if !self.told.1 {
            if let Some(t) = self.first_event {
                self.told.1 = true;
                counts.record_first_event(since(t));
            }
        }
        counts.record_events(std::mem::take(&mut self.undrained));
        self.drain_gaps(|g, n| counts.record_gaps(g, n));
        if !self.delays_us.is_empty() || self.undated > 0 {
            let ch = counts.channel_mut();
            ch.undated += std::mem::take(&mut self.undated);
            for d in self.delays_us.drain(..) {
                ch.record_delay(d);
            }
        }
    }

    /// The stream's reader (last event ID, retry, comments).
    pub fn reader(&self) -> &sse::Reader {
        &self.sse
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn event_streams_are_told_by_their_media_type() {
        for yes in [
            &b"text/event-stream"[..],
            b"TEXT/Event-Stream",
            b" text/event-stream; charset=utf-8",
            b"text/event-stream ;x=y",
        ] {
            assert!(is_event_stream(yes), "{yes:?}");
        }
        for no in [
            &b"text/event-streams"[..],
            b"application/octet-stream",
            b"text/event",
            b"",
            b"text/plain; a=text/event-stream",
        ] {
            assert!(!is_event_stream(no), "{no:?}");
        }
    }

    #[test]
    fn each_event_is_stamped_with_the_read_that_completed_it() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut e = Events::new(1024, false);
        e.feed(b": ping\n\ndata: a", at(5)).unwrap();
        assert_eq!(
            (e.count, e.first_event),
            (0, None),
            "a comment and half an event"
        );
        e.feed(b"\n\ndata: b\n\n", at(40)).unwrap();
        e.feed(b"data: c\n\ndata: d\n\n", at(100)).unwrap();
        assert_eq!((e.count, e.first_event), (4, Some(at(40))));
        let mut gaps = Vec::new();
        e.drain_gaps(|g, n| gaps.push((g, n)));
        // b came in the read that completed a; d in the one that completed c.
        assert_eq!(gaps, [(0, 2), (60_000, 1)]);
        e.drain_gaps(|g, n| gaps.push((g, n)));
        assert_eq!(gaps.len(), 2, "drained once");
    }

    #[test]
    fn heads_first_events_and_delays_are_drained_once_as_they_are_read() {
        let base = Instant::now();
        let path = serde_json_path::JsonPath::parse("$.ts").unwrap();
        let rule = EventRule {
            sent_at: Some(SentAt::new(path)),
            ..EventRule::default()
        };
        let mut e = rule
            .events_for(true, false, base + Duration::from_millis(3))
            .unwrap();
        let mut rec = stats::Bucket::new(0);
        e.drain_into(&mut rec, base);
        let counts = rec.events.as_deref().unwrap();
        assert_eq!((counts.first_byte.len(), counts.first_event.len()), (1, 0));
        let sent = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let dated = format!("data: {{\"ts\": {sent}}}\n\ndata: no time\n\n");
        e.feed(dated.as_bytes(), base + Duration::from_millis(9))
            .unwrap();
        e.drain_into(&mut rec, base);
        e.drain_into(&mut rec, base);
        assert_eq!(rec.bytes_in, dated.len() as u64, "body bytes, once");
        let counts = rec.events.as_deref().unwrap();
        assert_eq!((counts.first_byte.len(), counts.first_event.len()), (1, 1));
        let at = counts.first_event.value_at_quantile(1.0);
        assert!((8_900..=9_100).contains(&at), "{at}");
        let ch = counts.channel.as_deref().unwrap();
        assert_eq!((ch.delay.len(), ch.undated, counts.events), (1, 1, 2));
        assert!(ch.delay.max() < 1_000_000, "read as ms: {}", ch.delay.max());
    }

    #[test]
    fn undrained_gaps_are_bounded() {
        let t0 = Instant::now();
        let mut e = Events::new(64, false);
        for i in 0..MOST_PENDING + 10 {
            e.feed(
                b"data: x\n\n",
                t0 + std::time::Duration::from_micros(i as u64),
            )
            .unwrap();
        }
        assert_eq!(e.count, (MOST_PENDING + 10) as u64);
        let mut n = 0;
        e.drain_gaps(|_, k| n += k);
        assert_eq!((n, e.dropped), (MOST_PENDING as u64, 9));
        // A read of many events stores none of their gaps one by one.
        let many = b"data: x\n\n".repeat(MOST_PENDING * 4);
        e.feed(&many, t0 + std::time::Duration::from_secs(1))
            .unwrap();
        let mut pairs = Vec::new();
        e.drain_gaps(|g, k| pairs.push((g, k)));
        assert_eq!(
            pairs,
            [
                (0, (MOST_PENDING * 4 - 1) as u64),
                (1_000_000 - (MOST_PENDING + 9) as u64, 1)
            ]
        );
    }
}
