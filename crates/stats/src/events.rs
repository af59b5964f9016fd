//! Streamed answers read as events (Server-Sent Events), per second like latency: how many
//! answers streamed and how many events they carried, and three HDR histograms (µs) that merge
//! exactly across threads, workers and seconds: from the intended start to the answer's head
//! (first byte) and to its first event, and the gaps between consecutive events.

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
        }
    }
}

impl EventCounts {
    /// An answer that ended: its head `first_byte_us` and its first event `first_event_us`
    /// after the intended start, and the events it carried.
    pub fn record_answer(&mut self, first_byte_us: u64, first_event_us: Option<u64>, events: u64) {
        self.streams += 1;
        self.ended_events += events;
        self.first_byte.saturating_record(clamp(first_byte_us));
        if let Some(us) = first_event_us {
            self.first_event.saturating_record(clamp(us));
        }
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
        a.record_answer(2_000, Some(40_000), 12);
        a.record_events(12);
        a.record_gap(0);
        a.record_gap(25_000);
        let mut b = EventCounts::default();
        b.record_answer(3_000, None, 0);
        b.record_gap(HIST_MAX_US * 4);
        a.merge(&b);
        assert_eq!((a.streams, a.events, a.ended_events), (2, 12, 12));
        assert_eq!(
            (a.first_byte.len(), a.first_event.len(), a.gap.len()),
            (2, 1, 3)
        );
        assert_eq!(a.gap.min(), 1, "two events in one read: the least gap");
        assert!(a.gap.max() >= HIST_MAX_US && a.gap.max() < HIST_MAX_US * 2);
    }
}
