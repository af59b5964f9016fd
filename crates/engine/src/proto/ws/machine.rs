//! One WebSocket connection without its I/O: what it has read and not yet taken, the frames
//! it has queued to send, and every rule of an exchange (which message answers, pings
//! answered with pongs, a close echoed, a broken rule refused with brink's own close), so
//! the tokio session (`session.rs`, for TLS, pacing, subscriptions) and the epoll loop
//! (`worker/wspoll.rs`, plain `ws://` messages) measure the same thing the same way. The
//! caller reads into [`Machine::spare`] and writes [`Machine::unsent`]; nothing here blocks
//! or knows a socket. The read buffer never holds more than one frame of the message limit;
//! the queued frames are bounded by the caller ([`Machine::unsent`] before reading more).

use super::answer;
use super::frame::{self, Decoder, Event, Violation};
use super::handshake;
use crate::net::conn::Connector;
use crate::proto::reply::{Outcome, Reply, Unopened};
use stats::{ErrorKind, WsCounts};
use std::time::Instant;
use workload::{Request, Vu, WsStep};

/// The read buffer's first size (small: ten thousand held connections each keep one); it
/// doubles as frames need, to one frame of the message limit at most.
const FIRST_READ: usize = 512;
/// The most an empty read buffer keeps of what a large message grew it to.
const KEPT_READ: usize = 64 * 1024;
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
    fault: None,
};

/// An upgrade sent and awaiting its answer: the key it must prove it read, and the
/// subprotocols it offered.
pub struct Upgrade {
    key: String,
    offered: Vec<Vec<u8>>,
}

/// What an exchange waits for: the id its answer must carry (a step that matches by id).
pub struct Awaiting {
    id: Option<String>,
}

/// The state of one WebSocket connection, from its upgrade to its close.
pub struct Machine {
    /// Bytes read and not yet taken: `rbuf[start..filled]`. Frames are taken by moving
    /// `start`; what is left moves to the front once per read ([`Machine::spare`]), so a
    /// burst of tiny frames costs time linear in its bytes, not in bytes times frames.
    rbuf: Vec<u8>,
    start: usize,
    filled: usize,
    /// The most `rbuf` may grow to: the upgrade's head limit, then one frame of the message
    /// limit.
    limit: usize,
    most: usize,
    decoder: Decoder,
    /// Frames queued to send: `out[out_at..]` is not written yet.
    out: Vec<u8>,
    out_at: usize,
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
    /// The upgrade completed: only then is the connection's end (up time, how) accounted.
    upgraded: bool,
    /// Its close code is counted: every upgraded connection ends with exactly one (1006 when
    /// no close frame came: dropped, cut at the end of the run, or brink's close unanswered).
    close_counted: bool,
    /// Its end (up time, how) is accounted.
    ended: bool,
    /// The payload of the ping awaiting its pong.
    ping_id: u64,
    /// A rule was broken and brink's close queued: nothing more is read.
    broken: bool,
    /// The rule the server broke, in words (kept for the error it counts as).
    rule: Option<&'static str>,
    /// The server broke a rule outside an exchange (while the connection rested, idled or
    /// closed): one `protocol` error to count when the connection is accounted.
    violated: bool,
}

impl Machine {
    pub fn new(max_message: usize) -> Machine {
        Machine {
            rbuf: vec![0; FIRST_READ],
            start: 0,
            filled: 0,
            limit: handshake::MAX_HEAD,
            most: max_message.saturating_add(MOST_HEADER),
            decoder: Decoder::new(max_message),
            out: Vec::new(),
            out_at: 0,
            msg: Vec::new(),
            rng: seed(),
            bytes_in: 0,
            bytes_out: 0,
            counts: WsCounts::default(),
            up_since: Instant::now(),
            server_ended: false,
            upgraded: false,
            close_counted: false,
            ended: false,
            ping_id: 0,
            broken: false,
            violated: false,
            rule: None,
        }
    }

