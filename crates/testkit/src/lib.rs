//! In-process target servers on 127.0.0.1, port 0, for tests and benchmarks.
//! Each server runs on its own thread and runtime and stops when dropped. Behaviour comes from
//! a [`Handler`] that maps each request to a [`Reply`]: a delay, a status, a framing, or a fault
//! (dropped connection, a hang, a truncated body). Handlers for the classic shapes (fixed service
//! time, periodic pauses, faults by path) live in [`handlers`]; the demo service and its shop
//! come from the `demo-service` crate (the one part that ships in the binary).

pub mod cpu;
pub mod deadline;
pub mod grpc;
mod h3_raw;
mod h3_srv;
pub mod handlers;
mod hyper_srv;
mod raw;
pub mod reflection;
#[cfg(test)]
mod schedule;
pub mod tls;
pub mod tonic_srv;

/// The demo service (`brink demo`), for tests that load it.
pub use demo_service as demo;
/// The request model is the demo service's: one model for every server here.
pub use demo_service::Req;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use h3_raw::{serve_h3_raw, Misbehaviour as H3Misbehaviour, RawH3};
pub use h3_srv::serve_h3;
pub use hyper_srv::serve_hyper;

/// How to answer one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A normal response with `Content-Length`, sent after `delay`. With `slot`, the request
    /// first waits for one of the server's service slots and holds it during `delay`.
    Full {
        status: u16,
        body: Vec<u8>,
        delay: Duration,
        slot: bool,
        close: bool,
    },
    /// A `Transfer-Encoding: chunked` response made of these chunks.
    Chunked(Vec<Vec<u8>>),
    /// A `text/event-stream` answer with the cadence of a model server: its head at once (or
    /// once it has a slot, with `slot`), the first event `first` later, then one every
    /// `every`, `events` in all, each `data: token N` in a chunk of its own, then the end.
    Events {
        first: Duration,
        every: Duration,
        events: u32,
        slot: bool,
    },
    /// An OpenAI-compatible token stream (`text/event-stream`) with the cadence of
    /// [`Reply::Events`]: `tokens` chunks of one token each (`delta.content` with `chat`,
    /// `text` otherwise), then at once the `usage` chunk (with `usage`) and `[DONE]`.
    Tokens {
        first: Duration,
        every: Duration,
        tokens: u32,
        slot: bool,
        chat: bool,
        usage: bool,
    },
    /// A notification channel's stream (`text/event-stream`): `retry: RETRY_MS`, then
    /// events `after + 1` to `after + events`, the first at once and then one every `every`,
    /// each `id: N` and `data: {"n": N, "ts": µs since the epoch when it was sent}`, then
    /// the end. A handler resumes a reconnect by passing its `Last-Event-ID` as `after`.
    Feed {
        after: u64,
        events: u32,
        every: Duration,
        retry_ms: u32,
    },
    /// A response without length that ends when the server closes the connection.
    CloseDelimited(Vec<u8>),
    /// Close the connection without answering.
    Drop,
    /// Never answer (until the client gives up).
    Hang,
    /// Promise 100 body bytes, send 10, close.
    Partial,
    /// `head`, then `filler` over and over as fast as the client takes it, for up to 30 s: a
    /// response that never ends (an endless body or chunk extension, endless interim answers).
    Endless { head: Vec<u8>, filler: Vec<u8> },
    /// Exactly these bytes, whatever they are (odd framing, stray bytes, bad status lines);
    /// then close the connection when `close` is set.
    Raw { bytes: Vec<u8>, close: bool },
    /// A `200` with `body`, then, `after` later and unasked, `stray` bytes on the same
    /// connection (a server whose framing is wrong, or that misbehaves).
    Stray {
        body: Vec<u8>,
        after: Duration,
        stray: Vec<u8>,
    },
}

impl Reply {
    /// `200` with `body` after `delay`.
    pub fn ok(body: &str, delay: Duration) -> Reply {
        Reply::Full {
            status: 200,
            body: body.as_bytes().to_vec(),
            delay,
            slot: false,
            close: false,
        }
    }

    /// `status` with a short body, at once.
    pub fn status(status: u16) -> Reply {
        Reply::Full {
            status,
            body: format!("status {status}\n").into_bytes(),
            delay: Duration::ZERO,
            slot: false,
            close: false,
        }
    }
}

