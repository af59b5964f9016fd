//! WebSocket as a [`Session`] of the tokio worker (TLS, paced and held connections,
//! subscriptions): a [`Machine`] with a stream under it. The upgrade is made once per
//! connection (its time kept apart from the messages'), then each request is one exchange
//! of the machine's, its queued frames written and the stream read until the machine has
//! the outcome. Every rule of the protocol is the machine's; this file only moves bytes.

use super::machine::{Machine, Upgrade};
use crate::net::conn::{Connector, Stream};
use crate::proto::reply::{io_kind, Idle, Outcome, Unopened};
use crate::proto::session::{Closing, Conn, Exchange, Resting, Session};
use stats::ErrorKind;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use workload::{Vu, WsStep};

/// How recently a connection must have finished an exchange to skip the idle check.
const JUST_USED: Duration = Duration::from_millis(1);

/// One upgraded connection.
pub struct WsConn {
    io: Stream,
    m: Machine,
}

/// Upgrades `stream` with `vu`'s current request (its path and headers) and returns the
/// session and how long the upgrade took; refused or wrong answers are `handshake` errors.
pub async fn session(
    stream: Stream,
    connector: &Connector,
    vu: &mut Vu,
) -> Result<(Conn, Duration), Unopened> {
    let started = Instant::now();
    let mut conn = WsConn {
        io: stream,
        m: Machine::new(connector.max_message),
    };
    let up = conn.m.upgrade(connector, vu)?;
    let upgrade = conn.upgrade(&up);
    let failed = match tokio::time::timeout(connector.connect_timeout, upgrade).await {
        Ok(Ok(())) => None,
        Ok(Err(unopened)) => Some(unopened),
        Err(_) => Some(Unopened::because(
            ErrorKind::Handshake,
            format!(
                "no answer to the upgrade within {:?} (--connect-timeout)",
                connector.connect_timeout
            ),
        )),
    };
    if let Some(failed) = failed {
        return Err(conn.m.unopened(failed));
    }
    let took = started.elapsed();
    let step = &connector.workload.requests[vu.current];
    if step.ws == WsStep::Await && !step.body.is_empty() {
        // A subscription's message (when it has one) goes once, as the connection opens.
        conn.m.queue_message(connector, vu)?;
        conn.flush().await?;
    }
    Ok((Box::new(conn), took))
}

impl WsConn {
    /// Sends the upgrade request and reads its answer.
    async fn upgrade(&mut self, up: &Upgrade) -> Result<(), Unopened> {
        self.flush().await?;
        while !self.m.upgraded(up)? {
            if self.read_more().await? == 0 {
                return Err(Unopened::because(
                    ErrorKind::Handshake,
                    "the server closed the connection before answering the upgrade",
                ));
            }
        }
        Ok(())
    }

    /// Writes every queued frame.
    async fn flush(&mut self) -> Result<(), ErrorKind> {
        while !self.m.unsent().is_empty() {
            let n = self
                .io
                .write(self.m.unsent())
                .await
                .map_err(|e| io_kind(&e))?;
            if n == 0 {
                return Err(ErrorKind::Closed);
            }
            self.m.wrote(n);
        }
        self.io.flush().await.map_err(|e| io_kind(&e))
    }

    /// Reads more into the machine; 0 at the end of the stream.
    async fn read_more(&mut self) -> Result<usize, ErrorKind> {
        let spare = self.m.spare().ok_or(ErrorKind::Protocol)?;
        let n = self.io.read(spare).await.map_err(|e| io_kind(&e))?;
        self.m.got(n);
        Ok(n)
    }

    /// Reads more, the end of the stream (or a reset) counted as the server's drop.
    async fn read_or_dropped(&mut self) -> Result<(), ErrorKind> {
        match self.read_more().await {
            Ok(0) | Err(ErrorKind::Reset | ErrorKind::Closed) => Err(self.m.dropped()),
            Ok(_) => Ok(()),
            Err(kind) => Err(kind),
        }
    }

