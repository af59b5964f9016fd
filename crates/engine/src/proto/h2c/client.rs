//! One HTTP/2 client connection, sans I/O: requests go in as streams ([`Client::open`]),
//! bytes from the server go in through [`Client::feed`], bytes to write collect in
//! [`Client::out`], and finished streams come out as [`Event`]s. The epoll worker drives it.
//!
//! As strict as hyper's h2: frames over 16 KiB, a header block over 64 KiB (however many
//! CONTINUATION frames carry it), a decoded header list over 64 KiB, padding past a frame's
//! end, push promises (disabled in our SETTINGS), SETTINGS out of range (ENABLE_PUSH not 0,
//! MAX_FRAME_SIZE outside 2^14..2^24-1), a window pushed past 2^31-1, a frame on a stream
//! brink never opened, and a flood end the connection as a protocol error. A flood is more
//! than [`MAX_CONTROL`] frames that ask nothing of a stream brink waits on (SETTINGS, PING,
//! WINDOW_UPDATE, RST_STREAM, PRIORITY, unknown types, data for a stream brink gave up on)
//! between two signs of progress: a response completed, or [`PROGRESS`] bytes of data for a
//! stream brink waits on (so a byte of data buys no more control frames). Answers owed to a
//! server that does not read are bounded too: past [`MAX_OWED`] bytes of PING and SETTINGS
//! acknowledgements not yet written, the connection is a protocol error, never a growing
//! buffer. A response whose header block breaks RFC 9113's rules ([`super::fields`]), whose
//! body disagrees with its `content-length`, or whose trailers do not end the stream fails as
//! a protocol error. A stream the server resets fails (REFUSED_STREAM, or a GOAWAY that
//! excludes it, hands it back unprocessed, to send again); a window that never opens leaves
//! the request to its timeout.

use super::fields::Check;
use super::frame::{self as f, Head};
use super::hpack::Decoder;
use crate::proto::events::{EventRule, Events};
use crate::proto::reply::Reply;
use bytes::Bytes;
use stats::ErrorKind;
use std::time::Instant;

/// The largest header block (all its frames) and decoded header list accepted.
pub const MAX_HEADER_BLOCK: usize = 64 << 10;
/// Control frames accepted between two signs of progress (a response completed, or
/// [`PROGRESS`] bytes of data for a stream brink waits on): more is a flood.
pub const MAX_CONTROL: u32 = 1024;
/// Data for streams brink waits on that counts as progress against a flood.
pub const PROGRESS: u64 = 16 << 10;
/// Bytes of acknowledgements (PING, SETTINGS) owed and not yet written that a connection may
/// hold: a server that asks and never reads is past it soon.
pub const MAX_OWED: usize = 64 << 10;
/// Bytes waiting to be written past which no more request body is queued and no stream
/// opened, until the socket takes them: a server that answers without reading cannot make
/// brink copy every body it would send into memory.
pub const OUT_HIGH: usize = 1 << 20;
/// Interim (1xx) answers accepted on one stream.
const MAX_INTERIM: u32 = 16;
/// Streams open before the server's SETTINGS says how many it takes.
const FIRST_STREAMS: usize = 100;
/// Data received before the connection's window is topped up again.
const TOP_UP: u64 = 1 << 30;

/// What became of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The response is complete.
    Done(usize, Reply),
    /// The stream failed.
    Failed(usize, ErrorKind),
    /// The server never processed the request (REFUSED_STREAM, or a GOAWAY below it): safe to
    /// send again.
    Unprocessed(usize),
}

struct Stream {
    id: u32,
    /// The caller's slot.
    slot: usize,
    status: u16,
    interim: u32,
    bytes_in: u64,
    /// The server's window for this stream's request body.
    window: i64,
    body: Bytes,
    sent: usize,
    /// The request was HEAD: a `content-length` describes a body that is not sent.
    head: bool,
    /// The response's `content-length`.
    length: Option<u64>,
    /// Its events, when its head said `text/event-stream`.
    events: Option<Box<Events>>,
}

pub struct Client {
    /// Bytes to write, in order.
    pub out: Vec<u8>,
    /// Received bytes not yet a whole frame.
    buf: Vec<u8>,
    decoder: Decoder,
    streams: Vec<Stream>,
    next_id: u32,
    max_streams: usize,
    peer_window: i64,
    send_window: i64,
    received: u64,
    /// A header block being assembled: its stream, END_STREAM, and its bytes.
    block_stream: u32,
    block_end: bool,
    block: Vec<u8>,
    control: u32,
    /// Data for waited streams since the flood count was last cleared.
    progress: u64,
    /// Acknowledgement bytes added to `out` since it was last written out in full.
    owed: usize,
    /// Some body was held back by [`OUT_HIGH`].
    held: bool,
    /// The last stream a GOAWAY said the server processes.
    goaway: Option<u32>,
    pub events: Vec<Event>,
    /// The events of answers completed since last taken, by the caller's slot.
    pub answered_events: Vec<(usize, Box<Events>)>,
    /// Which answers are read as events.
    pub event_rule: EventRule,
}

