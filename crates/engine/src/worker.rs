//! One worker per core: a current-thread tokio runtime that owns its connections and its
//! recorder. Connection tasks share the worker's state through `Rc`/`Cell` (one thread, no
//! locks); the only thing that leaves the thread is one [`Bucket`] per second.
//!
//! Load models are composed from the same parts: a connection task runs
//! `ticket -> exchange` in a loop, and only the ticket differs. Closed model: a ticket is
//! issued at once while the slot is wanted (the curve's connection count) and `-n` has tickets
//! left. Open model: tickets are request indices `w, w+W, w+2W, ...` due at `curve.time_of(i)`;
//! a task that takes a ticket before its time sleeps until it is due, a task that takes it after
//! its time (no connection was free) sends at once and the wait counts in the latency.

use crate::conn::Conn;
use crate::run::{Load, Msg, Shared};
use std::pin::Pin;
use tokio::time::Sleep;
use stats::{Bucket, ErrorKind};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Waits shorter than this (the timer's resolution) are pacing noise, not queueing: a request
/// sent within it of its intended time is on time and its latency is taken from the send.
pub const LATE_THRESHOLD: Duration = Duration::from_millis(1);
/// How often the closed-model driver re-reads the connection curve and the stop flag is checked.
const POLL: Duration = Duration::from_millis(50);

/// Per-worker state shared by its tasks.
struct Local {
    shared: Arc<Shared>,
    id: usize,
    rec: RefCell<Bucket>,
    /// Open model: next request index this worker will take.
    next: Cell<u64>,
    /// Closed model: slots `>= target` retire after their current request.
    target: Cell<usize>,
    alive: RefCell<Vec<bool>>,
    in_flight: Cell<u64>,
}

/// This worker's share of `total` when it is spread over `workers`.
pub fn share(total: usize, id: usize, workers: usize) -> usize {
    total / workers + usize::from(id < total % workers)
}

/// Runs worker `id` to the end of the schedule (or a stop) and reports to `tx`.
pub fn run(shared: Arc<Shared>, id: usize, tx: Sender<Msg>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = tx.send(Msg::Failed(format!(
                "worker {id}: cannot start runtime: {e}"
            )));
            return;
        }
    };
    let ctx = Rc::new(Local {
        shared: shared.clone(),
        id,
        rec: RefCell::new(Bucket::new(0)),
        next: Cell::new(id as u64),
        target: Cell::new(0),
        alive: RefCell::new(Vec::new()),
        in_flight: Cell::new(0),
    });
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let flusher = tokio::task::spawn_local(flush_loop(ctx.clone(), tx.clone()));
        tokio::select! {
            _ = drive(ctx.clone()) => {}
            _ = hard_stop(&shared) => {}
        }
        flusher.abort();
    });
    let last = ctx.rec.replace(Bucket::new(0));
    let _ = tx.send(Msg::Bucket(id, Box::new(last)));
    let _ = tx.send(Msg::Done(id, ctx.in_flight.get()));
}

