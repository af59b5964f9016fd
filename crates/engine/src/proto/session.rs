//! The seam between the tokio worker and the protocols. A protocol is a folder under `proto/`
//! whose connection implements [`Session`]: whether it can take a request, whether requests
//! in flight may share it, and one request's exchange. The worker only ever holds a [`Conn`]
//! and asks those three things; `connect` is the one place that says which session a freshly
//! opened transport becomes (`proto::connect`), so a new protocol adds a line there and
//! touches no worker loop. (The epoll loops are the fast paths of HTTP/1.1 and h2c, chosen in
//! `worker::Loop::of`; a protocol without one runs here.)

use crate::net::conn::Connector;
use crate::proto::events::Events;
use crate::proto::reply::{Idle, Outcome};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::{Duration, Instant};
use workload::Vu;

/// One request's exchange in progress: its outcome and the bytes it sent.
pub type Exchange<'a> = Pin<Box<dyn Future<Output = (Outcome, u64)> + 'a>>;

/// A connection's close in progress.
pub type Closing<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// A connection's rest in progress: whether it is still open at the end.
pub type Resting<'a> = Pin<Box<dyn Future<Output = bool> + 'a>>;

/// Where an exchange's events are recorded as they are read, not only when its answer ends:
/// a held stream may never end, and a run cut short keeps what it read. The worker's
/// per-second buckets, and the request's intended start (what first byte and first event
/// are timed from).
#[derive(Clone, Copy)]
pub struct Tally<'a> {
    pub rec: &'a RefCell<Vec<stats::Bucket>>,
    pub base: Instant,
}

impl Tally<'_> {
    /// Records what `e` read since it was last drained, in request `request`'s bucket.
    pub fn drain(&self, request: usize, e: &mut Events) {
        // Never borrowed across an await: a failed borrow only defers the drain.
        if let Ok(mut rec) = self.rec.try_borrow_mut() {
            if let Some(b) = rec.get_mut(request) {
                e.drain_into(b, self.base);
            }
        }
    }
}

/// An open connection speaking one protocol, as the tokio worker drives it.
pub trait Session {
    /// Another handle on the same connection for a protocol whose requests run side by side
    /// as streams (`--connections`); `None` when it carries one request at a time.
    fn share(&self) -> Option<Conn>;

    /// Whether a kept-alive connection can take the next request, looked at without waiting.
    /// `idle_for`: how long since its last exchange ended.
    fn idle(&mut self, cx: &mut Context<'_>, idle_for: Duration) -> Idle;

    /// Sends `vu`'s current request and reads its whole answer, recording events in `tally`
    /// as they are read.
    fn send<'a>(
        &'a mut self,
        connector: &'a Connector,
        vu: &'a mut Vu,
        tally: Tally<'a>,
    ) -> Exchange<'a>;

    /// What an exchange counts as when the worker timed it out, or it ended with `passed`
    /// its deadline: a protocol whose calls carry a deadline reads it its own way (gRPC's
    /// DEADLINE_EXCEEDED); by default the outcome stands (a timeout is a timeout).
    fn at_deadline(&self, connector: &Connector, outcome: Outcome, passed: bool) -> Outcome {
        let _ = (connector, passed);
        outcome
    }

    /// Whether the connection can carry on after a request ended in `kind`: a protocol whose
    /// requests are streams of a connection may lose one stream and keep the rest. By
    /// default an error ends the connection.
    fn survives(&self, kind: stats::ErrorKind) -> bool {
        let _ = kind;
        false
    }

    /// Adds what the connection carried since it was last asked, beyond the exchanges'
    /// outcomes (a WebSocket's messages each way, pings, close codes, and once `ending`, how
    /// long it was up and whether the server ended it), to `rec`. `ending`: the worker drops
    /// the connection now.
    fn account(&mut self, rec: &mut stats::Bucket, ending: bool) {
        let _ = (rec, ending);
    }

    /// The last exchange's answer read as events (Server-Sent Events), if it was: the worker
    /// records its times once the exchange is recorded.
    fn events(&mut self) -> Option<Box<crate::proto::events::Events>> {
        None
    }

    /// Waits until `until` on a connection brink has nothing to send on yet (a paced
    /// connection between its requests), as its protocol asks: a WebSocket answers pings
    /// and notices a close as they come. False when the connection ended meanwhile.
    fn rest(&mut self, until: Instant) -> Resting<'_> {
        Box::pin(async move {
            tokio::time::sleep_until(until.into()).await;
            true
        })
    }

    /// Ends a connection brink is done with as its protocol asks (a WebSocket's close
    /// handshake), waiting at most `within`; by default it is simply dropped.
    fn close(&mut self, within: Duration) -> Closing<'_> {
        let _ = within;
        Box::pin(std::future::ready(()))
    }
}

/// An open connection of whichever protocol the run speaks.
pub type Conn = Box<dyn Session>;

/// Whether `conn` can take a request now (see [`Session::idle`]).
pub async fn idle(conn: &mut Conn, idle_for: Duration) -> Idle {
    std::future::poll_fn(|cx| std::task::Poll::Ready(conn.idle(cx, idle_for))).await
}
