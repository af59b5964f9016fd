//! A run's seconds merged exactly from its parts, and what a finished run measured. The
//! engine's worker threads are parts of one process; a distributed run's worker processes
//! are parts too, and their coordinator merges them with the same [`Merger`]: a second is
//! whole when every live part has sent it, its histograms are summed (never percentiles
//! averaged), and observers (live progress, SLO windows, aborts) see the merged second.
//! Nothing here knows about sockets or protocols, so a coordinator needs this crate and not
//! the engine.

use model::Load;
use stats::{Bucket, LatencySummary, Timeline, Totals};
use std::time::Duration;

/// One finished second of the whole run.
#[derive(Clone, Debug)]
pub struct Second {
    pub t: u64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub latency: LatencySummary,
    /// The schedule's target level at the start of this second.
    pub target: Option<f64>,
    /// Connections opened in this second, and their TCP connect / TLS handshake times.
    pub connects: u64,
    pub connect: Option<LatencySummary>,
    pub tls: Option<LatencySummary>,
    /// WebSocket upgrades completed in this second: their times.
    pub upgrade: Option<LatencySummary>,
    /// This second's latency (from the intended start) and service-time histograms, encoded
    /// ([`stats::encode`]): kept small so memory grows by about a kilobyte per second.
    pub latency_hdr: String,
    pub service_hdr: String,
    /// Responses by status code, gRPC calls by code, and transport errors by kind (only
    /// those that occurred).
    pub status: Vec<(u16, u64)>,
    pub grpc: Vec<(u16, u64)>,
    pub errors_by_kind: Vec<(&'static str, u64)>,
}

/// Everything a finished run measured.
#[derive(Clone, Debug)]
pub struct RunOutput {
    pub totals: Totals,
    /// Per request of the workload: (name, totals).
    pub by_request: Vec<(String, Totals)>,
    /// An observer stopped the run (an SLO with `abort` broke).
    pub aborted: bool,
    pub seconds: Vec<Second>,
    pub duration: Duration,
    /// Of `duration`, the schedule's part: rates are over it, not over the grace after it.
    pub scheduled: Duration,
    pub interrupted: bool,
    /// Requests still in flight when the run stopped (not counted in the totals).
    pub unfinished: u64,
    pub workers: usize,
    /// The worker threads' scheduler figures summed over the run: time on a CPU and time ready
    /// but waiting for one (`None` where the kernel keeps none).
    pub sched: Option<observe::procfs::Sched>,
    /// Steps with `complete:`: how their jobs ended, per request of the workload (empty
    /// without such steps).
    pub completions: Vec<observe::tracker::Counts>,
    /// A distributed run: each worker, how it started and ended (empty for a run in this
    /// process).
    pub remote: Vec<model::WorkerReport>,
}

/// One finished second with everything behind it, for observers.
pub struct SecondView<'a> {
    pub second: &'a Second,
    /// The whole second, all requests.
    pub all: &'a Bucket,
    /// The same second per request of the workload.
    pub by_request: &'a [Bucket],
    pub totals: &'a Totals,
    pub totals_by_request: &'a [Totals],
}

/// Sees each second as soon as every worker has reported it; returns true to stop the run.
pub trait OnSecond {
    fn second(&mut self, view: &SecondView) -> bool;
}

impl<F: FnMut(&SecondView) -> bool> OnSecond for F {
    fn second(&mut self, view: &SecondView) -> bool {
        self(view)
    }
}

/// Turns the parts' seconds into whole seconds (a [`Timeline`]), hands each to the observer
/// and adds it to the totals. A part is a worker thread of this process or, on a distributed
/// run, a whole worker process: the merge is the same exact sum of histograms either way.
pub struct Merger<'a> {
    load: &'a Load,
    timeline: Timeline,
    pub totals: Totals,
    pub by_request: Vec<Totals>,
    pub seconds: Vec<Second>,
    /// Requests the parts had in flight when they stopped.
    pub unfinished: u64,
    /// The observer asked to stop.
    pub aborted: bool,
    /// The parts' scheduler figures, summed as each says it is done (`None` once one part
    /// has none).
    pub sched: Option<observe::procfs::Sched>,
}

