//! A run from start to finish in this process: resolve the target and TLS once, start one
//! worker thread per core, merge their per-second buckets in order ([`merge::Merger`]), hand
//! every finished second to an observer (live progress, SLO windows, aborts), and return the
//! totals.

use crate::net::conn::Connector;
use crate::net::tls::{tls_for, TlsError, TlsOptions};
use crate::worker::{self, Msg, Shared};
use merge::{Merger, OnSecond, RunOutput};
use model::{Load, StatusSet, Target, TargetError};
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
    /// Largest message an answer may carry (`--max-message-size`: gRPC, WebSocket).
    pub max_message: usize,
    /// Which answers are read as Server-Sent Events, and the largest event
    /// (`--stream`, `--max-event-size`).
    pub events: crate::EventRule,
    /// Closed model: each connection starts at most one request per this interval (a held
    /// WebSocket's ping or message every `--every`); `None`: one after another.
    pub every: Option<Duration>,
    /// `--http3=auto`: how the protocol was chosen (the result shows it).
    pub discovered: Option<model::alt_svc::Discovered>,
}

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

pub(crate) fn prepare(spec: &RunSpec) -> Result<Shared, RunError> {
    let target = &spec.target;
    let addr = target.resolve()?;
    let tls = tls_for(target, &spec.tls, target.protocol)?;
    let connector = Connector {
        addr,
        tls,
        protocol: target.protocol,
        connect_timeout: spec.connect_timeout,
        keepalive: spec.keepalive,
        // HTTP/2's `:scheme` is http or https, gRPC included.
        scheme: if target.tls { "https" } else { "http" },
        authority: target.authority.clone(),
        workload: spec.workload.clone(),
        h1_static: Connector::static_requests(&spec.workload, &target.authority, spec.keepalive)
            .map_err(RunError::Request)?,
        captures: Budget::new(spec.capture_limit),
        headers_only: Budget::new(0),
        timeout: spec.timeout,
        max_message: spec.max_message,
        events: spec.events,
        early_data: spec.tls.early_data,
    };
    // Every worker needs a slot, and with shared connections at least one connection.
    let most = spec.connections.map_or(spec.load.max_connections(), |n| {
        n.min(spec.load.max_connections())
    });
    let part = spec.workload.part;
    let most = part.share(most as u64) as usize;
    let workers = spec.threads.clamp(1, most.max(1));
    let start = Instant::now();
    Ok(Shared {
        connector,
        load: spec.load.clone(),
        max_requests: spec.max_requests,
        part,
        timeout: spec.timeout,
        keepalive: spec.keepalive,
        ok_status: spec.ok_status.clone(),
        ok_codes: spec.ok_codes.clone(),
        connections: spec.connections,
        start,
        end: spec.load.end().map(|d| start + d),
        grace: spec.grace,
        every: spec.every,
        workers,
        stop: AtomicBool::new(false),
        tickets: AtomicU64::new(0),
        tracker: None,
        target: target.clone(),
    })
}

/// A run of `load` against `url` with one plain GET (or, for `ws://`, one message) and one
/// worker thread, for the engine's unit tests.
#[cfg(test)]
pub(crate) fn test_spec(url: &str, load: Load) -> RunSpec {
    let target = Target::parse(url).expect("a test URL parses");
    let step = crate::workload::Request::fixed("GET", "GET", &target.path, &[], b"hello");
    RunSpec {
        target,
        workload: Arc::new(Workload::single(step)),
        load,
        max_requests: None,
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        keepalive: true,
        tls: TlsOptions::default(),
        ok_status: StatusSet::default(),
        ok_codes: vec![0],
        connections: None,
        threads: 1,
        grace: Duration::from_secs(1),
        capture_limit: crate::workload::capture::DEFAULT_LIMIT,
        max_message: crate::DEFAULT_GRPC_MAX_MESSAGE,
        events: crate::EventRule::default(),
        every: None,
        discovered: None,
    }
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
    let mut agg = Merger::new(shared.workers, &spec.load, spec.workload.requests.len());
    let mut failure = None;
    // When the last worker's load was over, for workers that close connections after it.
    let mut load_over: Option<Instant> = None;
    let mut handle_msg = |agg: &mut Merger, msg: Msg| match msg {
        Msg::Buckets(w, b) => agg.bucket(w, b),
        Msg::Done(w, unfinished, sched, over) => {
            load_over = load_over.max(over);
            agg.done(w, unfinished, sched);
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
                agg.done(w, 0, None);
            }
        }
        if agg.emit_ready(observer) {
            shared.stop.store(true, Ordering::Relaxed);
        }
    }
    // A WebSocket's close handshakes come after its last answer: waiting for a slow close
    // is not part of the load, and an `-n` run's rates must not count it. A schedule that
    // ran whole still lasts to its end.
    let elapsed = shared.start.elapsed();
    let whole = !interrupted && !agg.aborted && spec.max_requests.is_none();
    let duration = match (load_over, spec.load.end().filter(|_| whole)) {
        (None, _) => elapsed,
        (Some(t), end) => t
            .saturating_duration_since(shared.start)
            .max(end.unwrap_or_default())
            .min(elapsed),
    };
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
        scheduled: merge::scheduled(
            &spec.load,
            duration,
            !interrupted && !agg.aborted && spec.max_requests.is_none(),
        ),
        interrupted,
        unfinished: agg.unfinished,
        workers: shared.workers,
        sched: agg.sched,
        completions,
        remote: Vec::new(),
    })
}
