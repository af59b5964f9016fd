//! WebSocket as a [`Session`] of the tokio worker: the upgrade made once per connection
//! (its time kept apart from the messages'), then each request a message sent and its answer
//! awaited (the next data message; pings are answered with pongs on the way, a close ends
//! the exchange as `closed` with the server's code, a broken rule ends it as `protocol`
//! after brink's own close frame). The read buffer never holds more than one frame of the
//! message limit.

use super::frame::{self, Decoder, Event, Violation};
use super::handshake;
use crate::net::conn::{Connector, Stream};
use crate::proto::reply::{io_kind, Idle, Outcome, Reply, Unopened};
use crate::proto::session::{Closing, Conn, Exchange, Resting, Session};
use stats::{ErrorKind, WsCounts};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use workload::{Vu, WsStep};

/// The read buffer's first size (small: ten thousand held connections each keep one); it
/// doubles as frames need, to one frame of the message limit at most.
const FIRST_READ: usize = 512;
/// How recently a connection must have finished an exchange to skip the idle check.
const JUST_USED: Duration = Duration::from_millis(1);
/// The header bytes a frame may add to its payload.
const MOST_HEADER: usize = 14;
/// An answered message: status 101 is the upgrade's, the one HTTP status a WebSocket
/// message travels under. Its bytes are counted by the connection, not per answer.
const REPLY: Reply = Reply {
    status: 101,
    bytes_in: 0,
    keep_alive: true,
    stray: false,
    call: None,
};

/// One upgraded connection.
pub struct WsConn {
    io: Stream,
    /// Bytes read and not yet taken: `rbuf[..filled]`.
    rbuf: Vec<u8>,
    filled: usize,
    decoder: Decoder,
    /// The most a frame may take in `rbuf`.
    most: usize,
    wbuf: Vec<u8>,
    msg: Vec<u8>,
    /// xorshift state for masking keys (seeded from the system's randomness).
    rng: u64,
    /// Bytes read and written since the connection was last accounted: every byte it
    /// carried (the upgrade, the frames of failed and unfinished exchanges too).
    bytes_in: u64,
    bytes_out: u64,
    /// What the connection carried since it was last accounted.
    counts: WsCounts,
    /// When the upgrade completed.
    up_since: Instant,
    /// The server ended the connection (a close, a drop, a broken rule).
    server_ended: bool,
    /// Its end (up time, how) is accounted.
    ended: bool,
    /// The payload of the ping awaiting its pong.
    ping_id: u64,
    /// A rule was broken and brink's close sent: nothing more is read.
    broken: bool,
    /// The server broke a rule outside an exchange (while the connection rested, idled or
    /// closed): one `protocol` error to count when the connection is accounted.
    violated: bool,
}

/// Upgrades `stream` with `vu`'s current request (its path and headers) and returns the
/// session and how long the upgrade took; refused or wrong answers are `handshake` errors.
pub async fn session(
    stream: Stream,
    connector: &Connector,
    vu: &mut Vu,
) -> Result<(Conn, Duration), Unopened> {
    let started = Instant::now();
    let (path, values) = vu.render_head(&connector.workload).map_err(|r| {
        vu.refused = Some(r);
        ErrorKind::InvalidRequest
    })?;
    let step = &connector.workload.requests[vu.current];
    let headers: Vec<(&str, &[u8])> = step
        .headers
        .iter()
        .zip(&values)
        .map(|((n, _), v)| (n.as_str(), v.as_slice()))
        .collect();
    let mut conn = WsConn::new(stream, connector.max_message);
    let mut random = [0u8; 16];
    for chunk in random.chunks_mut(8) {
        chunk.copy_from_slice(&conn.next_random().to_ne_bytes());
    }
    let key = handshake::key(random);
    let req = handshake::request(&path, &connector.authority, &key, &headers);
    // The subprotocols the request offers (a Sec-WebSocket-Protocol header of the step's).
    let offered: Vec<&[u8]> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("sec-websocket-protocol"))
        .flat_map(|(_, v)| v.split(|&b| b == b','))
        .map(|t| t.trim_ascii())
        .collect();
    let upgrade = conn.upgrade(&req, &key, &offered);
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
        return Err(Unopened {
            bytes_in: conn.bytes_in,
            bytes_out: conn.bytes_out,
            ..failed
        });
    }
    let took = started.elapsed();
    let step = &connector.workload.requests[vu.current];
    if step.ws == WsStep::Await && !step.body.is_empty() {
        // A subscription's message (when it has one) goes once, as the connection opens.
        conn.send_message(connector, vu).await?;
    }
    Ok((Box::new(conn), took))
}