/// Of a run that lasted `duration`, the part its schedule (`load`) covered. A run that went
/// through its `whole` schedule (not interrupted, stopped by an objective or ended by its
/// request count) covered all of it, even when its last answer came just before the end (an
/// open-model schedule's last arrival is due before it).
pub fn scheduled(load: &Load, duration: Duration, whole: bool) -> Duration {
    match load.end() {
        Some(e) if whole => e,
        Some(e) => e.min(duration),
        None => duration,
    }
}

impl<'a> Merger<'a> {
    pub fn new(workers: usize, load: &'a Load, requests: usize) -> Self {
        Merger {
            load,
            timeline: Timeline::new(workers, requests.max(1)),
            totals: Totals::default(),
            by_request: vec![Totals::default(); requests.max(1)],
            seconds: Vec::new(),
            unfinished: 0,
            aborted: false,
            sched: Some(observe::procfs::Sched::default()),
        }
    }

    pub fn bucket(&mut self, w: usize, b: Vec<Bucket>) {
        self.timeline.add(w, b);
    }

    /// Part `w`'s second as it came over the wire, checked.
    pub fn decoded(&mut self, w: usize, parts: &[stats::Decoded]) {
        self.timeline.add_decoded(w, parts);
    }

    /// Part `w` has sent everything, with `unfinished` requests in flight and its scheduler
    /// figures (`None`: it has none, or it ended without saying).
    pub fn done(&mut self, w: usize, unfinished: u64, sched: Option<observe::procfs::Sched>) {
        if !self.timeline.is_finished(w) {
            self.timeline.finish(w);
            self.unfinished += unfinished;
            self.sched = self.sched.zip(sched).map(|(a, b)| a.plus(b));
        }
    }

    /// Whether part `w` has said it is done.
    pub fn is_done(&self, w: usize) -> bool {
        self.timeline.is_finished(w)
    }

    pub fn all_done(&self) -> bool {
        self.timeline.finished()
    }

    /// Emits every second that all still-running workers have reported; true once the
    /// observer has asked to stop.
    pub fn emit_ready(&mut self, observer: &mut dyn OnSecond) -> bool {
        while let Some((s, parts)) = self.timeline.pop_complete() {
            self.emit(s, parts, observer);
        }
        self.aborted
    }

    /// Emits everything left, in order.
    pub fn flush(&mut self, observer: &mut dyn OnSecond) {
        while let Some((s, parts)) = self.timeline.pop_any() {
            self.emit(s, parts, observer);
        }
    }

    fn emit(&mut self, s: u64, parts: Vec<Bucket>, observer: &mut dyn OnSecond) {
        let mut b = Bucket::new(s);
        // Seconds from the schedule's end on are the grace given to requests in flight.
        let grace = self.load.end().is_some_and(|e| Duration::from_secs(s) >= e);
        let add = |t: &mut Totals, b: &Bucket| {
            if grace {
                t.add_in_grace(b)
            } else {
                t.add(b)
            }
        };
        for (part, totals) in parts.iter().zip(&mut self.by_request) {
            b.merge(part);
            add(totals, part);
        }
        add(&mut self.totals, &b);
        let second = Second {
            t: s,
            requests: b.requests,
            ok: b.ok,
            errors: b.errors(),
            latency: LatencySummary::of(&b.corrected),
            target: self.load.level_at(Duration::from_secs(s)),
            connects: b.setup.opened,
            connect: b.setup.connect.as_deref().map(LatencySummary::of),
            tls: b.setup.tls.as_deref().map(LatencySummary::of),
            upgrade: b.setup.upgrade.as_deref().map(LatencySummary::of),
            latency_hdr: stats::encode(&b.corrected),
            service_hdr: stats::encode(&b.service),
            status: b.status.sorted(),
            grpc: b.grpc.sorted(),
            errors_by_kind: stats::ErrorKind::ALL
                .iter()
                .map(|k| (k.name(), b.errors_by_kind[k.index()]))
                .filter(|(_, n)| *n > 0)
                .collect(),
        };
        let view = SecondView {
            second: &second,
            all: &b,
            by_request: &parts,
            totals: &self.totals,
            totals_by_request: &self.by_request,
        };
        if observer.second(&view) {
            self.aborted = true;
        }
        self.seconds.push(second);
    }
}
