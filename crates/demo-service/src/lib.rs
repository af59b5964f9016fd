//! The service `brink demo` loads: a real bottleneck (a few service slots in front of a
//! log-normal work time) with Prometheus `/metrics`, plus a small shop (registration, login,
//! items) that the example plans exercise. It ships in the release binary, so it is only this:
//! one request model, one answer type, one small HTTP/1.1 server on 127.0.0.1. The test servers
//! with faults and TLS live in `testkit`, which reuses the model and the shop.

mod server;
pub mod service;
pub mod shop;

pub use server::{serve, OwnedReq, Server};
pub use service::{spawn, spawn_on, Demo};

use std::sync::Arc;
use std::time::Duration;

/// What a service knows about a request when it decides how to answer.
pub struct Req<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// Arrival order, from 0, over the server's lifetime.
    pub seq: u64,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

impl Req<'_> {
    /// A request header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A normal answer: `status` and `body` after `delay`; with `slot`, the request first waits for
/// one of the server's service slots and holds it during `delay`; `close` ends the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub delay: Duration,
    pub slot: bool,
    pub close: bool,
}

impl Answer {
    /// `status` with `body` at once, no slot.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Answer {
        Answer {
            status,
            body: body.into(),
            delay: Duration::ZERO,
            slot: false,
            close: false,
        }
    }
}

/// Maps a request to its answer.
pub type Handler = Arc<dyn Fn(&Req) -> Answer + Send + Sync>;
