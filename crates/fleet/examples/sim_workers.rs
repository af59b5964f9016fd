//! Simulated workers for measuring the coordinator alone (`bench/coordinator.sh`): N servers
//! on loopback that speak the worker protocol, agree with whatever the coordinator compiled
//! (they echo its digest), answer pings, and from the start instant send one second per
//! second for SECONDS seconds, each a realistic bucket (a latency histogram of 2,000 values,
//! statuses, bytes), then Done. They send no load anywhere.
//!
//! `cargo run --release -p fleet --example sim_workers -- N SECONDS TOKEN`: prints one
//! `HOST:PORT` per line, then serves until killed.

use bytes::Bytes;
use fleet::lines::Lines;
use fleet::proto::{FromWorker, ToWorker, PROTOCOL};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

#[path = "sim/second.rs"]
mod sim;
use sim::second;

fn line<T: serde::Serialize>(m: &T) -> Bytes {
    let mut v = serde_json::to_vec(m).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

async fn session(
    mut body: hyper::body::Incoming,
    tx: mpsc::Sender<Bytes>,
    seconds: u64,
    seed: u64,
) {
    let mut lines = Lines::default();
    while let Some(Ok(f)) = body.frame().await {
        let Ok(data) = f.into_data() else { continue };
        let Ok(msgs) = lines.feed::<ToWorker>(&data) else {
            return;
        };
        for m in msgs {
            match m {
                ToWorker::Run {
                    digest, version, ..
                } => {
                    let hello = FromWorker::Hello {
                        version,
                        protocol: PROTOCOL,
                        digest,
                        host: "sim".into(),
                        cores: 1,
                        hist_max_us: stats::HIST_MAX_US,
                        hist_digits: stats::HIST_DIGITS,
                    };
                    let _ = tx.send(line(&hello)).await;
                }
                ToWorker::Ping { id } => {
                    let _ = tx
                        .send(line(&FromWorker::Pong {
                            id,
                            unix_ns: fleet::now_ns(),
                        }))
                        .await;
                }
                ToWorker::StartAt { unix_ns } => {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let wait = unix_ns.saturating_sub(fleet::now_ns());
                        tokio::time::sleep(Duration::from_nanos(wait)).await;
                        let started_ns = fleet::now_ns();
                        for s in 0..seconds {
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            let m = FromWorker::Second {
                                parts: vec![second(s, seed + s)],
                            };
                            if tx.send(line(&m)).await.is_err() {
                                return;
                            }
                        }
                        let done = FromWorker::Done {
                            unfinished: 0,
                            sched: None,
                            cpu_s: 0.0,
                            throttled: None,
                            started_ns,
                            wall_s: seconds as f64,
                            threads: 1,
                            completions: Vec::new(),
                            stopped: None,
                        };
                        let _ = tx.send(line(&done)).await;
                    });
                }
                _ => {}
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .ok_or("usage: sim_workers N SECONDS TOKEN")?;
    let seconds: u64 = args.get(2).and_then(|a| a.parse().ok()).ok_or("SECONDS")?;
    let token = Arc::new(args.get(3).cloned().ok_or("TOKEN")?);
    let mut running = Vec::new();
    let mut out = std::io::stdout();
    for i in 0..n {
        let token = token.clone();
        let (addr, r) = accept::serve(
            "sim-worker",
            1,
            ([127, 0, 0, 1], 0).into(),
            move |sock, _| {
                let token = token.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let token = token.clone();
                            async move {
                                let ok = req
                                    .headers()
                                    .get(hyper::header::AUTHORIZATION)
                                    .and_then(|v| v.to_str().ok())
                                    .is_some_and(|v| v == format!("Bearer {token}"));
                                let resp: hyper::Response<BoxBody<Bytes, Infallible>> = if ok {
                                    let (tx, rx) = mpsc::channel(64);
                                    tokio::spawn(session(
                                        req.into_body(),
                                        tx,
                                        seconds,
                                        i as u64 * 7919,
                                    ));
                                    hyper::Response::new(BodyExt::boxed(accept::ChannelBody(rx)))
                                } else {
                                    let mut r = hyper::Response::new(
                                        Full::new(Bytes::from("token\n")).boxed(),
                                    );
                                    *r.status_mut() = hyper::StatusCode::UNAUTHORIZED;
                                    r
                                };
                                Ok::<_, Infallible>(resp)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(sock), svc)
                        .await;
                });
            },
        )?;
        writeln!(out, "{addr}")?;
        running.push(r);
    }
    out.flush()?;
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
