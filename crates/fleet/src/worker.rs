//! `brink worker`'s side of a distributed run: an HTTP/2 server that takes one run at a time
//! from whoever holds its token. A coordinator opens `POST /run` and the two sides talk in
//! [`proto`](crate::proto) lines on that one stream: the worker compiles the command it is
//! given (the same flags every worker gets) into the same spec as the coordinator's, says so
//! in its hello (the digest), answers clock pings at once, starts its part of the load at the
//! instant it is told, sends one line per second, and says Done. It stops on its own when the
//! coordinator says stop or abort, closes the stream, or falls silent for
//! [`HEARTBEAT_LAPSE`](crate::proto::HEARTBEAT_LAPSE).

use crate::journal::Journal;
use crate::lines::Lines;
use crate::proto::{FromWorker, ToWorker, HEARTBEAT_LAPSE, PROTOCOL};
use crate::{line, now_ns, spec_digest};
use bytes::Bytes;
use engine::RunSpec;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Compiles the coordinator's order (what to run, as the caller serialized it) into the whole
/// run's spec for `job` (a search step: at `level`), exactly as the coordinator did.
pub type Compile = dyn Fn(&str, usize, Option<f64>) -> Result<RunSpec, String> + Send + Sync;

/// What a worker serves with.
pub struct Worker {
    pub token: String,
    pub version: String,
    pub compile: Box<Compile>,
    /// Where a load's seconds are kept until the coordinator has them ([`Journal`]); `None`:
    /// a fresh private folder for each load.
    pub keep_dir: Option<std::path::PathBuf>,
    /// TLS for every connection (`None`: plain HTTP/2, for trusted networks and loopback).
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

type Out = Response<BoxBody<Bytes, Infallible>>;

/// What a worker has been doing: sessions open now, and when the last one ended (ns since
/// the Unix epoch; 0: none yet). A worker in a pod exits once it has been idle long enough.
#[derive(Debug, Default)]
pub struct Activity {
    pub open: std::sync::atomic::AtomicUsize,
    pub last_end_ns: std::sync::atomic::AtomicU64,
}

/// Connections that have not yet presented the token, at most (a new one past this closes the
/// oldest of them): idle peers cannot take the descriptors a load and its coordinator need.
const UNPROVEN: usize = 64;
/// How long a connection may take to present the token (TLS handshake included).
const PROVE_WITHIN: Duration = Duration::from_secs(5);

/// Serves runs on `addr` until the handle is dropped.
pub fn listen(
    addr: SocketAddr,
    w: Worker,
) -> std::io::Result<(SocketAddr, accept::Running, Arc<Activity>)> {
    let w = Arc::new(w);
    let busy = Arc::new(AtomicBool::new(false));
    let activity = Arc::new(Activity::default());
    let seen = activity.clone();
    let gate = accept::gate::Gate::new(UNPROVEN, PROVE_WITHIN);
    let (bound, running) = accept::serve("brink-worker", 2, addr, move |sock, _| {
        let (w, busy, seen) = (w.clone(), busy.clone(), seen.clone());
        let pass = gate.admit();
        let _ = sock.set_nodelay(true);
        tokio::spawn(pass.clone().guard(async move {
            let tls = w.tls.clone();
            let svc = hyper::service::service_fn(move |req| {
                let (w, busy, seen, pass) = (w.clone(), busy.clone(), seen.clone(), pass.clone());
                async move { Ok::<_, Infallible>(handle(w, busy, seen, &pass, req)) }
            });
            let h2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
            match tls {
                None => {
                    let _ = h2.serve_connection(TokioIo::new(sock), svc).await;
                }
                Some(a) => {
                    // The gate's deadline bounds the handshake too.
                    if let Ok(tls) = a.accept(sock).await {
                        let _ = h2.serve_connection(TokioIo::new(tls), svc).await;
                    }
                }
            }
        }));
    })?;
    Ok((bound, running, activity))
}

fn plain(status: StatusCode, msg: &str) -> Out {
    let mut r = Response::new(Full::new(Bytes::from(format!("{msg}\n"))).boxed());
    *r.status_mut() = status;
    r
}

fn handle(
    w: Arc<Worker>,
    busy: Arc<AtomicBool>,
    seen: Arc<Activity>,
    pass: &accept::gate::Pass,
    req: Request<hyper::body::Incoming>,
) -> Out {
    let given = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !model::secret::same(given, &w.token) {
        return plain(
            StatusCode::UNAUTHORIZED,
            "this worker needs its run's token",
        );
    }
    pass.prove();
    if req.method() != hyper::Method::POST || req.uri().path() != "/run" {
        return plain(StatusCode::NOT_FOUND, "a worker serves POST /run only");
    }
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    seen.open.fetch_add(1, Ordering::AcqRel);
    tokio::spawn(async move {
        session(&w, &busy, req.into_body(), tx).await;
        seen.last_end_ns.store(now_ns(), Ordering::Release);
        seen.open.fetch_sub(1, Ordering::AcqRel);
    });
    Response::new(BodyExt::boxed(accept::ChannelBody(rx)))
}

/// The spec compiled for this session and the part it generates.
struct Compiled {
    spec: RunSpec,
    part: model::Part,
}

/// How a session's stream ended.
#[derive(Clone, Copy, PartialEq)]
enum End {
    /// The coordinator closed its side after the load's last line: it has everything.
    Received,
    /// It closed or broke the stream before that.
    Gone,
    /// It fell silent for [`HEARTBEAT_LAPSE`].
    Silent,
    /// It sent what is no message, or nothing that runs.
    Confused,
}

impl End {
    fn word(self) -> &'static str {
        match self {
            End::Received => "done",
            End::Gone => "gone",
            End::Silent => "silent",
            End::Confused => "confused",
        }
    }
}

