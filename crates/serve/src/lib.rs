//! `brink serve`: the run history in a browser, with no server to install. Pages: the runs
//! (filters, verdict badges, change against the baseline, trends per target and name), one run
//! (its HTML report), a comparison of two runs (verdicts and overlaid charts), and a run in
//! progress from any brink process writing the same history (its charts grow each second over
//! Server-Sent Events). The same data is JSON under `/api/`. Everything the pages need is in
//! the binary; nothing is fetched from elsewhere. Who may see and change what is `access`.
//!
//! Each request opens the history file itself (SQLite in WAL mode: readers never wait for the
//! brink processes writing to it).

mod access;
mod api;
mod http;
mod pages;
mod query;
mod reply;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

pub use access::generate as generate_token;

/// What to serve, where.
#[derive(Clone, Debug)]
pub struct Config {
    pub bind: IpAddr,
    pub port: u16,
    /// Required on every request (loopback too: another local user reaches it).
    pub token: String,
    pub history: PathBuf,
    /// Names served on loopback beyond `127.0.0.1`, `[::1]` and `localhost` (`--allow-host`).
    pub allowed_hosts: Vec<String>,
}

/// A running web UI; dropping it stops it.
pub struct Server {
    pub addr: SocketAddr,
    pub token: String,
    _running: accept::Running,
}

impl Server {
    /// The URL to open, with the token.
    pub fn url(&self) -> String {
        let host = match self.addr.ip() {
            ip if ip.is_unspecified() => format!("127.0.0.1:{}", self.addr.port()),
            IpAddr::V6(_) => format!("[{}]:{}", self.addr.ip(), self.addr.port()),
            IpAddr::V4(_) => self.addr.to_string(),
        };
        format!("http://{host}/?token={}", self.token)
    }
}

/// Shared by every request.
pub(crate) struct Ctx {
    pub token: String,
    pub history: PathBuf,
    /// Bound to loopback: the `Host` of every request is checked.
    pub loopback: bool,
    pub allowed_hosts: Vec<String>,
}

/// Starts serving `c` on its own threads. Refuses an empty token.
pub fn start(c: Config) -> Result<Server, String> {
    if c.token.is_empty() {
        return Err("brink serve needs a token".into());
    }
    // The history must open (created if new) before the UI says it is ready.
    history::History::open(&c.history).map_err(|e| format!("history: {e}"))?;
    let ctx = Arc::new(Ctx {
        token: c.token.clone(),
        history: c.history.clone(),
        loopback: c.bind.is_loopback(),
        allowed_hosts: c.allowed_hosts.clone(),
    });
    let (addr, running) = http::listen(SocketAddr::new(c.bind, c.port), ctx)
        .map_err(|e| format!("cannot serve on {}:{}: {e}", c.bind, c.port))?;
    Ok(Server {
        addr,
        token: c.token,
        _running: running,
    })
}
