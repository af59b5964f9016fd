//! Reaching a worker: a TCP connection retried while the worker is still starting, TLS when
//! asked, one HTTP/2 stream that carries the run (`POST /run` with the token), the worker's
//! lines read as they come, and its clock measured by pings.

use crate::clock::{self, Offset, Ping};
use crate::line;
use crate::lines::Lines;
use crate::now_ns;
use crate::proto::{FromWorker, ToWorker};
use bytes::Bytes;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long a worker may take to connect.
const CONNECT: Duration = Duration::from_secs(5);
/// How long a worker may take to compile and say hello (a plan with reflection is slow).
pub(crate) const HELLO: Duration = Duration::from_secs(60);
/// Clock pings per worker; the one with the shortest round trip counts.
const PINGS: u32 = 8;
/// How much of a refusal's body is read and quoted.
const REFUSAL: usize = 200;
/// The flow-control window granted to a worker's stream (and its connection): HTTP/2's
/// default of 64 KiB made the coordinator write a WINDOW_UPDATE every two seconds to every
/// worker, a third of its writes in a long run. 256 KiB is twenty seconds of a busy worker's
/// lines, and bounds what a coordinator that falls behind holds for each.
const WINDOW: u32 = 256 << 10;

/// One worker's stream, on the `h2` crate itself: a coordinator of a thousand workers holds a
/// thousand of these, and hyper's client would add its dispatch channel and a task to each.
pub(crate) struct Conn {
    pub(crate) name: String,
    /// What the coordinator says to the worker.
    out: Outbox,
    /// What the worker says.
    inbox: Inbox,
}

/// The coordinator's half of a worker's stream.
pub(crate) struct Outbox(h2::SendStream<Bytes>);

impl Outbox {
    /// Queues `m` (the connection's task writes it); false once the stream is gone.
    pub(crate) fn send(&mut self, m: &ToWorker) -> bool {
        self.0.send_data(line(m), false).is_ok()
    }

    /// Closes the coordinator's side: it has everything the worker will send (its last line),
    /// and the worker may let its copy go.
    pub(crate) fn finish(&mut self) {
        let _ = self.0.send_data(Bytes::new(), true);
    }
}

/// Why a worker's stream gave no message.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The stream broke or closed: the worker is lost.
    Broken(String),
    /// It sent what is no message (not JSON, too long): the worker failed.
    Garbled(String),
}

/// The worker's half: its lines as messages.
pub(crate) struct Inbox {
    body: h2::RecvStream,
    lines: Lines,
    queue: VecDeque<FromWorker>,
    /// Keeps the HTTP/2 connection open.
    _h2: h2::client::SendRequest<Bytes>,
    /// The task driving the connection.
    driver: tokio::task::JoinHandle<()>,
}

impl Inbox {
    /// The next message; `Ok(None)` when the worker closed its stream.
    pub(crate) async fn next(&mut self) -> Result<Option<FromWorker>, Fault> {
        loop {
            if let Some(m) = self.queue.pop_front() {
                return Ok(Some(m));
            }
            match self.body.data().await {
                Some(Ok(data)) => {
                    let _ = self.body.flow_control().release_capacity(data.len());
                    let msgs = self.lines.feed(&data);
                    self.queue.extend(msgs.map_err(Fault::Garbled)?);
                }
                Some(Err(e)) => return Err(Fault::Broken(e.to_string())),
                None => return Ok(None),
            }
        }
    }
}

impl Conn {
    /// The next message; `Ok(None)` when the worker closed its stream.
    /// The next message; `Ok(None)` when the worker closed its stream; `Err` says why not,
    /// naming the worker, its words escaped.
    pub(crate) async fn next(&mut self) -> Result<Option<FromWorker>, String> {
        self.inbox.next().await.map_err(|f| {
            let (Fault::Broken(why) | Fault::Garbled(why)) = f;
            format!("worker {}: {}", self.name, crate::lines::said(&why))
        })
    }

    pub(crate) fn send(&mut self, m: &ToWorker) -> bool {
        self.out.send(m)
    }

    /// The two halves, to be read and written from different places.
    pub(crate) fn split(self) -> (Outbox, Inbox) {
        (self.out, self.inbox)
    }

    /// Closes the stream; the task driving its connection, which ends soon after.
    pub(crate) fn close(self) -> tokio::task::JoinHandle<()> {
        self.inbox.driver
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
type H2 = (h2::client::SendRequest<Bytes>, tokio::task::JoinHandle<()>);

async fn h2_over<I>(name: &str, io: I) -> Result<H2, String>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let handshake = h2::client::Builder::new()
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .handshake(io);
    let (h2, conn) = tokio::time::timeout(CONNECT, handshake)
        .await
        .map_err(|_| format!("worker {name}: no HTTP/2 handshake within {CONNECT:?}"))?
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
    let (h2, driver) = match tls {
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
    let hint = if tls.is_none() {
        "is it a brink worker? one serving TLS needs --worker-cacert"
    } else {
        "a worker that demands a client certificate needs --worker-cert and --worker-key"
    };
    let cannot = |e: h2::Error| format!("worker {name}: the run could not be opened ({e}): {hint}");
    let req = http::Request::post(format!("http://{name}/run"))
        .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
        .body(())
        .map_err(|e| format!("worker {name}: {e}"))?;
    // A worker answers the request's head as soon as it has checked the token: a peer that
    // says nothing by then is not one.
    let silent = || format!("worker {name}: no answer within {CONNECT:?}: {hint}");
    let mut ready = tokio::time::timeout(CONNECT, h2.clone().ready())
        .await
        .map_err(|_| silent())?
        .map_err(cannot)?;
    let (answer, send) = ready.send_request(req, false).map_err(cannot)?;
    let mut out = Outbox(send);
    out.send(run);
    let resp = tokio::time::timeout(CONNECT, answer)
        .await
        .map_err(|_| silent())?
        .map_err(cannot)?;
    let (head, body) = resp.into_parts();
    match head.status {
        http::StatusCode::OK => {}
        http::StatusCode::UNAUTHORIZED => {
            return Err(format!(
                "worker {name} refused the token: give it the same --token-file"
            ))
        }
        s => {
            let why = refusal(body).await;
            return Err(format!("worker {name}: {s}: {}", crate::lines::said(&why)));
        }
    }
    let inbox = Inbox {
        body,
        lines: Lines::default(),
        queue: VecDeque::new(),
        _h2: h2,
        driver,
    };
    Ok(Conn {
        name: name.to_string(),
        out,
        inbox,
    })
}

/// The start of a refusal's body, read for a few seconds at most.
async fn refusal(mut body: h2::RecvStream) -> String {
    let mut got = Vec::new();
    let read = async {
        while got.len() < REFUSAL {
            match body.data().await {
                Some(Ok(d)) => {
                    let _ = body.flow_control().release_capacity(d.len());
                    got.extend_from_slice(&d);
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(CONNECT, read).await;
    String::from_utf8_lossy(&got[..got.len().min(REFUSAL)])
        .trim()
        .to_string()
}

/// Pings `conn` [`PINGS`] times; its clock offset from the shortest round trip.
pub(crate) async fn measure_clock(conn: &mut Conn) -> Result<Offset, String> {
    let mut pings = Vec::new();
    for id in 0..PINGS {
        let sent = now_ns();
        if !conn.send(&ToWorker::Ping { id }) {
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
