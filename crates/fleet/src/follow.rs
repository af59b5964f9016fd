//! The load under way on a distributed run: every worker's lines arrive on one channel, each
//! second is checked (one bucket per request, nothing from the future) and merged with
//! `merge::Merger`, the observer sees each merged second, a heartbeat goes out every second,
//! an interrupt or an abort is passed on, and a worker that fails or falls silent is finished
//! with what it sent and named, the run then reported short.

use crate::clock::Offset;
use crate::dial::{Conn, Fault, Outbox};
use crate::lines::said;
use crate::now_ns;
use crate::proto::{FromWorker, ToWorker, HEARTBEAT};
use merge::{Merger, OnSecond, RunOutput};
use model::{WorkerReport, WorkerStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The start instant is this far in the future when it is sent.
pub(crate) const LEAD: Duration = Duration::from_millis(300);
/// A worker silent for this long during the load is lost.
const SILENCE: Duration = Duration::from_secs(10);
/// How long a worker that said Done is given to close its stream once the coordinator closed
/// its side: the close tells it the coordinator has everything, so it keeps no copy.
const LINGER: Duration = Duration::from_secs(2);

/// What the coordinator learned of one worker before the load.
pub(crate) struct Joined {
    pub(crate) conn: Conn,
    pub(crate) report: WorkerReport,
    pub(crate) offset: Offset,
}

/// The load under way: the workers' senders, their reports, and the merge.
pub(crate) struct Running<'a> {
    spec: &'a engine::RunSpec,
    senders: Vec<Outbox>,
    reports: Vec<WorkerReport>,
    offsets: Vec<Offset>,
    start_ns: u64,
    merger: Merger<'a>,
    rx: mpsc::Receiver<(usize, Result<FromWorker, Fault>)>,
    /// The tasks reading each worker's stream.
    readers: Vec<tokio::task::JoinHandle<()>>,
    heard: Vec<Instant>,
    /// The last second each worker sent: each comes once, in order.
    last: Vec<Option<u64>>,
    interrupted: bool,
    short: bool,
    threads: usize,
    /// Steps with `complete:`: the workers' jobs, merged per request.
    completions: Vec<observe::tracker::Counts>,
}

