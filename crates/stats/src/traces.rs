//! The requests worth opening in a tracing system (`--trace`): per worker-second, and merged
//! over a run, the slowest answered requests and the first failed ones, each with its trace
//! id, latency (from the intended start), outcome and time into the run. Bounded: a run keeps
//! [`KEEP`] of each however long it is.

use crate::kind::ErrorKind;

/// How many of each kind a run keeps.
pub const KEEP: usize = 20;

/// How a traced request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceOutcome {
    Status(u16),
    Grpc(u16),
    Error(ErrorKind),
}

/// One traced request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRow {
    pub id: [u8; 16],
    /// From the intended start to the end, µs.
    pub latency_us: u64,
    pub outcome: TraceOutcome,
    /// When it ended, µs since the run started.
    pub at_us: u64,
}

/// The slowest answered requests (slowest first) and the first failed ones (in time order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traces {
    pub slowest: Vec<TraceRow>,
    pub failed: Vec<TraceRow>,
}

impl Traces {
    /// Takes `row` into the slowest (when it was answered) and the failed (when it failed).
    pub fn record(&mut self, row: TraceRow, answered: bool, ok: bool) {
        if answered {
            if self.slowest.len() < KEEP {
                self.slowest.push(row);
            } else if let Some(min) = self
                .slowest
                .iter_mut()
                .min_by_key(|r| r.latency_us)
                .filter(|m| m.latency_us < row.latency_us)
            {
                *min = row;
            }
        }
        if !ok && self.failed.len() < KEEP {
            self.failed.push(row);
        }
    }

    /// Adds `other` in, keeping the slowest and the earliest failures.
    pub fn merge(&mut self, other: &Traces) {
        self.slowest.extend_from_slice(&other.slowest);
        self.slowest
            .sort_by(|a, b| b.latency_us.cmp(&a.latency_us).then(a.at_us.cmp(&b.at_us)));
        self.slowest.truncate(KEEP);
        self.failed.extend_from_slice(&other.failed);
        self.failed.sort_by_key(|r| r.at_us);
        self.failed.truncate(KEEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: u8, latency_us: u64, at_us: u64) -> TraceRow {
        TraceRow {
            id: [n; 16],
            latency_us,
            outcome: TraceOutcome::Status(200),
            at_us,
        }
    }

    #[test]
    fn keeps_the_slowest_and_the_first_failures() {
        let (mut a, mut b) = (Traces::default(), Traces::default());
        for n in 0..50u8 {
            let t = if n % 2 == 0 { &mut a } else { &mut b };
            t.record(
                row(n, u64::from(n) * 10, 1000 - u64::from(n)),
                true,
                n % 5 != 0,
            );
        }
        a.merge(&b);
        let slow: Vec<u8> = a.slowest.iter().map(|r| r.id[0]).collect();
        assert_eq!(slow, (30..50).rev().collect::<Vec<u8>>());
        // Failures: every fifth, earliest (largest n) first.
        let failed: Vec<u8> = a.failed.iter().map(|r| r.id[0]).collect();
        assert_eq!(failed, [45, 40, 35, 30, 25, 20, 15, 10, 5, 0]);
        let mut t = Traces::default();
        t.record(row(1, 0, 0), false, false);
        assert!(
            t.slowest.is_empty(),
            "an unanswered request is not among the slowest"
        );
        assert_eq!(t.failed.len(), 1);
    }
}
