//! The plain-TCP HTTP/2 worker (h2c): one epoll loop per thread, as for HTTP/1.1, over
//! `proto::h2c`'s sans-I/O connections. Slots (`-c`) share the worker's connections
//! (`--connections`, else one each; slot k uses connection k mod n) as streams. An event
//! reads what arrived into one buffer, feeds the connection, records the responses it
//! completed and, in the closed model, opens the next streams at once; every connection with
//! bytes to send is written once per turn of the loop, so many requests share one `send`.
//!
//! Housekeeping every [`TICK`](super::TICK): deadlines (a stream past its timeout is reset with CANCEL and
//! counted as a timeout), connect deadlines, the closed model's connection curve.

use super::driver::{self, Core};
use super::sys::{Connect, Sock};
use super::{
    backoff_delay, micros, record, record_connect_error, record_refusal, READS_PER_TURN,
    REFUSED_REST,
};
use super::{Msg, Shared};
use crate::proto::h2c::client::{Client, Event};
use crate::proto::h2c::frame;
use crate::proto::reply::{io_kind, Reply};
use bytes::Bytes;
use model::Protocol;
use stats::{Bucket, ErrorKind};
use std::collections::VecDeque;
use std::io;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;
use workload::Vu;

const READ_BUF: usize = 64 << 10;
/// Times a request the server never processed is sent again.
const RESENDS: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    Down,
    Connecting,
    Up,
    Backoff,
}

/// One connection.
struct Line {
    sock: Option<Sock>,
    link: Link,
    client: Client,
    /// Bytes of `client.out` already sent.
    written: usize,
    opened_at: Instant,
    deadline: Instant,
    failures: u32,
    retry_at: Instant,
    /// Slots waiting for this connection (connecting, or at the server's stream limit).
    queue: VecDeque<usize>,
    again: bool,
    dirty: bool,
}

/// One slot: a virtual user with at most one request in flight.
struct Slot {
    vu: Vu,
    base: Instant,
    sent: Instant,
    deadline: Instant,
    busy: bool,
    streaming: bool,
    block: Vec<u8>,
    body: Bytes,
    resends: u32,
    retry_at: Instant,
}

struct Worker<'a> {
    core: Core<'a>,
    lines: Vec<Line>,
    slots: Vec<Slot>,
    readbuf: Vec<u8>,
    dirty: Vec<usize>,
    events: Vec<Event>,
    /// Slots whose streamed answers went idle past `--idle-timeout` (housekeeping's scratch).
    stalled: Vec<usize>,
    /// Each step's header block and body when they never change (untraced static steps),
    /// encoded once.
    statics: Vec<Option<(Vec<u8>, Bytes)>>,
}

/// Whether the run's requests can take this worker: HTTP/2 over plain TCP, kept alive, no
/// gRPC, and no response kept for an extraction or a check (hyper's path does those).
pub fn fits(shared: &Shared) -> bool {
    let c = &shared.connector;
    c.protocol == Protocol::Http2
        && c.keepalive
        && c.tls.is_none()
        // Held event streams reopen after a pause and resume where they left off: the tokio
        // loop keeps that for HTTP/2.
        && !c.events.hold
        && c.workload
            .requests
            .iter()
            .all(|r| !r.keeps_response() && r.message.is_none())
}

/// Runs the worker; returns its last partial buckets and the requests still in flight.
pub fn run(
    shared: &Arc<Shared>,
    id: usize,
    tx: &Sender<Msg>,
) -> Result<(Vec<Bucket>, u64), String> {
    let now = Instant::now();
    let n = driver::slots(shared, id);
    let lines = shared
        .connections
        .map_or(n, |c| shared.share_of(c, id))
        .clamp(1, n.max(1));
    let mut w = Worker {
        core: Core::new(shared, id, tx, n)?,
        lines: (0..lines)
            .map(|_| Line::new(now, shared.connector.events))
            .collect(),
        slots: (0..n)
            .map(|k| Slot {
                vu: Vu::new(&shared.connector.workload, (k * shared.workers + id) as u64),
                base: now,
                sent: now,
                deadline: now,
                busy: false,
                streaming: false,
                block: Vec::new(),
                body: Bytes::new(),
                resends: 0,
                retry_at: now,
            })
            .collect(),
        readbuf: vec![0; READ_BUF],
        dirty: Vec::new(),
        events: Vec::new(),
        stalled: Vec::new(),
        statics: statics(shared),
    };
    driver::run(&mut w);
    Ok((std::mem::take(&mut w.core.rec), w.core.in_flight))
}