impl<'a> Running<'a> {
    pub(crate) fn new(
        spec: &'a engine::RunSpec,
        joined: Vec<Joined>,
        start_ns: u64,
    ) -> Running<'a> {
        let n = joined.len();
        let requests = spec.workload.requests.len();
        let (tx, rx) = mpsc::channel(1024);
        let mut senders = Vec::new();
        let mut reports = Vec::new();
        let mut offsets = Vec::new();
        let mut readers = Vec::new();
        for (i, j) in joined.into_iter().enumerate() {
            let (out, mut inbox) = j.conn.split();
            senders.push(out);
            reports.push(j.report);
            offsets.push(j.offset);
            let tx = tx.clone();
            readers.push(tokio::spawn(async move {
                loop {
                    let m = inbox.next().await;
                    let done = matches!(m, Ok(Some(FromWorker::Done { .. })));
                    let end = !matches!(m, Ok(Some(FromWorker::Second { .. })));
                    let m =
                        m.and_then(|m| m.ok_or_else(|| Fault::Broken("closed its stream".into())));
                    if tx.send((i, m)).await.is_err() || end {
                        if done {
                            // Held open until the worker closes it in turn: dropped now,
                            // the coordinator's close could be lost in a reset.
                            let _ = tokio::time::timeout(LINGER, async {
                                while let Ok(Some(_)) = inbox.next().await {}
                            })
                            .await;
                        }
                        break;
                    }
                }
            }));
        }
        Running {
            spec,
            senders,
            reports,
            offsets,
            start_ns,
            merger: Merger::new(n, &spec.load, requests),
            rx,
            readers,
            heard: vec![Instant::now() + LEAD * 4; n],
            last: vec![None; n],
            interrupted: false,
            short: false,
            threads: 0,
            completions: Vec::new(),
        }
    }

    /// Tells every worker still running.
    fn tell(&mut self, m: &ToWorker) {
        for (i, s) in self.senders.iter_mut().enumerate() {
            if !self.merger.is_done(i) {
                let _ = s.send(m);
            }
        }
    }

    /// Merges until every worker is done.
    pub(crate) async fn follow(&mut self, interrupt: &AtomicBool, observer: &mut dyn OnSecond) {
        let mut tick = tokio::time::interval(HEARTBEAT.min(Duration::from_millis(250)));
        let mut beat = Instant::now();
        let mut stopping = false;
        while !self.merger.all_done() {
            tokio::select! {
                got = self.rx.recv() => match got {
                    Some((w, m)) => self.take(w, m),
                    None => break,
                },
                _ = tick.tick() => {}
            }
            if beat.elapsed() >= HEARTBEAT {
                beat = Instant::now();
                self.tell(&ToWorker::Heartbeat);
                self.lose_silent();
            }
            if interrupt.load(Ordering::Relaxed) && !stopping {
                stopping = true;
                self.interrupted = true;
                self.tell(&ToWorker::Stop);
            }
            if self.merger.emit_ready(observer) && !stopping {
                stopping = true;
                self.tell(&ToWorker::Abort {
                    why: "an objective with abort broke".into(),
                });
            }
        }
        for w in 0..self.reports.len() {
            self.merger.done(w, 0, None);
        }
        self.merger.flush(observer);
        // Workers that finished close their streams; the others' are read no more.
        let until = tokio::time::Instant::now() + LINGER;
        for (r, w) in std::mem::take(&mut self.readers)
            .into_iter()
            .zip(&self.reports)
        {
            if w.status == WorkerStatus::Done {
                let _ = tokio::time::timeout_at(until, r).await;
            } else {
                r.abort();
            }
        }
    }

    /// Workers silent too long are lost.
    fn lose_silent(&mut self) {
        for w in 0..self.reports.len() {
            if !self.merger.is_done(w) && self.heard[w].elapsed() > SILENCE {
                self.fail(w, WorkerStatus::Lost, format!("silent for {SILENCE:?}"));
            }
        }
    }

    fn fail(&mut self, w: usize, status: WorkerStatus, why: String) {
        // It stops loading the service (a lost one may still hear it).
        let _ = self.senders[w].send(&ToWorker::Abort { why: why.clone() });
        self.reports[w].status = status;
        self.reports[w].why = Some(said(&why));
        self.merger.done(w, 0, None);
        self.short = true;
    }

    fn take(&mut self, w: usize, m: Result<FromWorker, Fault>) {
        if self.merger.is_done(w) {
            return;
        }
        self.heard[w] = Instant::now();
        match m {
            Ok(FromWorker::Second { parts }) => match self.buckets(w, parts) {
                Ok((requests, b)) => {
                    self.last[w] = b.first().map(|d| d.second());
                    let r = &mut self.reports[w];
                    r.requests += requests;
                    r.seconds += 1;
                    self.merger.decoded(w, &b);
                }
                Err(e) => self.fail(
                    w,
                    WorkerStatus::Failed,
                    format!("sent a broken second: {e}"),
                ),
            },
            Ok(d @ FromWorker::Done { .. }) => self.finished(w, d),
            Ok(FromWorker::Failed { why }) => self.fail(w, WorkerStatus::Failed, why),
            Ok(_) => {}
            Err(Fault::Broken(e)) => self.fail(w, WorkerStatus::Lost, e),
            Err(Fault::Garbled(e)) => {
                self.fail(w, WorkerStatus::Failed, format!("sent a broken line: {e}"))
            }
        }
    }

    /// Worker `w` said Done: how it started, what it used, and it is finished in the merge.
    fn finished(&mut self, w: usize, done: FromWorker) {
        if let Err(e) = done.check_done() {
            return self.fail(
                w,
                WorkerStatus::Failed,
                format!("sent an impossible Done: {e}"),
            );
        }
        let FromWorker::Done {
            unfinished,
            sched,
            cpu_s,
            throttled,
            started_ns,
            wall_s,
            threads,
            completions,
            stopped,
        } = done
        else {
            return;
        };
        let sched = sched.map(|[on_cpu_ns, waiting_ns, slices]| observe::procfs::Sched {
            on_cpu_ns,
            waiting_ns,
            slices,
        });
        // Its last line is in: it may let its copy of the load's lines go.
        self.senders[w].finish();
        let r = &mut self.reports[w];
        r.status = WorkerStatus::Done;
        if let Some(why) = stopped {
            // It ended its share early: the run delivered less than was asked.
            r.status = WorkerStatus::Failed;
            r.why = Some(said(&why));
            self.short = true;
        }
        let r = &mut self.reports[w];
        r.threads = threads;
        let local = i128::from(started_ns) - i128::from(self.offsets[w].offset_ns);
        let skew_ns = local - i128::from(self.start_ns);
        if skew_ns.abs() > 3_600_000_000_000 {
            let why =
                format!("sent an impossible Done: started {skew_ns} ns from the agreed instant");
            return self.fail(w, WorkerStatus::Failed, why);
        }
        r.start_skew_ms = Some(skew_ns as f64 / 1e6);
        r.cpu_percent = (wall_s > 0.0).then(|| cpu_s / wall_s * 100.0);
        r.throttled_percent = throttled.map(|t| t * 100.0);
        // As the generator check counts them: the engine threads' time on a CPU, and waiting
        // for one, over the time they had.
        let capacity = wall_s * threads.max(1) as f64 * 1e9;
        if capacity > 0.0 {
            let share = |ns: u64| ns as f64 / capacity * 100.0;
            r.busy_percent = sched.map(|s| share(s.on_cpu_ns));
            r.waiting_percent = sched.map(|s| share(s.waiting_ns));
        }
        self.threads += threads as usize;
        for (i, c) in completions.iter().enumerate() {
            match observe::tracker::Counts::try_from(c) {
                Ok(c) => {
                    if self.completions.len() <= i {
                        self.completions.resize_with(i + 1, Default::default);
                    }
                    self.completions[i].merge(&c);
                }
                Err(e) => self.reports[w].why = Some(format!("sent broken {e}")),
            }
        }
        self.merger.done(w, unfinished, sched);
    }

    /// Worker `w`'s second, checked whole: one bucket per request of the workload, all of one
    /// second that is not from the future and comes after the last it sent (a second sent
    /// again would be counted twice, one already merged would be counted for the worker and
    /// not in the run). With the requests they hold.
    fn buckets(
        &self,
        w: usize,
        parts: Vec<stats::WireBucket>,
    ) -> Result<(u64, Vec<stats::Decoded>), String> {
        let want = self.spec.workload.requests.len().max(1);
        if parts.len() != want {
            return Err(format!("{} buckets for {want} requests", parts.len()));
        }
        // Seconds are held until every worker has sent them: one from the future would be
        // held (and a flood of them would grow without bound) until the others caught up.
        let elapsed = now_ns().saturating_sub(self.start_ns) / 1_000_000_000;
        let second = parts[0].second;
        if let Some(x) = parts
            .iter()
            .find(|x| x.second != second || !plausible(x.second, elapsed))
        {
            return Err(format!("second {} of a run {elapsed} s old", x.second));
        }
        in_order(second, self.last[w])?;
        // Each part's counts are bounded (`stats::bounds`) before any is summed.
        let requests = parts
            .iter()
            .map(|p| p.requests)
            .fold(0, u64::saturating_add);
        let b = parts
            .into_iter()
            .map(stats::Decoded::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((requests, b))
    }

    pub(crate) fn output(self, started: Instant) -> RunOutput {
        let m = self.merger;
        let by_request = self
            .spec
            .workload
            .names()
            .into_iter()
            .zip(m.by_request)
            .collect();
        let duration = started.elapsed();
        RunOutput {
            totals: m.totals,
            by_request,
            aborted: m.aborted,
            seconds: m.seconds,
            duration,
            scheduled: merge::scheduled(
                &self.spec.load,
                duration,
                !(self.interrupted || self.short || m.aborted) && self.spec.max_requests.is_none(),
            ),
            // A worker lost or failed: the run delivered less than was asked.
            interrupted: self.interrupted || self.short,
            unfinished: m.unfinished,
            workers: self.threads,
            sched: m.sched,
            completions: self.completions,
            remote: self.reports,
        }
    }
}

