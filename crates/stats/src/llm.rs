//! Token streams (OpenAI-compatible chat and completions answers read with `--llm`), per
//! second like latency: how many streams ended well, the output tokens they carried (and how
//! many of those counts the server did not give), how many met every per-request objective,
//! and three HDR histograms (µs) that merge exactly: time to the first token (TTFT, from the
//! intended start), the gaps between token-bearing deltas (ITL), and each stream's time per
//! output token after the first (TPOT).

use crate::hist::{encode, new_histogram, Histogram, HIST_MAX_US};
use serde::{Deserialize, Serialize};

/// One second's token streams.
#[derive(Clone, Debug)]
pub struct LlmCounts {
    /// Token streams that ended well in this second (status ok, `[DONE]`, no fault).
    pub streams: u64,
    /// The output tokens they carried: the server's `usage.completion_tokens` where it sent
    /// one, otherwise the token-bearing deltas counted.
    pub output_tokens: u64,
    /// Streams whose output tokens were counted from the deltas (no `usage` sent).
    pub estimated: u64,
    /// Streams judged against per-request objectives (all of them when the run has such
    /// objectives, none otherwise).
    pub judged: u64,
    /// Of those, the streams that met every objective (goodput).
    pub good: u64,
    /// The streams' lives summed, µs, from the intended start to the end of the answer (what
    /// output tokens per second of one stream is taken over).
    pub life_us: u64,
    pub ttft: Histogram,
    /// Each gap in the second it was read, whether or not its stream has ended.
    pub itl: Histogram,
    /// Streams of one output token have no TPOT.
    pub tpot: Histogram,
}

impl Default for LlmCounts {
    fn default() -> LlmCounts {
        LlmCounts {
            streams: 0,
            output_tokens: 0,
            estimated: 0,
            judged: 0,
            good: 0,
            life_us: 0,
            ttft: new_histogram(),
            itl: new_histogram(),
            tpot: new_histogram(),
        }
    }
}

/// One token stream that ended well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Streamed {
    /// From the intended start to the first token; `None` when no delta carried one.
    pub ttft_us: Option<u64>,
    /// `None` with fewer than two output tokens.
    pub tpot_us: Option<u64>,
    pub tokens: u64,
    pub estimated: bool,
    /// It was judged against per-request objectives (the run has some) ...
    pub judged: bool,
    /// ... and met every one.
    pub good: bool,
    /// From the intended start to the end of the answer.
    pub life_us: u64,
}

impl LlmCounts {
    pub fn record_stream(&mut self, s: Streamed) {
        self.streams += 1;
        // Saturating, and never past what one second of one worker may hold (the engine
        // refuses a stream's count past 2^32; many such streams in a second still stop here).
        self.output_tokens = self
            .output_tokens
            .saturating_add(s.tokens)
            .min(crate::bounds::MOST_PER_SECOND);
        self.estimated += u64::from(s.estimated);
        self.judged += u64::from(s.judged);
        self.good += u64::from(s.judged && s.good);
        self.life_us += s.life_us.min(HIST_MAX_US);
        if let Some(us) = s.ttft_us {
            self.ttft.saturating_record(clamp(us));
        }
        if let Some(us) = s.tpot_us {
            self.tpot.saturating_record(clamp(us));
        }
    }

    /// A gap between two token-bearing deltas, µs.
    pub fn record_itl(&mut self, us: u64) {
        self.itl.saturating_record(clamp(us));
    }

    pub fn merge(&mut self, other: &LlmCounts) {
        self.streams += other.streams;
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.estimated += other.estimated;
        self.judged += other.judged;
        self.good += other.good;
        self.life_us += other.life_us;
        // Same bounds on every side, so `add` cannot fail.
        let _ = self.ttft.add(&other.ttft);
        let _ = self.itl.add(&other.itl);
        let _ = self.tpot.add(&other.tpot);
    }
}

fn clamp(us: u64) -> u64 {
    us.clamp(1, HIST_MAX_US)
}

/// A second's token streams as they travel from a worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireLlm {
    pub streams: u64,
    pub output_tokens: u64,
    pub estimated: u64,
    pub judged: u64,
    pub good: u64,
    pub life_us: u64,
    pub ttft: String,
    pub itl: String,
    pub tpot: String,
}

impl From<&LlmCounts> for WireLlm {
    fn from(l: &LlmCounts) -> WireLlm {
        WireLlm {
            streams: l.streams,
            output_tokens: l.output_tokens,
            estimated: l.estimated,
            judged: l.judged,
            good: l.good,
            life_us: l.life_us,
            ttft: encode(&l.ttft),
            itl: encode(&l.itl),
            tpot: encode(&l.tpot),
        }
    }
}

impl WireLlm {
    /// The counts, read with `hist` (which bounds each histogram); `Err` for a second no
    /// worker can have measured.
    pub fn decode(
        &self,
        hist: impl Fn(&str, &str) -> Result<Histogram, String>,
    ) -> Result<LlmCounts, String> {
        let most = crate::bounds::MOST_PER_SECOND;
        if let Some((what, n)) = [
            ("token streams", self.streams),
            ("output tokens", self.output_tokens),
        ]
        .into_iter()
        .find(|&(_, n)| n > most)
        {
            return Err(format!("{what} {n} in one second"));
        }
        if self.estimated > self.streams || self.good > self.judged || self.judged > self.streams {
            return Err(format!(
                "{} estimated, {} judged and {} good of {} token streams",
                self.estimated, self.judged, self.good, self.streams
            ));
        }
        if self.life_us > self.streams.saturating_mul(HIST_MAX_US) {
            return Err(format!(
                "{} token streams lived {} µs",
                self.streams, self.life_us
            ));
        }
        Ok(LlmCounts {
            streams: self.streams,
            output_tokens: self.output_tokens,
            estimated: self.estimated,
            judged: self.judged,
            good: self.good,
            life_us: self.life_us,
            ttft: hist("time to first token", &self.ttft)?,
            itl: hist("inter-token latency", &self.itl)?,
            tpot: hist("time per output token", &self.tpot)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_and_gaps_merge_exactly() {
        let mut a = LlmCounts::default();
        a.record_stream(Streamed {
            ttft_us: Some(200_000),
            tpot_us: Some(20_000),
            tokens: 64,
            estimated: false,
            judged: true,
            good: true,
            life_us: 1_460_000,
        });
        a.record_itl(0);
        a.record_itl(20_000);
        let mut b = LlmCounts::default();
        b.record_stream(Streamed {
            ttft_us: None,
            tpot_us: None,
            tokens: 0,
            estimated: true,
            judged: false,
            good: true,
            life_us: HIST_MAX_US * 9,
        });
        a.merge(&b);
        assert_eq!(
            (a.streams, a.output_tokens, a.estimated, a.judged, a.good),
            (2, 64, 1, 1, 1),
            "a stream not judged is never good"
        );
        assert_eq!(a.life_us, 1_460_000 + HIST_MAX_US, "a life is clamped");
        assert_eq!((a.ttft.len(), a.itl.len(), a.tpot.len()), (1, 2, 1));
        assert_eq!(a.itl.min(), 1, "two deltas in one read: the least gap");
    }
}