/// The load of a session, once started: how it stops, and how its end comes back.
struct Load {
    interrupt: Arc<AtomicBool>,
    /// Set before `interrupt` when the coordinator fell silent: the load's last word says so.
    silent: Arc<AtomicBool>,
    /// Set as the load's last line is queued: a coordinator that closes after it has it.
    told: Arc<AtomicBool>,
    done: mpsc::Receiver<Journal>,
    journal: Option<Journal>,
    /// Why the coordinator ended this worker's part early, when it did.
    aborted: Option<String>,
}

/// One run: reads the coordinator's lines until it closes its side or is lost. Compiling and
/// answering pings is free (a coordinator checks its workers before the first run); the load
/// itself holds the worker, one run at a time, until its last line is queued: a coordinator
/// that has every worker's last line may start the next step at once.
async fn session(
    w: &Worker,
    busy: &Arc<AtomicBool>,
    mut body: hyper::body::Incoming,
    tx: mpsc::Sender<Bytes>,
) {
    let mut lines = Lines::default();
    let mut compiled: Option<Compiled> = None;
    let mut load: Option<Load> = None;
    let mut heard = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_tick = tokio::time::Instant::now();
    let end = loop {
        let waiting = load.as_ref().is_some_and(|l| l.journal.is_none());
        tokio::select! {
            frame = body.frame() => {
                let data = match frame {
                    Some(Ok(f)) => f.into_data().unwrap_or_default(),
                    None if load.as_ref().is_some_and(|l| l.told.load(Ordering::Acquire)) => {
                        break End::Received;
                    }
                    // The coordinator is gone: stop the load; nobody reads the rest.
                    _ => break End::Gone,
                };
                heard = Instant::now();
                let msgs = match lines.feed::<ToWorker>(&data) {
                    Ok(m) => m,
                    Err(why) => {
                        let _ = tx.send(line(&FromWorker::Failed { why })).await;
                        break End::Confused;
                    }
                };
                for m in msgs {
                    match m {
                        ToWorker::Run { .. } if busy.load(Ordering::Acquire) => {
                            // Said at once, before the coordinator checks clocks and starts.
                            let why = "this worker is already running another load".into();
                            let _ = tx.send(line(&FromWorker::Failed { why })).await;
                            return;
                        }
                        ToWorker::Run { .. } if compiled.is_none() && load.is_none() => {
                            match hello(w, m).await {
                                Ok((c, h)) => {
                                    compiled = Some(c);
                                    let _ = tx.send(line(&h)).await;
                                }
                                Err(why) => {
                                    let _ = tx.send(line(&FromWorker::Failed { why })).await;
                                    return;
                                }
                            }
                        }
                        ToWorker::Ping { id } => {
                            let _ = tx.send(line(&FromWorker::Pong { id, unix_ns: now_ns() })).await;
                        }
                        ToWorker::StartAt { unix_ns } if load.is_none() => {
                            let Some(c) = compiled.take() else { continue };
                            if busy.swap(true, Ordering::AcqRel) {
                                let why = "this worker is already running another load".into();
                                let _ = tx.send(line(&FromWorker::Failed { why })).await;
                                return;
                            }
                            load = Some(start(c, unix_ns, w.keep_dir.as_deref(), busy.clone(), tx.clone()));
                        }
                        ToWorker::Stop => {
                            if let Some(l) = &load {
                                l.interrupt.store(true, Ordering::Relaxed);
                            }
                        }
                        ToWorker::Abort { why } => {
                            if let Some(l) = &mut load {
                                l.interrupt.store(true, Ordering::Relaxed);
                                l.aborted = Some(why);
                            }
                        }
                        _ => {}
                    }
                }
            }
            j = async { load.as_mut()?.done.recv().await }, if waiting => {
                // The last line is queued: the coordinator closes its side once it has it.
                if let Some(l) = &mut load {
                    l.journal = j;
                }
            }
            now = tick.tick() => {
                // Ticks far apart: this process was stopped (SIGSTOP, a frozen VM), not the
                // coordinator silent. It gets a fresh lapse rather than the blame.
                if now.duration_since(last_tick) > HEARTBEAT_LAPSE / 2 {
                    heard = Instant::now();
                }
                last_tick = now;
                if heard.elapsed() > HEARTBEAT_LAPSE {
                    if let Some(l) = &load {
                        l.silent.store(true, Ordering::Release);
                    }
                    break End::Silent;
                }
            }
        }
    };
    if let Some(l) = load {
        l.finish(end).await;
    }
}