/// What a streamed reply sends after its head: each event on a cadence from the head (the
/// first `first` later, then one every `every`), then `tail` at once.
pub(crate) struct Cadence {
    pub first: Duration,
    pub every: Duration,
    pub events: Vec<String>,
    pub tail: String,
    pub slot: bool,
}

/// Where an event carries the time it is sent: replaced by [`stamped`] as it goes out.
const NOW: &str = "{now_us}";

/// `event` with its send time (µs since the epoch) where it says [`NOW`].
pub(crate) fn stamped(event: &str) -> String {
    if !event.contains(NOW) {
        return event.to_string();
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    event.replace(NOW, &now.to_string())
}

impl Reply {
    /// The cadence of [`Reply::Events`], [`Reply::Tokens`] and [`Reply::Feed`]; `None` for
    /// other replies.
    pub(crate) fn cadence(&self) -> Option<Cadence> {
        match *self {
            Reply::Events {
                first,
                every,
                events,
                slot,
            } => Some(Cadence {
                first,
                every,
                events: (0..events)
                    .map(|n| format!("data: token {n}\n\n"))
                    .collect(),
                tail: String::new(),
                slot,
            }),
            Reply::Feed {
                after,
                events,
                every,
                retry_ms,
            } => Some(Cadence {
                first: Duration::ZERO,
                every,
                events: (1..=u64::from(events))
                    .map(|i| {
                        let n = after + i;
                        let retry = match i {
                            1 => format!("retry: {retry_ms}\n"),
                            _ => String::new(),
                        };
                        format!("{retry}id: {n}\ndata: {{\"n\":{n},\"ts\":{NOW}}}\n\n")
                    })
                    .collect(),
                tail: String::new(),
                slot: false,
            }),
            Reply::Tokens {
                first,
                every,
                tokens,
                slot,
                chat,
                usage,
            } => {
                let chunk = |n: u32| {
                    match chat {
                    true => format!(
                        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"t{n} \"}}}}]}}\n\n"
                    ),
                    false => format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"t{n} \"}}]}}\n\n"),
                }
                };
                let mut tail = String::new();
                if usage {
                    tail.push_str(&format!(
                        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":8,\"completion_tokens\":{tokens}}}}}\n\n"
                    ));
                }
                tail.push_str("data: [DONE]\n\n");
                Some(Cadence {
                    first,
                    every,
                    events: (0..tokens).map(chunk).collect(),
                    tail,
                    slot,
                })
            }
            _ => None,
        }
    }
}

impl From<demo_service::Answer> for Reply {
    fn from(a: demo_service::Answer) -> Reply {
        Reply::Full {
            status: a.status,
            body: a.body,
            delay: a.delay,
            slot: a.slot,
            close: a.close,
        }
    }
}

/// The demo service's shop (registration, login, items), served by the test servers.
pub mod shop {
    pub use demo_service::shop::Shop;
    use std::sync::Arc;
    use std::time::Duration;

    /// The shop's handler for the test servers, and the counters behind it.
    pub fn shop(service: Duration) -> (crate::Handler, Arc<Shop>) {
        let (answer, state) = demo_service::shop::shop(service);
        let handler: crate::Handler = Arc::new(move |r: &crate::Req| answer(r).into());
        (handler, state)
    }
}

/// Maps a request to its answer.
pub type Handler = Arc<dyn Fn(&Req) -> Reply + Send + Sync>;