impl WsConn {
    fn new(io: Stream, max_message: usize) -> WsConn {
        let rng = seed();
        WsConn {
            io,
            rbuf: vec![0; FIRST_READ],
            filled: 0,
            decoder: Decoder::new(max_message),
            most: max_message.saturating_add(MOST_HEADER),
            wbuf: Vec::new(),
            msg: Vec::new(),
            rng,
            bytes_in: 0,
            bytes_out: 0,
            counts: WsCounts::default(),
            up_since: Instant::now(),
            server_ended: false,
            ended: false,
            ping_id: 0,
            broken: false,
            violated: false,
        }
    }

    /// Sends the upgrade request and reads its answer; what follows the answer's head stays
    /// in the buffer (a server may speak first).
    async fn upgrade(&mut self, req: &[u8], key: &str, offered: &[&[u8]]) -> Result<(), Unopened> {
        self.io.write_all(req).await.map_err(|e| io_kind(&e))?;
        self.bytes_out += req.len() as u64;
        loop {
            match handshake::answer(&self.rbuf[..self.filled], key, offered) {
                Ok(Some(n)) => {
                    self.take(n);
                    self.up_since = Instant::now();
                    return Ok(());
                }
                Ok(None) => {
                    if self.read_more(handshake::MAX_HEAD).await? == 0 {
                        return Err(Unopened::because(
                            ErrorKind::Handshake,
                            "the server closed the connection before answering the upgrade",
                        ));
                    }
                }
                Err(refused) => {
                    return Err(Unopened {
                        refused: refused.status(),
                        ..Unopened::because(ErrorKind::Handshake, refused.why())
                    })
                }
            }
        }
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: masking keys need to be unpredictable to a proxy, not secret.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn mask_key(&mut self) -> [u8; 4] {
        (self.next_random() as u32).to_ne_bytes()
    }

    /// Drops the first `n` buffered bytes.
    fn take(&mut self, n: usize) {
        self.rbuf.copy_within(n..self.filled, 0);
        self.filled -= n;
    }

    /// Reads more into the buffer, growing it up to `most`; 0 at the end of the stream.
    async fn read_more(&mut self, most: usize) -> Result<usize, ErrorKind> {
        if self.filled == self.rbuf.len() {
            if self.rbuf.len() >= most {
                return Err(ErrorKind::Protocol);
            }
            let grown = (self.rbuf.len() * 2).min(most);
            self.rbuf.resize(grown, 0);
        }
        let n = self
            .io
            .read(&mut self.rbuf[self.filled..])
            .await
            .map_err(|e| io_kind(&e))?;
        self.filled += n;
        self.bytes_in += n as u64;
        Ok(n)
    }

    /// Writes one masked frame.
    async fn write_frame(&mut self, opcode: u8, payload: &[u8]) -> Result<(), ErrorKind> {
        let key = self.mask_key();
        self.wbuf.clear();
        frame::encode(opcode, payload, key, &mut self.wbuf);
        self.io
            .write_all(&self.wbuf)
            .await
            .map_err(|e| io_kind(&e))?;
        self.bytes_out += self.wbuf.len() as u64;
        Ok(())
    }

    /// The next event the server sends; a broken rule is answered with a close frame.
    async fn event(&mut self) -> Result<Event, ErrorKind> {
        if self.broken {
            return Err(ErrorKind::Protocol);
        }
        loop {
            match self.decoder.next(&self.rbuf[..self.filled]) {
                Ok(Some((n, event))) => {
                    self.take(n);
                    if let Some(e) = event {
                        self.count(&e);
                        return Ok(e);
                    }
                }
                Ok(None) => match self.read_more(self.most).await {
                    Ok(0) | Err(ErrorKind::Reset | ErrorKind::Closed) => {
                        // The connection ended without a close frame.
                        self.counts.closes.add(1006, 1);
                        self.server_ended = true;
                        return Err(ErrorKind::Closed);
                    }
                    Ok(_) => {}
                    Err(kind) => return Err(kind),
                },
                Err(v) => return Err(self.refuse(v).await),
            }
        }
    }

    /// The server ended the connection between messages: its close code, if a close frame
    /// came before the end (what else came is counted as it is read), else 1006.
    /// A frame that breaks a rule is a `protocol` error, with no close code of its own.
    fn ended_while_idle(&mut self) {
        self.server_ended = true;
        let mut at = 0;
        loop {
            match self.decoder.next(&self.rbuf[at..self.filled]) {
                Ok(Some((n, event))) => {
                    at += n;
                    match event {
                        Some(e @ Event::Close { .. }) => return self.count(&e),
                        Some(e) => self.count(&e),
                        None => {}
                    }
                }
                Ok(None) => return self.counts.closes.add(1006, 1),
                Err(_) => {
                    self.violated = true;
                    return;
                }
            }
        }
    }

    /// Counts what the server sent.
    fn count(&mut self, e: &Event) {
        match e {
            Event::Message { .. } => self.counts.received += 1,
            Event::Ping(_) => self.counts.pings += 1,
            Event::Pong(_) => {}
            Event::Close { code, .. } => self.counts.closes.add(code.unwrap_or(1005), 1),
        }
    }

    /// Closes with the code `v` calls for; the exchange counts as a protocol error (brink
    /// ended the connection: it is not counted as ended by the server).
    async fn refuse(&mut self, v: Violation) -> ErrorKind {
        self.broken = true;
        let code = frame::close_payload(v.close_code());
        let _ = self.write_frame(frame::CLOSE, &code).await;
        ErrorKind::Protocol
    }

    /// One exchange of `vu`'s step: its message sent and its answer awaited (the next data
    /// message, or the first whose id matches the message's), a ping and its pong, or (a
    /// subscription) the next message the server pushes. The answer is kept when the step's
    /// extractions or checks read it. Its bytes are the connection's, counted as they move
    /// ([`Session::account`]).
    async fn exchange(&mut self, connector: &Connector, vu: &mut Vu) -> Outcome {
        let step = &connector.workload.requests[vu.current];
        let id = match step.ws {
            WsStep::Message => self.send_message(connector, vu).await?,
            WsStep::Ping => self.send_ping().await.map(|()| None)?,
            WsStep::Await => None,
        };
        loop {
            match self.event().await {
                Ok(Event::Message { data, .. }) if step.ws != WsStep::Ping => {
                    if !super::answer::answers(step, id.as_deref(), &data) {
                        continue;
                    }
                    if let Some(path) = &step.sent_at {
                        self.date(path, &data);
                    }
                    return Ok((REPLY, super::answer::kept(connector, step, &data)));
                }
                Ok(Event::Pong(p))
                    if step.ws == WsStep::Ping && p == self.ping_id.to_be_bytes() =>
                {
                    return Ok((REPLY, None))
                }
                // A message pushed while a ping waits, an unsolicited pong: counted, no answer.
                Ok(Event::Message { .. } | Event::Pong(_)) => {}
                Ok(Event::Ping(p)) => self.write_frame(frame::PONG, &p).await?,
                Ok(Event::Close { code, .. }) => {
                    self.answer_close(code).await;
                    return Err(ErrorKind::Closed);
                }
                Err(kind) => return Err(kind),
            }
        }
    }

    /// The server closes: the close handshake echoes its code (RFC 6455 §5.5.1).
    async fn answer_close(&mut self, code: Option<u16>) {
        self.server_ended = true;
        let echo = frame::close_payload(code.unwrap_or(1000));
        let _ = self.write_frame(frame::CLOSE, &echo).await;
    }

    /// Waits until `until` with nothing to send: pings are answered, pushed messages counted,
    /// a close answered; false once the connection ended.
    async fn wait(&mut self, until: Instant) -> bool {
        loop {
            let event = tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => return true,
                e = self.event() => e,
            };
            match event {
                Ok(Event::Ping(p)) => {
                    if self.write_frame(frame::PONG, &p).await.is_err() {
                        return false;
                    }
                }
                Ok(Event::Message { .. } | Event::Pong(_)) => {}
                Ok(Event::Close { code, .. }) => {
                    self.answer_close(code).await;
                    return false;
                }
                Err(kind) => {
                    self.violated |= kind == ErrorKind::Protocol;
                    return false;
                }
            }
        }
    }

