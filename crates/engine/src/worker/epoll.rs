//! The plain-TCP HTTP/1.1 worker: one epoll (edge-triggered) loop per thread and one
//! small state machine per connection. An event on a connection reads what arrived, feeds the
//! shared [`Reader`], and when a response completes records it and, in the closed model, writes
//! the next request on the same socket before returning to epoll. Per request that is one
//! `recv`, one `send`, and a share of one `epoll_wait`: no `epoll_ctl` (sockets are registered
//! once for read and write), no futures, wakers or task queues.
//!
//! Everything slower than a request happens in housekeeping every [`TICK`](super::TICK): request timeouts
//! (so a timeout fires at most one tick late), closed-model connection targets, and restarting
//! slots after a connect backoff.

use super::driver::{self, Core};
use super::sys::{Connect, Sock};
use super::{
    backoff_delay, micros, record, record_connect_error, record_refusal, READS_PER_TURN,
    REFUSED_REST,
};
use super::{Msg, Shared};
use crate::proto::h1::reader::{ReadBuf, Reader};
use crate::proto::reply::{io_kind, Reply};
use stats::{Bucket, ErrorKind};
use std::io;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;
use workload::Vu;

/// Most spare read buffers a worker keeps (beyond these, a freed buffer is dropped).
const POOL: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Free: connected and waiting for work, or not connected yet.
    Idle,
    /// Non-blocking connect in progress.
    Connecting,
    /// Request partly written (the socket buffer was full).
    Writing,
    /// Waiting for (the rest of) the response.
    Reading,
    /// After a failed connect (no socket) or a refused request (socket kept), not used again
    /// before `retry_at`.
    Backoff,
}

struct Conn {
    sock: Option<Sock>,
    state: State,
    /// Held only while a response is being read (from the worker's pool); empty otherwise,
    /// so an idle connection costs no read buffer.
    buf: ReadBuf,
    reader: Reader,
    /// Latency is measured from here (the intended start).
    base: Instant,
    /// When the request was written (service time is measured from here).
    sent: Instant,
    /// Connect or request deadline, whichever applies to the state.
    deadline: Instant,
    written: usize,
    /// When the current connection's connect started.
    opened_at: Instant,
    /// The attempt in flight opened its connection (for connect + request without keep-alive).
    fresh: bool,
    failures: u32,
    retry_at: Instant,
    vu: Vu,
    /// Listed in `Worker::again` (at most once).
    again: bool,
}

impl Conn {
    /// When this (idle) slot can start an attempt: now, or after its connect backoff.
    fn free_at(&self, now: Instant) -> Instant {
        if self.state == State::Backoff {
            self.retry_at
        } else {
            now
        }
    }
}

struct Worker<'a> {
    core: Core<'a>,
    conns: Vec<Conn>,
    /// Read buffers not held by any connection.
    pool: Vec<ReadBuf>,
}

/// Runs the worker; returns its last partial buckets and the requests still in flight.
pub fn run(
    shared: &Arc<Shared>,
    id: usize,
    tx: &Sender<Msg>,
) -> Result<(Vec<Bucket>, u64), String> {
    let now = Instant::now();
    let slots = driver::slots(shared, id);
    let conns = (0..slots)
        .map(|k| Conn {
            sock: None,
            state: State::Idle,
            buf: ReadBuf::empty(),
            reader: Reader::new(false),
            base: now,
            sent: now,
            deadline: now,
            written: 0,
            opened_at: now,
            fresh: false,
            failures: 0,
            retry_at: now,
            again: false,
            vu: Vu::new(&shared.connector.workload, (k * shared.workers + id) as u64),
        })
        .collect();
    let mut w = Worker {
        core: Core::new(shared, id, tx, slots)?,
        conns,
        pool: Vec::new(),
    };
    driver::run(&mut w);
    Ok((std::mem::take(&mut w.core.rec), w.core.in_flight))
}

