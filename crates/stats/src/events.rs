//! Streamed answers read as events (Server-Sent Events), per second like latency: how many
//! answers streamed and how many events they carried, and three HDR histograms (µs) that merge
//! exactly across threads, workers and seconds: from the intended start to the answer's head
//! (first byte) and to its first event, and the gaps between consecutive events; and for a
//! notification channel ([`Channel`]) its reconnects and each event's delivery delay.

use crate::hist::{new_histogram, Histogram, HIST_MAX_US};
use crate::llm::LlmCounts;

/// One second's streamed answers.
#[derive(Clone, Debug)]
pub struct EventCounts {
    /// Answers read as events that ended in this second.
    pub streams: u64,
    /// Events read in this second, whether or not their answer has ended (a held stream's
    /// too).
    pub events: u64,
    /// The events the answers that ended in this second carried (for events per answer).
    pub ended_events: u64,
    pub first_byte: Histogram,
    /// Answers that carried no event are not in it.
    pub first_event: Histogram,
    /// Each gap in the second it was read, whether or not its answer has ended.
    pub gap: Histogram,
    /// Token streams (`--llm`); only in seconds that read any.
    pub llm: Option<Box<LlmCounts>>,
    /// Held streams reopened, and events dated by their send time; only in seconds with any.
    pub channel: Option<Box<Channel>>,
}

/// A notification channel's second: the streams brink reopened after one ended (as a
/// browser's `EventSource` does), and each event's delivery delay, from the send time it
/// carries (`--sent-at`) to its read.
#[derive(Clone, Debug)]
pub struct Channel {
    /// Streams reopened after the last one on the same slot ended.
    pub reconnects: u64,
    /// Of those, the ones that said where to resume (`Last-Event-ID`).
    pub resumed: u64,
    /// Events whose send time could not be read, or lay ahead of this clock.
    pub undated: u64,
    pub delay: Histogram,
}

impl Default for Channel {
    fn default() -> Channel {
        Channel {
            reconnects: 0,
            resumed: 0,
            undated: 0,
            delay: new_histogram(),
        }
    }
}

impl Channel {
    pub fn merge(&mut self, other: &Channel) {
        self.reconnects += other.reconnects;
        self.resumed += other.resumed;
        self.undated += other.undated;
        let _ = self.delay.add(&other.delay);
    }

    /// An event delivered `us` µs after the send time it carries.
    pub fn record_delay(&mut self, us: u64) {
        self.delay.saturating_record(clamp(us));
    }
}

impl Default for EventCounts {
    fn default() -> EventCounts {
        EventCounts {
            streams: 0,
            events: 0,
            ended_events: 0,
            first_byte: new_histogram(),
            first_event: new_histogram(),
            gap: new_histogram(),
            llm: None,
            channel: None,
        }
    }
}

impl EventCounts {
    /// An answer that ended, and the events it carried.
    pub fn record_answer(&mut self, events: u64) {
        self.streams += 1;
        self.ended_events += events;
    }

    /// An answer's head read `us` after its intended start (in the second it was read,
    /// whether or not the answer ends well, or at all).
    pub fn record_first_byte(&mut self, us: u64) {
        self.first_byte.saturating_record(clamp(us));
    }

    /// An answer's first event read `us` after its intended start.
    pub fn record_first_event(&mut self, us: u64) {
        self.first_event.saturating_record(clamp(us));
    }

    /// `n` events read.
    pub fn record_events(&mut self, n: u64) {
        self.events += n;
    }

    /// A gap between two events, µs.
    pub fn record_gap(&mut self, us: u64) {
        self.record_gaps(us, 1);
    }

    /// `n` gaps of `us` µs each.
    pub fn record_gaps(&mut self, us: u64, n: u64) {
        // A gap of 0 (two events in one read) is recorded as the histogram's least value.
        self.gap.saturating_record_n(clamp(us), n);
    }

    /// The token streams' counts, made on first use.
    pub fn llm_mut(&mut self) -> &mut LlmCounts {
        self.llm.get_or_insert_with(Box::default)
    }

    /// The channel's counts, made on first use.
    pub fn channel_mut(&mut self) -> &mut Channel {
        self.channel.get_or_insert_with(Box::default)
    }

    pub fn merge(&mut self, other: &EventCounts) {
        self.streams += other.streams;
        self.events += other.events;
        self.ended_events += other.ended_events;
        // Same bounds on every side, so `add` cannot fail.
        let _ = self.first_byte.add(&other.first_byte);
        let _ = self.first_event.add(&other.first_event);
        let _ = self.gap.add(&other.gap);
        if let Some(l) = &other.llm {
            self.llm_mut().merge(l);
        }
        if let Some(c) = &other.channel {
            self.channel_mut().merge(c);
        }
    }
}

fn clamp(us: u64) -> u64 {
    us.clamp(1, HIST_MAX_US)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_and_gaps_merge_exactly() {
        let mut a = EventCounts::default();
        a.record_answer(12);
        a.record_first_byte(2_000);
        a.record_first_event(40_000);
        a.record_events(12);
        a.record_gap(0);
        a.record_gap(25_000);
        let mut b = EventCounts::default();
        b.record_answer(0);
        b.record_first_byte(3_000);
        b.record_gap(HIST_MAX_US * 4);
        let ch = b.channel_mut();
        (ch.reconnects, ch.resumed, ch.undated) = (3, 2, 1);
        ch.record_delay(4_000);
        a.merge(&b);
        let ch = a.channel.as_deref().unwrap();
        assert_eq!(
            (ch.reconnects, ch.resumed, ch.undated, ch.delay.len()),
            (3, 2, 1, 1)
        );
        assert_eq!((a.streams, a.events, a.ended_events), (2, 12, 12));
        assert_eq!(
            (a.first_byte.len(), a.first_event.len(), a.gap.len()),
            (2, 1, 3)
        );
        assert_eq!(a.gap.min(), 1, "two events in one read: the least gap");
        assert!(a.gap.max() >= HIST_MAX_US && a.gap.max() < HIST_MAX_US * 2);
    }
}