    /// A pushed message's delivery delay, from the send time it carries at `path`.
    fn date(&mut self, path: &serde_json_path::JsonPath, data: &[u8]) {
        match super::sent_at::delay_us(path, data, std::time::SystemTime::now()) {
            Some(us) => self.counts.record_delay(us),
            None => self.counts.undated += 1,
        }
    }

    /// Renders and sends `vu`'s message (text when it is UTF-8, else binary); its id, when
    /// the step matches answers by id. A message without one is refused, never sent.
    async fn send_message(
        &mut self,
        connector: &Connector,
        vu: &mut Vu,
    ) -> Result<Option<String>, ErrorKind> {
        let mut msg = std::mem::take(&mut self.msg);
        msg.clear();
        let rendered = vu
            .render_body(&connector.workload, &mut msg)
            .and_then(|()| super::answer::id_of(&connector.workload.requests[vu.current], &msg));
        let id = match rendered {
            Ok(id) => id,
            Err(r) => {
                vu.refused = Some(r);
                self.msg = msg;
                return Err(ErrorKind::InvalidRequest);
            }
        };
        let opcode = match std::str::from_utf8(&msg) {
            Ok(_) => frame::TEXT,
            Err(_) => frame::BINARY,
        };
        let sent = self.write_frame(opcode, &msg).await;
        self.msg = msg;
        sent?;
        self.counts.sent += 1;
        Ok(id)
    }