/// The header block and body of every step that never changes.
fn statics(shared: &Shared) -> Vec<Option<(Vec<u8>, Bytes)>> {
    let w = &shared.connector.workload;
    let mut vu = Vu::new(w, 0);
    (0..w.requests.len())
        .map(|i| {
            let step = &w.requests[i];
            if !step.is_static() || w.trace.is_some() {
                return None;
            }
            vu.current = i;
            let (path, values, body) = vu.render_parts(w).ok()?;
            let mut block = Vec::new();
            encode(&mut block, shared, step, &path, &values);
            Some((block, Bytes::from(body)))
        })
        .collect()
}

/// A step's header block for `path` and its rendered header `values`.
fn encode(
    out: &mut Vec<u8>,
    shared: &Shared,
    step: &workload::Request,
    path: &str,
    values: &[Vec<u8>],
) {
    let names = step.headers.iter().map(|(n, _)| n.as_str());
    frame::request_block(
        out,
        step.method.as_str(),
        false,
        &shared.connector.authority,
        path.as_bytes(),
        names.zip(values.iter().map(Vec::as_slice)),
    );
}

impl Line {
    fn new(now: Instant, events: crate::proto::events::EventRule) -> Line {
        Line {
            sock: None,
            link: Link::Down,
            client: Client::new().with_events(events),
            written: 0,
            opened_at: now,
            deadline: now,
            failures: 0,
            retry_at: now,
            queue: VecDeque::new(),
            again: false,
            dirty: false,
        }
    }
}

