//! The coordinator: a `runner::Executor` that runs each unit (a scenario, a search step) on
//! its workers instead of this process's engine. For every run it opens one HTTP/2 stream per
//! worker, sends the command and the worker's part, checks each hello (version, digest,
//! histogram settings), measures each worker's clock, sends one start instant a little in the
//! future, then merges the workers' seconds with `merge::Merger` as they arrive: a second is
//! handed to the observer (progress, objectives, aborts) once every live worker has sent it.
//! An interrupt or an abort is passed on to every worker at once; a heartbeat goes out every
//! second; a worker that fails or falls silent is finished with what it sent, named in the
//! result, and the run is reported short (never re-run elsewhere).

use crate::clock::{self, Offset, Ping};
use crate::lines::Lines;
use crate::proto::{refuse_hello, FromWorker, ToWorker, HEARTBEAT, PROTOCOL};
use crate::{line, now_ns, spec_digest};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use merge::{Merger, OnSecond, RunOutput};
use model::WorkerReport;
use runner::{Error, Executor, Unit};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long a worker may take to connect.
const CONNECT: Duration = Duration::from_secs(5);
/// How long a worker may take to compile and say hello (a plan with reflection is slow).
const HELLO: Duration = Duration::from_secs(60);
/// Clock pings per worker; the one with the shortest round trip counts.
const PINGS: u32 = 8;
/// The start instant is this far in the future when it is sent.
const LEAD: Duration = Duration::from_millis(300);
/// A worker silent for this long during the load is lost.
const SILENCE: Duration = Duration::from_secs(10);

/// Runs units on remote workers.
pub struct Fleet {
    workers: Vec<String>,
    token: String,
    args: Vec<String>,
    version: String,
    /// How long a worker that cannot be reached yet is retried (pods that are still
    /// starting); zero: one try.
    wait: Duration,
    /// TLS to the workers (`None`: plain HTTP/2).
    tls: Option<tokio_rustls::TlsConnector>,
    rt: tokio::runtime::Runtime,
}

impl Fleet {
    /// Workers at `workers` (`host:port`), reached with `token`, each compiling `args` (the
    /// command as the user gave it, with its seed); one that cannot be reached is retried for
    /// `wait`.
    pub fn new(
        workers: Vec<String>,
        token: String,
        args: Vec<String>,
        version: String,
        wait: Duration,
    ) -> Result<Fleet, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the coordinator's runtime: {e}"))?;
        Ok(Fleet {
            workers,
            token,
            args,
            version,
            wait,
            tls: None,
            rt,
        })
    }

    /// Reaches the workers over TLS with `connector`.
    pub fn with_tls(mut self, connector: tokio_rustls::TlsConnector) -> Fleet {
        self.tls = Some(connector);
        self
    }
}

impl Executor for Fleet {
    fn check(&self, unit: Unit) -> Result<(), Error> {
        self.rt.block_on(async {
            // Connected and agreeing; the workers end these sessions when the streams close.
            self.open_all(unit).await.map(|_| ())
        })
    }

    fn run(
        &self,
        unit: Unit,
        interrupt: &AtomicBool,
        observer: &mut dyn OnSecond,
    ) -> Result<RunOutput, Error> {
        self.rt
            .block_on(self.run_on_workers(unit, interrupt, observer))
    }
}

/// One worker's stream.
struct Conn {
    name: String,
    tx: mpsc::Sender<Bytes>,
    body: Incoming,
    lines: Lines,
    queue: VecDeque<FromWorker>,
    /// Keeps the HTTP/2 connection open.
    _h2: hyper::client::conn::http2::SendRequest<accept::ChannelBody>,
}

impl Conn {
    /// The next message; `Ok(None)` when the worker closed its stream.
    async fn next(&mut self) -> Result<Option<FromWorker>, String> {
        loop {
            if let Some(m) = self.queue.pop_front() {
                return Ok(Some(m));
            }
            match self.body.frame().await {
                Some(Ok(f)) => {
                    let data = f.into_data().unwrap_or_default();
                    let msgs = self.lines.feed(&data);
                    self.queue
                        .extend(msgs.map_err(|e| format!("worker {}: {e}", self.name))?);
                }
                Some(Err(e)) => return Err(format!("worker {}: {e}", self.name)),
                None => return Ok(None),
            }
        }
    }