impl<'a> driver::Conns<'a> for Worker<'a> {
    fn core(&self) -> &Core<'a> {
        &self.core
    }
    fn core_mut(&mut self) -> &mut Core<'a> {
        &mut self.core
    }
    /// Fails attempts whose connect or request deadline has passed, and streamed answers
    /// idle past `--idle-timeout`.
    fn expire(&mut self, now: Instant) {
        let rule = self.core.shared.connector.events;
        for k in 0..self.conns.len() {
            let c = &self.conns[k];
            let stalled = || match c.reader.events_ref() {
                Some(e) => e.idle_at(rule.idle, now),
                // A held stream is bounded by its silence alone, from the send until its head.
                None => rule.hold && rule.idle.is_some_and(|d| now >= c.sent + d),
            };
            let busy = matches!(c.state, State::Writing | State::Reading);
            let due = if rule.hold && busy {
                stalled()
            } else {
                now >= c.deadline || (c.state == State::Reading && stalled())
            };
            if !due {
                continue;
            }
            match c.state {
                State::Connecting => self.connect_failed(k, ErrorKind::ConnectTimeout, now),
                State::Writing | State::Reading => self.finish(k, Err(ErrorKind::Timeout), now),
                _ => {}
            }
        }
    }
    fn slot_count(&self) -> usize {
        self.conns.len()
    }
    fn is_free(&self, k: usize) -> bool {
        matches!(self.conns[k].state, State::Idle | State::Backoff)
    }
    fn claim(&mut self, k: usize) {
        self.conns[k].state = State::Idle;
    }
    /// Past a ramp down: the connection closes.
    fn retire(&mut self, k: usize, _now: Instant) {
        self.conns[k].sock = None;
    }
    fn in_iteration(&self, k: usize) -> bool {
        self.conns[k].vu.in_iteration()
    }
    /// Starts an attempt on slot `k`: picks and prepares its request, connects if needed,
    /// else writes the request.
    fn start(&mut self, k: usize, base: Instant, now: Instant) {
        let connector = &self.core.shared.connector;
        let c = &mut self.conns[k];
        let step = &connector.workload.requests[c.vu.next(&connector.workload)];
        if connector.events.hold {
            let resumed = connector.resumes(&c.vu);
            super::held_stream_opens(&mut self.core.rec[c.vu.current], &mut c.vu, resumed);
        }
        if connector.prepare_h1(&mut c.vu).is_err() {
            record_refusal(&mut self.core.rec, self.core.shared, &mut c.vu);
            c.state = State::Backoff;
            c.retry_at = now + REFUSED_REST;
            self.core.release(k);
            return;
        }
        self.core.in_flight += 1;
        c.base = base;
        c.reader = match connector.capture_for(step) {
            None => Reader::new(step.is_head()),
            Some(budget) => Reader::capturing(step.is_head(), budget.clone()),
        }
        .with_events(connector.events);
        c.buf.filled = 0;
        if c.sock.is_some() {
            c.sent = now;
            self.write(k, now);
            return;
        }
        let Some(s) = self.core.dial(k) else {
            self.connect_failed(k, ErrorKind::Connect, now);
            return;
        };
        let c = &mut self.conns[k];
        c.sock = Some(s);
        c.state = State::Connecting;
        c.opened_at = now;
        c.deadline = now + self.core.shared.connector.connect_timeout;
    }

    fn free_at(&self, k: usize, now: Instant) -> Instant {
        self.conns[k].free_at(now)
    }
    fn on_event(&mut self, k: usize, writable: bool) {
        let Some(c) = self.conns.get(k) else { return };
        match c.state {
            // A refused connect may be reported as an error or hang-up rather than writable.
            State::Connecting => self.connected(k),
            // An answer may arrive before the request is all out (401/413 during an upload):
            // read on every event, and write only while no answer has completed the attempt.
            State::Writing => {
                if !self.read(k) && writable {
                    self.write(k, Instant::now());
                }
            }
            State::Reading => {
                self.read(k);
            }
            State::Idle | State::Backoff => self.check_idle(k),
        }
    }
    fn resume(&mut self, k: usize) {
        self.conns[k].again = false;
        if matches!(self.conns[k].state, State::Reading | State::Writing) {
            Worker::on_event(self, k, false);
        }
    }
}

