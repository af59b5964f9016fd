//! Following one run second by second, for `run` and for every step of `find` alike: the live
//! progress line, the part of the run the verdict covers (everything, or what follows a
//! warm-up), and the SLO trackers fed with it. After the run, [`Watch::verdicts`] judges each
//! SLO on that same part, so a scenario and a search step are judged by one piece of code.

use crate::sink::{Event, Sinks};
use merge::{OnSecond, SecondView};
use results::SloResult;
use stats::slo::{Slo, Tracker};
use stats::Bucket;
use std::time::Duration;

/// One run being followed; every second also goes to the command's sinks.
pub struct Watch<'a> {
    sinks: &'a mut Sinks,
    /// Which seconds the verdict covers.
    part: Judged,
    /// The judged part: all requests, and per request of the workload.
    pub judged: Bucket,
    /// What came in the grace after the schedule's end (`total`), all requests and per
    /// request of the workload: in the verdict (slow answers count), not in the rates.
    pub grace: Bucket,
    grace_by_request: Vec<stats::Grace>,
    /// The schedule's length.
    total: Option<Duration>,
    pub judged_by_request: Vec<Bucket>,
    /// Each tracker with the index of the request it watches (`None`: all requests).
    trackers: Vec<(Tracker, Option<usize>)>,
    /// The SLO whose `abort` stopped the run.
    pub aborted_by: Option<String>,
    /// Every attempt so far, and how many were refused connects, with the connections opened:
    /// a target nothing could connect to in the first seconds stops the run early.
    seen: Reach,
    /// Stopped early: nothing could connect.
    pub unreachable: bool,
    /// The median latency (from the intended start) of each judged second of the schedule
    /// that had answers, ms: whether latency climbed through a step.
    pub judged_p50_ms: Vec<f64>,
}

/// The part of a run its verdict covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// A scenario: every second, and an `abort` SLO that breaks stops it.
    Whole,
    /// A search step: from the end of its warm-up (`from`, seconds); it runs to its end.
    /// Either way the answers of the grace after the schedule count in the verdict (a
    /// request that took too long to finish in the window is still too slow), not in rates.
    Step { from: u64 },
}

/// What the first seconds reached.
#[derive(Default)]
struct Reach {
    attempts: u64,
    refused: u64,
    opened: u64,
}

/// Whole seconds in which every connect is refused before a run stops early.
const UNREACHABLE_AFTER: u64 = 2;

impl<'a> Watch<'a> {
    /// Follows a run of `requests` (the workload's request names) lasting `total` against
    /// `slos`; the verdict covers `part` of it.
    pub fn new(
        sinks: &'a mut Sinks,
        slos: &[Slo],
        requests: &[String],
        part: Judged,
        total: Option<Duration>,
    ) -> Watch<'a> {
        sinks.show(&Event::RunStarted { total });
        let trackers = slos
            .iter()
            .map(|s| {
                let idx = s
                    .request
                    .as_ref()
                    .and_then(|r| requests.iter().position(|n| n == r));
                (Tracker::new(s.clone()), idx)
            })
            .collect();
        Watch {
            sinks,
            part,
            judged: Bucket::new(0),
            grace: Bucket::new(0),
            grace_by_request: vec![stats::Grace::default(); requests.len()],
            total,
            judged_by_request: vec![Bucket::new(0); requests.len()],
            trackers,
            aborted_by: None,
            seen: Reach::default(),
            unreachable: false,
            judged_p50_ms: Vec::new(),
        }
    }

    /// The run ended (the progress line goes before the summary is printed).
    pub fn finish(&mut self) {
        self.sinks.show(&Event::RunEnded);
    }

    /// Each SLO's verdict on the judged part, whose schedule lasted `secs`. A throughput
    /// objective counts what completed in those seconds, not what came in the grace after.
    pub fn verdicts(&self, secs: f64) -> Vec<SloResult> {
        self.trackers
            .iter()
            .map(|(t, idx)| {
                let (total, grace) = match idx {
                    Some(i) => (&self.judged_by_request[*i], self.grace_by_request[*i]),
                    None => (
                        &self.judged,
                        stats::Grace {
                            requests: self.grace.requests,
                            ok: self.grace.ok,
                            ..stats::Grace::default()
                        },
                    ),
                };
                // The seconds over which all of `total`'s requests give the schedule's rate.
                let counted = total.requests.saturating_sub(grace.requests);
                let over = if counted > 0 {
                    secs * total.requests as f64 / counted as f64
                } else {
                    secs
                };
                SloResult::new(t, &t.verdict(total, over))
            })
            .collect()
    }
}

impl OnSecond for Watch<'_> {
    fn second(&mut self, view: &SecondView) -> bool {
        self.sinks.show(&Event::Second(view));
        let all = view.all;
        self.seen.attempts += all.requests;
        self.seen.refused += all.errors_by_kind[stats::ErrorKind::Connect.index()];
        self.seen.opened += all.setup.opened;
        let s = &self.seen;
        if self.part == Judged::Whole
            && view.second.t + 1 >= UNREACHABLE_AFTER
            && s.attempts > 0
            && s.refused == s.attempts
            && s.opened == 0
        {
            self.unreachable = true;
            return true;
        }
        let in_grace = self
            .total
            .is_some_and(|e| Duration::from_secs(view.second.t) >= e);
        if in_grace {
            self.grace.merge(all);
            for (g, b) in self.grace_by_request.iter_mut().zip(view.by_request) {
                g.requests += b.requests;
                g.ok += b.ok;
            }
        }
        let judged = match self.part {
            Judged::Whole => true,
            Judged::Step { from } => view.second.t >= from,
        };
        if !judged {
            // A step's WebSocket connections upgrade in its warm-up: those upgrades are the
            // step's, and judged with it (`handshake.p99`).
            self.judged.setup.merge_upgrades(&view.all.setup);
            for (acc, b) in self.judged_by_request.iter_mut().zip(view.by_request) {
                acc.setup.merge_upgrades(&b.setup);
            }
            return false;
        }
        self.judged.merge(view.all);
        if !in_grace && !view.all.corrected.is_empty() {
            let p50 = view.all.corrected.value_at_quantile(0.5) as f64 / 1000.0;
            self.judged_p50_ms.push(p50);
        }
        for (acc, b) in self.judged_by_request.iter_mut().zip(view.by_request) {
            acc.merge(b);
        }
        for (t, idx) in &mut self.trackers {
            let (b, so_far) = match idx {
                Some(i) => (&view.by_request[*i], &self.judged_by_request[*i]),
                None => (view.all, &self.judged),
            };
            if t.second(b, so_far) && self.aborted_by.is_none() {
                self.aborted_by = Some(t.slo.text.clone());
            }
        }
        self.part == Judged::Whole && self.aborted_by.is_some()
    }
}