impl Default for Client {
    fn default() -> Self {
        Self::new()
    }
}

impl Client {
    /// A connection whose preface and SETTINGS are in [`Client::out`]: no push, the largest
    /// windows (brink reads everything at once, so the server is never held back by them).
    pub fn new() -> Client {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(f::PREFACE);
        let settings: [(u16, u32); 3] = [
            (0x2, 0),                       // ENABLE_PUSH
            (0x4, f::MAX_WINDOW as u32),    // INITIAL_WINDOW_SIZE
            (0x6, MAX_HEADER_BLOCK as u32), // MAX_HEADER_LIST_SIZE
        ];
        f::put_head(&mut out, settings.len() * 6, f::SETTINGS, 0, 0);
        for (id, v) in settings {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&v.to_be_bytes());
        }
        f::put_u32(
            &mut out,
            f::WINDOW_UPDATE,
            0,
            (f::MAX_WINDOW - 65_535) as u32,
        );
        Client {
            out,
            buf: Vec::new(),
            decoder: Decoder::default(),
            streams: Vec::new(),
            next_id: 1,
            max_streams: FIRST_STREAMS,
            peer_window: 65_535,
            send_window: 65_535,
            received: 0,
            block_stream: 0,
            block_end: false,
            block: Vec::new(),
            control: 0,
            progress: 0,
            owed: 0,
            held: false,
            goaway: None,
            events: Vec::new(),
            answered_events: Vec::new(),
            event_rule: EventRule::default(),
        }
    }

    /// Whether another stream may be opened now.
    pub fn can_open(&self) -> bool {
        self.goaway.is_none()
            && self.streams.len() < self.max_streams
            && self.next_id < 0x7fff_fff0
            && self.out.len() < OUT_HIGH
    }

    /// Whether the connection takes no more streams (a GOAWAY, or its stream ids used up).
    pub fn draining(&self) -> bool {
        self.goaway.is_some() || self.next_id >= 0x7fff_fff0
    }

    /// Streams in flight.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Everything in [`Client::out`] was written: it empties, no answer is owed, and bodies
    /// held back by [`OUT_HIGH`] go on.
    pub fn flushed(&mut self) {
        self.out.clear();
        self.owed = 0;
        if std::mem::take(&mut self.held) {
            for i in 0..self.streams.len() {
                self.pump(i);
            }
        }
    }

    /// Opens a stream for `slot`: the header block `block` (see [`f::request_block`]) and
    /// `body`, as far as the windows let it go; `head` for a HEAD request.
    pub fn open(&mut self, slot: usize, block: &[u8], body: Bytes, head: bool) {
        let id = self.next_id;
        self.next_id += 2;
        let end = if body.is_empty() { f::END_STREAM } else { 0 };
        let mut rest = block;
        let mut kind = f::HEADERS;
        loop {
            let n = rest.len().min(f::MAX_FRAME);
            let last = n == rest.len();
            let flags =
                if last { f::END_HEADERS } else { 0 } | if kind == f::HEADERS { end } else { 0 };
            f::put_head(&mut self.out, n, kind, flags, id);
            self.out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            kind = f::CONTINUATION;
            if last {
                break;
            }
        }
        self.streams.push(Stream {
            id,
            slot,
            status: 0,
            interim: 0,
            bytes_in: 0,
            window: self.peer_window,
            body,
            sent: 0,
            head,
            length: None,
            events: None,
        });
        let i = self.streams.len() - 1;
        self.pump(i);
    }

    /// Sends what the windows allow of stream `i`'s body.
    fn pump(&mut self, i: usize) {
        let s = &mut self.streams[i];
        while s.sent < s.body.len() {
            let room = s.window.min(self.send_window);
            if room <= 0 {
                return;
            }
            if self.out.len() >= OUT_HIGH {
                self.held = true;
                return;
            }
            let n = (s.body.len() - s.sent).min(f::MAX_FRAME).min(room as usize);
            let last = s.sent + n == s.body.len();
            f::put_head(
                &mut self.out,
                n,
                f::DATA,
                if last { f::END_STREAM } else { 0 },
                s.id,
            );
            self.out.extend_from_slice(&s.body[s.sent..s.sent + n]);
            s.sent += n;
            s.window -= n as i64;
            self.send_window -= n as i64;
        }
    }

    /// Gives up on `slot`'s stream (its deadline passed): RST_STREAM(CANCEL).
    pub fn cancel(&mut self, slot: usize) {
        if let Some(i) = self.streams.iter().position(|s| s.slot == slot) {
            let s = self.streams.swap_remove(i);
            f::put_u32(&mut self.out, f::RST_STREAM, s.id, f::CANCEL);
        }
    }

    /// The slots of every stream in flight, which fail with the connection.
    pub fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.streams.iter().map(|s| s.slot)
    }

    /// Takes bytes from the server; `Err` when the connection is broken (every stream in
    /// flight fails with it).
    pub fn feed(&mut self, data: &[u8]) -> Result<(), ErrorKind> {
        if self.buf.is_empty() {
            let used = self.frames(data)?;
            self.buf.extend_from_slice(&data[used..]);
            return Ok(());
        }
        self.buf.extend_from_slice(data);
        let buf = std::mem::take(&mut self.buf);
        let used = self.frames(&buf);
        self.buf = buf;
        self.buf.drain(..used?);
        Ok(())
    }

    /// Handles every whole frame in `data`; the bytes used.
    fn frames(&mut self, data: &[u8]) -> Result<usize, ErrorKind> {
        let mut at = 0;
        while data.len() - at >= f::HEADER_LEN {
            let head = f::parse_head(&data[at..]);
            if head.len > f::MAX_FRAME {
                return Err(ErrorKind::Protocol);
            }
            let end = at + f::HEADER_LEN + head.len;
            if data.len() < end {
                break;
            }
            self.frame(head, &data[at + f::HEADER_LEN..end])?;
            at = end;
        }
        Ok(at)
    }

    fn frame(&mut self, h: Head, p: &[u8]) -> Result<(), ErrorKind> {
        if self.block_stream != 0 && (h.kind != f::CONTINUATION || h.stream != self.block_stream) {
            return Err(ErrorKind::Protocol);
        }
        match h.kind {
            f::DATA => self.data(h, p),
            f::HEADERS => {
                let block = f::unpad(h.flags, h.kind, p).ok_or(ErrorKind::Protocol)?;
                if !self.opened(h.stream) {
                    return Err(ErrorKind::Protocol);
                }
                self.block_stream = h.stream;
                self.block_end = h.flags & f::END_STREAM != 0;
                self.block.clear();
                self.continued(h, block)
            }
            f::CONTINUATION => {
                if self.block_stream == 0 {
                    return Err(ErrorKind::Protocol);
                }
                if p.is_empty() && h.flags & f::END_HEADERS == 0 {
                    self.control()?;
                }
                self.continued(h, p)
            }
            f::RST_STREAM => {
                if p.len() != 4 || !self.opened(h.stream) {
                    return Err(ErrorKind::Protocol);
                }
                self.control()?;
                let code = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                if let Some(i) = self.find(h.stream) {
                    let s = self.streams.swap_remove(i);
                    self.events.push(if code == f::REFUSED_STREAM {
                        Event::Unprocessed(s.slot)
                    } else {
                        Event::Failed(s.slot, ErrorKind::Reset)
                    });
                }
                Ok(())
            }
            f::SETTINGS => self.settings(h, p),
            f::PING => {
                if p.len() != 8 || h.stream != 0 {
                    return Err(ErrorKind::Protocol);
                }
                self.control()?;
                if h.flags & f::ACK == 0 {
                    self.owe(f::HEADER_LEN + 8)?;
                    f::put_head(&mut self.out, 8, f::PING, f::ACK, 0);
                    self.out.extend_from_slice(p);
                }
                Ok(())
            }
            f::GOAWAY => {
                if p.len() < 8 || h.stream != 0 {
                    return Err(ErrorKind::Protocol);
                }
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                self.goaway = Some(self.goaway.map_or(last, |l| l.min(last)));
                let mut i = 0;
                while i < self.streams.len() {
                    if self.streams[i].id > last {
                        let s = self.streams.swap_remove(i);
                        self.events.push(Event::Unprocessed(s.slot));
                    } else {
                        i += 1;
                    }
                }
                Ok(())
            }
            f::WINDOW_UPDATE => self.window_update(h, p),
            f::PUSH_PROMISE => Err(ErrorKind::Protocol),
            // PRIORITY and unknown types ask nothing: ignored, and counted against a flood.
            _ => self.control(),
        }
    }

    /// Whether stream `id` is one brink opened (still open or not): a client's streams are
    /// odd and below the next id. A frame about any other is a connection error.
    fn opened(&self, id: u32) -> bool {
        id % 2 == 1 && id < self.next_id
    }

    /// Adds `n` bytes of acknowledgement to what is owed; past [`MAX_OWED`] the server is
    /// asking faster than it reads.
    fn owe(&mut self, n: usize) -> Result<(), ErrorKind> {
        self.owed += n;
        if self.owed > MAX_OWED {
            return Err(ErrorKind::Protocol);
        }
        Ok(())
    }

    /// Stream `i` is malformed: it fails as a protocol error and the server is told to stop.
    fn malformed(&mut self, i: usize) {
        let s = self.streams.swap_remove(i);
        f::put_u32(&mut self.out, f::RST_STREAM, s.id, f::PROTOCOL_ERROR);
        self.events.push(Event::Failed(s.slot, ErrorKind::Protocol));
    }

    fn control(&mut self) -> Result<(), ErrorKind> {
        self.control += 1;
        if self.control > MAX_CONTROL {
            return Err(ErrorKind::Protocol);
        }
        Ok(())
    }

    /// This client, reading answers as events by `rule`.
    pub fn with_events(mut self, rule: EventRule) -> Client {
        self.event_rule = rule;
        self
    }

    /// Hands over each answer still streaming as events (to drain the gaps read so far), with
    /// the caller's slot of each.
    pub fn drain_gaps(&mut self, mut each: impl FnMut(usize, &mut Events)) {
        for s in &mut self.streams {
            if let Some(e) = s.events.as_mut() {
                each(s.slot, e);
            }
        }
    }

    /// The caller's slots whose answers, read as events, sent nothing for `idle` at `now`.
    pub fn idle_slots(
        &self,
        idle: Option<std::time::Duration>,
        now: Instant,
        mut each: impl FnMut(usize),
    ) {
        if idle.is_none() {
            return;
        }
        for s in &self.streams {
            if s.events.as_ref().is_some_and(|e| e.idle_at(idle, now)) {
                each(s.slot);
            }
        }
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    fn data(&mut self, h: Head, p: &[u8]) -> Result<(), ErrorKind> {
        if !self.opened(h.stream) {
            return Err(ErrorKind::Protocol);
        }
        let body = f::unpad(h.flags, h.kind, p).ok_or(ErrorKind::Protocol)?;
        self.received += p.len() as u64;
        if self.received >= TOP_UP {
            f::put_u32(&mut self.out, f::WINDOW_UPDATE, 0, self.received as u32);
            self.received = 0;
        }
        let Some(i) = self.find(h.stream) else {
            // For a stream brink gave up on: not progress, and counted against a flood.
            return self.control();
        };
        if p.is_empty() && h.flags & f::END_STREAM == 0 {
            // An empty frame that ends nothing asks nothing: counted against a flood.
            self.control()?;
        }
        self.progress += p.len() as u64;
        if self.progress >= PROGRESS {
            self.progress = 0;
            self.control = 0;
        }
        let s = &mut self.streams[i];
        s.bytes_in += body.len() as u64;
        let over = s.length.is_some_and(|n| s.bytes_in > n && !s.head);
        if s.status == 0 || over {
            // DATA before the response's HEADERS, or more than its content-length.
            self.malformed(i);
            return Ok(());
        }
        if let Some(e) = s.events.as_mut() {
            if e.feed(body, Instant::now()).is_err() {
                // An event past its bound: this answer fails; the connection is fine.
                self.malformed(i);
                return Ok(());
            }
        }
        if h.flags & f::END_STREAM != 0 {
            self.complete(i);
        }
        Ok(())
    }

    fn continued(&mut self, h: Head, fragment: &[u8]) -> Result<(), ErrorKind> {
        if self.block.len() + fragment.len() > MAX_HEADER_BLOCK {
            return Err(ErrorKind::Protocol);
        }
        self.block.extend_from_slice(fragment);
        if h.flags & f::END_HEADERS == 0 {
            return Ok(());
        }
        let stream = std::mem::replace(&mut self.block_stream, 0);
        let block = std::mem::take(&mut self.block);
        let at = self.find(stream);
        let trailers = at.is_some_and(|i| self.streams[i].status != 0);
        let check = self.decode(&block, trailers)?;
        self.block = block;
        let Some(i) = at else {
            // A stream brink gave up on: decoded only for the table's sake, and counted
            // against a flood like any frame that asks nothing of a waited stream.
            return self.control();
        };
        if check.malformed || (trailers && !self.block_end) {
            self.malformed(i);
            return Ok(());
        }
        let s = &mut self.streams[i];
        match check.status {
            Some(st) if (100..200).contains(&st) => {
                s.interim += 1;
                if s.interim > MAX_INTERIM || self.block_end {
                    self.malformed(i);
                }
                return Ok(());
            }
            Some(st) => {
                s.status = st;
                s.length = check.length;
                if self.event_rule.reads(check.event_stream) {
                    s.events = self.event_rule.events_for(
                        check.event_stream,
                        check.encoded,
                        Instant::now(),
                    );
                }
            }
            None if trailers => {}
            None => {
                self.malformed(i);
                return Ok(());
            }
        }
        if self.block_end {
            self.complete(i);
        }
        Ok(())
    }

    /// Decodes a header block (always: the dynamic table must follow the server's) and checks
    /// its fields; a block too large to decode or over the list limit breaks the connection.
    fn decode(&mut self, block: &[u8], trailers: bool) -> Result<Check, ErrorKind> {
        let mut check = Check::new(trailers);
        self.decoder
            .decode(block, |name, value| check.field(name, value))
            .map_err(|_| ErrorKind::Protocol)?;
        if check.size > MAX_HEADER_BLOCK {
            return Err(ErrorKind::Protocol);
        }
        Ok(check)
    }

    /// Stream `i` ended: done, unless its body disagrees with its `content-length` (a HEAD
    /// request's, and 204's and 304's, describe a body that is not sent).
    fn complete(&mut self, i: usize) {
        let s = &self.streams[i];
        let bodiless = s.head || s.status == 204 || s.status == 304;
        if s.length.is_some_and(|n| n != s.bytes_in && !bodiless) {
            self.malformed(i);
            return;
        }
        let mut s = self.streams.swap_remove(i);
        if let Some(e) = s.events.take() {
            self.answered_events.push((s.slot, e));
        }
        if s.sent < s.body.len() {
            // Answered before the whole body was sent (RFC 9113 §8.1): the rest is not.
            f::put_u32(&mut self.out, f::RST_STREAM, s.id, f::NO_ERROR);
        }
        self.control = 0;
        self.progress = 0;
        self.events.push(Event::Done(
            s.slot,
            Reply {
                status: s.status,
                bytes_in: s.bytes_in,
                keep_alive: true,
                stray: false,
                call: None,
                fault: None,
            },
        ));
    }

    fn settings(&mut self, h: Head, p: &[u8]) -> Result<(), ErrorKind> {
        if h.stream != 0 || !p.len().is_multiple_of(6) {
            return Err(ErrorKind::Protocol);
        }
        self.control()?;
        if h.flags & f::ACK != 0 {
            return Ok(());
        }
        for e in p.chunks_exact(6) {
            let id = u16::from_be_bytes([e[0], e[1]]);
            let v = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
            match id {
                0x2 if v != 0 => return Err(ErrorKind::Protocol),
                0x5 if !(1 << 14..1 << 24).contains(&v) => return Err(ErrorKind::Protocol),
                0x3 => self.max_streams = v as usize,
                0x4 => {
                    if i64::from(v) > f::MAX_WINDOW {
                        return Err(ErrorKind::Protocol);
                    }
                    let delta = i64::from(v) - self.peer_window;
                    self.peer_window = i64::from(v);
                    for s in &mut self.streams {
                        s.window += delta;
                    }
                }
                _ => {}
            }
        }
        self.owe(f::HEADER_LEN)?;
        f::put_head(&mut self.out, 0, f::SETTINGS, f::ACK, 0);
        for i in 0..self.streams.len() {
            self.pump(i);
        }
        Ok(())
    }

    fn window_update(&mut self, h: Head, p: &[u8]) -> Result<(), ErrorKind> {
        if p.len() != 4 {
            return Err(ErrorKind::Protocol);
        }
        self.control()?;
        let inc = i64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff);
        if inc == 0 {
            return Err(ErrorKind::Protocol);
        }
        if h.stream == 0 {
            self.send_window += inc;
            if self.send_window > f::MAX_WINDOW {
                return Err(ErrorKind::Protocol);
            }
            for i in 0..self.streams.len() {
                self.pump(i);
            }
        } else if !self.opened(h.stream) {
            return Err(ErrorKind::Protocol);
        } else if let Some(i) = self.find(h.stream) {
            self.streams[i].window += inc;
            if self.streams[i].window > f::MAX_WINDOW {
                let s = self.streams.swap_remove(i);
                self.events.push(Event::Failed(s.slot, ErrorKind::Protocol));
                return Ok(());
            }
            self.pump(i);
        }
        Ok(())
    }
}