impl Worker<'_> {
    /// Writes (the rest of) the request; moves to Reading when it is all out.
    fn write(&mut self, k: usize, now: Instant) {
        let c = &mut self.conns[k];
        let req = self.core.shared.connector.h1_bytes(&c.vu);
        let Some(sock) = c.sock.as_ref() else { return };
        if c.state != State::Writing {
            c.written = 0;
            c.deadline = now + self.core.shared.timeout;
            c.state = State::Writing;
        }
        loop {
            match sock.send(&req[c.written..]) {
                Ok(n) => {
                    c.written += n;
                    if c.written == req.len() {
                        c.state = State::Reading;
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // The server may have answered and stopped reading (413 before the end of
                    // an upload): its answer, if complete, is the outcome, not the send error.
                    if !self.read(k) {
                        self.finish(k, Err(io_kind(&e)), now);
                    }
                    return;
                }
            }
        }
    }

    fn connected(&mut self, k: usize) {
        let now = Instant::now();
        let c = &mut self.conns[k];
        let Some(sock) = c.sock.as_ref() else { return };
        match sock.connect_state() {
            Connect::Done => {
                c.failures = 0;
                c.sent = now;
                c.fresh = true;
                // Latency keeps the attempt's start (the intended one in the open model): a
                // request that had to open its connection waited for the connect too, as the
                // user's client would. Service time is from the send.
                c.state = State::Idle;
                self.core.rec[c.vu.current]
                    .setup
                    .record_connect(micros(now - c.opened_at));
                self.write(k, now);
            }
            Connect::Pending => {}
            Connect::Failed => self.connect_failed(k, ErrorKind::Connect, now),
        }
    }

    /// Reads what arrived; completes the attempt when the response is whole (or the
    /// connection failed). Returns whether the attempt was completed. The connection holds a
    /// read buffer only for this: it takes one from the pool and gives it back unless part of
    /// a response head is waiting in it.
    fn read(&mut self, k: usize) -> bool {
        if self.conns[k].buf.data.is_empty() {
            self.conns[k].buf = self.pool.pop().unwrap_or_default();
        }
        let done = self.read_into_buf(k);
        let c = &mut self.conns[k];
        if c.buf.filled == 0 && !c.buf.data.is_empty() && self.pool.len() < POOL {
            self.pool
                .push(std::mem::replace(&mut c.buf, ReadBuf::empty()));
        }
        done
    }

    fn read_into_buf(&mut self, k: usize) -> bool {
        for _ in 0..READS_PER_TURN {
            let c = &mut self.conns[k];
            let Some(sock) = c.sock.as_ref() else {
                return false;
            };
            let result = match sock.recv(c.buf.spare()) {
                Ok(0) => Some(c.reader.eof()),
                Ok(n) => {
                    let r = c.reader.advance(&mut c.buf, n).transpose();
                    if let Some(e) = c.reader.events() {
                        e.drain_into(&mut self.core.rec[c.vu.current], c.base);
                    }
                    r
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
                Err(e) => Some(Err(io_kind(&e))),
            };
            if let Some(r) = result {
                self.finish(k, r, Instant::now());
                return true;
            }
        }
        if !self.conns[k].again {
            self.conns[k].again = true;
            self.core.again.push(k);
        }
        false
    }

    /// An idle keep-alive connection became readable: the server closed it, or sent bytes
    /// although no request was outstanding (one `protocol` error, never charged to the next
    /// request, unless they are blank lines: [`is_stray`](crate::proto::h1::reader::is_stray)).
    /// Drop it now, so the next request opens a fresh one instead of failing.
    fn check_idle(&mut self, k: usize) {
        let c = &mut self.conns[k];
        if let Some(sock) = c.sock.as_ref() {
            let mut probe = [0u8; 64];
            match sock.recv(&mut probe) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Ok(n) if crate::proto::h1::reader::is_stray(&probe[..n]) => {
                    c.sock = None;
                    super::record_stray(&mut self.core.rec[c.vu.current]);
                }
                _ => c.sock = None,
            }
        }
    }

    /// Records the attempt on slot `k` and frees the slot (or, closed model, reuses it at once).
    fn finish(&mut self, k: usize, mut result: Result<Reply, ErrorKind>, done: Instant) {
        self.core.in_flight -= 1;
        let c = &mut self.conns[k];
        if c.fresh && !self.core.shared.keepalive && result.is_ok() {
            self.core.rec[c.vu.current]
                .setup
                .record_with_connect(micros(done - c.opened_at));
        }
        c.fresh = false;
        if let (Ok(reply), Some(e)) = (&mut result, c.reader.events()) {
            let (rec, shared) = (&mut self.core.rec[c.vu.current], self.core.shared);
            super::record_events(rec, shared, e, c.base, done, reply);
        }
        let outcome = result.map(|reply| (reply, c.reader.take_capture()));
        // Answered before the request was all out: the rest is never sent, and the connection
        // cannot carry another request.
        let unsent = c.state == State::Writing;
        let sent_len = if unsent {
            c.written
        } else {
            self.core.shared.connector.h1_bytes(&c.vu).len()
        };
        let (shared, rec) = (self.core.shared, &mut self.core.rec);
        let keep = record(
            rec,
            shared,
            &mut c.vu,
            outcome,
            sent_len as u64,
            c.base,
            c.sent,
            done,
        );
        c.state = State::Idle;
        if !keep || unsent {
            c.sock = None;
        }
        if self.core.shared.connector.events.hold {
            // Reopened when the stream asked, as a browser does, by the housekeeping.
            c.retry_at = super::held_stream_ended(&mut c.vu, c.reader.events_ref(), done);
            c.state = State::Backoff;
            return;
        }
        driver::next(self, k, done);
    }

    fn connect_failed(&mut self, k: usize, kind: ErrorKind, now: Instant) {
        self.core.in_flight -= 1;
        let c = &mut self.conns[k];
        record_connect_error(&mut self.core.rec, self.core.shared, &mut c.vu, kind.into());
        c.sock = None;
        c.state = State::Backoff;
        c.retry_at = now + backoff_delay(c.failures);
        c.failures += 1;
        self.core.release(k);
    }
}
