//! The plain `ws://` worker for message exchanges (each request a message and its answer,
//! or a ping and its pong): the shared epoll loop ([`driver`]) over one [`Machine`] per
//! connection. Per message that is one `send`, one `recv` and a share of one `epoll_wait`,
//! as for HTTP/1.1: the tokio session's futures, wakers and timers were a quarter of the
//! generator's CPU per message. The machine decides everything the protocol decides, so a
//! run measures the same here as on the tokio worker, which keeps what needs a timer per
//! connection or TLS (paced and held connections, subscriptions, `wss://`).
//!
//! A connection opens (TCP connect, then the upgrade, both within `--connect-timeout`),
//! exchanges, and when brink is done with it (a ramp down, the end of the run) closes with
//! the close handshake within [`CLOSE_WITHIN`]; one cut by the end of the run is accounted
//! as it stands.

use super::driver::{self, Core};
use super::sys::{token_of, Connect, Sock};
use super::{
    backoff_delay, micros, record, record_connect_error, CLOSE_WITHIN, READS_PER_TURN, REFUSED_REST,
};
use super::{Msg, Shared};
use crate::proto::reply::{io_kind, Outcome, Unopened};
use crate::proto::ws::machine::{Awaiting, Machine, Upgrade};
use model::Protocol;
use stats::{Bucket, ErrorKind};
use std::io;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;
use workload::{Vu, WsStep};

/// The most queued bytes (pongs a ping flood asked for) a connection may hold before it
/// stops reading until the server reads them.
const MOST_UNSENT: usize = 64 * 1024;

/// Whether a run takes this loop: plain `ws://`, kept alive, unpaced, every step a message
/// or a ping (a subscription awaits pushes on the tokio worker).
pub fn fits(shared: &Shared) -> bool {
    let c = &shared.connector;
    c.protocol == Protocol::Ws
        && c.tls.is_none()
        && c.keepalive
        && shared.every.is_none()
        && c.workload.requests.iter().all(|r| r.ws != WsStep::Await)
}

enum State {
    /// Free: upgraded and waiting for work, or not connected yet.
    Idle,
    /// Non-blocking connect in progress.
    Connecting,
    /// The upgrade sent; its answer awaited.
    Upgrading(Upgrade),
    /// A message (or ping) sent; its answer awaited.
    Exchange(Awaiting),
    /// brink's close sent; the server's awaited.
    Closing,
    /// After a failed connect or a refused message, not used again before `retry_at`.
    Backoff,
}

struct Conn {
    sock: Option<Sock>,
    /// The upgraded (or upgrading) connection's state; `None` with no connection.
    m: Option<Machine>,
    state: State,
    /// Latency is measured from here (the intended start).
    base: Instant,
    /// When the message was sent (service time is measured from here).
    sent: Instant,
    /// Connect, upgrade, answer or close deadline, whichever applies to the state.
    deadline: Instant,
    /// When the connect started, and when the upgrade did.
    opened_at: Instant,
    upgrade_at: Instant,
    failures: u32,
    retry_at: Instant,
    vu: Vu,
    /// Listed in `Core::again` (at most once).
    again: bool,
    /// Bytes may wait in the socket that an idle read left there (no room): read them when
    /// the next exchange starts, as no new edge will announce them.
    unread: bool,
}

struct Worker<'a> {
    core: Core<'a>,
    conns: Vec<Conn>,
}

/// Runs the worker; returns its last partial buckets, the requests still in flight, and when
/// its load was over (before the close handshakes).
pub fn run(
    shared: &Arc<Shared>,
    id: usize,
    tx: &Sender<Msg>,
) -> Result<(Vec<Bucket>, u64, Option<Instant>), String> {
    let now = Instant::now();
    let slots = driver::slots(shared, id);
    let conns = (0..slots)
        .map(|k| Conn {
            sock: None,
            m: None,
            state: State::Idle,
            base: now,
            sent: now,
            deadline: now,
            opened_at: now,
            upgrade_at: now,
            failures: 0,
            retry_at: now,
            vu: Vu::new(&shared.connector.workload, (k * shared.workers + id) as u64),
            again: false,
            unread: false,
        })
        .collect();
    let mut w = Worker {
        core: Core::new(shared, id, tx, slots)?,
        conns,
    };
    driver::run(&mut w);
    let over = Instant::now();
    let in_flight = w.core.in_flight;
    w.close_all();
    Ok((std::mem::take(&mut w.core.rec), in_flight, Some(over)))
}

