//! A run from start to finish: resolve the target and TLS once, start one worker thread per
//! core, merge their per-second buckets in order (the aggregator), hand every finished second to
//! an observer (live progress, later sliding-window SLOs), and return the totals.

use crate::net::conn::Connector;
use crate::net::tls::{client_config, server_name, TlsError, TlsOptions};
use crate::worker::{self, Msg, Shared};
use model::{Load, StatusSet, Target, TargetError};
use stats::{Bucket, LatencySummary, Timeline, Totals};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use workload::capture::Budget;
use workload::Workload;

/// A fully resolved run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub target: Target,
    /// What each attempt sends (one request, a mix, or a flow).
    pub workload: Arc<Workload>,
    pub load: Load,
    /// `-n`: exactly this many attempts in total.
    pub max_requests: Option<u64>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub keepalive: bool,
    pub http2: bool,
    pub tls: TlsOptions,
    pub ok_status: StatusSet,
    /// gRPC status codes that count as success (OK unless `--ok-codes` says otherwise).
    pub ok_codes: Vec<u16>,
    /// HTTP/2 (and gRPC): spread the connection slots over this many connections, each slot
    /// a stream on one of them; `None`: one connection per slot.
    pub connections: Option<usize>,
    /// Worker threads (capped by the connection count).
    pub threads: usize,
    /// How long requests still in flight at the end of the schedule may take to finish.
    pub grace: Duration,
    /// Bytes all responses kept for extraction may hold together (`--capture-limit`).
    pub capture_limit: usize,
    /// Largest gRPC message an answer may carry (`--max-message-size`).
    pub grpc_max_message: usize,
}

/// gRPC clients' default largest message received (grpc-go, grpc-java): 4 MiB.
pub const DEFAULT_GRPC_MAX_MESSAGE: usize = 4 << 20;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("{0}")]
    Worker(String),
    /// A request that breaks the wire rules before any templating: it could never be sent.
    #[error("{0}")]
    Request(String),
}

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

/// `timeout` as a `grpc-timeout` value: whole milliseconds, at most eight digits.
fn grpc_timeout(timeout: Duration) -> String {
    format!("{}m", timeout.as_millis().clamp(1, 99_999_999))
}

/// The TLS configuration and server name for `target`, when it is a TLS URL.
pub(crate) fn tls_for(
    target: &Target,
    opts: &TlsOptions,
    http2: bool,
) -> Result<
    Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    TlsError,
> {
    if !target.tls {
        return Ok(None);
    }
    Ok(Some((
        client_config(opts, http2)?,
        server_name(opts.server_name.as_deref().unwrap_or(&target.host))?,
    )))
}

fn prepare(spec: &RunSpec) -> Result<Shared, RunError> {
    let target = &spec.target;
    let addr = target.resolve()?;
    let tls = tls_for(target, &spec.tls, spec.http2 || target.grpc)?;
    let connector = Connector {
        addr,
        tls,
        // gRPC is HTTP/2 only.
        http2: spec.http2 || target.grpc,
        connect_timeout: spec.connect_timeout,
        keepalive: spec.keepalive,
        // HTTP/2's `:scheme` is http or https, gRPC included.
        scheme: if target.tls { "https" } else { "http" },
        authority: target.authority.clone(),
        workload: spec.workload.clone(),
        h1_static: Connector::static_requests(&spec.workload, &target.authority, spec.keepalive)
            .map_err(RunError::Request)?,
        captures: Budget::new(spec.capture_limit),
        grpc_timeout: target.grpc.then(|| grpc_timeout(spec.timeout)),
        grpc_max_message: spec.grpc_max_message,
    };
    // Every worker needs a slot, and with shared connections at least one connection.
    let most = spec.connections.map_or(spec.load.max_connections(), |n| {
        n.min(spec.load.max_connections())
    });
    let workers = spec.threads.clamp(1, most.max(1));
    let start = Instant::now();
    Ok(Shared {
        connector,
        load: spec.load.clone(),
        max_requests: spec.max_requests,
        timeout: spec.timeout,
        keepalive: spec.keepalive,
        ok_status: spec.ok_status.clone(),
        ok_codes: spec.ok_codes.clone(),
        connections: spec.connections,
        start,
        end: spec.load.end().map(|d| start + d),
        grace: spec.grace,
        workers,
        stop: AtomicBool::new(false),
        tickets: AtomicU64::new(0),
        tracker: None,
        target: target.clone(),
    })
}

/// Checks everything `spec` needs before any load is sent: the target resolves, TLS files
/// load, every request's literal parts may be sent. A plan checks all its scenarios with this
/// before the first one runs, so a typo in the fifth is not found after the first four.
pub fn check(spec: &RunSpec) -> Result<(), RunError> {
    prepare(spec).map(|_| ())
}