impl<'a> driver::Conns<'a> for Worker<'a> {
    fn core(&self) -> &Core<'a> {
        &self.core
    }
    fn core_mut(&mut self) -> &mut Core<'a> {
        &mut self.core
    }
    /// Fails connects and requests whose deadline has passed; reconnects after a backoff.
    fn expire(&mut self, now: Instant) {
        for l in 0..self.lines.len() {
            let line = &self.lines[l];
            if line.link == Link::Connecting && now >= line.deadline {
                self.lines[l].sock = None;
                self.connect_failed(l, ErrorKind::ConnectTimeout, now);
            } else if line.link == Link::Backoff && now >= line.retry_at && !line.queue.is_empty() {
                self.connect(l, now);
            }
        }
        let idle = self.core.shared.connector.events.idle;
        let mut stalled = std::mem::take(&mut self.stalled);
        for line in &self.lines {
            line.client.idle_slots(idle, now, |k| stalled.push(k));
        }
        for k in 0..self.slots.len() {
            let s = &self.slots[k];
            if !s.busy || (now < s.deadline && !(s.streaming && stalled.contains(&k))) {
                continue;
            }
            let l = self.line_of(k);
            if s.streaming {
                self.lines[l].client.cancel(k);
                self.mark(l);
            } else {
                // Still waiting for its connection or for a stream the server would take.
                self.lines[l].queue.retain(|&q| q != k);
            }
            self.finish(k, Err(ErrorKind::Timeout), now);
        }
        stalled.clear();
        self.stalled = stalled;
    }
    fn slot_count(&self) -> usize {
        self.slots.len()
    }
    fn is_free(&self, k: usize) -> bool {
        !self.slots[k].busy
    }
    fn in_iteration(&self, k: usize) -> bool {
        self.slots[k].vu.in_iteration()
    }
    /// Starts an attempt on slot `k`: renders its request, then sends it on its connection
    /// (opening the connection, or waiting in its queue, as needed).
    fn start(&mut self, k: usize, base: Instant, now: Instant) {
        let connector = &self.core.shared.connector;
        let s = &mut self.slots[k];
        let current = s.vu.next(&connector.workload);
        let step = &connector.workload.requests[current];
        s.block.clear();
        if let Some((block, body)) = &self.statics[current] {
            s.block.extend_from_slice(block);
            s.body = body.clone();
        } else {
            let (path, values, body) = match s.vu.render_parts(&connector.workload) {
                Ok(parts) => parts,
                Err(r) => {
                    s.vu.refused = Some(r);
                    record_refusal(&mut self.core.rec, self.core.shared, &mut s.vu);
                    s.retry_at = now + REFUSED_REST;
                    self.core.release(k);
                    return;
                }
            };
            encode(&mut s.block, self.core.shared, step, &path, &values);
            s.body = Bytes::from(body);
        }
        s.base = base;
        // Waiting for a connection or a free stream counts against the request's timeout.
        s.deadline = now + self.core.shared.timeout;
        s.busy = true;
        s.resends = 0;
        self.core.in_flight += 1;
        if step
            .headers
            .iter()
            .any(|(n, _)| frame::connection_specific(n))
        {
            // HTTP/2 has no such fields: hyper's client refuses them too.
            self.finish(k, Err(ErrorKind::Protocol), now);
            return;
        }
        self.submit(k, now);
    }

    fn flush(&mut self) {
        self.write_all()
    }
    /// When slot `k` can start: now, or when its connection's connect backoff ends.
    fn free_at(&self, k: usize, now: Instant) -> Instant {
        let line = &self.lines[self.line_of(k)];
        let mut at = self.slots[k].retry_at.max(now);
        if line.link == Link::Backoff {
            at = at.max(line.retry_at);
        }
        at
    }
    fn on_event(&mut self, l: usize, writable: bool) {
        let Some(line) = self.lines.get(l) else {
            return;
        };
        match line.link {
            Link::Connecting => self.connected(l),
            Link::Up => {
                if writable {
                    self.mark(l);
                }
                self.read(l);
            }
            Link::Down | Link::Backoff => {}
        }
    }
    fn resume(&mut self, l: usize) {
        self.lines[l].again = false;
        if self.lines[l].link == Link::Up {
            self.read(l);
        }
    }
}