    /// Sends a ping whose payload is its number on this connection.
    async fn send_ping(&mut self) -> Result<(), ErrorKind> {
        self.ping_id += 1;
        self.write_frame(frame::PING, &self.ping_id.to_be_bytes())
            .await
    }

    /// Sends a normal close (1000) and reads until the server's close or the end of the
    /// stream (RFC 6455 §7.1.1: the server closes the TCP connection first).
    async fn close_handshake(&mut self) {
        if self
            .write_frame(frame::CLOSE, &frame::close_payload(1000))
            .await
            .is_err()
        {
            return;
        }
        loop {
            match self.event().await {
                Ok(Event::Close { .. }) => break,
                Ok(_) => {}
                Err(kind) => {
                    self.violated |= kind == ErrorKind::Protocol;
                    break;
                }
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
        // Bytes that come between messages (a ping, a pushed message) are kept for the next
        // exchange; only the end of the stream makes the connection unusable. A connection
        // whose last exchange ended a moment ago is not asked (a system call per message on
        // a busy connection): an end in that moment shows on the exchange itself.
        if self.filled == self.rbuf.len() || idle_for < JUST_USED {
            return Idle::Open;
        }
        let mut rb = ReadBuf::new(&mut self.rbuf[self.filled..]);
        match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
            Poll::Pending => Idle::Open,
            Poll::Ready(Ok(())) if !rb.filled().is_empty() => {
                self.filled += rb.filled().len();
                Idle::Open
            }
            Poll::Ready(_) => {
                self.ended_while_idle();
                Idle::Closed
            }
        }
    }

    fn send<'a>(&'a mut self, connector: &'a Connector, vu: &'a mut Vu) -> Exchange<'a> {
        Box::pin(async move { (self.exchange(connector, vu).await, 0) })
    }

    fn account(&mut self, rec: &mut stats::Bucket, ending: bool) {
        rec.bytes_in += std::mem::take(&mut self.bytes_in);
        rec.bytes_out += std::mem::take(&mut self.bytes_out);
        if std::mem::take(&mut self.violated) {
            rec.record_error(ErrorKind::Protocol);
        }
        if ending && !self.ended {
            self.ended = true;
            let up = self.up_since.elapsed().as_micros();
            self.counts.record_up(u64::try_from(up).unwrap_or(u64::MAX));
            if self.server_ended {
                self.counts.unexpected += 1;
            }
        }
        rec.record_ws(&std::mem::take(&mut self.counts));
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

/// A masking seed from the system's randomness (the clock if it has none).
fn seed() -> u64 {
    let mut b = [0u8; 8];
    match ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b) {
        Ok(()) => u64::from_ne_bytes(b) | 1,
        Err(_) => {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64);
            t | 1
        }
    }
}