/// Runs `spec` until its schedule ends, `-n` is reached, `interrupt` is set, or the observer
/// asks to stop.
pub fn run(
    spec: &RunSpec,
    interrupt: &AtomicBool,
    observer: &mut dyn OnSecond,
) -> Result<RunOutput, RunError> {
    let mut shared = prepare(spec)?;
    if spec.workload.requests.iter().any(|r| r.complete.is_some()) {
        shared.tracker = Some(observe::tracker::Tracker::start(
            spec.workload.requests.len(),
            crate::once::completion_fetch(spec.tls.clone()),
        ));
    }
    let shared = Arc::new(shared);
    let (tx, rx) = mpsc::channel();
    let handles: Vec<_> = (0..shared.workers)
        .map(|id| {
            let (shared, tx) = (shared.clone(), tx.clone());
            std::thread::Builder::new()
                .name(format!("brink-worker-{id}"))
                .spawn(move || worker::run(shared, id, tx))
                .map_err(|e| RunError::Worker(format!("cannot start worker thread: {e}")))
        })
        .collect::<Result<_, _>>()?;
    drop(tx);
    let mut agg = Aggregator::new(shared.workers, &spec.load, spec.workload.requests.len());
    let mut failure = None;
    let mut handle_msg = |agg: &mut Aggregator, msg: Msg| match msg {
        Msg::Buckets(w, b) => agg.bucket(w, b),
        Msg::Done(w, unfinished, sched) => {
            agg.sched = agg.sched.zip(sched).map(|(a, b)| a.plus(b));
            agg.done(w, unfinished)
        }
        Msg::Failed(e) => failure = Some(e),
    };
    let mut interrupted = false;
    while !agg.all_done() {
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            shared.stop.store(true, Ordering::Relaxed);
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(msg) => handle_msg(&mut agg, msg),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if handles.iter().all(|h| h.is_finished()) {
            // Every thread has ended: whatever they sent is queued; take it all, then treat
            // any worker that never said Done (a panic) as done.
            for msg in rx.try_iter() {
                handle_msg(&mut agg, msg);
            }
            for w in 0..handles.len() {
                if !agg.timeline.is_finished(w) {
                    agg.sched = None;
                }
                agg.done(w, 0);
            }
        }
        if agg.emit_ready(observer) {
            shared.stop.store(true, Ordering::Relaxed);
        }
    }
    let duration = shared.start.elapsed();
    for h in handles {
        if h.join().is_err() {
            failure.get_or_insert_with(|| "a worker thread panicked".to_string());
        }
    }
    agg.flush(observer);
    if let Some(e) = failure {
        return Err(RunError::Worker(e));
    }
    // Jobs still being followed end within their own time limits.
    let completions = shared
        .tracker
        .as_ref()
        .map(|t| t.finish(interrupt))
        .unwrap_or_default();
    let by_request = spec
        .workload
        .names()
        .into_iter()
        .zip(agg.by_request)
        .collect();
    Ok(RunOutput {
        totals: agg.totals,
        by_request,
        aborted: agg.aborted,
        seconds: agg.seconds,
        duration,
        interrupted,
        unfinished: agg.unfinished,
        workers: shared.workers,
        sched: agg.sched,
        completions,
    })
}

/// Turns the workers' seconds into whole seconds (a [`Timeline`]), hands each to the observer
/// and adds it to the totals.
struct Aggregator<'a> {
    load: &'a Load,
    timeline: Timeline,
    totals: Totals,
    by_request: Vec<Totals>,
    seconds: Vec<Second>,
    unfinished: u64,
    /// The observer asked to stop.
    aborted: bool,
    /// The workers' scheduler figures, summed as each says it is done.
    sched: Option<observe::procfs::Sched>,
}

impl<'a> Aggregator<'a> {
    fn new(workers: usize, load: &'a Load, requests: usize) -> Self {
        Aggregator {
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

    fn bucket(&mut self, w: usize, b: Vec<Bucket>) {
        self.timeline.add(w, b);
    }

    fn done(&mut self, w: usize, unfinished: u64) {
        if !self.timeline.is_finished(w) {
            self.timeline.finish(w);
            self.unfinished += unfinished;
        }
    }

    fn all_done(&self) -> bool {
        self.timeline.finished()
    }

    /// Emits every second that all still-running workers have reported; true once the
    /// observer has asked to stop.
    fn emit_ready(&mut self, observer: &mut dyn OnSecond) -> bool {
        while let Some((s, parts)) = self.timeline.pop_complete() {
            self.emit(s, parts, observer);
        }
        self.aborted
    }

    /// Emits everything left, in order.
    fn flush(&mut self, observer: &mut dyn OnSecond) {
        while let Some((s, parts)) = self.timeline.pop_any() {
            self.emit(s, parts, observer);
        }
    }

    fn emit(&mut self, s: u64, parts: Vec<Bucket>, observer: &mut dyn OnSecond) {
        let mut b = Bucket::new(s);
        for (part, totals) in parts.iter().zip(&mut self.by_request) {
            b.merge(part);
            totals.add(part);
        }
        self.totals.add(&b);
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