impl Worker<'_> {
    fn line_of(&self, k: usize) -> usize {
        k % self.lines.len()
    }

    /// Sends slot `k`'s prepared request, or queues it on its connection.
    fn submit(&mut self, k: usize, now: Instant) {
        let l = self.line_of(k);
        let line = &mut self.lines[l];
        if line.link == Link::Up && line.client.can_open() && line.queue.is_empty() {
            self.open_stream(k, now);
            return;
        }
        line.queue.push_back(k);
        match line.link {
            Link::Down => self.connect(l, now),
            Link::Backoff if now >= line.retry_at => self.connect(l, now),
            _ => {}
        }
    }

    /// Opens slot `k`'s stream. Its deadline stays the one set when the attempt started: one
    /// deadline for the request across waits and resends.
    fn open_stream(&mut self, k: usize, now: Instant) {
        let l = self.line_of(k);
        let s = &mut self.slots[k];
        s.sent = now;
        s.streaming = true;
        let head = self.core.shared.connector.workload.requests[s.vu.current].method == "HEAD";
        self.lines[l].client.open(k, &s.block, s.body.clone(), head);
        self.mark(l);
    }

    fn mark(&mut self, l: usize) {
        if !self.lines[l].dirty {
            self.lines[l].dirty = true;
            self.dirty.push(l);
        }
    }

    fn connect(&mut self, l: usize, now: Instant) {
        let events = self.core.shared.connector.events;
        let line = &mut self.lines[l];
        line.client = Client::new().with_events(events);
        line.written = 0;
        let Some(s) = self.core.dial(l) else {
            self.connect_failed(l, ErrorKind::Connect, now);
            return;
        };
        let line = &mut self.lines[l];
        line.sock = Some(s);
        line.link = Link::Connecting;
        line.opened_at = now;
        line.deadline = now + self.core.shared.connector.connect_timeout;
    }

    fn connected(&mut self, l: usize) {
        let now = Instant::now();
        let Some(sock) = self.lines[l].sock.as_ref() else {
            return;
        };
        match sock.connect_state() {
            Connect::Done => {
                let line = &mut self.lines[l];
                line.failures = 0;
                line.link = Link::Up;
                let took = micros(now - line.opened_at);
                if let Some(&k) = line.queue.front() {
                    let current = self.slots[k].vu.current;
                    self.core.rec[current].setup.record_connect(took);
                }
                self.dispatch_queue(l, now);
                self.mark(l);
            }
            Connect::Pending => {}
            Connect::Failed => self.connect_failed(l, ErrorKind::Connect, now),
        }
    }

    /// Opens streams for the slots waiting on connection `l`, as far as it takes them.
    fn dispatch_queue(&mut self, l: usize, now: Instant) {
        while self.lines[l].link == Link::Up && self.lines[l].client.can_open() {
            let Some(k) = self.lines[l].queue.pop_front() else {
                return;
            };
            // Latency keeps the attempt's start: the wait for the connection or a free stream
            // is part of what the caller waits for. Service time is from the send.
            self.open_stream(k, now);
        }
    }

    fn connect_failed(&mut self, l: usize, kind: ErrorKind, now: Instant) {
        let line = &mut self.lines[l];
        line.sock = None;
        line.link = Link::Backoff;
        line.retry_at = now + backoff_delay(line.failures);
        line.failures += 1;
        let waiting: Vec<usize> = line.queue.drain(..).collect();
        for k in waiting {
            self.core.in_flight -= 1;
            let s = &mut self.slots[k];
            s.busy = false;
            record_connect_error(&mut self.core.rec, self.core.shared, &mut s.vu, kind.into());
            self.core.release(k);
        }
    }

    /// Reads what arrived on connection `l` and settles the streams it completed.
    fn read(&mut self, l: usize) {
        for _ in 0..READS_PER_TURN {
            let line = &mut self.lines[l];
            let Some(sock) = line.sock.as_ref() else {
                return;
            };
            let fed = match sock.recv(&mut self.readbuf) {
                Ok(0) => Err(ErrorKind::Closed),
                Ok(n) => line.client.feed(&self.readbuf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.settle(l);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
                Err(e) => Err(io_kind(&e)),
            };
            self.settle(l);
            if let Err(kind) = fed {
                self.line_failed(l, kind);
                return;
            }
        }
        if !self.lines[l].again {
            self.lines[l].again = true;
            self.core.again.push(l);
        }
    }

    /// Records what connection `l` finished, answers it owes, and what a GOAWAY handed back.
    fn settle(&mut self, l: usize) {
        let now = Instant::now();
        self.drain_streaming(l);
        std::mem::swap(&mut self.events, &mut self.lines[l].client.events);
        let mut answered = std::mem::take(&mut self.lines[l].client.answered_events);
        if !self.lines[l].client.out.is_empty() {
            self.mark(l);
        }
        let events = std::mem::take(&mut self.events);
        for e in &events {
            match *e {
                Event::Done(k, mut reply) => {
                    if let Some(i) = answered.iter().position(|(slot, _)| *slot == k) {
                        let (_, mut e) = answered.swap_remove(i);
                        let (s, rec) = (&self.slots[k], &mut self.core.rec);
                        let shared = self.core.shared;
                        let rec = &mut rec[s.vu.current];
                        super::record_events(rec, shared, &mut e, s.base, now, &mut reply);
                    }
                    self.finish(k, Ok(reply), now)
                }
                Event::Failed(k, kind) => self.finish(k, Err(kind), now),
                Event::Unprocessed(k) => {
                    let s = &mut self.slots[k];
                    s.streaming = false;
                    s.resends += 1;
                    if s.resends > RESENDS {
                        self.finish(k, Err(ErrorKind::Closed), now);
                    } else {
                        self.lines[l].queue.push_back(k);
                    }
                }
            }
        }
        self.events = events;
        self.events.clear();
        answered.clear();
        self.lines[l].client.answered_events = answered;
        let line = &self.lines[l];
        if line.client.draining() && line.client.open_streams() == 0 {
            // Rotated by the server: a fresh connection takes what is waiting.
            self.lines[l].sock = None;
            self.lines[l].link = Link::Down;
            if !self.lines[l].queue.is_empty() {
                self.connect(l, now);
            }
        } else {
            self.dispatch_queue(l, now);
        }
    }

    /// The gaps read so far on connection `l`'s answers still streaming as events.
    fn drain_streaming(&mut self, l: usize) {
        let (slots, rec) = (&self.slots, &mut self.core.rec);
        let client = &mut self.lines[l].client;
        client.drain_gaps(|k, e| {
            let s = &slots[k];
            e.drain_into(&mut rec[s.vu.current], s.base)
        });
    }

    /// Connection `l` broke: every stream on it fails with `kind`; waiting slots reconnect.
    fn line_failed(&mut self, l: usize, kind: ErrorKind) {
        let now = Instant::now();
        let line = &mut self.lines[l];
        let streaming: Vec<usize> = line.client.slots().collect();
        line.sock = None;
        line.link = Link::Down;
        line.client = Client::new().with_events(self.core.shared.connector.events);
        for k in streaming {
            self.finish(k, Err(kind), now);
        }
        if self.lines[l].link == Link::Down && !self.lines[l].queue.is_empty() {
            self.connect(l, now);
        }
    }

    /// Writes what every marked connection has to send.
    /// Writes what every marked connection has to send. A write can mark a connection again
    /// (streams held back while its socket was full open once it drains): those are written
    /// in another pass, never dropped with the list just written.
    fn write_all(&mut self) {
        let mut dirty = std::mem::take(&mut self.dirty);
        for _pass in 0..4 {
            for &l in &dirty {
                self.lines[l].dirty = false;
                if self.lines[l].link == Link::Up {
                    self.write(l);
                }
            }
            dirty.clear();
            std::mem::swap(&mut dirty, &mut self.dirty);
            if dirty.is_empty() {
                break;
            }
        }
        // Marks left after the last pass wait for the next turn.
        dirty.append(&mut self.dirty);
        self.dirty = dirty;
    }

    fn write(&mut self, l: usize) {
        let line = &mut self.lines[l];
        let Some(sock) = line.sock.as_ref() else {
            return;
        };
        let failed = loop {
            if line.written == line.client.out.len() {
                line.written = 0;
                line.client.flushed();
                if !line.client.out.is_empty() {
                    continue; // bodies held back while the socket was full go on
                }
                if !line.queue.is_empty() {
                    // Streams held back the same way may open now.
                    self.dispatch_queue(l, Instant::now());
                }
                return;
            }
            match sock.send(&line.client.out[line.written..]) {
                Ok(n) => line.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break io_kind(&e),
            }
        };
        self.line_failed(l, failed);
    }

    /// Records slot `k`'s attempt and starts its next one as the load model says.
    fn finish(&mut self, k: usize, result: Result<Reply, ErrorKind>, done: Instant) {
        self.core.in_flight -= 1;
        let s = &mut self.slots[k];
        s.busy = false;
        s.streaming = false;
        let sent = s.body.len() as u64;
        record(
            &mut self.core.rec,
            self.core.shared,
            &mut s.vu,
            result.map(|r| (r, None)),
            sent,
            s.base,
            s.sent,
            done,
        );
        driver::next(self, k, done);
    }
}