/// Whether a worker's `second` can exist `elapsed` whole seconds after the start: a few
/// seconds of clock error and delay are allowed, nothing from further ahead.
fn plausible(second: u64, elapsed: u64) -> bool {
    second <= elapsed + 5
}

/// A worker sends each second once and in order: `second` must come after `last`.
fn in_order(second: u64, last: Option<u64>) -> Result<(), String> {
    match last {
        Some(last) if second <= last => Err(format!("second {second} after second {last}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_from_the_future_are_refused() {
        assert!(plausible(0, 0) && plausible(5, 0) && plausible(65, 60));
        assert!(!plausible(6, 0) && !plausible(u64::MAX, 3600));
    }

    #[test]
    fn seconds_sent_again_or_out_of_order_are_refused() {
        assert!(in_order(0, None).is_ok() && in_order(4, Some(3)).is_ok());
        assert!(
            in_order(9, Some(3)).is_ok(),
            "a worker idle for seconds may skip them"
        );
        assert_eq!(in_order(3, Some(3)).unwrap_err(), "second 3 after second 3");
        assert!(in_order(0, Some(5)).is_err());
    }

    #[test]
    fn what_a_worker_says_is_one_escaped_bounded_line() {
        assert_eq!(said("vm-1"), "vm-1");
        assert_eq!(said("a\u{1b}[2Jb\nc"), "a\\x1b[2Jb\\nc");
        let long = said(&"x".repeat(10_000));
        assert!(long.len() <= 303 && long.ends_with("..."), "{}", long.len());
    }
}