/// Server settings.
#[derive(Clone)]
pub struct Options {
    /// Runtime worker threads.
    pub threads: usize,
    /// Service slots: at most this many `slot` requests are served at once; the rest queue.
    pub slots: Option<usize>,
    /// Serve TLS with a fresh self-signed certificate for 127.0.0.1 and localhost.
    pub tls: bool,
    /// With `tls`: demand a client certificate (mutual TLS); [`Server::client`] holds one
    /// the server accepts.
    pub mtls: bool,
    /// Port on 127.0.0.1; 0 (the default) picks a free one.
    pub port: u16,
    /// Raw server only: answer as soon as the request head is read, as gateways answer 401 or
    /// 413 before an upload ends; then drain the body slowly (16 KiB per 50 ms, for at most
    /// 2 s) and close.
    pub answer_before_body: bool,
    /// Hyper and HTTP/3 servers only: shut each connection down gracefully (HTTP/2 and
    /// HTTP/3 GOAWAY, HTTP/1.1 `Connection: close`) after this many requests, as nginx does
    /// by default.
    pub rotate_after: Option<u64>,
    /// Raw TLS server only: wait this long before each TLS handshake (a slow handshake, as
    /// behind an overloaded TLS terminator).
    pub handshake_delay: Duration,
    /// The listen backlog (default 1024): a tiny one with `accept_pause` overflows the accept
    /// queue for real.
    pub backlog: u32,
    /// Pause after each accept (a service that accepts slowly).
    pub accept_pause: Duration,
    /// HTTP/3 server only: hand out session tickets that offer 0-RTT, then never find the
    /// session again (as after a restart with new keys): every early request is refused.
    pub refuse_early_data: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: 2,
            slots: None,
            tls: false,
            mtls: false,
            port: 0,
            answer_before_body: false,
            rotate_after: None,
            handshake_delay: Duration::ZERO,
            backlog: 1024,
            accept_pause: Duration::ZERO,
            refuse_early_data: false,
        }
    }
}

/// Counters a test can read while or after load runs.
#[derive(Default, Debug)]
pub struct Counters {
    pub requests: AtomicU64,
    pub connections: AtomicU64,
    /// Requests currently being served or queued for a slot.
    pub in_flight: AtomicU64,
    /// Requests currently waiting for a service slot.
    pub queued: AtomicU64,
}

impl Counters {
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

/// A running server; dropping it stops it.
pub struct Server {
    pub addr: SocketAddr,
    pub counters: Arc<Counters>,
    /// PEM of the self-signed certificate when serving TLS.
    pub cert_pem: Option<String>,
    /// With mutual TLS: a client identity the server accepts.
    pub client: Option<tls::ClientIdentity>,
    pub started: Instant,
    _running: accept::Running,
}

impl Server {
    /// `http(s)://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.cert_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}{path}", self.addr)
    }
}

/// Serves `handler` over raw HTTP/1.1 with default options.
pub fn serve(handler: Handler) -> std::io::Result<Server> {
    raw::serve(Options::default(), handler)
}

/// Serves `handler` over raw HTTP/1.1 (optionally TLS) with `opts`.
pub fn serve_with(opts: Options, handler: Handler) -> std::io::Result<Server> {
    raw::serve(opts, handler)
}

/// Starts a runtime thread that accepts connections until the server is dropped, counts each,
/// and hands it to `each` (called on the runtime, so it may spawn tasks) with the server's
/// counters and TLS acceptor; shared by every server kind here.
pub(crate) fn spawn_server<F>(opts: &Options, h2: bool, each: F) -> std::io::Result<Server>
where
    F: Fn(tokio::net::TcpStream, &Arc<Counters>, &Option<tokio_rustls::TlsAcceptor>)
        + Send
        + 'static,
{
    let (acceptor, cert_pem, client) = if opts.tls {
        let (a, pem, client) = tls::acceptor(h2, opts.mtls).map_err(std::io::Error::other)?;
        (Some(a), Some(pem), client)
    } else {
        (None, None, None)
    };
    let counters = Arc::new(Counters::default());
    let c = counters.clone();
    let (port, backlog, pause) = (opts.port, opts.backlog, opts.accept_pause);
    let bind = move || {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))?;
        let listener = socket.listen(backlog)?;
        Ok((listener.local_addr()?, listener))
    };
    let (addr, running) = accept::spawn("testkit-server", opts.threads, bind, move |l, stop| {
        accept::accept_loop(l, stop, pause, move |sock, _| {
            c.connections.fetch_add(1, Ordering::Relaxed);
            // As servers in production do: a small write (a streamed message after the
            // headers) must not wait for the client's delayed ACK.
            let _ = sock.set_nodelay(true);
            each(sock, &c, &acceptor);
        })
    })?;
    Ok(Server {
        addr,
        counters,
        cert_pem,
        client,
        started: Instant::now(),
        _running: running,
    })
}