    /// Queues the upgrade request of `vu`'s current request (its path and headers).
    pub fn upgrade(&mut self, connector: &Connector, vu: &mut Vu) -> Result<Upgrade, Unopened> {
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
        let mut random = [0u8; 16];
        for chunk in random.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_random().to_ne_bytes());
        }
        let key = handshake::key(random);
        self.out.extend_from_slice(&handshake::request(
            &path,
            &connector.authority,
            &key,
            &headers,
        ));
        // The subprotocols the request offers (a Sec-WebSocket-Protocol header of the step's).
        let offered = headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("sec-websocket-protocol"))
            .flat_map(|(_, v)| v.split(|&b| b == b','))
            .map(|t| t.trim_ascii().to_vec())
            .collect();
        Ok(Upgrade { key, offered })
    }

    /// Whether the upgrade's answer has come (what follows its head stays in the buffer: a
    /// server may speak first); a refused or wrong answer is a `handshake` failure.
    pub fn upgraded(&mut self, up: &Upgrade) -> Result<bool, Unopened> {
        let offered: Vec<&[u8]> = up.offered.iter().map(Vec::as_slice).collect();
        match handshake::answer(&self.rbuf[self.start..self.filled], &up.key, &offered) {
            Ok(Some(n)) => {
                self.take(n);
                self.up_since = Instant::now();
                self.limit = self.most;
                self.upgraded = true;
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(refused) => Err(self.unopened(Unopened {
                refused: refused.status(),
                ..Unopened::because(ErrorKind::Handshake, refused.why())
            })),
        }
    }

    /// `failed`, with the bytes the attempt carried.
    pub fn unopened(&self, failed: Unopened) -> Unopened {
        Unopened {
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            ..failed
        }
    }

    /// Where the next read goes, the buffer grown as far as its limit; `None` when it is
    /// full at its limit (a frame longer than the limit is refused from its header, so only
    /// an upgrade's endless head comes here).
    pub fn spare(&mut self) -> Option<&mut [u8]> {
        self.compact();
        if self.filled == self.rbuf.len() {
            if self.rbuf.len() >= self.limit {
                return None;
            }
            let grown = (self.rbuf.len() * 2).min(self.limit);
            self.rbuf.resize(grown, 0);
        }
        Some(&mut self.rbuf[self.filled..])
    }

    /// `n` bytes were read into [`Machine::spare`].
    pub fn got(&mut self, n: usize) {
        self.filled += n;
        self.bytes_in += n as u64;
    }

    /// Whether the read buffer has room without growing: a connection between exchanges
    /// reads only that far (what comes between messages is kept for the next exchange, and
    /// a server that floods an idle connection fills nothing beyond it).
    pub fn has_room(&self) -> bool {
        self.filled - self.start < self.rbuf.len()
    }

    /// The queued bytes not written yet.
    pub fn unsent(&self) -> &[u8] {
        &self.out[self.out_at..]
    }

    /// `n` of the queued bytes were written.
    pub fn wrote(&mut self, n: usize) {
        self.out_at += n;
        self.bytes_out += n as u64;
        if self.out_at == self.out.len() {
            self.out.clear();
            self.out_at = 0;
        }
    }

    /// Starts `vu`'s exchange: its message (rendered; text when it is UTF-8, else binary)
    /// or a ping queued; a subscription sends nothing. A message that cannot be rendered, or
    /// has no id when the step matches by id, is refused, never sent.
    pub fn begin(&mut self, connector: &Connector, vu: &mut Vu) -> Result<Awaiting, ErrorKind> {
        let id = match connector.workload.requests[vu.current].ws {
            WsStep::Message => self.queue_message(connector, vu)?,
            WsStep::Ping => {
                self.ping_id += 1;
                self.queue(frame::PING, &self.ping_id.to_be_bytes());
                None
            }
            WsStep::Await => None,
        };
        Ok(Awaiting { id })
    }

    /// Queues `vu`'s message (a subscription's, sent once as the connection opens, too).
    pub fn queue_message(
        &mut self,
        connector: &Connector,
        vu: &mut Vu,
    ) -> Result<Option<String>, ErrorKind> {
        let mut msg = std::mem::take(&mut self.msg);
        msg.clear();
        let rendered = vu
            .render_body(&connector.workload, &mut msg)
            .and_then(|()| answer::id_of(&connector.workload.requests[vu.current], &msg));
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
        self.queue(opcode, &msg);
        self.msg = msg;
        self.counts.sent += 1;
        Ok(id)
    }

    /// Takes the buffered frames of the exchange `step` started: its outcome once its answer
    /// (or a close, or a broken rule) came; `None` while it needs more bytes. Pings are
    /// answered (queued pongs), other messages and pongs counted and passed over.
    pub fn advance(
        &mut self,
        connector: &Connector,
        step: &Request,
        awaiting: &Awaiting,
    ) -> Option<Outcome> {
        loop {
            let event = match self.next_event() {
                Ok(Some(e)) => e,
                Ok(None) => return None,
                Err(kind) => return Some(Err(kind)),
            };
            match event {
                Event::Message { data, .. } if step.ws != WsStep::Ping => {
                    if !answer::answers(step, awaiting.id.as_deref(), &data) {
                        self.decoder.recycle(data);
                        continue;
                    }
                    if let Some(path) = &step.sent_at {
                        self.date(path, &data);
                    }
                    let kept = answer::kept(connector, step, &data);
                    self.decoder.recycle(data);
                    return Some(Ok((REPLY, kept)));
                }
                Event::Pong(p) if step.ws == WsStep::Ping && p == self.ping_id.to_be_bytes() => {
                    return Some(Ok((REPLY, None)))
                }
                // A message pushed while a ping waits, an unsolicited pong: counted, no answer.
                Event::Message { .. } | Event::Pong(_) => {}
                Event::Ping(p) => self.queue(frame::PONG, &p),
                Event::Close { code, .. } => {
                    self.answer_close(code);
                    return Some(Err(ErrorKind::Closed));
                }
            }
        }
    }

    /// Takes the buffered frames while nothing is awaited (a paced connection resting):
    /// pings answered, pushed messages counted, a close echoed. `Some(false)` once the
    /// connection ended; `None` while it stays open and needs more bytes.
    pub fn rest(&mut self) -> Option<bool> {
        loop {
            match self.next_event() {
                Ok(None) => return None,
                Ok(Some(Event::Ping(p))) => self.queue(frame::PONG, &p),
                Ok(Some(Event::Message { data, .. })) => self.decoder.recycle(data),
                Ok(Some(Event::Pong(_))) => {}
                Ok(Some(Event::Close { code, .. })) => {
                    self.answer_close(code);
                    return Some(false);
                }
                Err(kind) => {
                    self.violated |= kind == ErrorKind::Protocol;
                    return Some(false);
                }
            }
        }
    }

    /// Queues brink's normal close (1000): the close handshake brink starts.
    pub fn close(&mut self) {
        self.queue(frame::CLOSE, &frame::close_payload(1000));
    }

    /// Takes the buffered frames while brink's close awaits the server's: true once it came
    /// (or a rule was broken: nothing more is read).
    pub fn closing(&mut self) -> bool {
        loop {
            match self.next_event() {
                Ok(Some(Event::Close { .. })) => return true,
                Ok(Some(_)) => {}
                Ok(None) => return false,
                Err(kind) => {
                    self.violated |= kind == ErrorKind::Protocol;
                    return true;
                }
            }
        }
    }

    /// The connection ended (end of stream, a reset) while brink read it: without a close
    /// frame, so 1006, ended by the server. What it counts as.
    pub fn dropped(&mut self) -> ErrorKind {
        self.closed_with(1006);
        self.server_ended = true;
        ErrorKind::Closed
    }

    /// Counts the connection's close code, once.
    fn closed_with(&mut self, code: u16) {
        if !std::mem::replace(&mut self.close_counted, true) {
            self.counts.closes.add(code, 1);
        }
    }

    /// The server ended the connection between messages: its close code, if a close frame
    /// came before the end (what else came is counted as it is read), else 1006.
    /// A frame that breaks a rule is a `protocol` error, with no close code of its own.
    pub fn ended_while_idle(&mut self) {
        self.server_ended = true;
        let mut at = self.start;
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
                Ok(None) => return self.closed_with(1006),
                Err(v) => {
                    self.violated = true;
                    self.rule = Some(v.rule());
                    return;
                }
            }
        }
    }

    /// Adds what the connection carried since it was last accounted to `rec`: its bytes,
    /// messages, pings and close codes, a rule broken outside an exchange, and once
    /// `ending` (the connection is dropped now) how long it was up and whether the server
    /// ended it.
    pub fn account(&mut self, rec: &mut stats::Bucket, ending: bool) {
        rec.bytes_in += std::mem::take(&mut self.bytes_in);
        rec.bytes_out += std::mem::take(&mut self.bytes_out);
        if std::mem::take(&mut self.violated) {
            rec.record_error(ErrorKind::Protocol);
            // Said here, from the connection's own record: the thread's may be another's.
            crate::why::forget();
            rec.note_answer_failure(
                ErrorKind::Protocol,
                self.rule.unwrap_or("a frame broke RFC 6455"),
            );
        }
        if ending && !self.ended && self.upgraded {
            self.ended = true;
            // Ended without a close frame from the server: abnormal (RFC 6455 §7.1.5).
            self.closed_with(1006);
            let up = self.up_since.elapsed().as_micros();
            self.counts.record_up(u64::try_from(up).unwrap_or(u64::MAX));
            if self.server_ended {
                self.counts.unexpected += 1;
            }
        }
        rec.record_ws(&std::mem::take(&mut self.counts));
    }

    /// The next event the server sent, from the buffer; a broken rule is answered with a
    /// close frame, and nothing is read after it.
    fn next_event(&mut self) -> Result<Option<Event>, ErrorKind> {
        if self.broken {
            return Err(crate::why::protocol(
                self.rule.unwrap_or("a frame broke RFC 6455"),
            ));
        }
        loop {
            match self.decoder.next(&self.rbuf[self.start..self.filled]) {
                Ok(Some((n, event))) => {
                    self.take(n);
                    if let Some(e) = event {
                        self.count(&e);
                        return Ok(Some(e));
                    }
                }
                Ok(None) => return Ok(None),
                Err(v) => return Err(self.refuse(v)),
            }
        }
    }

    /// Closes with the code `v` calls for; the exchange counts as a protocol error (brink
    /// ended the connection: it is not counted as ended by the server).
    fn refuse(&mut self, v: Violation) -> ErrorKind {
        self.broken = true;
        self.rule = Some(v.rule());
        self.queue(frame::CLOSE, &frame::close_payload(v.close_code()));
        crate::why::protocol(v.rule())
    }

    /// The server closes: the close handshake echoes its code (RFC 6455 §5.5.1).
    fn answer_close(&mut self, code: Option<u16>) {
        self.server_ended = true;
        self.queue(frame::CLOSE, &frame::close_payload(code.unwrap_or(1000)));
    }

    /// Counts what the server sent.
    fn count(&mut self, e: &Event) {
        match e {
            Event::Message { .. } => self.counts.received += 1,
            Event::Ping(_) => self.counts.pings += 1,
            Event::Pong(_) => {}
            Event::Close { code, .. } => self.closed_with(code.unwrap_or(1005)),
        }
    }

    /// A pushed message's delivery delay, from the send time it carries at `path`.
    fn date(&mut self, path: &serde_json_path::JsonPath, data: &[u8]) {
        match crate::proto::sent_at::delay_us(path, data, std::time::SystemTime::now()) {
            Some(us) => self.counts.record_delay(us),
            None => self.counts.undated += 1,
        }
    }

    /// Queues one masked frame.
    fn queue(&mut self, opcode: u8, payload: &[u8]) {
        let key = (self.next_random() as u32).to_ne_bytes();
        frame::encode(opcode, payload, key, &mut self.out);
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: masking keys need to be unpredictable to a proxy, not secret.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Drops the first `n` buffered bytes (moves no byte: see [`Machine::compact`]).
    fn take(&mut self, n: usize) {
        self.start += n;
    }

    /// Moves the bytes not yet taken to the front of the buffer, before a read. An empty
    /// buffer grown past [`KEPT_READ`] by a large message goes back to its first size, so
    /// ten thousand connections that each once read a large message do not each keep it.
    fn compact(&mut self) {
        if self.start == self.filled {
            (self.start, self.filled) = (0, 0);
            if self.rbuf.len() > KEPT_READ {
                self.rbuf = vec![0; FIRST_READ];
            }
        } else if self.start > 0 {
            self.rbuf.copy_within(self.start..self.filled, 0);
            self.filled -= self.start;
            self.start = 0;
        }
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
