//! The coordinator: a `runner::Executor` that runs each unit (a scenario, a search step) on
//! its workers instead of this process's engine. For every run it opens one HTTP/2 stream per
//! worker ([`dial`](crate::dial)), sends the command and the worker's part, checks each hello
//! (version, digest, histogram settings), measures each worker's clock, sends one start
//! instant a little in the future, then follows the load ([`follow`](crate::follow)): the
//! workers' seconds merged as they arrive, interrupts and aborts passed on, lost workers named.

use crate::dial::{measure_clock, open, Conn, HELLO};
use crate::follow::{Joined, Running, LEAD};
use crate::lines::said;
use crate::proto::{refuse_hello, FromWorker, ToWorker, PROTOCOL};
use crate::{now_ns, spec_digest};
use merge::{OnSecond, RunOutput};
use model::WorkerReport;
use runner::{Error, Executor, Unit};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Runs units on remote workers.
pub struct Fleet {
    workers: Vec<String>,
    token: String,
    order: String,
    version: String,
    /// How long a worker that cannot be reached yet is retried (pods that are still
    /// starting); zero: one try.
    wait: Duration,
    /// TLS to the workers (`None`: plain HTTP/2).
    tls: Option<tokio_rustls::TlsConnector>,
    rt: tokio::runtime::Runtime,
}

impl Fleet {
    /// Workers at `workers` (`host:port`), reached with `token`, each compiling `order` (what
    /// to run, typed and serialized by the caller, with its seed); one that cannot be reached
    /// is retried for `wait`.
    pub fn new(
        workers: Vec<String>,
        token: String,
        order: String,
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
            order,
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
            let conns = self.open_all(unit).await?;
            let drivers: Vec<_> = conns.into_iter().map(|(c, _)| c.close()).collect();
            // Their connections end before the run's are made, so a coordinator of many
            // workers never holds both sets of buffers (a second at most).
            let until = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
            for d in drivers {
                let _ = tokio::time::timeout_at(until, d).await;
            }
            Ok(())
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

impl Fleet {
    /// Opens every worker's stream and checks its hello, all at once.
    async fn open_all(&self, unit: Unit<'_>) -> Result<Vec<(Conn, String)>, Error> {
        every_part_sends(unit.spec, self.workers.len())?;
        let digest = spec_digest(&self.version, &self.order, unit.spec);
        let count = self.workers.len() as u64;
        let mut tasks = Vec::new();
        for (i, name) in self.workers.iter().enumerate() {
            let run = ToWorker::Run {
                version: self.version.clone(),
                protocol: PROTOCOL,
                order: self.order.clone(),
                digest: digest.clone(),
                index: i as u64,
                count,
                job: unit.job,
                level: unit.level,
                env: model::env::read(),
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
                status: model::WorkerStatus::Lost,
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
        for j in &mut joined {
            let at = j.offset.to_worker(start_ns);
            if !j.conn.send(&ToWorker::StartAt { unix_ns: at }) {
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

/// A run of `-n` requests is shared out over the workers, each sending its share on its own
/// connections: a worker with none (fewer connections than workers) could never send its
/// share, and the run would never end. Refused before any load, saying what to change.
fn every_part_sends(spec: &engine::RunSpec, workers: usize) -> Result<(), Error> {
    let slots = spec.load.max_connections();
    match spec.max_requests {
        Some(n) if slots < workers => Err(Error(format!(
            "-n {n} over {workers} workers needs at least {workers} connections (each worker sends its share on its own), not {slots}: give -c {workers} or more, or fewer workers"
        ))),
        _ => Ok(()),
    }
}