impl Load {
    /// Stops the load if it still runs; its journal goes when the coordinator received
    /// everything, else it stays and the worker says where.
    async fn finish(mut self, end: End) {
        self.interrupt.store(true, Ordering::Relaxed);
        let journal = match self.journal.take() {
            Some(j) => Some(j),
            None => self.done.recv().await,
        };
        let Some(j) = journal else { return };
        match (end, &self.aborted) {
            (End::Received, _) => j.discard(),
            (_, Some(why)) => eprintln!(
                "brink worker: the coordinator stopped this worker's load ({}); what it measured is in {}",
                crate::lines::said(why),
                j.path().display()
            ),
            _ => eprintln!(
                "brink worker: the coordinator is {}; the load stopped and what it measured is in {}",
                end.word(),
                j.path().display()
            ),
        }
    }
}

/// Compiles the run and says who this worker is; `Err` with the reason it cannot run.
async fn hello(w: &Worker, run: ToWorker) -> Result<(Compiled, FromWorker), String> {
    let ToWorker::Run {
        version,
        protocol,
        order,
        index,
        count,
        job,
        level,
        env,
        ..
    } = run
    else {
        return Err("no run".into());
    };
    if version != w.version || protocol != PROTOCOL {
        return Err(format!(
            "this worker runs brink {} (protocol {PROTOCOL}), the coordinator brink {version} (protocol {protocol}): run the same version on both",
            w.version
        ));
    }
    let part = model::Part::new(index, count)
        .ok_or_else(|| format!("part {index} of {count} does not exist"))?;
    let spec = model::env::given(&env, || (w.compile)(&order, job, level))?;
    let digest = spec_digest(&w.version, &order, &spec);
    let hello = FromWorker::Hello {
        version: w.version.clone(),
        protocol: PROTOCOL,
        digest,
        host: observe::procfs::hostname(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
        hist_max_us: stats::HIST_MAX_US,
        hist_digits: stats::HIST_DIGITS,
    };
    Ok((Compiled { spec, part }, hello))
}

/// Starts the load on a thread of its own at `unix_ns` (this machine's clock), its lines
/// kept in a journal in `keep_dir` (see [`Journal`]); `busy` is cleared as its last line goes.
fn start(
    mut c: Compiled,
    unix_ns: u64,
    keep_dir: Option<&std::path::Path>,
    busy: Arc<AtomicBool>,
    tx: mpsc::Sender<Bytes>,
) -> Load {
    let (done_tx, done) = mpsc::channel::<Journal>(1);
    let load = Load {
        interrupt: Arc::new(AtomicBool::new(false)),
        silent: Arc::new(AtomicBool::new(false)),
        told: Arc::new(AtomicBool::new(false)),
        done,
        journal: None,
        aborted: None,
    };
    let (interrupt, silent, told) = (
        load.interrupt.clone(),
        load.silent.clone(),
        load.told.clone(),
    );
    let mut journal = Journal::create(keep_dir, unix_ns);
    std::thread::spawn(move || {
        // The worker is free again when this goes, even if the load panicked.
        let free = Free(busy);
        let mut out = |l: Bytes| {
            journal.write(&l);
            // A coordinator gone, or reading nothing for the whole buffer (minutes of
            // seconds), is lost: the load stops rather than wait for it.
            tx.try_send(l).is_err()
        };
        let mut end = match std::sync::Arc::get_mut(&mut c.spec.workload) {
            Some(w) => {
                w.set_part(c.part);
                run_at(&c.spec, unix_ns, &interrupt, &mut out)
            }
            None => FromWorker::Failed {
                why: "the compiled workload is shared; cannot take a part of it".into(),
            },
        };
        if let (true, FromWorker::Done { stopped, .. }) = (silent.load(Ordering::Acquire), &mut end)
        {
            *stopped = Some(format!(
                "stopped its load early: its coordinator was silent for {}s",
                HEARTBEAT_LAPSE.as_secs()
            ));
        }
        drop(free);
        told.store(true, Ordering::Release);
        out(line(&end));
        let _ = done_tx.blocking_send(journal);
    });
    load
}

/// Clears a worker's busy flag when dropped.
struct Free(Arc<AtomicBool>);

impl Drop for Free {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Waits for `unix_ns`, runs, and returns the last message.
/// `out` takes each line and says whether the coordinator is lost.
fn run_at(
    spec: &RunSpec,
    unix_ns: u64,
    interrupt: &AtomicBool,
    out: &mut dyn FnMut(Bytes) -> bool,
) -> FromWorker {
    let wait = Duration::from_nanos(unix_ns.saturating_sub(now_ns()));
    let until = Instant::now() + wait.min(Duration::from_secs(60));
    // Sleep to within 2 ms of the instant, then yield until it: a sleep wakes late by up to
    // a scheduler tick, which would be start skew.
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        if left > Duration::from_millis(2) {
            std::thread::sleep((left - Duration::from_millis(2)).min(Duration::from_millis(50)));
        } else {
            std::thread::yield_now();
        }
    }
    let started_ns = now_ns();
    let t0 = Instant::now();
    let cpu0 = runner::own_cpu();
    let cfs0 = observe::procfs::own_cfs();
    let mut send = |v: &merge::SecondView| {
        let parts = v.by_request.iter().map(stats::WireBucket::from).collect();
        // The coordinator is lost: stop the load too.
        out(line(&FromWorker::Second { parts }))
    };
    match engine::run(spec, interrupt, &mut send) {
        Ok(out) => FromWorker::Done {
            unfinished: out.unfinished,
            sched: out.sched.map(|s| [s.on_cpu_ns, s.waiting_ns, s.slices]),
            cpu_s: runner::own_cpu() - cpu0,
            throttled: observe::procfs::throttled_share(cfs0, observe::procfs::own_cfs()),
            started_ns,
            wall_s: t0.elapsed().as_secs_f64(),
            threads: out.workers as u64,
            completions: out.completions.iter().map(Into::into).collect(),
            stopped: None,
        },
        Err(e) => FromWorker::Failed { why: e.to_string() },
    }
}