impl<'a> driver::Conns<'a> for Worker<'a> {
    fn core(&self) -> &Core<'a> {
        &self.core
    }
    fn core_mut(&mut self) -> &mut Core<'a> {
        &mut self.core
    }
    fn expire(&mut self, now: Instant) {
        for k in 0..self.conns.len() {
            if now >= self.conns[k].deadline {
                self.expire_one(k, now);
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
    /// Past a ramp down: the connection closes with the close handshake.
    fn retire(&mut self, k: usize, now: Instant) {
        self.close(k, now);
    }
    fn in_iteration(&self, k: usize) -> bool {
        self.conns[k].vu.in_iteration()
    }
    /// Starts an attempt on slot `k`: on its open connection, or by opening one.
    fn start(&mut self, k: usize, base: Instant, now: Instant) {
        let workload = &self.core.shared.connector.workload;
        let c = &mut self.conns[k];
        c.vu.next(workload);
        c.base = base;
        self.core.in_flight += 1;
        if c.sock.is_some() && c.m.is_some() {
            self.begin(k, now);
            return;
        }
        let Some(s) = self.core.dial(k) else {
            self.connect_failed(k, ErrorKind::Connect.into(), now);
            return;
        };
        let c = &mut self.conns[k];
        c.sock = Some(s);
        c.state = State::Connecting;
        c.opened_at = now;
        c.deadline = now + self.core.shared.connector.connect_timeout;
    }

    fn free_at(&self, k: usize, now: Instant) -> Instant {
        match self.conns[k].state {
            State::Backoff => self.conns[k].retry_at,
            _ => now,
        }
    }
    fn on_event(&mut self, k: usize, writable: bool) {
        let Some(c) = self.conns.get(k) else { return };
        match c.state {
            State::Connecting => self.connected(k),
            State::Upgrading(_) | State::Exchange(_) | State::Closing => {
                if writable && self.flush(k).is_err() {
                    self.failed(k, ErrorKind::Reset);
                    return;
                }
                self.read(k);
            }
            State::Idle | State::Backoff => self.read_idle(k),
        }
    }
    fn resume(&mut self, k: usize) {
        self.conns[k].again = false;
        driver::Conns::on_event(self, k, false);
    }
    /// Connections account what they carried once a second (and when they end), not per
    /// message: the accounting was a visible share of the CPU per message.
    fn second_over(&mut self) {
        for c in &mut self.conns {
            if let Some(m) = c.m.as_mut() {
                m.account(&mut self.core.rec[c.vu.current], false);
            }
        }
    }
}

impl Worker<'_> {
    /// The connect finished: sends the upgrade.
    fn connected(&mut self, k: usize) {
        let now = Instant::now();
        let connector = &self.core.shared.connector;
        let c = &mut self.conns[k];
        let Some(sock) = c.sock.as_ref() else { return };
        match sock.connect_state() {
            Connect::Done => {}
            Connect::Pending => return,
            Connect::Failed => return self.connect_failed(k, ErrorKind::Connect.into(), now),
        }
        let mut m = Machine::new(connector.max_message);
        let up = match m.upgrade(connector, &mut c.vu) {
            Ok(up) => up,
            Err(failed) => return self.connect_failed(k, failed, now),
        };
        c.m = Some(m);
        c.state = State::Upgrading(up);
        c.upgrade_at = now;
        c.deadline = now + connector.connect_timeout;
        if let Err(kind) = self.flush(k) {
            self.failed(k, kind);
        }
    }

    /// The upgrade's answer came: the connect and the upgrade are timed (as one opening, as
    /// the tokio worker does), and the attempt's message goes.
    fn upgraded(&mut self, k: usize, now: Instant) {
        let c = &mut self.conns[k];
        c.failures = 0;
        let setup = &mut self.core.rec[c.vu.current].setup;
        setup.record_connect(micros(c.upgrade_at - c.opened_at));
        setup.record_upgrade(micros(now - c.upgrade_at));
        self.begin(k, now);
    }

    /// Queues and sends the attempt's message on the upgraded connection, then takes what is
    /// already buffered (an answer can never be, but a close can).
    fn begin(&mut self, k: usize, now: Instant) {
        let connector = &self.core.shared.connector;
        let c = &mut self.conns[k];
        let Some(m) = c.m.as_mut() else { return };
        let awaiting = match m.begin(connector, &mut c.vu) {
            Ok(a) => a,
            Err(kind) => return self.finish(k, Err(kind), now),
        };
        c.state = State::Exchange(awaiting);
        c.sent = now;
        c.deadline = now + self.core.shared.timeout;
        if let Err(kind) = self.flush(k) {
            return self.failed(k, kind);
        }
        if !self.progress(k, now) && std::mem::take(&mut self.conns[k].unread) {
            self.read(k);
        }
    }

    /// Writes what the connection has queued, as far as the socket takes it.
    fn flush(&mut self, k: usize) -> Result<(), ErrorKind> {
        let c = &mut self.conns[k];
        let (Some(sock), Some(m)) = (c.sock.as_ref(), c.m.as_mut()) else {
            return Ok(());
        };
        while !m.unsent().is_empty() {
            match sock.send(m.unsent()) {
                Ok(n) => m.wrote(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_kind(&e)),
            }
        }
        Ok(())
    }

    /// Reads what arrived for an upgrade, an exchange or a close, and moves it on.
    fn read(&mut self, k: usize) {
        for _ in 0..READS_PER_TURN {
            let c = &mut self.conns[k];
            let (Some(sock), Some(m)) = (c.sock.as_ref(), c.m.as_mut()) else {
                return;
            };
            if m.unsent().len() > MOST_UNSENT {
                return; // the rest is read once the server takes what is queued
            }
            let Some(spare) = m.spare() else {
                return self.failed(k, ErrorKind::Protocol);
            };
            let room = spare.len();
            let drained = match sock.recv(spare) {
                Ok(0) => return self.failed(k, ErrorKind::Closed),
                Ok(n) => {
                    m.got(n);
                    n < room
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.failed(k, io_kind(&e)),
            };
            if self.progress(k, Instant::now()) {
                // The state this read served is over. A read that filled the buffer may have
                // left more in the socket, which no new edge will announce (a server that
                // sends more than the answer, and waits on a full window): read on next turn.
                if !drained {
                    self.read_again(k);
                }
                return;
            }
        }
        self.read_again(k);
    }

    /// Lists connection `k` to be read again on the next turn (once).
    fn read_again(&mut self, k: usize) {
        let c = &mut self.conns[k];
        if !c.again && c.sock.is_some() {
            c.again = true;
            self.core.again.push(k);
        }
    }

    /// Takes what the machine has buffered in the connection's state; true once that state
    /// is over (the upgrade failed, the exchange or the close ended).
    fn progress(&mut self, k: usize, now: Instant) -> bool {
        let connector = &self.core.shared.connector;
        let c = &mut self.conns[k];
        let Some(m) = c.m.as_mut() else { return true };
        match &c.state {
            State::Upgrading(up) => match m.upgraded(up) {
                Ok(false) => false,
                Ok(true) => {
                    self.upgraded(k, now);
                    true
                }
                Err(failed) => {
                    self.connect_failed(k, failed, now);
                    true
                }
            },
            State::Exchange(awaiting) => {
                let step = &connector.workload.requests[c.vu.current];
                let outcome = m.advance(connector, step, awaiting);
                let flushed = self.flush(k);
                // Stamped after the parse: frames that came before the answer (a burst
                // of pongs) are the exchange's time, not the time before it.
                let now = Instant::now();
                match (outcome, flushed) {
                    (Some(outcome), _) => self.finish(k, outcome, now),
                    (None, Err(kind)) => self.finish(k, Err(kind), now),
                    (None, Ok(())) => return false,
                }
                true
            }
            State::Closing => {
                if m.closing() {
                    self.drop_conn(k);
                }
                true
            }
            _ => true,
        }
    }

    /// The connection failed (`kind`) while brink read or wrote it, in whatever state.
    fn failed(&mut self, k: usize, kind: ErrorKind) {
        let now = Instant::now();
        let c = &mut self.conns[k];
        let Some(m) = c.m.as_mut() else { return };
        let dropped = matches!(kind, ErrorKind::Closed | ErrorKind::Reset);
        match c.state {
            State::Upgrading(_) => {
                let failed = match kind {
                    ErrorKind::Closed => Unopened::because(
                        ErrorKind::Handshake,
                        "the server closed the connection before answering the upgrade",
                    ),
                    other => other.into(),
                };
                let failed = m.unopened(failed);
                self.connect_failed(k, failed, now);
            }
            State::Exchange(_) => {
                let kind = if dropped { m.dropped() } else { kind };
                self.finish(k, Err(kind), now);
            }
            State::Closing => {
                if dropped {
                    m.dropped();
                }
                self.drop_conn(k);
            }
            _ => self.drop_conn(k),
        }
    }

    /// An idle connection became readable: what the server sends between messages is taken
    /// as a resting connection takes it (pings answered, pushed messages counted, a close
    /// echoed and the connection accounted and dropped, so the next attempt opens a fresh
    /// one and is not charged for it).
    fn read_idle(&mut self, k: usize) {
        let c = &mut self.conns[k];
        let (Some(sock), Some(m)) = (c.sock.as_ref(), c.m.as_mut()) else {
            return;
        };
        let (mut ended, mut more) = (false, true);
        for _ in 0..READS_PER_TURN {
            if !m.has_room() {
                c.unread = true; // a frame longer than the buffer: the next exchange reads it
                more = false;
                break;
            }
            let Some(spare) = m.spare() else { break };
            match sock.recv(spare) {
                Ok(0) => return self.ended_idle(k),
                Ok(n) => m.got(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.ended_idle(k),
            }
            if m.rest().is_some() {
                ended = true;
                break;
            }
        }
        let flushed = self.flush(k);
        if ended || flushed.is_err() {
            self.drop_conn(k);
        } else if more {
            // A server that pushes without end gets its turn's reads, then waits for the next.
            self.read_again(k);
        }
    }

    /// The server ended an idle connection: it is accounted and dropped, to be opened again.
    fn ended_idle(&mut self, k: usize) {
        if let Some(m) = self.conns[k].m.as_mut() {
            m.ended_while_idle();
        }
        self.drop_conn(k);
    }

    /// Accounts what the connection carried and drops it (the slot stays as it is).
    fn drop_conn(&mut self, k: usize) {
        let c = &mut self.conns[k];
        if let Some(mut m) = c.m.take() {
            m.account(&mut self.core.rec[c.vu.current], true);
        }
        c.sock = None;
        c.unread = false;
        if matches!(c.state, State::Closing) {
            c.state = State::Idle;
        }
    }

    /// Starts the close handshake of an idle connection brink is done with.
    fn close(&mut self, k: usize, now: Instant) {
        let c = &mut self.conns[k];
        let Some(m) = c.m.as_mut() else {
            c.sock = None;
            return;
        };
        m.close();
        c.state = State::Closing;
        c.deadline = now + CLOSE_WITHIN;
        if self.flush(k).is_err() {
            self.drop_conn(k);
        }
    }

    /// A deadline passed on slot `k`.
    fn expire_one(&mut self, k: usize, now: Instant) {
        let connect_timeout = self.core.shared.connector.connect_timeout;
        let c = &mut self.conns[k];
        match &c.state {
            State::Connecting => self.connect_failed(k, ErrorKind::ConnectTimeout.into(), now),
            State::Upgrading(_) => {
                let why = format!(
                    "no answer to the upgrade within {connect_timeout:?} (--connect-timeout)"
                );
                let failed = Unopened::because(ErrorKind::Handshake, why);
                let failed = c.m.as_ref().map_or(failed.clone(), |m| m.unopened(failed));
                self.connect_failed(k, failed, now);
            }
            State::Exchange(_) => self.finish(k, Err(ErrorKind::Timeout), now),
            State::Closing => self.drop_conn(k),
            State::Idle | State::Backoff => {}
        }
    }

    /// Records the attempt on slot `k` and moves the slot on: its next attempt at once
    /// (closed model, a flow iteration), or free.
    fn finish(&mut self, k: usize, outcome: Outcome, done: Instant) {
        self.core.in_flight -= 1;
        let refused = matches!(outcome, Err(ErrorKind::InvalidRequest));
        let c = &mut self.conns[k];
        let current = c.vu.current;
        let (shared, rec) = (self.core.shared, &mut self.core.rec);
        let keep = record(rec, shared, &mut c.vu, outcome, 0, c.base, c.sent, done);
        if let (Some(m), false) = (c.m.as_mut(), keep) {
            m.account(&mut rec[current], true);
        }
        c.state = State::Idle;
        if !keep {
            // A close the machine queued (an echo, a refusal) goes as best it can.
            let _ = self.flush(k);
            let c = &mut self.conns[k];
            c.m = None;
            c.sock = None;
        }
        if refused {
            let c = &mut self.conns[k];
            c.state = State::Backoff;
            c.retry_at = done + REFUSED_REST;
            self.core.release(k);
            return;
        }
        driver::next(self, k, done);
    }

    fn connect_failed(&mut self, k: usize, failed: Unopened, now: Instant) {
        self.core.in_flight -= 1;
        let c = &mut self.conns[k];
        record_connect_error(&mut self.core.rec, self.core.shared, &mut c.vu, failed);
        c.sock = None;
        c.m = None;
        c.state = State::Backoff;
        c.retry_at = now + backoff_delay(c.failures);
        c.failures += 1;
        self.core.release(k);
    }

    /// The run is over: idle connections close with the close handshake (within
    /// [`CLOSE_WITHIN`], unless the run was interrupted); the rest (an exchange the end cut)
    /// are accounted as they stand.
    fn close_all(&mut self) {
        let now = Instant::now();
        let stop = self
            .core
            .shared
            .stop
            .load(std::sync::atomic::Ordering::Relaxed);
        for k in 0..self.conns.len() {
            match self.conns[k].state {
                State::Idle | State::Backoff if !stop => self.close(k, now),
                State::Closing if !stop => {}
                _ => self.drop_conn(k),
            }
        }
        let until = now + CLOSE_WITHIN;
        let mut events = Vec::with_capacity(1024);
        while self.conns.iter().any(|c| matches!(c.state, State::Closing)) {
            let now = Instant::now();
            if now >= until {
                break;
            }
            // Connections with more to read go on at once; the others wait for an event.
            let wait = if self.core.again.is_empty() {
                until - now
            } else {
                std::time::Duration::ZERO
            };
            if let Err(e) = self.core.poll.wait(&mut events, wait) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            for ev in &events {
                let (k, writable) = token_of(ev);
                driver::Conns::on_event(self, k, writable);
            }
            for k in std::mem::take(&mut self.core.again) {
                driver::Conns::resume(self, k);
            }
        }
        for k in 0..self.conns.len() {
            self.drop_conn(k);
        }
    }
}
