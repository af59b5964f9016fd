//! Reaching a worker: a TCP connection retried while the worker is still starting, TLS when
//! asked, one HTTP/2 stream that carries the run (`POST /run` with the token), the worker's
//! lines read as they come, and its clock measured by pings.

use crate::clock::{self, Offset, Ping};
use crate::line;
use crate::lines::Lines;
use crate::now_ns;
use crate::proto::{FromWorker, ToWorker};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long a worker may take to connect.
const CONNECT: Duration = Duration::from_secs(5);
/// How long a worker may take to compile and say hello (a plan with reflection is slow).
pub(crate) const HELLO: Duration = Duration::from_secs(60);
/// Clock pings per worker; the one with the shortest round trip counts.
const PINGS: u32 = 8;

/// One worker's stream.
pub(crate) struct Conn {
    pub(crate) name: String,
    pub(crate) tx: mpsc::Sender<Bytes>,
    pub(crate) body: Incoming,
    pub(crate) lines: Lines,
    pub(crate) queue: VecDeque<FromWorker>,
    /// Keeps the HTTP/2 connection open.
    _h2: hyper::client::conn::http2::SendRequest<accept::ChannelBody>,
    /// The task driving the connection.
    driver: tokio::task::JoinHandle<()>,
}

impl Conn {
    /// The next message; `Ok(None)` when the worker closed its stream.
    pub(crate) async fn next(&mut self) -> Result<Option<FromWorker>, String> {
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

    pub(crate) async fn send(&self, m: &ToWorker) -> bool {
        self.tx.send(line(m)).await.is_ok()
    }

    /// Closes the stream; the task driving its connection, which ends soon after.
    pub(crate) fn close(self) -> tokio::task::JoinHandle<()> {
        self.driver
    }
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
type H2 = (
    hyper::client::conn::http2::SendRequest<accept::ChannelBody>,
    tokio::task::JoinHandle<()>,
);

async fn h2_over<I>(name: &str, io: I) -> Result<H2, String>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (h2, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
        .await
        .map_err(|e| format!("worker {name}: not a brink worker ({e})"))?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok((h2, driver))
}

/// Connects to `name` (over TLS with `tls`), opens the run stream and sends `run`.
pub(crate) async fn open(
    name: &str,
    token: &str,
    run: &ToWorker,
    wait: Duration,
    tls: Option<&tokio_rustls::TlsConnector>,
) -> Result<Conn, String> {
    let tcp = connect(name, wait).await?;
    let _ = tcp.set_nodelay(true);
    let (mut h2, driver) = match tls {
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
        driver,
    })
}

/// Pings `conn` [`PINGS`] times; its clock offset from the shortest round trip.
pub(crate) async fn measure_clock(conn: &mut Conn) -> Result<Offset, String> {
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