    /// One exchange of `vu`'s step (see [`Machine::begin`] and [`Machine::advance`]).
    async fn exchange(&mut self, connector: &Connector, vu: &mut Vu) -> Outcome {
        let step = &connector.workload.requests[vu.current];
        let awaiting = self.m.begin(connector, vu)?;
        loop {
            // The message, and what the frames read so far queued (pongs, a close), go out
            // before the next read; a close that ends the exchange goes as best it can.
            let outcome = self.m.advance(connector, step, &awaiting);
            let flushed = self.flush().await;
            if let Some(outcome) = outcome {
                return outcome;
            }
            flushed?;
            self.read_or_dropped().await?;
        }
    }

    /// Waits until `until` with nothing to send (see [`Machine::rest`]); false once the
    /// connection ended.
    async fn wait(&mut self, until: Instant) -> bool {
        loop {
            let ended = self.m.rest();
            if self.flush().await.is_err() {
                return false;
            }
            if let Some(open) = ended {
                return open;
            }
            let read = tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => return true,
                r = self.read_or_dropped() => r,
            };
            if read.is_err() {
                return false;
            }
        }
    }

    /// Sends a normal close (1000) and reads until the server's close or the end of the
    /// stream (RFC 6455 §7.1.1: the server closes the TCP connection first).
    async fn close_handshake(&mut self) {
        self.m.close();
        if self.flush().await.is_err() {
            return;
        }
        while !self.m.closing() {
            if self.read_or_dropped().await.is_err() {
                break;
            }
        }
        let _ = self.io.shutdown().await;
    }
}

impl Session for WsConn {
    fn share(&self) -> Option<Conn> {
        None
    }

    fn idle(&mut self, cx: &mut Context<'_>, idle_for: Duration) -> Idle {
        // What comes between messages is taken as a resting connection takes it (pings
        // answered, pushed messages counted, a close echoed: the connection is then unusable,
        // and the next request opens a fresh one). A connection whose last exchange ended a
        // moment ago is not asked (a system call per message on a busy connection): an end
        // in that moment shows on the exchange itself.
        if idle_for < JUST_USED || !self.m.has_room() {
            return Idle::Open;
        }
        let Some(spare) = self.m.spare() else {
            return Idle::Open;
        };
        let mut rb = ReadBuf::new(spare);
        let idle = match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
            Poll::Pending => Idle::Open,
            Poll::Ready(Ok(())) if !rb.filled().is_empty() => {
                let n = rb.filled().len();
                self.m.got(n);
                match self.m.rest() {
                    None => Idle::Open,
                    Some(_) => Idle::Closed,
                }
            }
            Poll::Ready(_) => {
                self.m.ended_while_idle();
                return Idle::Closed;
            }
        };
        // Pongs (or the close's echo) go as far as the socket takes them now; the rest
        // goes before the next message.
        while !self.m.unsent().is_empty() {
            match Pin::new(&mut self.io).poll_write(cx, self.m.unsent()) {
                Poll::Ready(Ok(n)) if n > 0 => self.m.wrote(n),
                _ => break,
            }
        }
        idle
    }

    fn send<'a>(
        &'a mut self,
        connector: &'a Connector,
        vu: &'a mut Vu,
        _: crate::proto::session::Tally<'a>,
    ) -> Exchange<'a> {
        Box::pin(async move { (self.exchange(connector, vu).await, 0) })
    }

    fn account(&mut self, rec: &mut stats::Bucket, ending: bool) {
        self.m.account(rec, ending);
    }

    fn rest(&mut self, until: Instant) -> Resting<'_> {
        Box::pin(self.wait(until))
    }

    fn close(&mut self, within: Duration) -> Closing<'_> {
        Box::pin(async move {
            let _ = tokio::time::timeout(within, self.close_handshake()).await;
        })
    }
}