/// Resolves on an interrupt, or when requests still in flight after the end of the schedule
/// have had their grace period.
async fn hard_stop(shared: &Shared) {
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        if shared
            .end
            .is_some_and(|end| Instant::now() >= end + shared.grace)
        {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Sends the finished bucket at every whole second since the start.
async fn flush_loop(ctx: Rc<Local>, tx: Sender<Msg>) {
    let mut second = 0u64;
    loop {
        tokio::time::sleep_until((ctx.shared.start + Duration::from_secs(second + 1)).into()).await;
        second += 1;
        let full = ctx.rec.replace(Bucket::new(second));
        if tx.send(Msg::Bucket(ctx.id, Box::new(full))).is_err() {
            return;
        }
    }
}

async fn drive(ctx: Rc<Local>) {
    match &ctx.shared.load {
        Load::Open { pool, .. } => {
            let mut tasks = JoinSet::new();
            for _ in 0..share(*pool, ctx.id, ctx.shared.workers) {
                tasks.spawn_local(open_task(ctx.clone()));
            }
            while tasks.join_next().await.is_some() {}
        }
        Load::Closed { connections } => closed_driver(ctx.clone(), connections.clone()).await,
    }
}

/// Keeps the number of live closed-model slots on the connection curve.
async fn closed_driver(ctx: Rc<Local>, curve: crate::schedule::Curve) {
    let shared = ctx.shared.clone();
    let mut tasks = JoinSet::new();
    while let Some(level) = curve.value_at(shared.start.elapsed()) {
        if shared.tickets_exhausted() && tasks.is_empty() {
            break;
        }
        // Once every `-n` ticket is taken, slots that end are not replaced.
        let wanted = share(level.round() as usize, ctx.id, shared.workers);
        let target = if shared.tickets_exhausted() {
            0
        } else {
            wanted
        };
        ctx.target.set(target);
        {
            let mut alive = ctx.alive.borrow_mut();
            if alive.len() < target {
                alive.resize(target, false);
            }
            for (slot, a) in alive.iter_mut().enumerate().take(target) {
                if !*a {
                    *a = true;
                    tasks.spawn_local(closed_task(ctx.clone(), slot));
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    ctx.target.set(0);
    while tasks.join_next().await.is_some() {}
}

async fn closed_task(ctx: Rc<Local>, slot: usize) {
    let mut conn = Slot::new(&ctx.shared);
    let shared = ctx.shared.clone();
    loop {
        let now = Instant::now();
        if slot >= ctx.target.get() || shared.end.is_some_and(|end| now >= end) || !shared.take_ticket() {
            break;
        }
        conn.exchange(&ctx, now, now).await;
    }
    if let Some(a) = ctx.alive.borrow_mut().get_mut(slot) {
        *a = false;
    }
}

async fn open_task(ctx: Rc<Local>) {
    let mut conn = Slot::new(&ctx.shared);
    let shared = ctx.shared.clone();
    let Load::Open { rate, .. } = &shared.load else { return };
    loop {
        let i = ctx.next.get();
        ctx.next.set(i + shared.workers as u64);
        if shared.max_requests.is_some_and(|n| i >= n) {
            break;
        }
        let Some(due) = rate.time_of(i) else { break };
        let due = shared.start + due;
        let mut now = Instant::now();
        let base = if due > now {
            tokio::time::sleep_until(due.into()).await;
            now = Instant::now();
            now
        } else {
            let lag = now - due;
            let late = lag > LATE_THRESHOLD;
            ctx.rec.borrow_mut().record_lag(micros(lag), late);
            if late {
                due
            } else {
                now
            }
        };
        conn.exchange(&ctx, base, now).await;
    }
}

/// One connection slot: its connection (opened lazily, reopened after errors), its connect
/// backoff, and its request-timeout timer.
struct Slot {
    conn: Option<Conn>,
    backoff: Backoff,
    /// Lazy deadline: armed for some earlier request's deadline, which is never later than the
    /// current one. When it fires before the current deadline it is re-armed, so a fast
    /// connection touches the timer wheel about once per timeout period instead of per request.
    timer: Pin<Box<Sleep>>,
}

impl Slot {
    fn new(shared: &Shared) -> Slot {
        let timer = Box::pin(tokio::time::sleep(shared.timeout));
        Slot { conn: None, backoff: Backoff::default(), timer }
    }

    /// One attempt: connect if needed, send, read, record. Latency is measured from `base`
    /// (the intended start) and, as service time, from the send; `now` is a fresh clock reading.
    async fn exchange(&mut self, ctx: &Local, base: Instant, now: Instant) {
        let shared = &ctx.shared;
        let connector = &shared.connector;
        ctx.in_flight.set(ctx.in_flight.get() + 1);
        let (c, sent) = match &mut self.conn {
            Some(c) => (c, now),
            None => {
                let opened = tokio::time::timeout(connector.connect_timeout, connector.connect())
                    .await
                    .unwrap_or(Err(ErrorKind::ConnectTimeout));
                match opened {
                    Ok(c) => {
                        self.backoff.reset();
                        (self.conn.insert(c), Instant::now())
                    }
                    Err(kind) => {
                        ctx.in_flight.set(ctx.in_flight.get() - 1);
                        ctx.rec.borrow_mut().record_error(kind);
                        self.backoff.wait(shared.end).await;
                        return;
                    }
                }
            }
        };
        let deadline = sent + shared.timeout;
        let result = {
            let mut send = std::pin::pin!(connector.send(c));
            loop {
                tokio::select! {
                    biased;
                    r = &mut send => break r,
                    _ = self.timer.as_mut() => {
                        if Instant::now() >= deadline {
                            break Err(ErrorKind::Timeout);
                        }
                        self.timer.as_mut().reset(deadline.into());
                    }
                }
            }
        };
        let done = Instant::now();
        ctx.in_flight.set(ctx.in_flight.get() - 1);
        let mut rec = ctx.rec.borrow_mut();
        rec.bytes_out += shared.request_len;
        match result {
            Ok(reply) => {
                let ok = shared.ok_status.contains(reply.status);
                rec.record_response(reply.status, ok, micros(done - base), micros(done - sent));
                rec.bytes_in += reply.bytes_in;
                if !reply.keep_alive || !shared.keepalive {
                    self.conn = None;
                }
            }
            Err(kind) => {
                rec.record_error(kind);
                self.conn = None;
            }
        }
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// Delay between failed connection attempts: 10 ms doubling to 1 s, so an unreachable target
/// is retried steadily without spinning.
#[derive(Default)]
struct Backoff(u32);

impl Backoff {
    fn reset(&mut self) {
        self.0 = 0;
    }

    async fn wait(&mut self, end: Option<Instant>) {
        let delay = Duration::from_millis(10u64 << self.0.min(7)).min(Duration::from_secs(1));
        self.0 += 1;
        let mut until = Instant::now() + delay;
        if let Some(end) = end {
            until = until.min(end);
        }
        tokio::time::sleep_until(until.into()).await;
    }
}