    async fn send(&self, m: &ToWorker) -> bool {
        self.tx.send(line(m)).await.is_ok()
    }
}

/// What the coordinator learned of one worker before the load.
struct Joined {
    conn: Conn,
    report: WorkerReport,
    offset: Offset,
}

impl Fleet {
    /// Opens every worker's stream and checks its hello, all at once.
    async fn open_all(&self, unit: Unit<'_>) -> Result<Vec<(Conn, String)>, Error> {
        let digest = spec_digest(&self.version, &self.args, unit.spec);
        let count = self.workers.len() as u64;
        let mut tasks = Vec::new();
        for (i, name) in self.workers.iter().enumerate() {
            let run = ToWorker::Run {
                version: self.version.clone(),
                protocol: PROTOCOL,
                args: self.args.clone(),
                digest: digest.clone(),
                index: i as u64,
                count,
                job: unit.job,
                level: unit.level,
            };
            let (name, token, wait) = (name.clone(), self.token.clone(), self.wait);
            let tls = self.tls.clone();
            tasks.push(tokio::spawn(async move {
                open(&name, &token, &run, wait, tls.as_ref()).await
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            let mut conn = t.await.map_err(|e| Error(e.to_string()))?.map_err(Error)?;
            let hello = tokio::time::timeout(HELLO, conn.next())
                .await
                .map_err(|_| Error(format!("worker {}: no hello within {HELLO:?}", conn.name)))?
                .map_err(Error)?;
            let host = match hello {
                Some(h @ FromWorker::Hello { .. }) => {
                    let hist = (stats::HIST_MAX_US, stats::HIST_DIGITS);
                    let ours = (self.version.as_str(), digest.as_str());
                    if let Some(why) = refuse_hello(&conn.name, ours, &h, hist) {
                        return Err(Error(why));
                    }
                    match h {
                        FromWorker::Hello { host, .. } => said(&host),
                        _ => String::new(),
                    }
                }
                Some(FromWorker::Failed { why }) => {
                    return Err(Error(format!("worker {}: {}", conn.name, said(&why))))
                }
                _ => return Err(Error(format!("worker {}: no hello", conn.name))),
            };
            out.push((conn, host));
        }
        Ok(out)
    }

    async fn run_on_workers(
        &self,
        unit: Unit<'_>,
        interrupt: &AtomicBool,
        observer: &mut dyn OnSecond,
    ) -> Result<RunOutput, Error> {
        let count = self.workers.len() as u64;
        let mut joined = Vec::new();
        for (i, (mut conn, host)) in self.open_all(unit).await?.into_iter().enumerate() {
            let offset = measure_clock(&mut conn).await.map_err(Error)?;
            let report = WorkerReport {
                name: conn.name.clone(),
                host,
                index: i as u64,
                count,
                clock_offset_ms: Some(offset.offset_ns as f64 / 1e6),
                clock_bound_ms: Some(offset.bound_ns as f64 / 1e6),
                status: "lost".into(),
                ..WorkerReport::default()
            };
            joined.push(Joined {
                conn,
                report,
                offset,
            });
        }
        let lead = LEAD
            + joined
                .iter()
                .map(|j| Duration::from_nanos(j.offset.bound_ns * 4))
                .max()
                .unwrap_or_default();
        let start_ns = now_ns() + lead.as_nanos() as u64;
        let started = Instant::now() + lead;
        for j in &joined {
            let at = j.offset.to_worker(start_ns);
            if !j.conn.send(&ToWorker::StartAt { unix_ns: at }).await {
                return Err(Error(format!(
                    "worker {}: gone before the start",
                    j.conn.name
                )));
            }
        }
        let mut state = Running::new(unit.spec, joined, start_ns);
        state.follow(interrupt, observer).await;
        Ok(state.output(started))
    }
}

/// Whether a worker's `second` can exist `elapsed` whole seconds after the start: a few
/// seconds of clock error and delay are allowed, nothing from further ahead.
fn plausible(second: u64, elapsed: u64) -> bool {
    second <= elapsed + 5
}

/// What a worker says (its host name, why it failed), as the terminal, the result and the
/// pages may show it: one line, control characters escaped, at most 300 characters. A worker
/// is another machine; its words are never trusted to be tidy.
fn said(text: &str) -> String {
    model::guard::escaped(text.as_bytes(), 300)
}

/// Connects to `name`, retrying for `wait` (a name that does not resolve yet, a port not
/// listening yet: a pod still starting).
async fn connect(name: &str, wait: Duration) -> Result<tokio::net::TcpStream, String> {
    let until = Instant::now() + wait;
    loop {
        let r = tokio::time::timeout(CONNECT, tokio::net::TcpStream::connect(name)).await;
        let why = match r {
            Ok(Ok(tcp)) => return Ok(tcp),
            Ok(Err(e)) => format!("worker {name}: cannot connect: {e}"),
            Err(_) => format!("worker {name}: no connection within {CONNECT:?}"),
        };
        if Instant::now() >= until {
            return Err(why);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// An HTTP/2 connection over `io`, its driver running on the runtime.
async fn h2_over<I>(
    name: &str,
    io: I,
) -> Result<hyper::client::conn::http2::SendRequest<accept::ChannelBody>, String>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (h2, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
        .await
        .map_err(|e| format!("worker {name}: not a brink worker ({e})"))?;
    tokio::spawn(conn);
    Ok(h2)
}

/// Connects to `name` (over TLS with `tls`), opens the run stream and sends `run`.
async fn open(
    name: &str,
    token: &str,
    run: &ToWorker,
    wait: Duration,
    tls: Option<&tokio_rustls::TlsConnector>,
) -> Result<Conn, String> {
    let tcp = connect(name, wait).await?;
    let _ = tcp.set_nodelay(true);
    let mut h2 = match tls {
        None => h2_over(name, tcp).await?,
        Some(c) => {
            let host = name.rsplit_once(':').map_or(name, |(h, _)| h);
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let server =
                engine::tls::server_name(host).map_err(|e| format!("worker {name}: {e}"))?;
            let stream = tokio::time::timeout(CONNECT, c.connect(server, tcp))
                .await
                .map_err(|_| format!("worker {name}: no TLS handshake within {CONNECT:?}"))?
                .map_err(|e| format!("worker {name}: TLS: {e}"))?;
            h2_over(name, stream).await?
        }
    };
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let req = hyper::Request::post(format!("http://{name}/run"))
        .header(hyper::header::AUTHORIZATION, format!("Bearer {token}"))
        .body(accept::ChannelBody(rx))
        .map_err(|e| format!("worker {name}: {e}"))?;
    let _ = tx.send(line(run)).await;
    let resp = tokio::time::timeout(HELLO, h2.send_request(req))
        .await
        .map_err(|_| format!("worker {name}: no answer within {HELLO:?}"))?
        .map_err(|e| {
            let hint = if tls.is_none() {
                "is it a brink worker? one serving TLS needs --worker-cacert"
            } else {
                "a worker that demands a client certificate needs --worker-cert and --worker-key"
            };
            format!("worker {name}: the run could not be opened ({e}): {hint}")
        })?;
    match resp.status() {
        hyper::StatusCode::OK => {}
        hyper::StatusCode::UNAUTHORIZED => {
            return Err(format!(
                "worker {name} refused the token: give it the same --token-file"
            ))
        }
        s => {
            let body = resp
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let why = String::from_utf8_lossy(&body[..body.len().min(200)])
                .trim()
                .to_string();
            return Err(format!("worker {name}: {s}: {}", why.escape_debug()));
        }
    }
    Ok(Conn {
        name: name.to_string(),
        tx,
        body: resp.into_body(),
        lines: Lines::default(),
        queue: VecDeque::new(),
        _h2: h2,
    })
}

/// Pings `conn` [`PINGS`] times; its clock offset from the shortest round trip.
async fn measure_clock(conn: &mut Conn) -> Result<Offset, String> {
    let mut pings = Vec::new();
    for id in 0..PINGS {
        let sent = now_ns();
        if !conn.send(&ToWorker::Ping { id }).await {
            return Err(format!("worker {}: gone during the clock check", conn.name));
        }
        let pong = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match conn.next().await? {
                    Some(FromWorker::Pong { id: got, unix_ns }) if got == id => return Ok(unix_ns),
                    Some(_) => continue,
                    None => {
                        return Err(format!(
                            "worker {}: closed during the clock check",
                            conn.name
                        ))
                    }
                }
            }
        })
        .await
        .map_err(|_| format!("worker {}: no answer to a clock ping", conn.name))??;
        pings.push(Ping {
            sent,
            worker: pong,
            received: now_ns(),
        });
    }
    clock::estimate(&pings).ok_or_else(|| format!("worker {}: its clock cannot be read", conn.name))
}

/// The load under way: the workers' senders, their reports, and the merge.
struct Running<'a> {
    spec: &'a engine::RunSpec,
    senders: Vec<mpsc::Sender<Bytes>>,
    reports: Vec<WorkerReport>,
    offsets: Vec<Offset>,
    start_ns: u64,
    merger: Merger<'a>,
    rx: mpsc::Receiver<(usize, Result<FromWorker, String>)>,
    heard: Vec<Instant>,
    interrupted: bool,
    short: bool,
    threads: usize,
    /// Steps with `complete:`: the workers' jobs, merged per request.
    completions: Vec<observe::tracker::Counts>,
}

impl<'a> Running<'a> {
    fn new(spec: &'a engine::RunSpec, joined: Vec<Joined>, start_ns: u64) -> Running<'a> {
        let n = joined.len();
        let requests = spec.workload.requests.len();
        let (tx, rx) = mpsc::channel(1024);
        let mut senders = Vec::new();
        let mut reports = Vec::new();
        let mut offsets = Vec::new();
        for (i, j) in joined.into_iter().enumerate() {
            senders.push(j.conn.tx.clone());
            reports.push(j.report);
            offsets.push(j.offset);
            let tx = tx.clone();
            let mut conn = j.conn;
            tokio::spawn(async move {
                loop {
                    let m = conn.next().await;
                    let end = !matches!(m, Ok(Some(FromWorker::Second { .. })));
                    let m = m.and_then(|m| m.ok_or_else(|| "closed its stream".to_string()));
                    if tx.send((i, m)).await.is_err() || end {
                        break;
                    }
                }
            });
        }
        Running {
            spec,
            senders,
            reports,
            offsets,
            start_ns,
            merger: Merger::new(n, &spec.load, requests),
            rx,
            heard: vec![Instant::now() + LEAD * 4; n],
            interrupted: false,
            short: false,
            threads: 0,
            completions: Vec::new(),
        }
    }

    /// Tells every worker still running.
    async fn tell(&self, m: &ToWorker) {
        for (i, s) in self.senders.iter().enumerate() {
            if !self.merger.is_done(i) {
                let _ = s.send(line(m)).await;
            }
        }
    }

    /// Merges until every worker is done.
    async fn follow(&mut self, interrupt: &AtomicBool, observer: &mut dyn OnSecond) {
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
                self.tell(&ToWorker::Heartbeat).await;
                self.lose_silent();
            }
            if interrupt.load(Ordering::Relaxed) && !stopping {
                stopping = true;
                self.interrupted = true;
                self.tell(&ToWorker::Stop).await;
            }
            if self.merger.emit_ready(observer) && !stopping {
                stopping = true;
                self.tell(&ToWorker::Abort {
                    why: "an objective with abort broke".into(),
                })
                .await;
            }
        }
        for w in 0..self.reports.len() {
            self.merger.done(w, 0, None);
        }
        self.merger.flush(observer);
    }

    /// Workers silent too long are lost.
    fn lose_silent(&mut self) {
        for w in 0..self.reports.len() {
            if !self.merger.is_done(w) && self.heard[w].elapsed() > SILENCE {
                self.fail(w, "lost", format!("silent for {SILENCE:?}"));
            }
        }
    }

    fn fail(&mut self, w: usize, status: &str, why: String) {
        self.reports[w].status = status.into();
        self.reports[w].why = Some(said(&why));
        self.merger.done(w, 0, None);
        self.short = true;
    }

    fn take(&mut self, w: usize, m: Result<FromWorker, String>) {
        if self.merger.is_done(w) {
            return;
        }
        self.heard[w] = Instant::now();
        match m {
            Ok(FromWorker::Second { parts }) => match self.buckets(parts) {
                Ok(b) => {
                    let r = &mut self.reports[w];
                    r.requests += b.iter().map(|x| x.requests).sum::<u64>();
                    r.seconds += 1;
                    self.merger.bucket(w, b);
                }
                Err(e) => self.fail(w, "failed", format!("sent a broken second: {e}")),
            },
            Ok(d @ FromWorker::Done { .. }) => self.finished(w, d),
            Ok(FromWorker::Failed { why }) => self.fail(w, "failed", why),
            Ok(_) => {}
            Err(e) => self.fail(w, "lost", e),
        }
    }

    /// Worker `w` said Done: how it started, what it used, and it is finished in the merge.
    fn finished(&mut self, w: usize, done: FromWorker) {
        let FromWorker::Done {
            unfinished,
            sched,
            cpu_s,
            started_ns,
            wall_s,
            threads,
            completions,
        } = done
        else {
            return;
        };
        let sched = sched.map(|[on_cpu_ns, waiting_ns, slices]| observe::procfs::Sched {
            on_cpu_ns,
            waiting_ns,
            slices,
        });
        let r = &mut self.reports[w];
        r.status = "done".into();
        r.threads = threads;
        let local = started_ns as i64 - self.offsets[w].offset_ns;
        r.start_skew_ms = Some((local - self.start_ns as i64) as f64 / 1e6);
        r.cpu_percent = (wall_s > 0.0).then(|| cpu_s / wall_s * 100.0);
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

    /// A second's buckets, checked: one per request of the workload.
    fn buckets(&self, parts: Vec<stats::WireBucket>) -> Result<Vec<stats::Bucket>, String> {
        let want = self.spec.workload.requests.len().max(1);
        if parts.len() != want {
            return Err(format!("{} buckets for {want} requests", parts.len()));
        }
        let b = parts
            .into_iter()
            .map(stats::Bucket::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        // Seconds are held until every worker has sent them: one from the future would be
        // held (and a flood of them would grow without bound) until the others caught up.
        let elapsed = now_ns().saturating_sub(self.start_ns) / 1_000_000_000;
        if let Some(x) = b.iter().find(|x| !plausible(x.second, elapsed)) {
            return Err(format!("second {} of a run {elapsed} s old", x.second));
        }
        Ok(b)
    }

    fn output(self, started: Instant) -> RunOutput {
        let m = self.merger;
        let by_request = self
            .spec
            .workload
            .names()
            .into_iter()
            .zip(m.by_request)
            .collect();
        RunOutput {
            totals: m.totals,
            by_request,
            aborted: m.aborted,
            seconds: m.seconds,
            duration: started.elapsed(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_from_the_future_are_refused() {
        assert!(plausible(0, 0) && plausible(5, 0) && plausible(65, 60));
        assert!(!plausible(6, 0) && !plausible(u64::MAX, 3600));
    }

    #[test]
    fn what_a_worker_says_is_one_escaped_bounded_line() {
        assert_eq!(said("vm-1"), "vm-1");
        assert_eq!(said("a\u{1b}[2Jb\nc"), "a\\x1b[2Jb\\nc");
        let long = said(&"x".repeat(10_000));
        assert!(long.len() <= 303 && long.ends_with("..."), "{}", long.len());
    }
}
